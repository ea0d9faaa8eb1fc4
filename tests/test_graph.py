"""The vault's structure through a real MCP client: note_links, broken_links, list_tags, query_notes, list_tasks.

A local vault on loopback, the tools in-process (``support/sessions.py``). The models these tools
answer with are table-tested on their own (``test_links.py``, ``test_tags.py``, ``test_tasks.py``,
``test_properties.py``); here: what an agent sees, that every answer is capped and says what to call
next, and that the index behind them parses a note once per content and resolves links again only
when something changed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.sessions import Session, open_session

from teamvault_mcp.tools.table import TOOLS

pytestmark = pytest.mark.anyio

GRAPH_TOOLS = ("note_links", "broken_links", "list_tags", "query_notes", "list_tasks", "recent_changes")

ADA = """---
tags: [people, Team/Eng]
status: active
due: 2024-05-01
related: "[[grace]]"
---
# Ada

Works with [[grace|Grace H.]] on [the plan](../projects/plan%20one.md#Goals). #lead
Her picture: ![[ada.png]]. A note of hers: [[#Ada]].
```
[[grace]] in code is no link, #nor-a-tag
```
- [ ] call [[grace]]
- [x] ship it
"""
GRACE = """# Grace

See [[ada]], [[people/ada#Ada|her]], [[Ada#^bio]] and [[nobody]]. `[[ada]]` is code.

## Plan
- [ ] review [[Ada]]
- [/] draft the memo
  - [-] cancelled sub-task
"""
PLAN = """---
status: paused
due: 2024-07-01
owner: [Ada, Grace]
tags: project
---
# Plan one

Owner: [Ada](../people/ada.md). Also [[Gracee]] (a typo) and ![[missing.png]].

## Goals
> - [ ] quoted task under Goals
"""


@pytest.fixture
async def vault(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, structured_content=True) as session:
        session.seed("people/ada.md", ADA)
        session.seed("people/grace.md", GRACE)
        session.seed("projects/plan one.md", PLAN)
        session.seed("people/ada.png", b"\x89PNG fake", "image/png")
        session.seed("notes.txt", "[[ada]] in a text file that is no Markdown note")
        yield session


# -- note_links ------------------------------------------------------------------------------------------


async def test_note_links_lists_each_link_out_with_where_it_resolves(vault: Session) -> None:
    text = await vault.ok_text("note_links", path="people/ada.md", direction="out")
    assert text.splitlines() == [
        "people/ada.md: 6 links out.",
        "Out (line  link → where it resolves):",
        "5  [[grace]] → people/grace.md",
        "9  [[grace|Grace H.]] → people/grace.md",
        "9  [the plan](../projects/plan%20one.md#Goals) → projects/plan one.md",
        "10  ![[ada.png]] → people/ada.png",
        "10  [[#Ada]] → this note",
        "14  [[grace]] → people/grace.md",
    ]


async def test_note_links_in_gives_each_linking_line_once_and_skips_code(vault: Session) -> None:
    text = await vault.ok_text("note_links", path="people/ada.md", direction="in")
    assert text.splitlines() == [
        "people/ada.md: 5 in (on 3 lines of 2 notes).",
        "In (note:line  the line):",
        "people/grace.md:3  See [[ada]], [[people/ada#Ada|her]], [[Ada#^bio]] and [[nobody]]. `[[ada]]` is code.",
        "people/grace.md:6  - [ ] review [[Ada]]",
        "projects/plan one.md:9  Owner: [Ada](../people/ada.md). Also [[Gracee]] (a typo) and ![[missing.png]].",
    ]


async def test_both_directions_by_default_and_a_path_without_md(vault: Session) -> None:
    text, is_error, result = await vault.call("note_links", path="people/ada")
    assert not is_error, text
    assert text.startswith("people/ada.md: 6 links out, 5 in (on 3 lines of 2 notes).\nOut (line  link → where")
    assert "In (note:line  the line):\npeople/grace.md:3  See [[ada]]" in text
    assert "projects/plan one.md:9  Owner: [Ada](../people/ada.md)." in text
    counts = {key: result[key] for key in ("path", "out", "in", "partial")}
    assert counts == {"path": "people/ada.md", "out": 6, "in": 5, "partial": False}
    assert result["summary"] == "people/ada.md: 6 links out, 5 in (on 3 lines of 2 notes)."
    assert (len(result["linksOut"]), len(result["linksIn"])) == (6, 3)


async def test_an_attachment_has_backlinks_from_its_embeds(vault: Session) -> None:
    text = await vault.ok_text("note_links", path="people/ada.png")
    assert text.splitlines() == [
        "people/ada.png: 0 links out, 1 in (on 1 line of 1 note).",
        "In (note:line  the line):",
        "people/ada.md:10  Her picture: ![[ada.png]]. A note of hers: [[#Ada]].",
    ]


async def test_a_missing_note_is_an_error_that_names_the_closest(vault: Session) -> None:
    text, is_error, _ = await vault.call("note_links", path="people/adaa.md")
    assert is_error
    assert text == "Note not found: people/adaa.md Did you mean people/ada.md?"


# -- broken_links -------------------------------------------------------------------------------------------


async def test_broken_links_name_the_closest_note(vault: Session) -> None:
    text = await vault.ok_text("broken_links")
    assert text.splitlines() == [
        "3 broken links in 2 notes (of 3 notes):",
        "people/grace.md:3  [[nobody]]",
        "projects/plan one.md:9  [[Gracee]]  → closest: people/grace.md",
        "projects/plan one.md:9  ![[missing.png]]",
        "A link resolves to no file. Fix it with edit_note, or make the note it names.",
    ]


async def test_broken_links_under_a_prefix_and_cut_at_the_limit(vault: Session) -> None:
    text = await vault.ok_text("broken_links", prefix="projects/", limit=1)
    assert text.splitlines() == [
        "2 broken links in 1 note (of 1 note under projects/):",
        "projects/plan one.md:9  [[Gracee]]  → closest: people/grace.md",
        "[Cut: 1 of 2 shown. Narrow with prefix, or raise limit (at most 500).]",
        "A link resolves to no file. Fix it with edit_note, or make the note it names.",
    ]


# -- list_tags ----------------------------------------------------------------------------------------------


async def test_list_tags_counts_notes_at_each_level_ignoring_case(vault: Session) -> None:
    vault.seed("people/eve.md", '---\ntag: "#team/ops, people"\n---\n# Eve\n\n#team is here, #team/eng too.\n')
    text = await vault.ok_text("list_tags")
    assert text.splitlines() == [
        "6 tags in 3 notes (of 4 notes; a nested tag counts at each level):",
        "#people  2",
        "#Team  2",
        "#Team/Eng  2",
        "#lead  1",
        "#project  1",
        "#team/ops  1",
        'The notes with one: list_tags(tag="…").',
    ]


async def test_list_tags_with_a_tag_lists_the_notes_that_carry_it_or_a_nested_one(vault: Session) -> None:
    text = await vault.ok_text("list_tags", tag="#team")
    assert text.splitlines() == ["#team: 1 note carries it or a tag nested under it:", "people/ada.md  #Team/Eng"]


async def test_front_matter_values_that_are_no_tags_are_said(vault: Session) -> None:
    vault.seed("odd.md", "---\ntags: [good, my tag, 2024]\n---\nbody\n")
    text = await vault.ok_text("list_tags", prefix="odd")
    assert text.splitlines()[1] == "#good  1"
    assert '[Not tags: 1 note list front matter tags that are no valid tag, e.g. "my tag" in odd.md' in text


# -- query_notes --------------------------------------------------------------------------------------------


async def test_query_by_equality_shows_the_fields_asked_about(vault: Session) -> None:
    text = await vault.ok_text("query_notes", where={"status": "active"})
    assert text.splitlines() == [
        '1 note of 3 match {"status": "active"}:',
        "people/ada.md  status: active",
        "A note's whole front matter: read_frontmatter(path).",
    ]


async def test_query_dates_compare_as_dates_and_missing_fields_sort_last(vault: Session) -> None:
    text = await vault.ok_text("query_notes", where={"due": {"gte": "2024-01-01T00:00:00Z"}}, sort="-due")
    assert text.splitlines()[:3] == [
        '2 notes of 3 match {"due": {"gte": "2024-01-01T00:00:00Z"}}, sorted by -due:',
        "projects/plan one.md  due: 2024-07-01",
        "people/ada.md  due: 2024-05-01",
    ]
    text = await vault.ok_text("query_notes", where={"path": {"contains": "e"}}, sort="due", fields=["due", "owner"])
    assert text.splitlines()[1:4] == [
        "people/ada.md  due: 2024-05-01 · owner: –",
        "projects/plan one.md  due: 2024-07-01 · owner: [Ada, Grace]",
        "people/grace.md  due: – · owner: –",
    ]


async def test_query_a_list_field_by_membership_and_built_in_tags(vault: Session) -> None:
    text = await vault.ok_text("query_notes", where={"owner": "grace"})
    assert text.splitlines()[1] == "projects/plan one.md  owner: [Ada, Grace]"
    text = await vault.ok_text("query_notes", where={"tags": "team"}, fields=["tags"])
    assert text.splitlines()[:2] == [
        '1 note of 3 match {"tags": "team"}:',
        "people/ada.md  tags: [people, Team/Eng, lead]",
    ]
    text = await vault.ok_text("query_notes", where={"status": {"exists": False}})
    assert text.splitlines()[1] == "people/grace.md  status: –"


async def test_a_bad_where_is_refused_before_any_request(vault: Session) -> None:
    before = len(vault.vault.faults.seen)
    text, is_error, _ = await vault.call("query_notes", where={"due": {"after": "2024-01-01"}})
    assert is_error
    assert "where.due: unknown operator 'after'; use one of eq, ne, in, contains" in text
    text, is_error, _ = await vault.call("query_notes", where={"due": {"gt": "2024-5-1"}})
    assert is_error and "'2024-5-1' is not a date" in text
    text, is_error, _ = await vault.call("query_notes", where={"status": "active"}, sort=[""])
    assert is_error and "holds an empty name" in text
    assert len(vault.vault.faults.seen) == before


async def test_a_field_no_note_has_is_said_with_the_close_names_that_exist(vault: Session) -> None:
    text = await vault.ok_text("query_notes", where={"stauts": "blocked", "status": {"ne": "done"}})
    assert text.splitlines() == [
        '0 notes of 3 match {"stauts": "blocked", "status": {"ne": "done"}}.',
        'No note has a field "stauts"; did you mean "status" (2 notes)?',
    ]
    text = await vault.ok_text("query_notes", where={"colour": {"exists": False}}, prefix="projects/")
    assert text.splitlines()[:2] == [
        '1 note of 1 under projects/ match {"colour": {"exists": false}}:',
        'No note under projects/ has a field "colour"; the most common: "status" (1), "due" (1), "owner" (1) of 1 '
        "notes.",
    ]
    assert len((await vault.ok_text("query_notes", where={"STATUS": "active"})).splitlines()) == 3  # no notice


async def test_front_matter_that_cannot_be_read_is_said_and_matches_only_built_ins(vault: Session) -> None:
    vault.seed("broken.md", "---\nstatus: [active\n---\nbody\n")
    text = await vault.ok_text("query_notes", where={"path": {"contains": "broken"}})
    assert text.splitlines()[1] == "broken.md"
    assert "[1 note has front matter that cannot be read (e.g. broken.md)" in text


async def test_many_matches_are_cut_with_the_way_on(vault: Session) -> None:
    for number in range(5):
        vault.seed(f"tasks/t{number}.md", f"---\nstatus: active\nrank: {number}\n---\n")
    text = await vault.ok_text("query_notes", where={"status": "active"}, prefix="tasks/", sort="-rank", limit=2)
    assert text.splitlines() == [
        '5 notes of 5 under tasks/ match {"status": "active"}, sorted by -rank:',
        "tasks/t4.md  status: active · rank: 4",
        "tasks/t3.md  status: active · rank: 3",
        "[Cut: 2 of 5 shown. Narrow where or prefix, or raise limit (at most 500).]",
        "A note's whole front matter: read_frontmatter(path).",
    ]


# -- list_tasks ---------------------------------------------------------------------------------------------


async def test_list_tasks_open_by_default_with_their_sections(vault: Session) -> None:
    text = await vault.ok_text("list_tasks")
    assert text.splitlines() == [
        "4 open tasks in 3 notes (of 3):",
        "people/ada.md:14  [ ] call [[grace]] · Ada",
        "people/grace.md:6  [ ] review [[Ada]] · Grace > Plan",
        "people/grace.md:7  [/] draft the memo · Grace > Plan",
        "projects/plan one.md:12  [ ] quoted task under Goals · Plan one > Goals",
        "Tick one with edit_note (oldText: the task's line); its section: read_note(path, section=[…]).",
    ]


async def test_done_tasks_include_cancelled_ones_and_all_is_everything(vault: Session) -> None:
    text = await vault.ok_text("list_tasks", status="done", prefix="people/")
    assert text.splitlines()[:3] == [
        "2 done tasks in 2 notes (of 2 under people/):",
        "people/ada.md:15  [x] ship it · Ada",
        "people/grace.md:8  [-] cancelled sub-task · Grace > Plan",
    ]
    text = await vault.ok_text("list_tasks", status="all", limit=2)
    assert text.splitlines()[0] == "6 tasks in 3 notes (of 3):"
    assert "[Cut: 2 of 6 shown, by note and line. Narrow with prefix, or raise limit (at most 500).]" in text


async def test_a_bad_status_is_refused(vault: Session) -> None:
    text, is_error, _ = await vault.call("list_tasks", status="pending")
    assert is_error and "must be one of open, done, all" in text


BOB_TASKS = """---
owner: "[[people/Bob Lee|Bob]]"
---
# Launch
- [ ] @bob books the room
- [ ] Bob: send the deck
- [ ] ask [[Bob Lee]] about it
- [ ] review with [[people/Bob Lee|Bob]]
- [ ] @bobby orders lunch
- [ ] talk to bob some time
- [x] @bob sent the invite
"""


async def test_list_tasks_for_an_assignee_matches_mentions_by_whole_word_any_case(vault: Session) -> None:
    vault.seed("projects/launch.md", BOB_TASKS)
    text = await vault.ok_text("list_tasks", assignee="BOB")
    assert text.splitlines() == [
        "4 open tasks (assignee: BOB) in 1 note (of 4):",
        "projects/launch.md:5  [ ] @bob books the room · Launch",
        "projects/launch.md:6  [ ] Bob: send the deck · Launch",
        "projects/launch.md:7  [ ] ask [[Bob Lee]] about it · Launch",
        "projects/launch.md:8  [ ] review with [[people/Bob Lee|Bob]] · Launch",
        "Tick one with edit_note (oldText: the task's line); its section: read_note(path, section=[…]).",
    ]
    assert (await vault.ok_text("list_tasks", assignee="Bob Lee")).startswith("2 open tasks (assignee: Bob Lee)")


async def test_list_tasks_by_owner_keeps_the_notes_whose_owner_field_names_them(vault: Session) -> None:
    vault.seed("projects/launch.md", BOB_TASKS)
    text = await vault.ok_text("list_tasks", owner="bob", status="done")
    assert text.splitlines()[:2] == [
        "1 done task (owner: bob) in 1 note (of 4):",
        "projects/launch.md:11  [x] @bob sent the invite · Launch",
    ]
    text = await vault.ok_text("list_tasks", owner="grace", assignee="ada")  # plan one: owner [Ada, Grace]
    assert text.splitlines()[0] == "0 open tasks (assignee: ada; owner: grace) in 0 notes (of 4)."
    text = await vault.ok_text("list_tasks", owner="Grace")
    assert text.splitlines()[:2] == [
        "1 open task (owner: Grace) in 1 note (of 4):",
        "projects/plan one.md:12  [ ] quoted task under Goals · Plan one > Goals",
    ]


# -- the index: parsed once per content, resolved again only when something changed ------------------------------


async def test_an_unchanged_vault_is_not_parsed_or_resolved_again(vault: Session) -> None:
    index = vault.runner.workspace.note_index
    await vault.ok_text("note_links", path="people/ada.md")
    parsed, resolved = index.facts.parsed, index.resolved
    assert parsed == 3 and resolved > 0  # each note's links, once
    for _ in range(2):
        await vault.ok_text("note_links", path="people/grace.md")
        await vault.ok_text("broken_links")
    assert (index.facts.parsed, index.resolved) == (parsed, resolved)


async def test_a_colleague_s_edit_is_seen_and_only_that_note_is_parsed_again(vault: Session) -> None:
    index = vault.runner.workspace.note_index
    await vault.ok_text("list_tasks")
    await vault.ok_text("note_links", path="people/ada.md")
    parsed, resolved = index.facts.parsed, index.resolved
    vault.colleague_writes("people/grace.md", GRACE + "- [ ] new from a colleague, see [[ada]]\n")
    tasks = await vault.ok_text("list_tasks")
    assert "people/grace.md:9  [ ] new from a colleague, see [[ada]] · Grace > Plan" in tasks
    links = await vault.ok_text("note_links", path="people/ada.md", direction="in")
    assert "people/grace.md:9  - [ ] new from a colleague, see [[ada]]" in links
    assert index.facts.parsed == parsed + 2  # the new content's tasks and links, nothing else
    assert index.resolved == resolved + 6  # the changed note's six links; the vault's paths are the same


async def test_a_new_file_resolves_every_link_again(vault: Session) -> None:
    await vault.ok_text("broken_links")
    assert "[[nobody]]" in await vault.ok_text("broken_links")
    vault.seed("nobody.md", "# Nobody\n")
    text = await vault.ok_text("broken_links")
    assert "[[nobody]]" not in text
    assert "nobody.md" in await vault.ok_text("note_links", path="people/grace.md", direction="out")


async def test_list_tasks_reads_no_front_matter(vault: Session) -> None:
    await vault.ok_text("list_tasks")
    facts = vault.runner.workspace.note_index.facts
    ada_hash = json.loads(json.dumps(await vault.ok("read_note", path="people/ada.md")))["contentHash"]
    assert facts.cached(ada_hash, ("tasks",)) is not None
    assert facts.cached(ada_hash, ("fields",)) is None  # the YAML is read only for a tool that needs it


async def test_an_answer_without_every_note_says_so(tmp_path: Path) -> None:
    # A budget shorter than the downloads' reserve: only notes already in the cache can be read.
    async with open_session(tmp_path, call_budget=2.0, cache_dir=tmp_path / "cache") as session:
        session.seed("a.md", "[[b]]")
        session.seed("b.md", "B: [[a]]")
        session.seed("c.md", "C: [[a]]")
        await session.ok("read_note", path="c.md")  # c is cached now
        text = await session.ok_text("note_links", path="a.md", direction="in")
    assert text.splitlines() == [
        "[Partial: 2 of 3 notes were not read (the call's time budget ran out); this answer may lack links from "
        "them. What was read is kept: calling again continues where this stopped.]",
        "a.md: 1 in (on 1 line of 1 note).",
        "In (note:line  the line):",
        "c.md:1  C: [[a]]",
    ]


# -- the tools as declared -----------------------------------------------------------------------------------


async def test_the_tools_are_read_tools_also_in_read_only_mode(tmp_path: Path) -> None:
    async with open_session(tmp_path, read_only=True) as session:
        names = await session.tool_names()
        listed = {tool.name: tool for tool in (await session.client.list_tools()).tools}
    assert set(GRAPH_TOOLS) <= set(names)
    assert all(listed[name].annotations.read_only_hint for name in GRAPH_TOOLS)


def test_each_new_tool_definition_is_lean() -> None:
    # Model-visible bytes as sent (compact JSON): name, description, inputSchema; projectId included.
    sizes = {
        tool.name: len(
            json.dumps(
                {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema()},
                ensure_ascii=False,
                separators=(",", ":"),
            ).encode()
        )
        for tool in TOOLS
        if tool.name in GRAPH_TOOLS
    }
    assert len(sizes) == len(GRAPH_TOOLS)
    # query_notes has five arguments; the shared projectId alone is 150 bytes of it.
    assert {name: size for name, size in sizes.items() if size > 650} == {"query_notes": sizes["query_notes"]}
    assert sizes["query_notes"] <= 880
    assert sum(sizes.values()) / len(sizes) <= 650
