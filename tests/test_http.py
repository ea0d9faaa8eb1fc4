"""One HTTP attempt against a real loopback server: the whole-attempt limit and socket-level cancellation."""

from __future__ import annotations

import time

import pytest
from support.loopback import drip, hang, json_answer, loopback_server, on_arrival
from support.waiting import GENEROUS, assert_within, wait_until

from teamvault_mcp.errors import AttemptTimeoutError, CallCancelledError, NetworkError
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.transport import HttpPool, HttpSession

LOCAL = "http://127.0.0.1"


def send(session: HttpSession, url: str, limit: float = 10.0) -> bytes:
    return session.send("GET", url, api_path="/slow", limit=limit, headers={}).body


def cancel_once(token: CancelToken, sent: int, after: int) -> None:
    """A drip's ``on_sent``: cancel as the ``after``-th body byte has gone out (the client is reading the body)."""
    if sent == after:
        token.cancel()


def test_a_server_dripping_bytes_cannot_hold_an_attempt_past_its_limit() -> None:
    with loopback_server() as server:
        server.route("GET", "/drip", drip(interval=0.05))
        session = HttpSession(CancelToken(), HttpPool(LOCAL))
        started = time.monotonic()
        with pytest.raises(AttemptTimeoutError) as caught:
            send(session, server.url + "/drip", limit=0.6)
        elapsed = time.monotonic() - started
    # Every byte arrives well within any per-read timeout; only a whole-attempt limit stops it (the drip lasts
    # 500 s). Not before the limit; after it, as soon as this machine gets round to it.
    assert elapsed >= 0.55
    assert_within(elapsed, 0.6 + GENEROUS, "an attempt with a 0.6 s limit")
    assert "timed out" in str(caught.value)


def test_waiting_for_headers_is_bounded_by_the_attempt_limit() -> None:
    with loopback_server() as server:
        server.route("GET", "/hang", hang(seconds=120))
        session = HttpSession(CancelToken(), HttpPool(LOCAL))
        started = time.monotonic()
        with pytest.raises(AttemptTimeoutError):  # the server would answer after 120 s
            send(session, server.url + "/hang", limit=0.5)
        assert time.monotonic() - started >= 0.45
        assert_within(time.monotonic() - started, 0.5 + GENEROUS, "an attempt with a 0.5 s limit")


def test_cancel_shuts_the_socket_while_waiting_for_headers() -> None:
    with loopback_server() as server:
        token = CancelToken()
        server.route("GET", "/hang", on_arrival(token.cancel, hang(seconds=120)))  # cancelled as it waits
        session = HttpSession(token, HttpPool(LOCAL))
        started = time.monotonic()
        with pytest.raises(CallCancelledError):  # the limit is 120 s and the server would answer after 120 s
            send(session, server.url + "/hang", limit=120)
        assert_within(time.monotonic() - started, GENEROUS, "a cancel once the request arrived")
        exchange = server.requests_to("GET", "/hang")[0]
        wait_until(lambda: exchange.disconnected_at is not None, "the server noticing the closed socket")


def test_cancel_shuts_the_socket_while_reading_the_body() -> None:
    with loopback_server() as server:
        token = CancelToken()
        # Cancelled once four bytes of the body have gone out (0.15 s after the head, as the client reads them).
        server.route("GET", "/drip", drip(interval=0.05, on_sent=lambda sent: cancel_once(token, sent, after=4)))
        session = HttpSession(token, HttpPool(LOCAL))
        started = time.monotonic()
        with pytest.raises(CallCancelledError):  # the limit is 120 s, the drip 500 s
            send(session, server.url + "/drip", limit=120)
        assert_within(time.monotonic() - started, GENEROUS, "a cancel while the body drips")


def test_an_attempt_after_cancel_never_touches_the_network() -> None:
    with loopback_server() as server:
        server.route("GET", "/ok", json_answer(200, {}))
        token = CancelToken()
        token.cancel()
        session = HttpSession(token, HttpPool(LOCAL))
        with pytest.raises(CallCancelledError):
            send(session, server.url + "/ok")
        assert server.accepted == 0


def test_the_connection_is_reused_within_one_call_and_dropped_after_an_abort() -> None:
    with loopback_server() as server:
        server.route("GET", "/ok", json_answer(200, {"ok": True}))
        server.route("GET", "/hang", hang(seconds=120))
        session = HttpSession(CancelToken(), HttpPool(LOCAL))
        send(session, server.url + "/ok")
        send(session, server.url + "/ok")
        assert server.accepted == 1  # keep-alive within the call
        with pytest.raises(AttemptTimeoutError):
            send(session, server.url + "/hang", limit=0.3)
        send(session, server.url + "/ok")
        assert server.accepted == 2  # /hang reused the first connection; the aborted one was not reused


def test_a_refused_connection_is_a_network_error() -> None:
    with loopback_server() as server:
        url = server.url
    session = HttpSession(CancelToken(), HttpPool(LOCAL))
    with pytest.raises(NetworkError) as caught:
        send(session, url + "/gone")
    assert "cannot connect" in str(caught.value)
