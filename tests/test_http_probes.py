"""``serve --http``'s probes and metrics: ``GET /healthz``, ``GET /readyz``, ``GET /metrics`` (``--metrics``).

In-process replicas on 127.0.0.1 in front of a real local vault, asked with plain HTTP as a load balancer's probe
and a Prometheus scraper ask; the readiness cache is driven by the service's injected clock, and its vault requests
are counted at the vault.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support import seeding
from support.env import child_env
from support.fakes import FakeClock
from support.http_service import TOKEN, http_service, mcp_client
from support.waiting import GENEROUS, await_until

from teamvault_mcp.errors import ConfigError
from teamvault_mcp.http_config import load_http_config
from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.http import HttpService
from teamvault_mcp.server.http_probes import READY_TTL

pytestmark = pytest.mark.anyio

FILES = "/api/projects/*/files"
ME = ("GET", "/api/auth/me")
#: A port nothing listens on (discard): the vault cannot be reached there.
NOWHERE = "http://127.0.0.1:9"


def get(service: HttpService, path: str, *, secret: str | None = None, **headers: str) -> httpx2.Response:
    if secret is not None:
        headers["Authorization"] = f"Bearer {secret}"
    return httpx2.get(service.url.removesuffix("/mcp") + path, headers=headers, timeout=GENEROUS)


def samples(service: HttpService) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of ``GET /metrics`` (with the token), by name and labels."""
    answer = get(service, "/metrics", secret=TOKEN)
    assert answer.status_code == 200, answer.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


# -- /healthz and /readyz ---------------------------------------------------------------------------


def test_healthz_answers_ok_without_a_token(vault: LocalVault) -> None:
    with http_service(vault) as service:
        answer = get(service, "/healthz")
    assert (answer.status_code, answer.text) == (200, "ok")


def test_a_probe_with_the_host_it_dialled_is_answered_on_a_loopback_bind_where_mcp_is_refused(
    vault: LocalVault,
) -> None:
    with http_service(vault) as service:
        assert get(service, "/healthz", Host="10.1.2.3:8000").status_code == 200
        assert get(service, "/readyz", Host="10.1.2.3:8000").status_code == 200
        refused = httpx2.post(service.url, headers={"Host": "10.1.2.3:8000"}, timeout=GENEROUS)
        assert refused.status_code == 421


def test_probes_refuse_a_browser_of_another_origin_and_answer_get_only(vault: LocalVault) -> None:
    with http_service(vault) as service:
        assert get(service, "/healthz", Origin="http://evil.example").status_code == 403
        posted = httpx2.post(service.url.replace("/mcp", "/healthz"), timeout=GENEROUS)
    assert posted.status_code == 405 and posted.headers["allow"] == "GET"


def test_readyz_asks_the_vault_with_the_key_once_per_few_seconds(vault: LocalVault) -> None:
    clock = FakeClock()
    with http_service(vault, clock=clock) as service:
        answers = [get(service, "/readyz") for _ in range(3)]
        asked = vault.faults.seen.count(ME)
        clock.advance(READY_TTL)
        again = get(service, "/readyz")
        asked_again = vault.faults.seen.count(ME)
    assert [(answer.status_code, answer.text) for answer in answers] == [(200, "ready")] * 3
    assert asked == 1  # three probes, one request at the vault
    assert again.status_code == 200 and asked_again == 2


def test_readyz_is_503_when_the_vault_refuses_the_key_and_never_shows_it(vault: LocalVault) -> None:
    wrong = "osync_" + "0" * 64
    with http_service(vault, config={"api_key": wrong}) as service:
        answer = get(service, "/readyz")
    assert answer.status_code == 503
    assert answer.text == "not ready: the Team Vault server refuses the configured key"
    assert wrong not in answer.text and TOKEN not in answer.text


def test_readyz_is_503_when_the_vault_cannot_be_reached_and_ready_again_when_it_answers(vault: LocalVault) -> None:
    clock = FakeClock()
    with http_service(vault, clock=clock) as service:
        vault.faults.add("GET", "/api/auth/me", Fault.answer(503))
        failing = get(service, "/readyz")
        clock.advance(READY_TTL)
        recovered = get(service, "/readyz")
    assert (failing.status_code, failing.text) == (503, "not ready: the Team Vault server answered HTTP 503")
    assert recovered.status_code == 200


def test_readyz_without_a_vault_says_it_could_not_be_asked(vault: LocalVault) -> None:
    with http_service(vault, config={"base_url": NOWHERE}) as service:
        answer = get(service, "/readyz")
    assert (answer.status_code, answer.text) == (
        503,
        "not ready: the Team Vault server could not be asked (NetworkError)",
    )


def test_readyz_in_team_mode_is_the_vault_answering_without_a_key(vault: LocalVault) -> None:
    with http_service(vault, key_from_client=True) as service:
        ready = get(service, "/readyz")
    with http_service(vault, key_from_client=True, config={"base_url": NOWHERE}) as service:
        unreachable = get(service, "/readyz")
    assert (ready.status_code, ready.text) == (200, "ready")
    assert unreachable.status_code == 503


# -- /metrics ---------------------------------------------------------------------------------------


def test_metrics_are_off_unless_turned_on(vault: LocalVault) -> None:
    with http_service(vault) as service:
        answer = get(service, "/metrics", secret=TOKEN)
    assert answer.status_code == 404


def test_metrics_are_behind_the_token(vault: LocalVault) -> None:
    with http_service(vault, metrics=True) as service:
        refused = [get(service, "/metrics"), get(service, "/metrics", secret="wrong-token-0123456789")]
        shown = get(service, "/metrics", secret=TOKEN)
    assert [answer.status_code for answer in refused] == [401, 401]
    assert shown.status_code == 200 and shown.headers["content-type"].startswith("text/plain; version=")


async def test_metrics_count_calls_by_tool_and_outcome_vault_requests_retries_and_cache_hits(
    vault: LocalVault, tmp_path: Path
) -> None:
    seeding.seed(vault, "a.md", "alpha\n")
    with http_service(vault, metrics=True, config={"cache_dir": tmp_path / "cache"}) as service:
        async with mcp_client(service.url) as client:
            vault.faults.add("GET", FILES, Fault.answer(503))  # the first listing is answered 503, then retried
            first = await client.call_tool("read_note", {"path": "a.md"})
            second = await client.call_tool("read_note", {"path": "a.md"})
            missing = await client.call_tool("read_note", {"path": "no/such.md"})
            unknown = await client.call_tool("no_such_tool", {})
            during = samples(service)
    assert (first.is_error, second.is_error, missing.is_error, unknown.is_error) == (False, False, True, True)
    calls = "teamvault_mcp_tool_calls_total"
    assert value(during, calls, tool="read_note", outcome="ok") == 2
    assert value(during, calls, tool="read_note", outcome="error") == 1
    assert value(during, calls, tool="unknown", outcome="error") == 1
    assert value(during, "teamvault_mcp_tool_call_seconds_count", tool="read_note") == 3
    assert value(during, "teamvault_mcp_vault_requests_total", method="GET", status="503") == 1
    assert value(during, "teamvault_mcp_vault_requests_total", method="GET", status="200") >= 4
    assert value(during, "teamvault_mcp_vault_retries_total", method="GET") == 1
    assert value(during, "teamvault_mcp_cache_lookups_total", result="hit") >= 1  # the second read
    assert value(during, "teamvault_mcp_cache_lookups_total", result="miss") >= 1  # the first
    assert value(during, "teamvault_mcp_http_sessions_active") == 1


async def test_metrics_never_show_the_token_or_a_key(vault: LocalVault) -> None:
    with http_service(vault, metrics=True) as service:
        async with mcp_client(service.url) as client:
            await client.call_tool("write_note", {"path": f"{TOKEN}.md", "content": f"{vault.api_key}\n"})
        text = get(service, "/metrics", secret=TOKEN).text
    assert 'teamvault_mcp_tool_calls_total{outcome="ok",tool="write_note"} 1.0' in text
    assert TOKEN not in text and vault.api_key not in text


async def test_in_team_mode_metrics_need_no_token_and_show_no_callers_key(vault: LocalVault) -> None:
    alice = vault.add_user("alice@example.com", roles={"alpha": "EDITOR"})
    with http_service(vault, key_from_client=True, metrics=True) as service:
        async with mcp_client(service.url, secret=alice.api_key) as client:
            await client.call_tool("whoami", {})
        answer = get(service, "/metrics")
    assert answer.status_code == 200
    assert 'teamvault_mcp_tool_calls_total{outcome="ok",tool="whoami"} 1.0' in answer.text
    assert alice.api_key not in answer.text and alice.email not in answer.text


async def test_a_call_the_client_cancels_counts_as_cancelled(vault: LocalVault) -> None:
    import anyio

    vault.faults.add("GET", FILES, Fault.hang(at_most=300))
    patient = {"call_budget": 300.0, "attempt_timeout": 300.0}
    with http_service(vault, metrics=True, config=patient) as service:
        async with mcp_client(service.url) as client:
            async with anyio.create_task_group() as group:  # the SDK sends notifications/cancelled

                async def read() -> None:
                    await client.call_tool("read_note", {"path": "a.md"})

                group.start_soon(read)
                await await_until(lambda: vault.faults.injected, "the read reaching the vault")
                group.cancel_scope.cancel()
            await await_until(
                lambda: value(
                    samples(service), "teamvault_mcp_tool_calls_total", tool="read_note", outcome="cancelled"
                ),
                "the cancelled call being counted",
            )
            await await_until(lambda: vault.faults.hang_ended, "the vault seeing the request closed")
            after = await client.call_tool("whoami", {})  # the session goes on
    assert not after.is_error


async def test_two_services_in_one_process_count_apart(vault: LocalVault) -> None:
    with http_service(vault, metrics=True) as one, http_service(vault, metrics=True) as other:
        async with mcp_client(one.url) as client:
            await client.call_tool("whoami", {})
        counted = value(samples(one), "teamvault_mcp_tool_calls_total", tool="whoami", outcome="ok")
        elsewhere = value(samples(other), "teamvault_mcp_tool_calls_total", tool="whoami", outcome="ok")
    assert (counted, elsewhere) == (1, 0)


def test_team_vault_http_metrics_turns_them_on_and_a_bad_value_is_named() -> None:
    assert load_http_config({"TEAM_VAULT_HTTP_TOKEN": TOKEN, "TEAM_VAULT_HTTP_METRICS": "1"}).metrics
    assert not load_http_config({"TEAM_VAULT_HTTP_TOKEN": TOKEN}).metrics
    assert load_http_config({"TEAM_VAULT_HTTP_TOKEN": TOKEN}, metrics=True).metrics
    with pytest.raises(ConfigError, match="TEAM_VAULT_HTTP_METRICS"):
        load_http_config({"TEAM_VAULT_HTTP_TOKEN": TOKEN, "TEAM_VAULT_HTTP_METRICS": "maybe"})


def test_the_server_imports_the_metrics_library_only_when_metrics_are_on() -> None:
    code = (
        "import sys, teamvault_mcp.cli, teamvault_mcp.server.protocol, teamvault_mcp.server.runner, "
        "teamvault_mcp.server.http; print('prometheus_client' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=20)
    assert result.stdout.strip() == "False", result.stderr
