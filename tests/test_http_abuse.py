"""``serve --http`` under abuse (issue 27): slow request heads, one caller taking every session.

A real loopback server (127.0.0.1) in front of a real local vault; the caps are set small in each
test, so that a few raw sockets reach them without exhausting the machine's descriptors.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import ExitStack

import httpx2
import pytest
from support.fakes import FakeClock
from support.http_service import INITIALIZE, POST_HEADERS, TOKEN, http_service, post
from support.waiting import GENEROUS, wait_until

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.http import HttpService


def _slow_sockets(service: HttpService, count: int, stack: ExitStack) -> list[socket.socket]:
    """``count`` connections that have sent the first line of a request head and nothing more."""
    sockets = []
    for _ in range(count):
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", service.port), timeout=GENEROUS))
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sockets.append(sock)
    return sockets


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (it reads end of file, or a reset, or a 503 then end of file)."""
    try:
        while sock.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True


def test_a_request_head_not_finished_within_the_head_timeout_is_closed(vault: LocalVault) -> None:
    with http_service(vault, head_timeout=0.5) as service, ExitStack() as stack:
        (slow,) = _slow_sockets(service, 1, stack)
        slow.sendall(b"Content-Type: application/json\r\n")  # a byte now and then does not extend the deadline
        assert _closed_by_server(slow)  # recv times out (GENEROUS) on a server without a head deadline
        assert service.guard.counts["head_deadline"] == 1


def test_slow_heads_past_the_per_address_cap_are_shed_oldest_first_and_a_normal_client_is_served(
    vault: LocalVault,
) -> None:
    with http_service(vault, connections_per_address=8, max_connections=12) as service, ExitStack() as stack:
        slow = _slow_sockets(service, 20, stack)
        wait_until(lambda: service.guard.counts["shed"] >= 12, "shedding the oldest slow heads")
        for sock in slow[:12]:
            assert _closed_by_server(sock)
        assert service.guard.open_count() == 8
        answer = post(service.url)  # one more connection from the same address: it sheds a slow one
        assert answer.status_code == 200, answer.text
        assert "serverInfo" in answer.text


def test_a_connection_past_the_cap_when_every_one_is_busy_is_answered_503(vault: LocalVault) -> None:
    with http_service(vault, connections_per_address=0, max_connections=2) as service, ExitStack() as stack:
        busy = _slow_sockets(service, 2, stack)
        for sock in busy:  # a whole head, and a body that never comes: busy with a request
            sock.sendall(b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        wait_until(lambda: service.guard.counts["head_deadline"] == 0 and _all_busy(service), "heads parsed")
        late = stack.enter_context(socket.create_connection(("127.0.0.1", service.port), timeout=GENEROUS))
        answer = b""
        while chunk := late.recv(4096):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
        assert answer.endswith(b"Too many connections to this MCP server; try again later.\n")


def _all_busy(service: HttpService) -> bool:
    return service.guard.open_count() == 2 and service.guard.waiting_count() == 0


# -- one member's share of the sessions ----------------------------------------------------------------


def _open_session(service: HttpService, key: str) -> str:
    answer = post(service.url, secret=key)
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


def _ping(service: HttpService, key: str, session_id: str) -> int:
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    return post(service.url, ping, secret=key, **headers).status_code


def test_a_member_opening_more_than_its_share_ends_its_own_oldest_idle_session_and_others_still_get_in(
    vault: LocalVault,
) -> None:
    viewer = vault.add_user("bob@example.com", "Bob", roles={"beta": "VIEWER"})
    editor = vault.add_user("alice@example.com", "Alice", roles={"alpha": "EDITOR"})
    with http_service(vault, key_from_client=True, max_sessions=10, sessions_per_caller=3) as service:
        viewers = [_open_session(service, viewer.api_key) for _ in range(12)]  # as many as the server allows, and more
        assert service.front.shares is not None and service.front.shares.count(viewer.id) == 3
        assert [_ping(service, viewer.api_key, sid) for sid in (viewers[0], viewers[-1])] == [404, 200]
        editors = _open_session(service, editor.api_key)  # today: 503 Too many open sessions
        assert _ping(service, editor.api_key, editors) == 200


def test_a_member_whose_sessions_are_all_in_use_gets_503_and_keeps_them(vault: LocalVault) -> None:
    member = vault.add_user("bob@example.com", "Bob", roles={"beta": "VIEWER"})
    with http_service(vault, key_from_client=True, sessions_per_caller=1) as service, ExitStack() as stack:
        session = _open_session(service, member.api_key)
        stream = stack.enter_context(socket.create_connection(("127.0.0.1", service.port), timeout=GENEROUS))
        stream.sendall(  # a GET stream stays open: the session is in use as long as it is
            f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {member.api_key}\r\n"
            f"Accept: text/event-stream\r\nmcp-session-id: {session}\r\n"
            "mcp-protocol-version: 2025-11-25\r\n\r\n".encode()
        )
        assert stream.recv(4096).startswith(b"HTTP/1.1 200")
        refused = post(service.url, secret=member.api_key)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "60"
        assert refused.text == (
            "Too many open sessions for this key: it holds 1 open session, all in use, and may open no more "
            "(TEAM_VAULT_HTTP_SESSIONS_PER_CALLER); end one (DELETE) or try again later."
        )
        assert _ping(service, member.api_key, session) == 200


def test_a_member_already_holding_sessions_leaves_the_last_ones_to_members_not_yet_seen(vault: LocalVault) -> None:
    members = [vault.add_user(f"m{n}@example.com", f"M{n}", roles={"beta": "VIEWER"}) for n in range(3)]
    with http_service(vault, key_from_client=True, max_sessions=4, sessions_per_caller=2) as service:
        shares = service.front.shares
        assert shares is not None
        for _ in range(3):
            _open_session(service, members[0].api_key)
        _open_session(service, members[1].api_key)  # 3 of 4 open: members[1] needs the reserve for its second
        second = _open_session(service, members[1].api_key)
        assert [shares.count(member.id) for member in members[:2]] == [2, 1]
        _open_session(service, members[2].api_key)  # the fourth and last: for a member holding none
        assert _ping(service, members[1].api_key, second) == 200


# -- keys checked again -------------------------------------------------------------------------------


def test_a_key_the_vault_refuses_at_its_recheck_after_60_s_gets_401_and_its_sessions_end(vault: LocalVault) -> None:
    member = vault.add_user("bob@example.com", "Bob", roles={"beta": "VIEWER"})
    clock = FakeClock()
    with http_service(vault, key_from_client=True, clock=clock) as service:
        session = _open_session(service, member.api_key)
        vault.faults.add("GET", "/api/auth/me", Fault.answer(401), times=1)  # the key is revoked at the vault
        clock.advance(59)
        assert _ping(service, member.api_key, session) == 200  # trusted for 60 s: not asked again
        clock.advance(2)
        assert _ping(service, member.api_key, session) == 401  # today: 200, the key is remembered for ever
        assert vault.faults.seen.count(("GET", "/api/auth/me")) == 2
        clock.advance(11)  # past the refusal's 10 s; the vault accepts the key again
        assert _ping(service, member.api_key, session) == 404  # its session ended with the refusal
        assert vault.faults.seen.count(("GET", "/api/auth/me")) == 3


def test_a_refused_key_is_refused_for_10_s_without_asking_the_vault_again(vault: LocalVault) -> None:
    clock = FakeClock()
    wrong = "osync_" + "0" * 64
    with http_service(vault, key_from_client=True, clock=clock) as service:
        assert [post(service.url, secret=wrong).status_code for _ in range(5)] == [401] * 5
        assert vault.faults.seen.count(("GET", "/api/auth/me")) == 1  # today: 5
        clock.advance(11)
        assert post(service.url, secret=wrong).status_code == 401
        assert vault.faults.seen.count(("GET", "/api/auth/me")) == 2


# -- Origin, parsed strictly ----------------------------------------------------------------------------


@pytest.fixture
def token_service(vault: LocalVault) -> Iterator[HttpService]:
    with http_service(vault) as running:
        yield running


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.com\\@127.0.0.1",  # urlsplit's host: 127.0.0.1
        "http://evil.com@127.0.0.1",
        "http://127.0.0.1/path",
        "http://127.0.0.1:99999",
        "ftp://127.0.0.1",
        "http://127.0.0.1:8765 http://evil.com",
    ],
)
def test_an_origin_that_is_not_exactly_scheme_host_port_is_refused(token_service: HttpService, origin: str) -> None:
    assert post(token_service.url, Origin=origin).status_code == 403


def test_a_request_with_two_origin_headers_is_refused(token_service: HttpService) -> None:
    headers = [
        ("Origin", "http://127.0.0.1:3000"),
        ("Origin", "http://evil.example"),
        ("Authorization", f"Bearer {TOKEN}"),
        *POST_HEADERS.items(),
    ]
    answer = httpx2.post(token_service.url, content=json.dumps(INITIALIZE).encode(), headers=headers, timeout=GENEROUS)
    assert answer.status_code == 403  # today: 200, the first one decides
