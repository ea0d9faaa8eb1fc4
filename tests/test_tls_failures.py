"""A TLS handshake that fails for good says why, at once (issue 31): a certificate the client does not accept,
or https to a port that speaks plain HTTP. A tool call makes one attempt, not three; ``check --http`` names the
failure instead of "is serve --http running there?". A reset in the middle of a handshake is still retried.

Real loopback sockets: a TLS listener with the self-signed test certificate, a plain HTTP server; the servers
count the connections they accept.
"""

from __future__ import annotations

import pytest
from support.fakes import FakeClock
from support.loopback import loopback_server
from support.tls import tls_listener

from teamvault_mcp.cli import main
from teamvault_mcp.errors import NetworkError, TlsRefusedError
from teamvault_mcp.vault.client import TeamVaultClient
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget, RetryPolicy

TOKEN = "tls-token-0123456789abcdef"


def call_list_notes(url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    environ = {
        "TEAM_VAULT_URL": url,
        "TEAM_VAULT_API_KEY": "osync_" + "1" * 64,
        "TEAM_VAULT_PROJECT_ID": "p1",
        "TEAM_VAULT_CACHE_DIR": "off",
    }
    code = main(["call", "list_notes"], environ)
    return code, capsys.readouterr().out


def test_a_certificate_the_client_rejects_fails_at_once_naming_the_cause_and_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with tls_listener() as server:
        code, out = call_list_notes(server.url, capsys)
        accepted = server.accepted
    assert code == 1
    assert accepted == 1, out  # one attempt: the next one would meet the same certificate
    assert out.startswith(
        f"Network error on GET /api/projects/p1/files: TLS: the certificate of 127.0.0.1:{server.port} was not "
        "accepted: self-signed certificate. Nothing was sent; "
    ), out
    assert "set REQUESTS_CA_BUNDLE to the PEM file of the CA that signed it" in out
    assert "Gave up after" not in out and "may or may not have been applied" not in out


def test_https_to_a_plain_http_port_fails_at_once_saying_the_server_does_not_speak_tls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with loopback_server() as plain:
        port = plain.url.rsplit(":", 1)[1]
        code, out = call_list_notes(f"https://127.0.0.1:{port}", capsys)
        accepted = plain.accepted
    assert code == 1
    assert accepted == 1, out
    assert f"TLS: 127.0.0.1:{port} does not speak TLS (" in out
    assert "most likely the server there answers plain HTTP" in out and "in TEAM_VAULT_URL" in out
    assert "Gave up after" not in out


def test_a_reset_in_the_middle_of_a_handshake_is_still_retried() -> None:
    clock = FakeClock()  # the pauses between attempts pass on the fake clock
    with tls_listener(reset_handshakes=True) as server:
        client = TeamVaultClient(
            server.url, "k", budget=Budget(45, clock), token=CancelToken(), clock=clock, policy=RetryPolicy()
        )
        try:
            with pytest.raises(NetworkError) as caught:
                client.whoami()
        finally:
            client.close()
        accepted = server.accepted
    assert not isinstance(caught.value, TlsRefusedError)
    assert accepted == 3 and "(Gave up after 3 attempts" in str(caught.value)


def test_check_http_names_a_certificate_it_does_not_accept_and_how_to_trust_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with tls_listener() as server:
        code = main(["check", "--http", f"{server.url}/mcp"], {"TEAM_VAULT_HTTP_TOKEN": TOKEN})
    out = capsys.readouterr().out
    assert code == 1
    assert (
        f"✗ reachable  TLS: the certificate of 127.0.0.1:{server.port} was not accepted: self-signed certificate\n"
        in out
    )
    assert "fix: if it is the right server, trust its certificate: set SSL_CERT_FILE to the PEM file" in out
    assert "is `teamvault-mcp serve --http` running there?" not in out


def test_check_http_with_https_to_a_plain_http_port_says_the_server_does_not_speak_tls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with loopback_server() as plain:
        port = plain.url.rsplit(":", 1)[1]
        code = main(["check", "--http", f"https://127.0.0.1:{port}/mcp"], {"TEAM_VAULT_HTTP_TOKEN": TOKEN})
    out = capsys.readouterr().out
    assert code == 1
    assert f"✗ reachable  TLS: 127.0.0.1:{port} does not speak TLS (" in out
    assert "serve --http speaks HTTPS when started with --tls-cert and --tls-key" in out
