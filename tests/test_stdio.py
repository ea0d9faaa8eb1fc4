"""The stdio transport's guards (issue 13): every request gets an answer under its id, nothing written kills it.

Raw JSON-RPC lines, both to the real entry point as a child process and in memory
(the SDK's own stdio transport fed from memory streams, with our guards around it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.server.lowlevel import NotificationOptions
from mcp.shared.message import SessionMessage
from support.children import ENTRY_POINTS, StdioChild
from support.env import child_env
from support.fakes import API_KEY, FakeClock, make_config
from support.loopback import Exchange, loopback_server

from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.server.stdio import MAX_MESSAGE_DEPTH, WritesOnlyWritable, json_depth, serve_stdio


def nested(depth: int, bottom: Any = "a.md") -> Any:
    value = bottom
    for _ in range(depth):
        value = [value]
    return value


def call_line(request_id: Any, tool: str, arguments: dict[str, Any]) -> str:
    params = {"name": tool, "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def deep_line(request_id: Any, depth: int, method: str = "tools/call") -> str:
    """A request whose arguments nest ``depth`` arrays (built as text: json.dumps stops near 1,000)."""
    path = "[" * depth + '"a.md"' + "]" * depth
    params = f'{{"name": "read_note", "arguments": {{"path": {path}}}}}'
    return f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "method": "{method}", "params": {params}}}'


# -- in memory -------------------------------------------------------------------------------------


class MemoryStdio:
    """The lines a host writes to stdin and reads from stdout, through memory streams."""

    def __init__(self) -> None:
        self.to_server, self.stdin = anyio.create_memory_object_stream[str](100)
        self._out_send, self._out_receive = anyio.create_memory_object_stream[str](100)
        outer = self

        class Stdout:
            async def write(self, text: str) -> None:
                await outer._out_send.send(text)

            async def flush(self) -> None:
                pass

        self.stdout = Stdout()

    async def send(self, line: str) -> None:
        await self.to_server.send(line + "\n")

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(30):  # generous: a loaded machine answers within milliseconds too
            line = await self._out_receive.receive()
        return json.loads(line)  # every line written must be JSON

    async def close(self) -> None:
        for stream in (self.to_server, self.stdin, self._out_send, self._out_receive):
            await stream.aclose()

    async def request(self, line: str) -> dict[str, Any]:
        await self.send(line)
        return await self.receive()


@asynccontextmanager
async def stdio_session(runner: ToolRunner) -> AsyncIterator[MemoryStdio]:
    io = MemoryStdio()
    server = build_server(runner)
    options = server.create_initialization_options(NotificationOptions())
    async with anyio.create_task_group() as group:
        group.start_soon(serve_stdio, server, options, io.stdin, io.stdout)
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        await io.request(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
        await io.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield io
        await io.to_server.aclose()  # the host closes stdin: the server ends
    await io.close()


@pytest.fixture
def runner(clock: FakeClock) -> ToolRunner:
    return ToolRunner(make_config(), clock=clock)


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [199, 200, 250, MAX_MESSAGE_DEPTH - 5])
async def test_a_request_nested_deeper_than_the_sdk_reads_is_answered_under_its_id(
    runner: ToolRunner, depth: int
) -> None:
    async with stdio_session(runner) as io:
        answer = await io.request(deep_line(7, depth))
        alive = await io.request('{"jsonrpc": "2.0", "id": 8, "method": "ping"}')
    assert answer["id"] == 7
    text = answer["result"]["content"][0]["text"]
    assert answer["result"]["isError"] is True
    assert text == (
        "Argument 'path' nests arrays and objects more than 64 levels deep; no argument of any tool goes near that. "
        "Nothing was sent."
    )
    assert alive == {"jsonrpc": "2.0", "id": 8, "result": {}}


@pytest.mark.anyio
async def test_a_request_deeper_than_the_server_reads_gets_an_error_under_its_id(runner: ToolRunner) -> None:
    async with stdio_session(runner) as io:
        too_deep = await io.request(deep_line("call-1", 100_000))
        alive = await io.request('{"jsonrpc": "2.0", "id": 2, "method": "ping"}')
    assert too_deep["id"] == "call-1"
    assert too_deep["error"]["code"] == types.INVALID_REQUEST
    assert too_deep["error"]["message"] == (
        "Invalid Request: it nests arrays and objects 100,003 levels deep; this server reads at most "
        f"{MAX_MESSAGE_DEPTH}"
    )
    assert alive["id"] == 2 and "result" in alive


@pytest.mark.anyio
async def test_other_deep_requests_are_served_too(runner: ToolRunner) -> None:
    deep_ping = '{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": {"x": ' + json.dumps(nested(300))
    async with stdio_session(runner) as io:
        ping = await io.request(deep_ping + "}}}")
        shallow_enough = await io.request(call_line(4, "read_note", {"path": nested(60)}))
    assert ping == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert shallow_enough["id"] == 4
    assert shallow_enough["result"]["content"][0]["text"].startswith("Argument 'path' must be a string, got array.")


@pytest.mark.anyio
async def test_invalid_json_and_non_requests_keep_their_answers(runner: ToolRunner) -> None:
    async with stdio_session(runner) as io:
        parse_error = await io.request("{this is not json")
        not_json = await io.request('{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": ' + "[" * 300 + "NaN")
        truncated_deep = await io.request("[" * 300)
        invalid = await io.request(json.dumps({"jsonrpc": "2.0", "id": 9, "params": nested(300)}))
    assert parse_error == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert not_json["id"] is None and not_json["error"]["code"] == -32700
    assert truncated_deep["id"] is None and truncated_deep["error"]["code"] == -32700
    assert invalid["id"] == 9 and invalid["error"]["code"] == -32600


@pytest.mark.anyio
async def test_a_lone_surrogate_in_a_request_gets_a_tool_error_not_a_parse_error(runner: ToolRunner) -> None:
    async with stdio_session(runner) as io:
        answer = await io.request(call_line(6, "read_note", {"path": "x"}).replace('"x"', '"\\ud800.md"'))
        odd_id = await io.request('{"jsonrpc": "2.0", "id": "\\udc00", "method": "ping"}')
        alive = await io.request('{"jsonrpc": "2.0", "id": 7, "method": "ping"}')
    assert answer["id"] == 6
    assert answer["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"].startswith(
        "Argument 'path' is not valid Unicode text (a lone surrogate at character 0)."
    )
    assert odd_id["id"] == "\ufffd"  # answered; an id that is not Unicode cannot come back as it was
    assert alive == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_json_depth_skips_brackets_inside_strings() -> None:
    assert json_depth('{"a": "[[[{{{", "b": [1, {"c": "\\"]]]"}]}') == 3
    assert json_depth('"just a string"') == 0


# -- the write guard -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_write_guard_repairs_lone_surrogates_and_answers_what_cannot_be_written() -> None:
    send, receive = anyio.create_memory_object_stream[SessionMessage](10)
    guard = WritesOnlyWritable(send)
    bad_text = types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"tools": [{"name": "a\ud800"}]})
    too_deep = types.JSONRPCResponse(jsonrpc="2.0", id=2, result={"x": nested(400)})
    deep_notice = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"x": nested(400)})
    fine = types.JSONRPCResponse(jsonrpc="2.0", id=3, result={})
    for message in (bad_text, too_deep, deep_notice, fine):
        await guard.send(SessionMessage(message))
    await send.aclose()
    async with receive:
        written = [item.message.model_dump_json(by_alias=True, exclude_unset=True) async for item in receive]
    assert [json.loads(line) for line in written] == [
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a\ufffd"}]}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {
                "code": types.INTERNAL_ERROR,
                "message": "Internal error: the answer could not be written as JSON. This is a bug in teamvault-mcp.",
            },
        },
        {"jsonrpc": "2.0", "id": 3, "result": {}},  # the notification nobody waits for was dropped
    ]


# -- over a real child process -----------------------------------------------------------------------


def echo_route(exchange: Exchange) -> None:
    """A server that answers whoami with a lone surrogate escape and echoes the request's headers."""
    headers = json.dumps(exchange.headers)
    body = '{"user": {"id": "u1", "email": "a@b.c", "name": "K\\ud800z ' + json.dumps(headers)[1:-1] + '"}}'
    exchange.answer(200, body.encode())


def test_deep_and_hostile_traffic_over_stdio_is_answered_and_the_process_lives_on() -> None:
    with loopback_server() as server:
        server.route("GET", "/api/auth/me", echo_route)
        child = StdioChild(
            ENTRY_POINTS["python -m teamvault_mcp"],
            child_env(TEAM_VAULT_URL=server.url, TEAM_VAULT_API_KEY=API_KEY, TEAM_VAULT_PROJECT_ID="p1"),
        )
        child.initialize()
        child.send(deep_line(10, 200))
        deep = child.receive()
        child.send(deep_line(11, 5_000))
        deeper = child.receive()
        whoami = child.request(12, "tools/call", {"name": "whoami", "arguments": {}})
        alive = child.request(13, "ping")
        code, stderr = child.close()
    assert deep["id"] == 10 and deep["result"]["isError"] is True
    assert "nests arrays and objects more than 64 levels deep" in deep["result"]["content"][0]["text"]
    assert deeper["id"] == 11 and deeper["error"]["code"] == types.INVALID_REQUEST
    assert whoami["id"] == 12 and whoami["result"]["isError"] is False
    name = whoami["result"]["content"][0]["text"]
    assert name.startswith("K\ufffdz ")  # the lone surrogate became U+FFFD instead of ending the process
    assert "X-API-Key" in name and API_KEY not in json.dumps(whoami) and "***" in name
    assert alive == {"jsonrpc": "2.0", "id": 13, "result": {}}
    assert code == 0
    assert API_KEY not in stderr
