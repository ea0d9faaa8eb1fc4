"""Golden files: ``tools/list`` and the results of a scripted session, byte for byte.

A refactoring must not change what an agent sees. The script below runs a fixed
session against a local vault through a real MCP client; ids, times and the vault's
address are replaced by placeholders, and the rest is compared with the files in
``tests/golden/``: for the default setting (results are text alone) ``tools_list.json``
and ``session.json``, for TEAM_VAULT_STRUCTURED_CONTENT=on ``*_structured.json``. After an
intended change of a tool's text or schema, regenerate them with
``UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from support.sessions import open_session

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).parent / "golden"
#: The production budget: the scripted session's texts are those of a default configuration.
BUDGET = 45.0

RUNBOOK = """---
owner: Ada
status: active
tags: [ops, runbook]
---
# Operations Runbook

Intro line.

## Failover

Switch the ledger database to the standby.

### Drill

Run the failover drill every quarter.

## Contacts

- Ada (on call)
"""

#: (tool, arguments) in order; each result (text, structured content, error flag) is kept.
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("whoami", {}),
    ("write_note", {"path": "ops/runbook.md", "content": RUNBOOK}),
    ("write_note", {"path": "people/ada.md", "content": "# Ada\n\nOn call. See [[runbook]].\n"}),
    ("write_note", {"path": "people/ada.md", "content": "x", "mode": "create"}),
    ("list_notes", {}),
    ("list_notes", {"depth": 1}),
    ("read_note", {"path": "ops/runbook.md"}),
    ("read_note", {"path": "ops/runbook.md", "section": ["Operations Runbook", "Failover"]}),
    ("read_note", {"path": "ops/runbook.md", "startLine": 2, "endLine": 3}),
    ("read_note", {"path": "ops/nothing.md"}),
    ("read_notes", {"paths": ["ops/runbook.md", "people/ada.md", "missing.md"]}),
    ("note_outline", {"path": "ops/runbook.md"}),
    ("note_outline", {"path": "ops/runbook.md", "tocPath": ["Operations Runbook"]}),
    ("search_notes", {"query": "failover drill"}),
    ("search_notes", {"query": "ledger", "mode": "phrase"}),
    ("search_notes", {"query": "zebra"}),
    ("find_notes", {"query": "runbok"}),
    ("read_frontmatter", {"path": "ops/runbook.md"}),
    ("update_frontmatter", {"path": "ops/runbook.md", "set": {"status": "done"}, "dryRun": True}),
    ("update_frontmatter", {"path": "ops/runbook.md", "set": {"status": "done", "added": "yes"}}),
    (
        "edit_note",
        {"path": "people/ada.md", "edits": [{"oldText": "On call.", "newText": "Off call."}], "dryRun": True},
    ),
    ("edit_note", {"path": "people/ada.md", "edits": [{"oldText": "On call.", "newText": "Off call."}]}),
    ("edit_note", {"path": "people/ada.md", "edits": [{"oldText": "not there", "newText": "x"}]}),
    (
        "edit_note",
        {"path": "people/ada.md", "edits": [{"oldText": "Ada", "newText": "Grace"}], "expectedHash": "0" * 64},
    ),
    ("list_note_versions", {"path": "people/ada.md"}),
    ("read_note_version", {"path": "people/ada.md", "version": 1}),
    ("diff_note_versions", {"path": "people/ada.md", "from": 1}),
    ("restore_note_version", {"path": "people/ada.md", "version": 1}),
    ("move_note", {"path": "people/ada.md", "newPath": "people/ada-lovelace.md"}),
    ("move_note", {"path": "people/nobody.md", "newPath": "x.md"}),
    ("delete_note", {"path": "people/ada-lovelace.md"}),
    ("read_note", {"path": "../escape.md"}),
    ("read_note", {"path": "ops/runbook.md", "bogus": 1}),
    ("no_such_tool", {}),
]

_PLACEHOLDERS = [
    (re.compile(r"\bc[0-9a-f]{24}\b"), "<id>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z"), "<time>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}\b"), "<minute>"),  # a listing's one-line times
    (re.compile(r"http://127\.0\.0\.1:\d+"), "<vault>"),
    (re.compile(r"(?<=in )\d+\.\d s\b"), "<seconds>"),
]


def normalised(value: Any) -> Any:
    """``value`` with what differs from run to run (ids, times, the vault's port) replaced."""
    text = json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)
    for pattern, placeholder in _PLACEHOLDERS:
        text = pattern.sub(placeholder, text)
    return text


#: The two settings of TEAM_VAULT_STRUCTURED_CONTENT, and what their golden files are called.
SETTINGS = {"": False, "_structured": True}


@pytest.fixture(params=SETTINGS, ids=["default", "structured on"])
async def client(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[tuple[Client, str]]:
    """A client, and the ending of the golden files' names for the setting it runs in."""
    async with open_session(tmp_path, call_budget=BUDGET, structured_content=SETTINGS[request.param]) as session:
        yield session.client, request.param


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing: run with UPDATE_GOLDEN=1 to make it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed: diff it against {path}"


async def test_tools_list_is_as_recorded(client: tuple[Client, str]) -> None:
    listed = await client[0].list_tools()
    tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]
    check(f"tools_list{client[1]}.json", normalised(tools) + "\n")


async def test_a_scripted_session_gives_the_recorded_results(client: tuple[Client, str]) -> None:
    results = []
    for tool, arguments in SCRIPT:
        result = await client[0].call_tool(tool, arguments)
        recorded = {
            "call": [tool, arguments],
            "isError": result.is_error,
            "text": [block.text for block in result.content if block.type == "text"],
        }
        if result.structured_content is not None:
            recorded["structured"] = result.structured_content
        results.append(recorded)
    check(f"session{client[1]}.json", normalised(results) + "\n")
