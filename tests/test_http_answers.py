"""How ``serve --http`` answers a POST: one JSON body when only the answer can come, a stream when progress can;
and the connection's part (writes sent together, a client gone told to its request).

Through a real in-process server where the wire matters; :class:`CoalescedWrites` and :class:`ClientGone` alone
where it does not.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from support import seeding
from support.http_service import TOKEN, http_service, post

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.server.http import HttpService
from teamvault_mcp.server.http_answers import asks_for_progress
from teamvault_mcp.server.http_limits import ClientGone, CoalescedWrites


@pytest.fixture
def service(vault: LocalVault) -> Iterator[HttpService]:
    with http_service(vault) as running:
        yield running


def session_headers(url: str) -> dict[str, str]:
    opened = post(url)
    headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **headers)
    return headers


def call(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def events(stream: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: ") and line[6:].strip()]


def test_a_call_in_a_session_asking_for_no_progress_is_answered_with_one_json_body(
    vault: LocalVault, service: HttpService
) -> None:
    seeding.seed(vault, "a.md", "# A\nhello\n")
    headers = session_headers(service.url)
    answer = post(service.url, call("read_note", {"path": "a.md"}), **headers)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["mcp-session-id"] == headers["mcp-session-id"]
    message = answer.json()
    assert message["id"] == 7
    assert "hello" in message["result"]["content"][0]["text"]


def test_a_call_asking_for_progress_is_answered_with_a_stream_of_its_progress_then_its_answer(
    vault: LocalVault, service: HttpService
) -> None:
    for number in range(30):
        seeding.seed(vault, f"notes/{number}.md", f"apple {number}\n")
    headers = session_headers(service.url)
    answer = post(service.url, call("search_notes", {"query": "apple"}, {"progressToken": "p1"}), **headers)
    assert answer.headers["content-type"].startswith("text/event-stream")
    sent = events(answer.text)
    progress = [message for message in sent if message.get("method") == "notifications/progress"]
    assert progress, "no progress notification on the stream"
    assert all(message["params"]["progressToken"] == "p1" for message in progress)
    assert sent[-1]["id"] == 7 and not sent[-1]["result"]["isError"]


def test_initialize_is_answered_with_a_stream_as_before(service: HttpService) -> None:
    assert post(service.url).headers["content-type"].startswith("text/event-stream")


def test_a_client_accepting_only_json_is_still_refused_with_406(vault: LocalVault, service: HttpService) -> None:
    seeding.seed(vault, "a.md", "hello\n")
    headers = session_headers(service.url)
    answer = post(service.url, call("read_note", {"path": "a.md"}), Accept="application/json", **headers)
    assert answer.status_code == 406
    assert TOKEN not in answer.text


@pytest.mark.parametrize(
    ("body", "asks"),
    [
        (call("read_note", {"path": "a.md"}), False),
        (call("read_note", {"path": "a.md"}, {"progressToken": 3}), True),
        (call("read_note", {"path": "a.md"}, {"progressToken": None}), False),
        (call("write_note", {"path": "a.md", "content": "progressToken"}), False),  # said, but not in _meta
        (call("write_note", {"path": "caf\u00e9.md", "content": "x"}), False),  # escaped, parsed: no token
    ],
)
def test_a_body_asks_for_progress_only_with_a_progress_token_in_its_meta(body: dict[str, Any], asks: bool) -> None:
    assert asks_for_progress(json.dumps(body).encode()) is asks


def test_a_progress_token_spelt_with_escapes_is_found() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progress\\u0054oken":1}}}'
    assert asks_for_progress(body)


class RecordingTransport(asyncio.Transport):
    """A stand-in for asyncio's socket transport: what was written, in which pieces, and whether it was closed."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


@pytest.mark.anyio
async def test_writes_of_one_turn_of_the_loop_go_out_as_one() -> None:
    transport = RecordingTransport()
    writes = CoalescedWrites(transport, asyncio.get_running_loop())
    writes.write(b"HTTP/1.1 200 OK\r\n\r\n")
    writes.write(b"{}")
    assert transport.written == []
    await asyncio.sleep(0)
    assert transport.written == [b"HTTP/1.1 200 OK\r\n\r\n{}"]


@pytest.mark.anyio
async def test_closing_sends_what_is_pending_first_and_flushing_after_a_close_sends_nothing() -> None:
    transport = RecordingTransport()
    writes = CoalescedWrites(transport, asyncio.get_running_loop())
    writes.write(b"answer")
    writes.close()
    writes.write(b"late")
    await asyncio.sleep(0)
    assert transport.written == [b"answer"]
    assert transport.closed


def test_a_client_gone_calls_each_callback_once_and_never_a_forgotten_one() -> None:
    gone = ClientGone()
    called: list[str] = []
    gone.on_set(lambda: called.append("kept"))
    forget = gone.on_set(lambda: called.append("forgotten"))
    forget()
    gone.set()
    gone.set()
    gone.on_set(lambda: called.append("late"))  # registered after: called at once
    assert called == ["kept", "late"]
