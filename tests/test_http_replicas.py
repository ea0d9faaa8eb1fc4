"""``serve --http --stateless``: replicas behind a load balancer without session affinity.

Two in-process replicas on 127.0.0.1 share one real local vault, behind a round-robin proxy that sends each
request to the next replica (``support/round_robin.py``); the SDK's own Streamable HTTP client talks to the proxy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import anyio
import pytest
from support import seeding
from support.http_service import TOKEN, http_service, mcp_client, post
from support.round_robin import RoundRobin, round_robin
from support.waiting import GENEROUS, await_until

from teamvault_mcp.cli import main
from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.http import HttpService

pytestmark = pytest.mark.anyio

FILES = "/api/projects/*/files"


@pytest.fixture
def replicas(vault: LocalVault) -> Iterator[tuple[list[HttpService], RoundRobin]]:
    with ExitStack() as stack:
        services = [stack.enter_context(http_service(vault, stateless=True)) for _ in range(2)]
        proxy = stack.enter_context(round_robin([service.url.removesuffix("/mcp") for service in services]))
        yield services, proxy


async def test_one_clients_calls_alternate_between_stateless_replicas_and_all_succeed_writes_included(
    vault: LocalVault, replicas: tuple[list[HttpService], RoundRobin]
) -> None:
    _, proxy = replicas
    seeding.seed(vault, "people/kuzma.md", "# Kuzma\nA merchant.\n")
    async with mcp_client(proxy.url + "/mcp") as client:
        results = [
            await client.call_tool("read_note", {"path": "people/kuzma.md"}),
            await client.call_tool("write_note", {"path": "inbox/idea.md", "content": "an idea\n"}),
            await client.call_tool(
                "edit_note", {"path": "inbox/idea.md", "edits": [{"oldText": "an idea", "newText": "a plan"}]}
            ),
            await client.call_tool("write_note", {"path": "inbox/other.md", "content": "another\n"}),
            await client.call_tool("read_note", {"path": "inbox/idea.md"}),
            await client.call_tool("list_notes", {"prefix": "inbox/"}),
        ]
    failed = [result.content[0].text for result in results if result.is_error]
    assert failed == []
    assert "a plan" in results[4].content[0].text
    assert "inbox/other.md" in results[5].content[0].text
    assert seeding.content(vault, "inbox/idea.md") == b"a plan\n"
    # initialize, notifications/initialized and six calls: every other one on each replica.
    assert min(proxy.served) >= 3, proxy.served


def test_a_stateless_replica_opens_no_session(replicas: tuple[list[HttpService], RoundRobin]) -> None:
    services, _ = replicas
    answer = post(services[0].url)
    assert answer.status_code == 200
    assert "mcp-session-id" not in answer.headers


def test_a_stateless_call_needs_no_initialize_on_that_replica_but_still_its_token(
    replicas: tuple[list[HttpService], RoundRobin],
) -> None:
    services, _ = replicas
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    headers = {"mcp-protocol-version": "2025-11-25"}
    answered = post(services[1].url, call, **headers)
    assert answered.status_code == 200 and '"isError":false' in answered.text.replace(" ", "")
    assert post(services[1].url, call, secret=None, **headers).status_code == 401


async def test_a_stateless_client_that_goes_away_has_its_call_cancelled_at_the_vault(vault: LocalVault) -> None:
    import httpx2

    vault.faults.add("GET", FILES, Fault.hang(at_most=300))
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "read_note", "arguments": {"path": "a.md"}},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {TOKEN}",
        "mcp-protocol-version": "2025-11-25",
    }
    patient = {"call_budget": 300.0, "attempt_timeout": 300.0}
    with http_service(vault, stateless=True, config=patient) as service:
        async with httpx2.AsyncClient(timeout=GENEROUS) as http, anyio.create_task_group() as group:

            async def send_and_hang_up() -> None:
                async with http.stream("POST", service.url, json=call, headers=headers):
                    await anyio.sleep_forever()

            group.start_soon(send_and_hang_up)
            await await_until(lambda: vault.faults.injected, "the read reaching the vault")
            group.cancel_scope.cancel()  # the client closes its connection
        await await_until(lambda: vault.faults.hang_ended, "the vault seeing the request closed")
        await await_until(lambda: service.callers.template.active_calls() == 0, "the call ending")


async def test_team_mode_stateless_counts_no_sessions_against_a_members_share(vault: LocalVault) -> None:
    alice = vault.add_user("alice@example.com", roles={"alpha": "EDITOR"})
    with http_service(vault, key_from_client=True, stateless=True, sessions_per_caller=1) as service:
        async with (
            mcp_client(service.url, secret=alice.api_key) as first,
            mcp_client(service.url, secret=alice.api_key) as second,
        ):
            results = [await client.call_tool("whoami", {}) for client in (first, second, first, second)]
    assert [result.is_error for result in results] == [False] * 4
    assert "alice@example.com" in results[0].content[0].text


async def test_progress_reaches_a_stateless_client(vault: LocalVault) -> None:
    for number in range(30):
        seeding.seed(vault, f"notes/{number}.md", f"apple {number}\n")
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    with http_service(vault, stateless=True) as service:
        async with mcp_client(service.url) as client:
            result = await client.call_tool("search_notes", {"query": "apple"}, progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    assert seen, "no progress notification arrived"


@pytest.mark.parametrize("flag", ["--stateless", "--metrics"])
def test_stateless_and_metrics_go_with_http_only(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    environ = {"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "osync_" + "1" * 64}
    assert main(["serve", flag], environ) == 2
    assert f"{flag} goes with --http only" in capsys.readouterr().err
