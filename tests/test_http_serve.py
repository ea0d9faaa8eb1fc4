"""``serve --http``: the same server over Streamable HTTP, through the SDK's HTTP client and raw requests.

In-process uvicorn on 127.0.0.1 (a free port) in front of a real local vault. Token mode unless a
test says ``key_from_client``; the security checks (Origin, Host, token, body size, sessions) are
asserted on the HTTP answers a client sees.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from support import seeding
from support.http_service import TOKEN, http_service, mcp_client, post
from support.waiting import GENEROUS, await_until, wait_until

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.http import HttpService
from teamvault_mcp.tools.table import tools_for

pytestmark = pytest.mark.anyio

FILES = "/api/projects/*/files"


#: A budget and attempt limit far beyond every wait of these tests: only a cancel can end a hanging request.
PATIENT = {"call_budget": 300.0, "attempt_timeout": 300.0}


@pytest.fixture
def patient(vault: LocalVault) -> Iterator[HttpService]:
    with http_service(vault, config=PATIENT) as running:
        yield running


@pytest.fixture
def service(vault: LocalVault) -> Iterator[HttpService]:
    with http_service(vault) as running:
        yield running


# -- the same server as over stdio -----------------------------------------------------------------


async def test_initialize_lists_the_same_tools_as_stdio_and_reads_and_writes(
    vault: LocalVault, service: HttpService
) -> None:
    seeding.seed(vault, "people/kuzma.md", "# Kuzma\nA merchant.\n")
    async with mcp_client(service.url) as client:
        assert client.server_info is not None and client.server_info.name == "team-vault"
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == [tool.name for tool in tools_for(False, None)]
        read = await client.call_tool("read_note", {"path": "people/kuzma.md"})
        written = await client.call_tool("write_note", {"path": "inbox/idea.md", "content": "an idea\n"})
    assert (read.content[0].text.partition("\n")[2], read.is_error) == ("# Kuzma\nA merchant.\n", False)
    assert not written.is_error, written.content[0].text
    assert seeding.content(vault, "inbox/idea.md") == b"an idea\n"


async def test_a_tool_error_is_a_tool_result_over_http(service: HttpService) -> None:
    async with mcp_client(service.url) as client:
        result = await client.call_tool("read_note", {"path": "no/such.md"})
    assert result.is_error
    assert "Note not found: no/such.md" in result.content[0].text


async def test_progress_reaches_an_http_client(vault: LocalVault, service: HttpService) -> None:
    for number in range(30):
        seeding.seed(vault, f"notes/{number}.md", f"apple {number}\n")
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with mcp_client(service.url) as client:
        result = await client.call_tool("search_notes", {"query": "apple"}, progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    assert seen, "no progress notification arrived"


async def test_a_cancelled_call_closes_its_request_at_the_vault(vault: LocalVault, patient: HttpService) -> None:
    service = patient
    vault.faults.add("GET", FILES, Fault.hang(at_most=300))
    async with mcp_client(service.url) as client:
        async with anyio.create_task_group() as group:  # the SDK sends notifications/cancelled

            async def read() -> None:
                await client.call_tool("read_note", {"path": "a.md"})

            group.start_soon(read)
            await await_until(lambda: vault.faults.injected, "the read reaching the vault")
            group.cancel_scope.cancel()
        await await_until(lambda: vault.faults.hang_ended, "the vault seeing the request closed")
        after = await client.call_tool("whoami", {})  # the session goes on
    assert not after.is_error
    assert service.callers.template.active_calls() == 0


async def test_a_client_that_goes_away_has_its_call_cancelled_at_the_vault(
    vault: LocalVault, patient: HttpService
) -> None:
    import httpx2

    service = patient
    vault.faults.add("GET", FILES, Fault.hang(at_most=300))
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}
    opened = post(service.url)
    session = opened.headers["mcp-session-id"]
    headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    post(service.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **headers)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "read_note", "arguments": {"path": "a.md"}},
    }
    async with httpx2.AsyncClient(timeout=GENEROUS) as http, anyio.create_task_group() as group:

        async def send_and_hang_up() -> None:
            async with http.stream("POST", service.url, json=call, headers=headers):
                await anyio.sleep_forever()

        group.start_soon(send_and_hang_up)
        await await_until(lambda: vault.faults.injected, "the read reaching the vault")
        group.cancel_scope.cancel()  # the client closes its connection without a cancel notification
    await await_until(lambda: vault.faults.hang_ended, "the vault seeing the request closed")
    await await_until(lambda: service.callers.template.active_calls() == 0, "the call ending")


# -- who may call --------------------------------------------------------------------------------


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token-0123456789", "Basic dGVzdA==", "Bearer"])
def test_a_missing_or_wrong_token_gets_401_with_www_authenticate(
    service: HttpService, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    answer = post(service.url, secret=None, **headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")
    assert answer.text == "Unauthorized: send 'Authorization: Bearer <token>'."  # the same for every refusal
    assert TOKEN not in answer.text


def test_the_right_token_opens_a_session(service: HttpService) -> None:
    answer = post(service.url)
    assert answer.status_code == 200
    assert answer.headers["mcp-session-id"]


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1.evil.example:8765", "null"])
def test_a_browser_from_another_origin_is_refused_before_its_token_is_looked_at(
    service: HttpService, origin: str
) -> None:
    answer = post(service.url, Origin=origin)
    assert answer.status_code == 403


@pytest.mark.parametrize("origin", ["http://127.0.0.1:3000", "http://localhost:6274", "http://[::1]"])
def test_a_loopback_origin_is_allowed(service: HttpService, origin: str) -> None:
    assert post(service.url, Origin=origin).status_code == 200


def test_an_origin_listed_in_team_vault_http_origins_is_allowed(vault: LocalVault) -> None:
    with http_service(vault, origins=("https://agent.example.com",)) as running:
        assert post(running.url, Origin="https://agent.example.com").status_code == 200
        assert post(running.url, Origin="https://other.example.com").status_code == 403


def test_a_foreign_host_header_on_a_loopback_bind_is_refused(service: HttpService) -> None:
    """DNS rebinding without an Origin (a page's name now resolving to 127.0.0.1)."""
    assert post(service.url, Host="attacker.example:8765").status_code == 421
    assert post(service.url, Host=f"localhost:{service.port}").status_code == 200


def test_other_paths_are_not_found(service: HttpService) -> None:
    assert post(service.url.replace("/mcp", "/other")).status_code == 404


# -- bounds ----------------------------------------------------------------------------------------


def test_an_oversized_body_gets_413_and_writes_nothing(vault: LocalVault) -> None:
    with http_service(vault, max_body_bytes=4096) as running:
        opened = post(running.url)
        headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        big = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "write_note", "arguments": {"path": "big.md", "content": "x" * 10_000}},
        }
        answer = post(running.url, big, **headers)
    assert answer.status_code == 413
    assert [op for op in seeding.operations(vault)] == []


def test_sessions_beyond_the_limit_are_refused_until_one_ends(vault: LocalVault) -> None:
    with http_service(vault, max_sessions=2) as running:
        first, second = post(running.url), post(running.url)
        assert (first.status_code, second.status_code) == (200, 200)
        assert post(running.url).status_code == 503
        deleted = running_delete(running.url, first.headers["mcp-session-id"])
        assert deleted == 200
        assert post(running.url).status_code == 200


def running_delete(url: str, session: str) -> int:
    import httpx2

    answer = httpx2.delete(
        url, headers={"Authorization": f"Bearer {TOKEN}", "mcp-session-id": session}, timeout=GENEROUS
    )
    return answer.status_code


def test_an_idle_session_expires_and_its_id_answers_404(vault: LocalVault, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp.server.streamable_http_manager")
    with http_service(vault, session_idle=0.3) as running:
        session = post(running.url).headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        # No request in flight for 0.3 s ends it (the SDK says so in its log): then its id is unknown. (No ping
        # before: on a loaded machine 0.3 s can pass before it, and the session has rightly expired.)
        wait_until(lambda: f"Session {session} idle timeout" in caplog.text, "the idle session expiring")
        assert post(running.url, ping, **headers).status_code == 404
        assert post(running.url).status_code == 200  # a new session opens as before


# -- the audit log, the key and the token ------------------------------------------------------------


async def test_the_token_appears_in_no_answer_and_no_audit_line(vault: LocalVault, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    with http_service(vault, config={"audit_log": audit}) as running:
        async with mcp_client(running.url) as client:
            await client.call_tool("write_note", {"path": "a.md", "content": f"{TOKEN} {vault.api_key}\n"})
            read = await client.call_tool("read_note", {"path": "a.md"})
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [line["tool"] for line in lines] == ["write_note"]
    assert TOKEN not in audit.read_text() and vault.api_key not in audit.read_text()
    assert vault.api_key not in read.content[0].text  # the server's key is redacted as over stdio


def test_the_listening_socket_is_tcp_so_answers_are_not_held_by_nagle(service: HttpService) -> None:
    """asyncio sets TCP_NODELAY on accepted sockets only when the listening one says IPPROTO_TCP; with proto 0
    every SSE answer's last chunk waited for the client's delayed ACK (40 ms a call, bench/http_bench.py)."""
    import socket

    assert service.socket.proto == socket.IPPROTO_TCP
