"""Every host's model sees the whole answer (issue 25), proven over the task suite of ``support/host_views.py``.

Through a real MCP client, for every registered tool, under both settings of TEAM_VAULT_STRUCTURED_CONTENT,
each of the three host views (all text, first block, structured-first) holds the facts its task needs. By
default a result is one text block and nothing else, and no tool declares an output schema; with ``on`` every
tool declares one, every result carries structured content that says all its text says, and the text is the
same as without.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.host_views import SCHEMA_DIR, TASKS, Outcome, Vault, run_suite, seed_team_vault, unsaid
from support.sessions import session_on

from teamvault_mcp.localvault import LocalVault

pytestmark = pytest.mark.anyio

SETTINGS = {"default": False, "structured on": True}


async def suite(tmp_path: Path, structured: bool) -> tuple[list[Outcome], list[Any]]:
    """The whole task suite on a fresh team vault, with structured content on or off; the tools listed."""
    with LocalVault(tmp_path / ("on" if structured else "off")) as vault:
        seed_team_vault(vault)
        async with session_on(vault, structured_content=structured, schema_dir=SCHEMA_DIR, call_budget=30.0) as s:
            listed = (await s.client.list_tools()).tools

            async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = await s.client.call_tool(tool, arguments)
                return result.model_dump(mode="json", by_alias=True, exclude_none=True)

            return await run_suite(call, Vault(vault)), listed


@pytest.mark.parametrize("setting", SETTINGS)
async def test_every_view_of_every_task_holds_the_facts_the_task_needs(tmp_path: Path, setting: str) -> None:
    outcomes, listed = await suite(tmp_path, SETTINGS[setting])
    assert {tool.name for tool in listed} <= {task.tool for task in TASKS}, "a registered tool has no task"
    red = {outcome.task.name: (outcome.missing, outcome.problems) for outcome in outcomes if not outcome.green}
    assert red == {}


async def test_by_default_every_result_is_one_text_block_and_no_tool_declares_an_output_schema(
    tmp_path: Path,
) -> None:
    outcomes, listed = await suite(tmp_path, structured=False)
    assert [tool.name for tool in listed if tool.output_schema is not None] == []
    for outcome in outcomes:
        assert "structuredContent" not in outcome.result, outcome.task.name
        assert [block["type"] for block in outcome.result["content"]] == ["text"], outcome.task.name


async def test_structured_on_every_tool_declares_its_schema_and_every_result_says_all_its_text_says(
    tmp_path: Path,
) -> None:
    outcomes, listed = await suite(tmp_path, structured=True)
    assert [tool.name for tool in listed if tool.output_schema is None] == []
    names = {tool.name for tool in listed}
    schemas = {tool.name: tool.output_schema for tool in listed}
    for outcome in outcomes:
        # As a client checks it (the TypeScript SDK checks error results too; the Python SDK only the others).
        jsonschema.validate(outcome.result["structuredContent"], schemas[outcome.task.tool])
        assert [block["type"] for block in outcome.result["content"]] == ["text"], outcome.task.name
        assert "structuredContent" in outcome.result, outcome.task.name
        assert unsaid(outcome.result, names) == [], outcome.task.name
        if outcome.task.error:  # an error's data says its message again, whole
            assert outcome.result["structuredContent"]["error"]["message"] == outcome.result["content"][0]["text"]


async def test_the_text_is_the_same_whether_structured_content_is_on_or_off(tmp_path: Path) -> None:
    off, _ = await suite(tmp_path, structured=False)
    on, _ = await suite(tmp_path, structured=True)

    def normalised(text: str) -> str:
        """``text`` without what differs from one vault to the next: the ids of users, projects, versions, and
        the times."""
        text = re.sub(r"\bc[0-9a-f]{24}\b", "<id>", text)
        text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<time>", text)
        return re.sub(r"\b\d{4}-\d\d-\d\d \d\d:\d\d\b", "<minute>", text)

    for without, with_ in zip(off, on, strict=True):
        # Line for line; in any order, as notes made in the same millisecond list in either order by time.
        texts = [sorted(normalised(outcome.result["content"][0]["text"]).splitlines()) for outcome in (without, with_)]
        assert texts[0] == texts[1], without.task.name


async def test_a_cut_read_is_cut_at_the_same_line_with_the_same_notice_in_both_halves(tmp_path: Path) -> None:
    """A read too long for one answer (TEAM_VAULT_MAX_READ_CHARS, or maxChars) ends at the same line in the text
    and in the data, and both give the same notice with the call that reads on."""
    note = "".join(f"Line {number} of a long note.\n" for number in range(4000))
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault, structured_content=True, max_read_chars=10_000) as session:
            session.seed("long.md", note)
            for arguments in ({"path": "long.md"}, {"path": "long.md", "maxChars": 5_000, "startLine": 10}):
                result = await session.client.call_tool("read_note", arguments)
                (block,) = result.content
                data = result.structured_content
                header, _, rest = block.text.partition("\n")
                assert header == f"[contentHash: {data['contentHash'][:12]}]" and data["truncated"] is True
                assert rest == f"{data['text']}\n{data['notice']}" and data["text"] in note
                assert data["text"].endswith("\n") and 'read_note(path="long.md", startLine=' in data["notice"]
                assert data["next"]["startLine"] == data["endLine"] + 1
            result = await session.client.call_tool("read_notes", {"paths": ["long.md"]})
            (entry,) = result.structured_content["notes"]
            assert f"{entry['text']}\n{entry['notice']}" in result.content[0].text
