"""One keep-alive pool shared by all tool calls: reuse, exact cancellation, and stale connections.

Against a real loopback server that counts the TCP connections it accepts.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import urllib3.response
from mcp import Client
from support.fakes import PROJECT, FakeClock, file_record, make_config
from support.loopback import Exchange, hang, json_answer, loopback_server, on_arrival
from support.waiting import GENEROUS, assert_within, await_until

from teamvault_mcp.errors import CallCancelledError, NetworkError
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.vault import transport as http_module
from teamvault_mcp.vault.interrupt import AttemptGuard, CancelToken
from teamvault_mcp.vault.transport import HttpPool, HttpSession

FILES = f"/api/projects/{PROJECT}/files"
ME = json_answer(200, {"user": {"id": "u1", "email": "a@b.c", "name": "A"}})


def note_routes(server: Any, text: bytes = b"hello\n") -> None:
    server.route("GET", FILES, json_answer(200, {"files": [file_record("a.md", "f1", size=str(len(text)))]}))
    server.route("GET", f"{FILES}/f1", lambda exchange: exchange.answer(200, text, "text/markdown"))
    server.route("GET", "/api/auth/me", ME)


@asynccontextmanager
async def mcp_client(runner: ToolRunner) -> AsyncIterator[Client]:
    async with Client(build_server(runner), mode="legacy") as client:
        yield client


def runner_for(url: str, clock: FakeClock | None = None) -> ToolRunner:
    return ToolRunner(make_config(base_url=url), clock=clock)


# -- reuse ----------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_calls_in_a_row_share_one_tcp_connection() -> None:
    with loopback_server() as server:
        note_routes(server)
        async with mcp_client(runner_for(server.url)) as client:
            for _ in range(3):
                result = await client.call_tool("read_note", {"path": "a.md"})
                assert not result.is_error
            await client.call_tool("whoami", {})
        assert server.accepted == 1
        assert len(server.exchanges) == 7  # 3 × (resolve + download) + whoami, all on it


@pytest.mark.anyio
async def test_a_cancel_during_one_of_four_concurrent_calls_breaks_only_that_call() -> None:
    with loopback_server() as server:
        note_routes(server)
        slow = hang(seconds=60.0)

        def resolve(exchange: Exchange) -> None:
            if "path=slow.md" in exchange.query:
                slow(exchange)
            else:
                exchange.answer(200, b'{"files": [' + _record_json("a.md") + b"]}")

        server.route("GET", FILES, resolve)
        runner = runner_for(server.url)
        results: dict[str, Any] = {}
        async with mcp_client(runner) as client:

            async def read(name: str, path: str) -> None:
                results[name] = await client.call_tool("read_note", {"path": path})

            async with anyio.create_task_group() as group:
                for name in ("one", "two", "three"):
                    group.start_soon(read, name, "a.md")
                async with anyio.create_task_group() as slow_group:  # cancelled once it hangs: the host's cancel
                    slow_group.start_soon(read, "slow", "slow.md")
                    await await_until(lambda: [e for e in server.exchanges if "path=slow.md" in e.query], "slow.md")
                    slow_group.cancel_scope.cancel()
            after = await client.call_tool("read_note", {"path": "a.md"})
        assert set(results) == {"one", "two", "three"}
        assert all(not result.is_error and result.content[0].text.endswith("]\nhello\n") for result in results.values())
        assert not after.is_error
        hung = [e for e in server.exchanges if "path=slow.md" in e.query]
        assert len(hung) == 1
        # The server's thread sees the close when it next looks (every 10 ms): under load, after this line runs.
        await await_until(lambda: hung[0].disconnected_at is not None, "the hung request's connection closed")


def _record_json(path: str) -> bytes:
    import json

    return json.dumps(file_record(path, "f1", size="6")).encode()


# -- exact cancellation on shared connections -------------------------------------------------------------


def test_a_late_cancel_never_reaches_a_connection_another_call_now_uses() -> None:
    with loopback_server() as server:
        server.route("GET", "/ok", json_answer(200, {"ok": True}))
        pool = HttpPool(server.url)
        first, second = CancelToken(), CancelToken()
        HttpSession(first, pool).send("GET", server.url + "/ok", api_path="/ok", limit=5, headers={})
        first.cancel()  # the first call is cancelled after its request ended
        answer = HttpSession(second, pool).send("GET", server.url + "/ok", api_path="/ok", limit=5, headers={})
        assert answer.status == 200
        assert server.accepted == 1  # the second call got the same connection, unharmed


def test_a_connection_of_a_cancelled_attempt_never_goes_back_to_the_pool() -> None:
    with loopback_server() as server:
        server.route("GET", "/ok", json_answer(200, {"ok": True}))
        token = CancelToken()
        server.route("GET", "/hang", on_arrival(token.cancel, hang(seconds=120)))  # cancelled as it waits
        pool = HttpPool(server.url)
        HttpSession(CancelToken(), pool).send("GET", server.url + "/ok", api_path="/ok", limit=5, headers={})
        with pytest.raises(CallCancelledError):  # only the cancel can end it: the limit is 60 s, the hang 120 s
            HttpSession(token, pool).send("GET", server.url + "/hang", api_path="/hang", limit=60, headers={})
        HttpSession(CancelToken(), pool).send("GET", server.url + "/ok", api_path="/ok", limit=5, headers={})
        assert server.accepted == 2  # /hang used the pooled connection; after the cancel, a new one


def _open_idle(pool: HttpPool) -> list[Any]:
    """The idle connections of ``pool`` that still hold a socket."""
    manager = pool.adapter.poolmanager
    keys = manager.pools.keys()  # a RecentlyUsedContainer: it cannot be iterated itself
    pools = [manager.pools[key] for key in keys]
    return [c for p in pools if p.pool is not None for c in list(p.pool.queue) if c is not None and c.sock is not None]


def test_a_request_or_a_connect_after_the_pool_closed_leaves_no_connection_open() -> None:
    """The server is going away while a warm-up still sends (it stops at its next step): what that step opens
    is closed as it ends, not left for the garbage collector (a ResourceWarning, and a socket held meanwhile)."""
    with loopback_server() as server:
        server.route("GET", "/ok", json_answer(200, {"ok": True}))
        pool = HttpPool(server.url)
        pool.close()
        answer = HttpSession(CancelToken(), pool).send("GET", server.url + "/ok", api_path="/ok", limit=5, headers={})
        assert answer.status == 200
        assert _open_idle(pool) == []
        assert pool.connect_ahead(2) == 2
        assert _open_idle(pool) == []


class SocketConnection:
    """Just what AttemptGuard needs of a connection: its socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock


def test_a_stop_and_a_release_are_ordered_by_the_guards_lock() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        connection = SocketConnection(ours)
        released_first = AttemptGuard()
        released_first.register(connection)
        assert released_first.release(connection) is True  # back to the pool …
        released_first.stop("cancelled")  # … so a late stop cannot reach it
        ours.sendall(b"still open")
        assert theirs.recv(32) == b"still open"

        stopped_first = AttemptGuard()
        stopped_first.register(connection)
        stopped_first.stop("cancelled")  # shuts the socket …
        assert stopped_first.release(connection) is False  # … and the pool must drop it
        assert theirs.recv(32) == b""


# -- stale connections ----------------------------------------------------------------------------------------


def closes_kept_alive_connections(answer: Any) -> Any:
    """A route that drops a connection it has already served on (as after a keep-alive timeout)."""

    def route(exchange: Exchange) -> None:
        handler = exchange.handler
        served = getattr(handler, "served", 0)
        if served:
            handler.close_connection = True  # no answer: the connection just closes
            return
        handler.served = served + 1  # type: ignore[attr-defined]
        answer(exchange)

    return route


@pytest.mark.anyio
async def test_a_stale_pooled_connection_is_sent_again_at_once_without_counting_an_attempt(
    clock: FakeClock,
) -> None:
    with loopback_server() as server:
        note_routes(server)
        server.route("GET", "/api/auth/me", closes_kept_alive_connections(ME))
        async with mcp_client(runner_for(server.url, clock)) as client:
            assert not (await client.call_tool("whoami", {})).is_error
            result = await client.call_tool("whoami", {})  # its pooled connection is dropped by the server
        assert not result.is_error
        assert clock.waits == []  # no pause: not a counted failure
        assert server.accepted == 2
        assert len(server.requests_to("GET", "/api/auth/me")) == 3


@pytest.mark.anyio
async def test_a_write_sent_again_keeps_its_idempotency_key(clock: FakeClock) -> None:
    with loopback_server() as server:
        note_routes(server)
        updated = file_record("a.md", "f1", contentHash="0" * 64)
        server.route("PUT", f"{FILES}/f1", closes_kept_alive_connections(json_answer(200, {"file": updated})))
        server.route("GET", FILES, json_answer(200, {"files": [file_record("a.md", "f1")]}))
        async with mcp_client(runner_for(server.url, clock)) as client:
            await client.call_tool("write_note", {"path": "a.md", "content": "one"})  # fresh connection
            await client.call_tool("write_note", {"path": "a.md", "content": "one"})  # stale, then sent again
        puts = server.requests_to("PUT", f"{FILES}/f1")
        assert len(puts) == 3
        assert puts[1].headers["Idempotency-Key"] == puts[2].headers["Idempotency-Key"]
        assert puts[0].headers["Idempotency-Key"] != puts[1].headers["Idempotency-Key"]


@pytest.mark.anyio
async def test_the_free_resend_is_given_once_per_request(clock: FakeClock) -> None:
    with loopback_server() as server:
        note_routes(server)

        def always_drops(exchange: Exchange) -> None:
            exchange.handler.close_connection = True

        async with mcp_client(runner_for(server.url, clock)) as client:
            await client.call_tool("whoami", {})  # a connection to reuse
            server.route("GET", "/api/auth/me", always_drops)
            result = await client.call_tool("whoami", {})
        assert result.is_error
        text = result.content[0].text
        assert "Gave up after 3 attempts" in text  # the resend is not counted …
        assert len(server.requests_to("GET", "/api/auth/me")) == 1 + 4  # … but it was sent
        assert len(clock.waits) == 2  # pauses only between counted attempts


def test_a_new_connection_that_fails_is_not_stale() -> None:
    with loopback_server() as server:

        def drops(exchange: Exchange) -> None:
            exchange.handler.close_connection = True

        server.route("GET", "/drop", drops)
        with pytest.raises(NetworkError) as caught:
            HttpSession(CancelToken(), HttpPool(server.url)).send(
                "GET", server.url + "/drop", api_path="/drop", limit=5, headers={}
            )
        assert type(caught.value) is NetworkError
        assert "closed the connection without answering" in str(caught.value)


def test_many_threads_share_the_pool_safely() -> None:
    with loopback_server() as server:
        server.route("GET", "/ok", json_answer(200, {"ok": True}))
        pool = HttpPool(server.url)
        failures: list[BaseException] = []

        def worker() -> None:
            try:
                for _ in range(20):
                    answer = HttpSession(CancelToken(), pool).send(
                        "GET", server.url + "/ok", api_path="/ok", limit=5, headers={}
                    )
                    assert answer.status == 200
            except BaseException as error:  # reported below
                failures.append(error)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert_within(time.monotonic() - started, 3 * GENEROUS, "160 requests on 8 threads")
        assert server.accepted <= 8  # at most one connection per thread, reused


def test_a_stop_that_comes_as_the_answer_ends_keeps_the_connection_out_of_the_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with loopback_server() as server:
        server.route("GET", "/ok", json_answer(200, {"ok": True}))
        pool = HttpPool(server.url)
        original = urllib3.response.HTTPResponse.release_conn

        def stopped_just_before(response: Any) -> None:
            http_module._running.attempt.stop("expired")  # the watchdog fires between the last byte and the release
            original(response)

        monkeypatch.setattr(urllib3.response.HTTPResponse, "release_conn", stopped_just_before)
        answer = HttpSession(CancelToken(), pool).send("GET", server.url + "/ok", api_path="/ok", limit=5, headers={})
        assert answer.status == 200  # the answer was complete
        pools = pool.adapter.poolmanager.pools
        idle = [c for key in pools.keys() for c in pools[key].pool.queue if c is not None]  # noqa: SIM118 (not iterable)
        assert len(pools) == 1 and idle == []
