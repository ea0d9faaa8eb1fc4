"""An answer names only tools this server registered (issue 28): read-only, or a narrow TEAM_VAULT_TOOLS.

A message that sends the agent to a tool the server does not offer is a dead end (with TEAM_VAULT_READ_ONLY=1,
bad YAML answered "Fix the YAML (edit_note)"). Through a real MCP client, in each configuration, the task
suite of ``support/host_views.py`` (every registered tool, as an agent calls it) and a run of failures (bad
YAML, a missing note or section, no project, a conflict, a write that may have landed, a cut read) must name
no tool but the registered ones.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from support.host_views import SCHEMA_DIR, TASKS, Vault, seed_team_vault
from support.sessions import Session, session_on

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.faults import Fault
from teamvault_mcp.tools.table import TOOLS

pytestmark = pytest.mark.anyio

#: Every tool any configuration can register (the schema tools are all named upsert_<schema>).
ANY_TOOL = re.compile(
    r"\b(" + "|".join(sorted((tool.name for tool in TOOLS), key=len, reverse=True)) + r"|upsert_\w+)\b"
)

BAD_YAML = "---\ntitle: [unclosed\n---\nBody.\n"
LONG = "".join(f"Line {number}: some words to make the note long enough to be cut.\n" for number in range(3000))

CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "read-only": {"read_only": True},
    "readers without read_note": {"tools_named": frozenset({"read_frontmatter", "read_notes", "query_notes"})},
    "writes without readers": {
        "tools_named": frozenset({"write_note", "update_frontmatter", "edit_note", "edit_section", "move_note"})
    },
    "everything but the listings and outlines": {
        "tools_dropped": frozenset({"list_projects", "list_notes", "note_outline", "list_note_versions", "edit_note"})
    },
}


#: Left alone, and said in issue 28's report: list_schemas and reload_schemas give each schema's tool as data
#: ("tool": "upsert_contact"), offered or not (with read-only, the schema tools are not).
SCHEMA_TOOL_FIELD = re.compile(r'"tool": "upsert_\w+"')


def named_tools(text: str) -> set[str]:
    return set(ANY_TOOL.findall(SCHEMA_TOOL_FIELD.sub("", text)))


async def failures(session: Session, registered: set[str]) -> list[tuple[str, str]]:
    """(what was called, the answer's text) for calls that fail, or end in a notice, in ways that name tools."""
    session.seed("bad.md", BAD_YAML)
    session.seed("long.md", LONG)
    vault = Vault(session.vault)
    atlas = "projects/atlas.md"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_frontmatter", {"path": "bad.md"}),
        ("query_notes", {"where": {"title": "x"}, "prefix": "bad"}),
        ("update_frontmatter", {"path": "bad.md", "set": {"status": "done"}}),
        ("read_note", {"path": "nowhere.md"}),
        ("read_note", {"path": "handbook.md", "section": ["No such heading"]}),
        ("read_note", {"path": "long.md"}),
        ("read_notes", {"paths": ["long.md", "nowhere.md", "bad.md"]}),
        ("read_frontmatter", {"path": "nowhere.md"}),
        ("edit_note", {"path": atlas, "edits": [{"oldText": "no such text", "newText": "x"}]}),
        ("edit_note", {"path": atlas, "edits": [{"oldText": "Atlas", "newText": "x"}], "expectedHash": "0" * 12}),
        ("write_note", {"path": atlas, "content": "x", "mode": "create"}),
        ("edit_section", {"path": "handbook.md", "section": ["No such heading"], "content": "x"}),
        ("move_note", {"path": atlas, "newPath": "projects/borealis.md"}),
        ("list_note_versions", {"path": "nowhere.md"}),
    ]
    answers = []
    for tool, arguments in calls:
        if tool in registered:
            text, _ = await session.texts(tool, **arguments)
            answers.append((f"{tool}({arguments})", text))
    if "write_note" in registered:  # a write that may have landed, and no way to look: the answer says to check
        written = []

        def unanswered_then_unreadable(method: str, path: str) -> Fault | None:
            if method == "PUT":
                written.append(path)
                return Fault.apply_then_close()
            return Fault.answer(502) if written else None

        expected = vault.hash("people/grace-hopper.md")
        session.vault.faults.chooser = unanswered_then_unreadable
        arguments = {"path": "people/grace-hopper.md", "content": "New.\n", "mode": "update", "expectedHash": expected}
        text, _ = await session.texts("write_note", **arguments)
        session.vault.faults.clear()
        assert "may or may not have been applied" in text, text
        answers.append(("write_note, unanswered", text))
    return answers


@pytest.mark.parametrize("name", CONFIGURATIONS)
async def test_no_answer_names_a_tool_this_server_does_not_offer(tmp_path: Path, name: str) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        seed_team_vault(vault)
        options = {"schema_dir": SCHEMA_DIR, "call_budget": 30.0, **CONFIGURATIONS[name]}
        async with session_on(vault, **options) as session:
            registered = set(await session.tool_names())
            answers = await failures(session, registered)
            for task in TASKS:
                if task.tool in registered:
                    text, _ = await session.texts(task.tool, **task.arguments_for(Vault(vault)))
                    answers.append((task.name, text))
    assert len(answers) >= 6
    wrong = {what: sorted(named_tools(text) - registered) for what, text in answers if named_tools(text) - registered}
    assert wrong == {}, "\n".join(f"{what}: {wrong[what]}\n  {text[:400]}" for what, text in answers if what in wrong)


async def test_read_only_bad_yaml_does_not_send_the_agent_to_edit_note(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault, read_only=True) as session:
            session.seed("bad.md", BAD_YAML)
            text, is_error = await session.texts("read_frontmatter", path="bad.md")
    assert is_error
    assert text.startswith("Invalid front matter in bad.md, line 3: "), text
    assert text.endswith(". Fix the YAML, then try again."), text
    assert "edit_note" not in text


async def test_with_every_tool_registered_bad_yaml_still_names_edit_note(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault) as session:
            session.seed("bad.md", BAD_YAML)
            text, is_error = await session.texts("read_frontmatter", path="bad.md")
    assert is_error
    assert text.endswith(". Fix the YAML (edit_note), then try again."), text


@pytest.mark.parametrize(
    ("dropped", "answer"),
    [
        (frozenset(), "No projectId given and TEAM_VAULT_PROJECT_ID is not set — call list_projects to find one."),
        (frozenset({"list_projects"}), "No projectId given and TEAM_VAULT_PROJECT_ID is not set."),
    ],
)
async def test_without_a_project_the_answer_sends_the_agent_to_list_projects_only_where_it_is_offered(
    tmp_path: Path, dropped: frozenset[str], answer: str
) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault, project_id=None, tools_dropped=dropped) as session:
            text, is_error = await session.texts("read_note", path="a.md")
    assert (text, is_error) == (answer, True)
