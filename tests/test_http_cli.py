"""``serve --http`` and ``check --http`` on the command line: refusals at start-up, a real child process,
the endpoint check, a clean stop by SIGTERM."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from support.children import CONSOLE_SCRIPT, ROOT
from support.env import child_env
from support.waiting import GENEROUS, too_slow

from teamvault_mcp.cli import main
from teamvault_mcp.errors import ConfigError
from teamvault_mcp.http_config import HttpStartError, load_http_config, parse_listen

TOKEN = "cli-token-0123456789abcdef"
SERVER_ENV = {"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "osync_" + "1" * 64}


def run(argv: list[str], environ: dict[str, str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv, environ)
    out, err = capsys.readouterr()
    return code, out, err


def test_serve_http_without_token_or_key_from_client_refuses_to_start_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["serve", "--http"], SERVER_ENV, capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and "TEAM_VAULT_HTTP_TOKEN" in err and "--key-from-client" in err


def test_a_non_loopback_bind_needs_tls_or_insecure_bind(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["serve", "--http", "0.0.0.0:8765"], {**SERVER_ENV, "TEAM_VAULT_HTTP_TOKEN": TOKEN}, capsys)
    assert code == 2
    assert "--tls-cert" in err and "--insecure-bind" in err
    assert TOKEN not in err


def test_token_and_key_from_client_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    env = {**SERVER_ENV, "TEAM_VAULT_HTTP_TOKEN": TOKEN}
    code, _, err = run(["serve", "--http", "--key-from-client"], env, capsys)
    assert code == 2 and "both given" in err


def test_a_short_token_is_refused_without_showing_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["serve", "--http"], {**SERVER_ENV, "TEAM_VAULT_HTTP_TOKEN": "short-secret"}, capsys)
    assert code == 1
    assert "at least 16" in err and "short-secret" not in err


def test_http_flags_without_http_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["serve", "--key-from-client"], SERVER_ENV, capsys)
    assert code == 2 and "--key-from-client goes with --http only" in err


@pytest.mark.parametrize(
    ("given", "expected"),
    [("8765", ("127.0.0.1", 8765)), ("0.0.0.0:80", ("0.0.0.0", 80)), ("[::1]:9000", ("::1", 9000))],
)
def test_listen_addresses(given: str, expected: tuple[str, int]) -> None:
    assert parse_listen(given) == expected


@pytest.mark.parametrize("given", ["", "host:", "70000", "::1:8765", "[::1]", "a:b"])
def test_bad_listen_addresses_are_refused(given: str) -> None:
    with pytest.raises(HttpStartError, match="PORT"):
        parse_listen(given)


def test_bad_http_variables_are_all_named_at_once() -> None:
    env = {
        "TEAM_VAULT_HTTP_TOKEN": TOKEN,
        "TEAM_VAULT_HTTP_ORIGINS": "agent.example.com",
        "TEAM_VAULT_HTTP_MAX_SESSIONS": "2.5",
        "TEAM_VAULT_HTTP_MAX_BODY_MB": "-1",
        "TEAM_VAULT_HTTP_SESSION_IDLE": "soon",
    }
    with pytest.raises(ConfigError) as refused:
        load_http_config(env)
    text = str(refused.value)
    names = ("ORIGINS", "MAX_SESSIONS", "SESSION_IDLE", "MAX_BODY_MB")
    for name in (f"TEAM_VAULT_HTTP_{name}" for name in names):
        assert name in text


def test_a_served_endpoint_passes_check_http_and_stops_cleanly_on_sigterm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = child_env(TEAM_VAULT_HTTP_TOKEN=TOKEN)
    command = [str(CONSOLE_SCRIPT), "--local", str(tmp_path / "vault"), "serve", "--http", "127.0.0.1:0"]
    child = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stderr is not None
        found: list[str] = []

        def read_first_line() -> None:
            assert child.stderr is not None
            found.append(child.stderr.readline())

        reader = threading.Thread(target=read_first_line, daemon=True)
        reader.start()
        reader.join(GENEROUS)
        assert found, too_slow("serve --http starting", GENEROUS)
        match = re.search(r"at (http://127\.0\.0\.1:\d+/mcp) ", found[0])
        assert match, found[0]
        url = match.group(1)

        code, out, _ = run(["check", "--http", url, "--json"], {"TEAM_VAULT_HTTP_TOKEN": TOKEN}, capsys)
        report = json.loads(out)
        assert code == 0, out
        assert [check["name"] for check in report["checks"]] == ["reachable", "auth", "tools"]

        code, out, _ = run(["check", "--http", url], {"TEAM_VAULT_HTTP_TOKEN": "wrong-token-0123456789"}, capsys)
        assert code == 1
        assert "refused the token" in out and "wrong-token" not in out
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            _, rest = child.communicate(timeout=GENEROUS)
        except subprocess.TimeoutExpired:
            child.kill()
            raise AssertionError(too_slow("serve --http stopping on SIGTERM", GENEROUS)) from None
    assert child.returncode == 128 + signal.SIGTERM
    assert "stopped by SIGTERM" in rest
    assert TOKEN not in found[0] + rest


def test_check_http_of_nothing_listening_says_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["check", "--http", "http://127.0.0.1:9/mcp"], {}, capsys)
    assert code == 1
    assert "no answer" in out


def test_sigterm_cancels_a_call_in_flight_and_audits_it(tmp_path: Path) -> None:
    import httpx2
    from support.http_service import INITIALIZE, POST_HEADERS

    from teamvault_mcp.localvault import Fault, LocalVault

    audit = tmp_path / "audit.jsonl"
    with LocalVault(tmp_path / "vault") as vault:
        vault.faults.add("POST", "/api/projects/*/files", Fault.hang(at_most=300))
        env = child_env(
            TEAM_VAULT_URL=vault.url,
            TEAM_VAULT_API_KEY=vault.api_key,
            TEAM_VAULT_PROJECT_ID=vault.project_id,
            TEAM_VAULT_HTTP_TOKEN=TOKEN,
            TEAM_VAULT_AUDIT_LOG=str(audit),
            TEAM_VAULT_CALL_BUDGET="300",
            TEAM_VAULT_ATTEMPT_TIMEOUT="300",
        )
        command = [str(CONSOLE_SCRIPT), "serve", "--http", "127.0.0.1:0"]
        child = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
        try:
            assert child.stderr is not None
            match = re.search(r"at (http://\S+/mcp) ", child.stderr.readline())
            assert match
            url = match.group(1)
            headers = {**POST_HEADERS, "Authorization": f"Bearer {TOKEN}"}
            opened = httpx2.post(url, json=INITIALIZE, headers=headers, timeout=GENEROUS)
            headers |= {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            write = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "write_note", "arguments": {"path": "n.md", "content": "x\n"}},
            }

            def send() -> None:
                with contextlib.suppress(httpx2.HTTPError):  # the server goes away: what this test does to it
                    httpx2.post(url, json=write, headers=headers, timeout=GENEROUS * 3)

            sender = threading.Thread(target=send, daemon=True)
            sender.start()
            deadline = threading.Event()
            for _ in range(int(GENEROUS / 0.01)):
                if vault.faults.injected:
                    break
                deadline.wait(0.01)
            assert vault.faults.injected, too_slow("the write reaching the vault", GENEROUS)
            child.send_signal(signal.SIGTERM)
            _, rest = child.communicate(timeout=GENEROUS)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert child.returncode == 128 + signal.SIGTERM, rest
        assert vault.faults.hang_ended, "the vault's request was not closed"
    [line] = [json.loads(text) for text in audit.read_text().splitlines()]
    assert (line["tool"], line["outcome"]) == ("write_note", "cancelled")


@pytest.mark.parametrize("megabytes", ["0.0000001", "0.0009"])
def test_a_body_limit_below_1_kib_is_refused_in_the_style_of_the_other_variables(megabytes: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_http_config({"TEAM_VAULT_HTTP_TOKEN": TOKEN, "TEAM_VAULT_HTTP_MAX_BODY_MB": megabytes})
    assert str(refused.value) == f"TEAM_VAULT_HTTP_MAX_BODY_MB={megabytes!r} is below 1 KiB."


def test_a_body_limit_of_1_kib_is_accepted() -> None:
    assert (
        load_http_config({"TEAM_VAULT_HTTP_TOKEN": TOKEN, "TEAM_VAULT_HTTP_MAX_BODY_MB": "0.0009765625"}).max_body_bytes
        == 1024
    )


def test_the_session_share_and_the_connections_per_address_are_read_and_checked() -> None:
    env = {"TEAM_VAULT_HTTP_SESSIONS_PER_CALLER": "4", "TEAM_VAULT_HTTP_CONNECTIONS_PER_ADDRESS": "0"}
    http = load_http_config(env, key_from_client=True)
    assert (http.sessions_per_caller, http.connections_per_address) == (4, 0)
    assert (load_http_config({}, key_from_client=True).sessions_per_caller, http.head_timeout) == (10, 10.0)
    with pytest.raises(ConfigError) as refused:
        load_http_config({"TEAM_VAULT_HTTP_SESSIONS_PER_CALLER": "ten"}, key_from_client=True)
    assert str(refused.value) == (
        "TEAM_VAULT_HTTP_SESSIONS_PER_CALLER='ten' is not a whole number from 0 (no limit) to 100,000."
    )
