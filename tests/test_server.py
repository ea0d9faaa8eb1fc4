"""The tools through a real MCP client over in-memory streams (README: Tools, Reliability, Errors)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import requests
import responses
from mcp import Client
from responses import matchers
from support.fakes import API_KEY, BASE, FILES, FakeClock, file_record, make_config
from support.loopback import hang, json_answer, loopback_server
from support.waiting import GENEROUS, assert_within, await_until

from teamvault_mcp import __version__
from teamvault_mcp.errors import UNCERTAIN_WRITE_HINT
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.kinds import MAX_CONTENT_BYTES
from teamvault_mcp.tools.spec import Tool
from teamvault_mcp.vault.retry import SystemClock

pytestmark = pytest.mark.anyio

WRITE_TOOLS = {
    "write_note",
    "edit_note",
    "edit_section",
    "replace_in_notes",
    "update_frontmatter",
    "move_note",
    "delete_note",
}
WRITE_TOOLS |= {"restore_note_version"}
READ_TOOLS = {
    "whoami",
    "read_frontmatter",
    "list_projects",
    "list_notes",
    "note_outline",
    "read_note",
    "read_notes",
    "list_note_versions",
    "read_note_version",
    "diff_note_versions",
    "search_notes",
    "find_notes",
    "query_notes",
    "list_tags",
    "list_tasks",
    "note_links",
    "broken_links",
    "recent_changes",
}


@asynccontextmanager
async def connected(runner: ToolRunner) -> AsyncIterator[Client]:
    async with Client(build_server(runner), mode="legacy") as client:
        yield client


@pytest.fixture
def runner(clock: FakeClock) -> ToolRunner:
    """Structured content on: these tests read results as data too (the text is the same either way)."""
    return ToolRunner(make_config(structured_content=True), clock=clock)


async def call(runner: ToolRunner, tool: str, **arguments: Any) -> tuple[str, bool, Any]:
    async with connected(runner) as client:
        result = await client.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    return text, result.is_error, result.structured_content


def resolves(mock: responses.RequestsMock, path: str, *records: dict[str, Any]) -> None:
    mock.get(FILES, match=[matchers.query_param_matcher({"path": path})], json={"files": list(records)})


# -- protocol --------------------------------------------------------------------------------------


async def test_initialize_reports_team_vault_and_the_package_version(runner: ToolRunner) -> None:
    async with connected(runner) as client:
        assert client.server_info.name == "team-vault"
        assert client.server_info.version == __version__


async def test_the_instructions_explain_how_the_reading_tools_fit_together(runner: ToolRunner) -> None:
    async with connected(runner) as client:
        instructions = client.instructions
    assert instructions is not None
    for must in ("note_outline", "section=", "startLine", "read_notes", "depth=1", "may or may not", "expectedHash"):
        assert must in instructions


async def test_all_tools_are_listed_with_annotations_and_described_fields(runner: ToolRunner) -> None:
    async with connected(runner) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == READ_TOOLS | WRITE_TOOLS
    for name, tool in tools.items():
        assert tool.title and tool.description
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name in READ_TOOLS)
        assert tool.annotations.open_world_hint is False
        schema = tool.input_schema
        assert schema["type"] == "object"
        for field_name, field in schema["properties"].items():  # described: in the schema, or by the tool's text
            assert field.get("description") or field_name in tool.description, (name, field_name)
    assert tools["delete_note"].annotations.destructive_hint is True
    assert tools["move_note"].annotations.idempotent_hint is False
    assert tools["write_note"].input_schema["required"] == ["path", "content"]
    assert tools["move_note"].input_schema["required"] == ["path", "newPath"]
    assert "projectId" in tools["read_note"].input_schema["properties"]


async def test_read_only_mode_does_not_register_write_tools(clock: FakeClock) -> None:
    runner = ToolRunner(make_config(read_only=True), clock=clock)
    async with connected(runner) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("write_note", {"path": "a.md", "content": "x"})
    assert names == READ_TOOLS
    assert result.is_error
    assert "write_note is not offered: this server is read-only (TEAM_VAULT_READ_ONLY)" in result.content[0].text


# -- the tools -------------------------------------------------------------------------------------


async def test_whoami_and_list_projects(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    http_mock.get(f"{BASE}/api/auth/me", json={"user": {"id": "u1", "email": "k@m.ru", "name": "Кузьма", "role": "X"}})
    http_mock.get(
        f"{BASE}/api/projects",
        json={"projects": [{"id": "p1", "slug": "team", "name": "Team", "ownerId": "u1", "iconEmoji": None}]},
    )
    text, is_error, structured = await call(runner, "whoami")
    assert not is_error
    assert structured == {"id": "u1", "email": "k@m.ru", "name": "Кузьма", "summary": text}
    assert text == "Кузьма <k@m.ru>, user id u1."
    text, is_error, structured = await call(runner, "list_projects")
    assert structured["projects"] == [{"id": "p1", "slug": "team", "name": "Team"}]
    assert text.splitlines()[1] == "p1  Team (team)"


async def test_list_notes_gives_path_type_and_numeric_size(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    http_mock.get(
        FILES,
        match=[matchers.query_param_matcher({"prefix": "people/"})],
        json={"files": [file_record("people/a.md", size="12"), file_record("people/b.png", fileType="BINARY")]},
    )
    text, is_error, structured = await call(runner, "list_notes", prefix="./people\\")
    assert not is_error
    assert structured == {
        "notes": [
            {"path": "people/a.md", "type": "TEXT", "size": 12},
            {"path": "people/b.png", "type": "BINARY", "size": 5},
        ]
    }
    assert text == "people/a.md  12 B\npeople/b.png  5 B, binary"


async def test_read_note_returns_the_raw_text(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    resolves(http_mock, "notes/a.md", file_record("notes/a.md", "f1"))
    http_mock.get(f"{FILES}/f1", body="# Title\n\nÜmlaut — text\n".encode())
    text, is_error, structured = await call(runner, "read_note", path="notes/a.md")
    digest = hashlib.sha256("# Title\n\nÜmlaut — text\n".encode()).hexdigest()
    # One block: the hash's line, then the note's bytes exactly; the data says the same.
    assert (text, is_error) == (f"[contentHash: {digest[:12]}]\n# Title\n\nÜmlaut — text\n", False)
    assert structured == {"path": "notes/a.md", "contentHash": digest, "text": "# Title\n\nÜmlaut — text\n"}


@pytest.mark.parametrize("spelling", ["./dir/a.md", "dir\\a.md", "dir//a.md", "x/../dir/a.md", "dir/./a.md"])
async def test_a_path_in_another_spelling_names_the_same_note(
    runner: ToolRunner, http_mock: responses.RequestsMock, spelling: str
) -> None:
    resolves(http_mock, "dir/a.md", file_record("dir/a.md", "f1"))
    http_mock.get(f"{FILES}/f1", body=b"same note")
    text, is_error, _ = await call(runner, "read_note", path=spelling)
    assert (text, is_error) == (f"[contentHash: {hashlib.sha256(b'same note').hexdigest()[:12]}]\nsame note", False)


async def test_read_note_of_a_missing_note(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    resolves(http_mock, "dir/nope.md")
    http_mock.get(FILES, match=[matchers.query_param_matcher({"includeDeleted": "true"})], json={"files": []})
    text, is_error, _ = await call(runner, "read_note", path="dir\\nope.md")
    assert (text, is_error) == ("Note not found: dir/nope.md", True)
    assert len(http_mock.calls) == 2  # the lookup, and one listing to say what is there instead (nothing)


async def test_read_note_of_a_binary_file(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    resolves(http_mock, "img.png", file_record("img.png", fileType="BINARY", mimeType="image/png"))
    text, is_error, _ = await call(runner, "read_note", path="img.png")
    assert (text, is_error) == ("Not a text file: img.png (image/png).", True)


async def test_list_note_versions_newest_first(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    resolves(http_mock, "a.md", file_record("a.md", "f1"))
    versions = [{"id": f"v{n}", "versionNumber": n, "contentHash": "0" * 64, "message": None} for n in (1, 3, 2)]
    http_mock.get(f"{FILES}/f1/versions", json={"versions": versions})
    _, is_error, structured = await call(runner, "list_note_versions", path="a.md")
    assert not is_error
    assert [v["versionNumber"] for v in structured["versions"]] == [3, 2, 1]


async def test_write_note_creates_a_new_note(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    resolves(http_mock, "meetings/2026-11-30.md")
    http_mock.post(FILES, status=201, json={"file": file_record("meetings/2026-11-30.md", "f2", size="7")})
    text, is_error, structured = await call(runner, "write_note", path="meetings//2026-11-30.md", content="Agenda\n")
    assert not is_error, text
    digest = hashlib.sha256(b"Agenda\n").hexdigest()
    assert structured == {
        "path": "meetings/2026-11-30.md",
        "action": "created",
        "size": 7,
        "contentHash": digest,
        "summary": f"Created meetings/2026-11-30.md (7 bytes); its contentHash is {digest[:12]}.",
    }
    assert text == structured["summary"]
    post = http_mock.calls[1].request
    assert b'name="path"\r\n\r\nmeetings/2026-11-30.md' in post.body
    assert b"Content-Type: text/markdown" in post.body
    assert post.headers["Idempotency-Key"]


async def test_write_note_updates_an_existing_note(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    resolves(http_mock, "a.md", file_record("a.md", "f1"))
    http_mock.put(f"{FILES}/f1", json={"file": file_record("a.md", "f1", size="9")})
    digest = hashlib.sha256(b"new text\n").hexdigest()
    history = [
        {"id": "v2", "versionNumber": 2, "contentHash": digest},
        {"id": "v1", "versionNumber": 1, "contentHash": "0" * 64},
    ]
    http_mock.get(f"{FILES}/f1/versions", json={"versions": history})
    text, is_error, structured = await call(runner, "write_note", path="a.md", content="new text\n")
    assert not is_error
    assert structured == {
        "path": "a.md",
        "action": "updated",
        "size": 9,
        "contentHash": digest,
        "summary": f"Updated a.md (9 bytes); its contentHash is now {digest[:12]}.",
    }
    assert text == structured["summary"]
    put = http_mock.calls[1].request
    assert put.body == b"new text\n"
    assert put.headers["If-Match"] == '"' + "0" * 64 + '"'  # the hash the listing gave: atomic where supported


async def test_write_note_refuses_to_overwrite_a_binary_file(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    resolves(http_mock, "img.png", file_record("img.png", fileType="BINARY", mimeType="image/png"))
    text, is_error, _ = await call(runner, "write_note", path="img.png", content="text")
    assert (text, is_error) == ("Not a text file: img.png (image/png).", True)
    assert len(http_mock.calls) == 1


async def test_write_note_refuses_a_new_path_the_server_would_refuse_before_posting(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    resolves(http_mock, ".obsidian/app.json")
    text, is_error, _ = await call(runner, "write_note", path=".obsidian/app.json", content="{}")
    assert is_error
    assert text == "Reserved folder name: .obsidian (in .obsidian/app.json)"
    assert [call.request.method for call in http_mock.calls] == ["GET"]


async def test_move_note(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    resolves(http_mock, "inbox/idea.md", file_record("inbox/idea.md", "f1"))
    http_mock.patch(
        f"{FILES}/f1",
        match=[matchers.json_params_matcher({"newPath": "projects/idea.md"})],
        json={"file": {"id": "f1", "path": "projects/idea.md"}},
    )
    # Then the links to it: one listing, and the note itself (its own relative links), which has none.
    text = b"# Idea\n"
    moved = file_record("projects/idea.md", "f1", contentHash=hashlib.sha256(text).hexdigest(), size=str(len(text)))
    http_mock.get(FILES, match=[matchers.query_param_matcher({})], json={"files": [moved]})
    http_mock.get(f"{FILES}/f1", body=text)
    text, is_error, structured = await call(runner, "move_note", path="inbox/idea.md", newPath="projects\\idea.md")
    assert not is_error
    assert structured == {
        "path": "projects/idea.md",
        "previousPath": "inbox/idea.md",
        "contentHash": "0" * 64,
        "summary": "Moved inbox/idea.md to projects/idea.md; its contentHash stays 000000000000.",
        "links": {
            "summary": "Links: none to change (no link resolved to the note, or each still does).",
            "updated": [],
            "notUpdated": [],
        },
    }
    assert text.splitlines() == [structured["summary"], structured["links"]["summary"]]


async def test_move_note_refuses_a_bad_target_before_any_request(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    text, is_error, _ = await call(runner, "move_note", path="a.md", newPath="../outside.md")
    assert (text, is_error) == ("Parent traversal is not allowed: ../outside.md", True)
    assert len(http_mock.calls) == 0


async def test_delete_note(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    resolves(http_mock, "old.md", file_record("old.md", "f1"))
    http_mock.delete(f"{FILES}/f1", json={"success": True})
    text, is_error, structured = await call(runner, "delete_note", path="./old.md")
    assert not is_error
    assert (structured["path"], structured["action"], structured["summary"]) == ("old.md", "deleted", text)
    assert http_mock.calls[1].request.headers["Idempotency-Key"]


async def test_project_id_argument_overrides_the_default(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    http_mock.get(f"{BASE}/api/projects/other/files", json={"files": []})
    _, is_error, structured = await call(runner, "list_notes", projectId="other")
    assert not is_error
    assert structured == {"notes": [], "summary": "The project holds no files."}


async def test_without_any_project_the_tool_says_to_call_list_projects(
    clock: FakeClock, http_mock: responses.RequestsMock
) -> None:
    runner = ToolRunner(make_config(project_id=None), clock=clock)
    text, is_error, _ = await call(runner, "read_note", path="a.md")
    assert is_error
    assert text == "No projectId given and TEAM_VAULT_PROJECT_ID is not set — call list_projects to find one."


# -- reliability ----------------------------------------------------------------------------------


async def test_resolve_and_write_share_one_budget(
    runner: ToolRunner, http_mock: responses.RequestsMock, clock: FakeClock
) -> None:
    def slow_resolve(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        clock.advance(30.0)
        return 200, {}, '{"files": [{"id": "f1", "path": "a.md", "fileType": "TEXT", "size": "1"}]}'

    http_mock.add_callback(responses.GET, FILES, callback=slow_resolve)
    http_mock.put(f"{FILES}/f1", json={"file": file_record("a.md", "f1")})
    _, is_error, _ = await call(runner, "write_note", path="a.md", content="x")
    assert not is_error
    assert http_mock.calls[1].request.req_kwargs["timeout"][1] == pytest.approx(15.0)  # 45 - 30


async def test_a_write_is_not_started_when_the_resolve_used_the_budget_up(
    runner: ToolRunner, http_mock: responses.RequestsMock, clock: FakeClock
) -> None:
    def slow_resolve(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        clock.advance(43.5)
        return 200, {}, '{"files": [{"id": "f1", "path": "a.md", "fileType": "TEXT", "size": "1"}]}'

    http_mock.add_callback(responses.GET, FILES, callback=slow_resolve)
    text, is_error, _ = await call(runner, "write_note", path="a.md", content="x")
    assert is_error
    assert text.startswith("Out of time before PUT /api/projects/proj1/files/f1")
    assert UNCERTAIN_WRITE_HINT not in text  # nothing was sent, so nothing is uncertain
    assert len(http_mock.calls) == 1


async def test_an_unanswered_write_says_it_may_or_may_not_have_been_applied(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    resolves(http_mock, "a.md", file_record("a.md", "f1"))
    for _ in range(3):
        http_mock.put(f"{FILES}/f1", body=requests.ReadTimeout("read timed out"))
    text, is_error, _ = await call(runner, "write_note", path="a.md", content="x")
    assert is_error
    assert text.startswith("Network error on PUT /api/projects/proj1/files/f1")
    assert text.endswith(UNCERTAIN_WRITE_HINT)
    assert "The change may or may not have been applied." in text


async def test_a_definite_write_failure_has_no_hint(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    resolves(http_mock, "a.md", file_record("a.md", "f1"))
    http_mock.put(f"{FILES}/f1", status=403, json={"error": {"code": "forbidden", "message": "viewer"}})
    text, is_error, _ = await call(runner, "write_note", path="a.md", content="x")
    assert is_error
    assert text.startswith("PUT /api/projects/proj1/files/f1 → HTTP 403")
    assert "may or may not" not in text


async def test_a_failed_read_has_no_hint(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    for _ in range(3):
        http_mock.get(FILES, body=requests.ConnectionError("connection refused"))
    text, is_error, _ = await call(runner, "read_note", path="a.md")
    assert is_error
    assert text.startswith("Network error on GET")
    assert "may or may not" not in text


async def test_a_create_that_landed_before_its_answer_was_lost_is_reported_as_created(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    content = "first attempt landed\n"
    digest = hashlib.sha256(content.encode()).hexdigest()
    resolves(http_mock, "new.md")
    http_mock.post(FILES, body=requests.ReadTimeout("read timed out"))
    http_mock.post(FILES, status=409, json={"error": {"code": "path_exists", "message": "exists"}})
    resolves(http_mock, "new.md", file_record("new.md", "f5", contentHash=digest, size="21"))
    text, is_error, structured = await call(runner, "write_note", path="new.md", content=content)
    assert not is_error, text
    assert structured["action"] == "created" and structured["size"] == 21
    assert structured["verified"] is True  # the answer was lost; the check found our bytes there


async def test_a_path_taken_by_someone_else_meanwhile_is_an_uncertain_conflict(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    resolves(http_mock, "new.md")
    http_mock.post(FILES, body=requests.ReadTimeout("read timed out"))
    http_mock.post(FILES, status=409, json={"error": {"code": "path_exists", "message": "exists"}})
    resolves(http_mock, "new.md", file_record("new.md", "f5", contentHash="f" * 64))
    text, is_error, _ = await call(runner, "write_note", path="new.md", content="mine")
    assert is_error
    assert "HTTP 409" in text
    assert text.endswith(UNCERTAIN_WRITE_HINT)


async def test_host_cancellation_aborts_the_request_in_flight_and_makes_no_further_attempt() -> None:
    with loopback_server() as server:
        server.route("GET", "/api/projects/proj1/files", hang(seconds=60.0))
        server.route("GET", "/api/auth/me", json_answer(200, {"user": {"id": "u1", "email": None, "name": None}}))
        runner = ToolRunner(make_config(base_url=server.url), clock=SystemClock())
        async with connected(runner) as client:
            async with anyio.create_task_group() as group:  # cancel once the request is in flight

                async def read() -> None:
                    await client.call_tool("read_note", {"path": "a.md"})

                group.start_soon(read)
                await await_until(lambda: server.requests_to("GET", "/api/projects/proj1/files"), "the request")
                group.cancel_scope.cancel()
            cancelled_at = time.monotonic()
            await await_until(lambda: not runner.active_calls(), "the cancelled call stopping")
            stopped_after = time.monotonic() - cancelled_at
            # The server keeps answering other calls.
            result = await client.call_tool("whoami", {})
        hung = server.requests_to("GET", "/api/projects/proj1/files")
    assert runner.active_calls() == 0
    assert_within(stopped_after, GENEROUS, "stopping a call held by a 60 s hang")  # milliseconds in practice
    assert len(hung) == 1  # no further attempt after the cancel
    assert hung[0].disconnected_at is not None
    assert not result.is_error


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("read_note", {}, "Missing required argument 'path'."),
        ("read_note", {"path": 7}, "Argument 'path' must be a string, got number."),
        ("read_note", {"path": ["a.md"]}, "Argument 'path' must be a string, got array."),
        ("read_note", {"path": ""}, "Argument 'path' must not be empty."),
        ("read_note", {"path": "a\x00b.md"}, "Path contains NUL byte: a\\x00b.md"),
        ("read_note", {"path": "a.md", "projectId": ""}, "Argument 'projectId' must not be empty."),
        ("read_note", {"path": "a.md", "project_id": "p"}, "Unknown argument for read_note: project_id."),
        ("write_note", {"path": "a.md"}, "Missing required argument 'content'."),
        ("write_note", {"path": "a.md", "content": None}, "Missing required argument 'content'."),
        ("move_note", {"path": "a.md", "new_path": "b.md"}, "Unknown argument for move_note: new_path."),
        ("list_notes", {"prefix": "../x/"}, "Parent traversal is not allowed: ../x/"),
        ("no_such_tool", {}, "Unknown tool: no_such_tool."),
    ],
)
async def test_bad_arguments_are_tool_errors_and_nothing_is_sent(
    runner: ToolRunner, http_mock: responses.RequestsMock, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with connected(runner) as client:
        result = await client.call_tool(tool, arguments)
        text = result.content[0].text
        assert result.is_error
        assert text.startswith(expected), text
        http_mock.get(f"{BASE}/api/auth/me", json={"user": {"id": "u1", "email": None, "name": None}})
        after = await client.call_tool("whoami", {})  # the server keeps answering
    assert not after.is_error
    assert [c.request.url for c in http_mock.calls] == [f"{BASE}/api/auth/me"]


async def test_a_10_mb_content_is_refused_without_writing(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    text, is_error, _ = await call(runner, "write_note", path="big.md", content="x" * (10 * 1024 * 1024))
    assert is_error
    assert "10,485,760 bytes" in text and f"{MAX_CONTENT_BYTES:,}" in text
    assert "Nothing was written" in text
    assert len(http_mock.calls) == 0


async def test_the_api_key_never_reaches_a_tool_result(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    http_mock.get(f"{BASE}/api/auth/me", status=401, json={"error": {"code": "unauthorized", "message": "bad key"}})
    text, is_error, _ = await call(runner, "whoami")
    assert is_error
    assert text.startswith("GET /api/auth/me → HTTP 401")
    assert API_KEY not in text


# -- what a tool result may carry (issue 13) -------------------------------------------------------------


def _bug_before_writing(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    ctx.client.find_file(ctx.project(args), "a.md")
    raise KeyError("a bug after a read")


def _bug_after_writing(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    ctx.client.replace_content(ctx.project(args), "f1", b"x")
    raise KeyError("a bug after a write")


def _deep_result(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    deep: Any = "bottom"
    for _ in range(150):
        deep = [deep]
    return ToolOutput("a deep result", {"value": deep})


def _unsendable_text(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    return ToolOutput("broken \ud800 text", {"value": "\udc00", "\ud801": [API_KEY]})


TEST_TOOLS = {
    tool.name: tool
    for tool in (
        Tool("bug_before_writing", "Bug", "A write tool with a bug before it writes.", (), _bug_before_writing, True),
        Tool("bug_after_writing", "Bug", "A write tool with a bug after it wrote.", (), _bug_after_writing, True),
        Tool("deep_result", "Deep", "A result nested 150 levels deep.", (), _deep_result),
        Tool("unsendable_text", "Text", "A result with lone surrogates and the key.", (), _unsendable_text),
    )
}


class RunnerWithTestTools(ToolRunner):
    """The server's runner, with tools whose handlers misbehave on purpose."""

    @property
    def tools(self) -> dict[str, Tool]:
        return {**super().tools, **TEST_TOOLS}


@pytest.fixture
def test_runner(clock: FakeClock) -> ToolRunner:
    return RunnerWithTestTools(make_config(structured_content=True), clock=clock)


async def test_an_internal_error_before_any_write_request_does_not_say_it_may_have_been_applied(
    test_runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    resolves(http_mock, "a.md", file_record("a.md", "f1"))
    text, is_error, _ = await call(test_runner, "bug_before_writing")
    assert is_error
    assert text == (
        "Internal error in bug_before_writing: KeyError: 'a bug after a read'. This is a bug in teamvault-mcp; "
        "the server keeps running."
    )


async def test_an_internal_error_after_a_write_request_says_it_may_have_been_applied(
    test_runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    http_mock.put(f"{FILES}/f1", json={"file": file_record("a.md", "f1")})
    text, is_error, _ = await call(test_runner, "bug_after_writing")
    assert is_error
    assert text.startswith("Internal error in bug_after_writing: KeyError")
    assert text.endswith(UNCERTAIN_WRITE_HINT)


async def test_a_write_whose_lookup_got_no_answer_sent_nothing_and_says_so(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    for _ in range(3):
        http_mock.get(FILES, body=requests.ConnectionError("connection reset"))
    text, is_error, _ = await call(runner, "write_note", path="a.md", content="x")
    assert is_error
    assert text.startswith("Network error on GET /api/projects/proj1/files?path=a.md")
    assert "may or may not" not in text  # only the lookup failed: no write request was ever sent
    assert [c.request.method for c in http_mock.calls] == ["GET"] * 3


async def test_a_result_nested_too_deeply_to_send_becomes_a_tool_error(test_runner: ToolRunner) -> None:
    text, is_error, structured = await call(test_runner, "deep_result")
    assert is_error and structured == {"error": {"message": text}}
    assert text == (
        "The result of deep_result nests arrays and objects more than 100 levels deep, deeper than this server "
        "sends. Nothing of it was sent; read the note's text with read_note instead."
    )


async def test_a_result_is_sent_as_valid_unicode_without_the_key(test_runner: ToolRunner) -> None:
    text, is_error, structured = await call(test_runner, "unsendable_text")
    assert not is_error
    assert text == "broken \ufffd text"
    assert structured == {"value": "\ufffd", "\ufffd": ["***"]}


async def test_a_server_that_echoes_headers_never_gets_the_key_into_a_result(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    def echo(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        return 200, {}, json.dumps({"user": {"id": "u1", "email": None, "name": dict(request.headers)["X-API-Key"]}})

    def echo_note(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        return 200, {}, "headers: " + json.dumps(dict(request.headers))

    http_mock.add_callback(responses.GET, f"{BASE}/api/auth/me", callback=echo)
    resolves(http_mock, "a.md", file_record("a.md", "f1"))
    http_mock.add_callback(responses.GET, f"{FILES}/f1", callback=echo_note)
    whoami, _, structured = await call(runner, "whoami")
    note, is_error, _ = await call(runner, "read_note", path="a.md")
    assert not is_error
    assert structured["name"] == "***" and API_KEY not in whoami
    assert '"X-API-Key": "***"' in note and API_KEY not in note


async def test_an_upper_case_content_hash_from_the_server_compares_equal(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    note = b"# Tasks\n"
    digest = hashlib.sha256(note).hexdigest()
    resolves(http_mock, "a.md", file_record("a.md", "f1", contentHash=digest.upper()))
    http_mock.put(f"{FILES}/f1", json={"file": file_record("a.md", "f1")})
    written = hashlib.sha256(b"new\n").hexdigest()
    history = [
        {"id": "v2", "versionNumber": 2, "contentHash": written},
        {"id": "v1", "versionNumber": 1, "contentHash": digest},
    ]
    http_mock.get(f"{FILES}/f1/versions", json={"versions": history})
    text, is_error, structured = await call(runner, "write_note", path="a.md", content="new\n", expectedHash=digest)
    assert not is_error, text  # not a conflict: the server's upper-case hash is the same hash
    assert structured["action"] == "updated"


async def test_front_matter_nested_too_deeply_to_parse_is_a_tool_error_not_a_bug(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    note = b"---\nx: " + b"[" * 400 + b"]" * 400 + b"\n---\n# Tasks\n"
    resolves(http_mock, "a.md", file_record("a.md", "f1"))
    http_mock.get(f"{FILES}/f1", body=note)
    text, is_error, _ = await call(runner, "read_frontmatter", path="a.md")
    assert is_error
    assert not text.startswith("Internal error"), text
    assert "a.md" in text or "nests" in text
