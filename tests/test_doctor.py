"""``teamvault-mcp check``: every problem a person must be able to diagnose with it alone.

Against a real local vault on loopback (a wrong key, an unknown project, an old
server without Idempotency-Key), a closed port, a plain-http port spoken to with
https, a TLS listener with a test certificate, an HTTP server that is not Team
Vault, and an injected resolver for DNS.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from support.env import env_for
from support.loopback import loopback_server
from support.policies import FAST
from support.seeding import seed

from teamvault_mcp.cli import main
from teamvault_mcp.config import Config
from teamvault_mcp.doctor import CHECKS, Check, Doctor
from teamvault_mcp.localvault import Fault, LocalVault

FIXTURES = Path(__file__).parent / "fixtures"
FILES = "/api/projects/*/files"


def run(environ: dict[str, str], **options: Any) -> tuple[dict[str, Check], bool]:
    doctor = Doctor(environ, **{"policy": FAST, **options})
    checks = doctor.run()
    assert [check.name for check in checks] == list(CHECKS)  # every check gets its line, in order
    return {check.name: check for check in checks}, doctor.ok


def test_a_healthy_setup_passes_every_check(vault: LocalVault) -> None:
    seed(vault, "notes/a.md", "x\n", "text/markdown")
    checks, ok = run(env_for(vault))
    assert ok
    assert {name: check.status for name, check in checks.items()} == {
        **dict.fromkeys(CHECKS, "pass"),
        "schemas": "skip",
        "instructions": "skip",
    }
    assert checks["instructions"].detail == "skipped: TEAM_VAULT_INSTRUCTIONS_NOTE is not set"
    assert checks["schemas"].detail == "skipped: TEAM_VAULT_SCHEMA_DIR is not set (no schema tools)"
    assert checks["key"].detail == "accepted for local@teamvault.invalid (Local user)"
    assert checks["project"].detail == f'{vault.project_id} "Local vault": readable, 1 file'
    assert checks["write"].detail == "yes: role OWNER in the project"
    assert checks["idempotency"].detail.startswith("supported: a repeated move of notes/a.md to its own path")
    assert "median of 5" in checks["latency"].detail
    assert [op["kind"] for op in vault.store.operations(vault.project_id)] == ["CREATE"]  # nothing changed


def test_the_report_never_shows_the_key(vault: LocalVault, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"], env_for(vault, LOG_LEVEL="debug")) == 0
    out, err = capsys.readouterr()
    assert vault.api_key not in out + err
    assert out.startswith("✓ config ")
    assert out.endswith("\nAll required checks passed.\n")


def test_json_output_has_every_check(vault: LocalVault, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--json"], {**env_for(vault), "TEAM_VAULT_API_KEY": "osync_wrong"}) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [check["name"] for check in report["checks"]] == list(CHECKS)
    key = next(check for check in report["checks"] if check["name"] == "key")
    assert key["status"] == "fail" and "HTTP 401" in key["detail"] and "TEAM_VAULT_API_KEY" in key["hint"]


# -- the four a person must be able to tell apart -----------------------------------------------------


def test_a_bad_key(vault: LocalVault) -> None:
    checks, ok = run({**env_for(vault), "TEAM_VAULT_API_KEY": "osync_" + "0" * 64})
    assert not ok
    assert checks["tcp"].status == "pass"
    assert (checks["key"].status, checks["key"].detail) == ("fail", "the server refused the API key (HTTP 401)")
    assert "create one in Team Vault" in (checks["key"].hint or "")
    assert checks["project"].status == "skip" and checks["project"].detail == "skipped: the key was not accepted"


def test_an_unknown_project_lists_the_ones_the_key_sees(vault: LocalVault) -> None:
    checks, ok = run(env_for(vault, PROJECT_ID="no-such-project"))
    assert not ok
    project = checks["project"]
    assert project.status == "fail"
    assert project.detail.startswith("project no-such-project is unknown or not shared with this key's user (HTTP 404)")
    assert f"This key sees: {vault.project_id} (Local vault)" in project.detail
    assert project.hint == "set TEAM_VAULT_PROJECT_ID to one of those ids"
    assert checks["write"].status == "skip" and checks["idempotency"].status == "skip"


def test_an_old_server_without_idempotency_is_a_warning(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "old", idempotency=False) as old:
        seed(old, "a.md", "x\n", "text/markdown")
        checks, ok = run(env_for(old))
        moves = [op for op in old.store.operations(old.project_id) if op["kind"] == "MOVE"]
    assert ok  # the server works without it
    assert checks["idempotency"].status == "warn"
    assert checks["idempotency"].detail.startswith("not supported: a repeated move of a.md to its own path")
    assert "upgrade the Team Vault server" in (checks["idempotency"].hint or "")
    assert moves == []  # a move to the same path changes nothing


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_closed_port() -> None:
    port = free_port()
    checks, ok = run({"TEAM_VAULT_URL": f"http://127.0.0.1:{port}", "TEAM_VAULT_API_KEY": "k"})
    assert not ok
    assert checks["tcp"].status == "fail"
    assert checks["tcp"].detail == f"cannot connect to 127.0.0.1 port {port} (127.0.0.1: Connection refused)"
    assert checks["key"].detail == "skipped: the server cannot be reached"


def test_a_host_that_does_not_resolve() -> None:
    def resolve(host: str, port: int, **kwargs: Any) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    checks, ok = run({"TEAM_VAULT_URL": "https://vault.example.invalid", "TEAM_VAULT_API_KEY": "k"}, resolve=resolve)
    assert not ok
    assert checks["dns"].status == "fail"
    assert checks["dns"].detail == "cannot resolve vault.example.invalid: [Errno -2] Name or service not known"
    assert "host name in TEAM_VAULT_URL" in (checks["dns"].hint or "")


def test_a_resolved_host_names_its_addresses() -> None:
    port = free_port()

    def resolve(host: str, asked_port: int, **kwargs: Any) -> list[Any]:
        assert (host, asked_port) == ("vault.test", port)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))] * 2

    checks, _ = run({"TEAM_VAULT_URL": f"http://vault.test:{port}", "TEAM_VAULT_API_KEY": "k"}, resolve=resolve)
    assert checks["dns"].detail == "vault.test → 127.0.0.1"
    assert checks["tcp"].detail == f"cannot connect to vault.test port {port} (127.0.0.1: Connection refused)"


def test_plain_http_beyond_this_machine_is_a_warning(vault: LocalVault) -> None:
    def resolve(host: str, port: int, **kwargs: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    doctor = Doctor({}, resolve=resolve)
    config = Config(base_url=f"http://vault.test:{vault.port}", api_key="k")
    assert doctor._way_to_server(config)  # the API checks would look vault.test up for real
    tls = doctor.checks[-1]
    assert (tls.name, tls.status) == ("tls", "warn")
    assert tls.detail == "plain http to vault.test: the API key and the notes travel unencrypted"


def test_https_to_a_plain_http_port(vault: LocalVault) -> None:
    checks, ok = run({**env_for(vault), "TEAM_VAULT_URL": f"https://127.0.0.1:{vault.port}"})
    assert not ok
    assert checks["tls"].status == "fail" and checks["tls"].detail.startswith("TLS handshake with 127.0.0.1 failed")
    assert "use http:// in TEAM_VAULT_URL" in (checks["tls"].hint or "")


def test_a_url_that_is_not_a_team_vault() -> None:
    with loopback_server() as other:  # answers 404 to everything
        checks, ok = run({"TEAM_VAULT_URL": other.url, "TEAM_VAULT_API_KEY": "k"})
    assert not ok
    assert checks["key"].detail.startswith("no Team Vault API at this address: GET /api/auth/me → HTTP 404")
    assert "without /api" in (checks["key"].hint or "")


def test_a_missing_variable_stops_before_any_network() -> None:
    checks, ok = run({"TEAM_VAULT_URL": "https://vault.example.com"})
    assert not ok
    assert checks["config"].status == "fail" and "TEAM_VAULT_API_KEY must be set" in checks["config"].detail
    assert {checks[name].status for name in CHECKS[1:]} == {"skip"}


# -- write ability and the probe ----------------------------------------------------------------------


def test_a_viewer_cannot_write_and_is_not_probed(vault: LocalVault) -> None:
    seed(vault, "a.md", "x\n", "text/markdown")
    viewer = vault.store.add_user("viewer@x", "Viewer")
    vault.store.add_member(vault.project_id, viewer.id, "VIEWER")
    key = vault.store.add_api_key(viewer.id)
    checks, ok = run({**env_for(vault), "TEAM_VAULT_API_KEY": key})
    assert ok
    assert checks["write"].status == "warn" and checks["write"].detail.startswith("no: role VIEWER")
    assert "TEAM_VAULT_READ_ONLY=1" in (checks["write"].hint or "")
    assert checks["idempotency"].detail == "skipped: this key cannot write"
    assert not any(method == "PATCH" for method, _ in vault.faults.seen)


def test_read_only_mode_sends_nothing_that_writes(vault: LocalVault) -> None:
    seed(vault, "a.md", "x\n", "text/markdown")
    checks, ok = run(env_for(vault, READ_ONLY="1"))
    assert ok
    assert checks["write"].status == checks["idempotency"].status == "skip"
    assert not any(method == "PATCH" for method, _ in vault.faults.seen)


def test_an_empty_project_skips_the_probe(vault: LocalVault) -> None:
    checks, ok = run(env_for(vault))
    assert ok
    assert checks["idempotency"].detail == "probe skipped: the project has no file to probe with"


def test_the_probe_stays_inside_the_write_prefixes(vault: LocalVault) -> None:
    seed(vault, "people/a.md", "x\n", "text/markdown")
    checks, _ = run(env_for(vault, WRITE_PREFIXES="agents/"))
    assert checks["idempotency"].detail == "probe skipped: the project has no file under agents/ to probe with"
    seed(vault, "agents/b.md", "x\n", "text/markdown")
    checks, _ = run(env_for(vault, WRITE_PREFIXES="agents/"))
    assert "a repeated move of agents/b.md" in checks["idempotency"].detail


def test_a_refused_probe_answers_the_unknown_write_question(vault: LocalVault, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(vault, "a.md", "x\n", "text/markdown")
    original = vault.store.projects_of

    def without_roles(user: Any) -> list[dict[str, Any]]:
        return [{k: v for k, v in project.items() if k != "role"} for project in original(user)]

    monkeypatch.setattr(vault.store, "projects_of", without_roles)
    checks, _ = run(env_for(vault))
    assert checks["write"].detail == "yes: the server accepted a move that changes nothing"
    vault.faults.add("PATCH", FILES + "/*", Fault.answer(403))
    checks, _ = run(env_for(vault))
    assert checks["write"].status == "warn"
    assert checks["write"].detail == "no: the server refused a move that changes nothing (403)"
    assert checks["idempotency"].status == "unknown"


def test_no_default_project_is_a_warning_that_suggests_one(vault: LocalVault) -> None:
    environ = env_for(vault)
    del environ["TEAM_VAULT_PROJECT_ID"]
    checks, ok = run(environ)
    assert ok
    assert checks["project"].status == "warn"
    suggestion = f"this key sees one: TEAM_VAULT_PROJECT_ID={vault.project_id}"
    assert checks["project"].hint == f"set TEAM_VAULT_PROJECT_ID ({suggestion})"


# -- TLS with a real handshake ----------------------------------------------------------------------------


class TlsListener:
    """A loopback TLS listener with the test certificate; it completes handshakes and closes."""

    def __init__(self) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(FIXTURES / "tls-cert.pem", FIXTURES / "tls-key.pem")
        self._context = context
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            try:
                with self._context.wrap_socket(connection, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                connection.close()

    def close(self) -> None:
        self._socket.close()


@pytest.fixture
def tls_listener() -> Iterator[TlsListener]:
    listener = TlsListener()
    yield listener
    listener.close()


def test_an_untrusted_certificate(tls_listener: TlsListener) -> None:
    checks, ok = run({"TEAM_VAULT_URL": f"https://127.0.0.1:{tls_listener.port}", "TEAM_VAULT_API_KEY": "k"})
    assert not ok
    assert checks["tls"].status == "fail"
    assert checks["tls"].detail == "the certificate of 127.0.0.1 is not trusted: self-signed certificate"
    assert "REQUESTS_CA_BUNDLE" in (checks["tls"].hint or "")


def test_a_trusted_certificate_and_its_expiry(tls_listener: TlsListener, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(FIXTURES / "tls-cert.pem"))
    url = f"https://localhost:{tls_listener.port}"  # a URL of its own: requests' settings are looked up once per URL
    environ = {"TEAM_VAULT_URL": url, "TEAM_VAULT_API_KEY": "k"}
    checks, _ = run(environ)
    assert checks["tls"].status == "pass"
    assert checks["tls"].detail.startswith("TLSv1.") and "certificate valid until 2126-" in checks["tls"].detail
    checks, _ = run(environ, now=lambda: datetime(2126, 11, 1, tzinfo=UTC))
    assert checks["tls"].status == "warn" and checks["tls"].hint == "renew the server's certificate soon"


SCHEMA = """```yaml schema
metadata: {schemaName: person, identifierField: slug, pathTemplate: 'People/${slug}.md', pathComponents: [slug]}
fields: {slug: {type: string}}
```
"""


def test_schema_notes_are_checked_when_configured(vault: LocalVault) -> None:
    seed(vault, "schemas/person.md", SCHEMA, "text/markdown")
    checks, ok = run(env_for(vault, SCHEMA_DIR="schemas/"))
    assert ok and (checks["schemas"].status, checks["schemas"].detail) == ("pass", "1 in schemas/ (upsert_person)")
    seed(vault, "schemas/broken.md", b"# no block here\n", "text/markdown")
    checks, ok = run(env_for(vault, SCHEMA_DIR="schemas/"))
    assert ok  # the server runs with the valid ones
    assert checks["schemas"].status == "warn"
    assert checks["schemas"].detail.startswith(
        "1 in schemas/ (upsert_person); 1 note(s) not loaded: schemas/broken.md:"
    )
    assert "list_schemas" in (checks["schemas"].hint or "")


def test_the_probe_follows_project_scoped_write_prefixes(vault: LocalVault) -> None:
    seed(vault, "agents/b.md", "x\n", "text/markdown")
    checks, _ = run(env_for(vault, WRITE_PREFIXES=f"{vault.project_id}:agents/"))
    assert "a repeated move of agents/b.md" in checks["idempotency"].detail
    assert checks["config"].detail.endswith(f"writes limited to agents/ (project {vault.project_id})")
    checks, _ = run(env_for(vault, WRITE_PREFIXES="another-project:agents/"))
    assert checks["idempotency"].detail == (
        f"probe skipped: TEAM_VAULT_WRITE_PREFIXES opens no folder of project {vault.project_id}"
    )
    assert not any(method == "PATCH" for method, _ in vault.faults.seen[-3:])


# -- a server that echoes the key (issue 13) --------------------------------------------------------------


def test_a_server_that_echoes_the_key_never_gets_it_into_the_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    key = "osync_" + "e" * 64

    def echo(exchange: Any) -> None:
        headers = ", ".join(f"{name}: {value}" for name, value in exchange.headers.items())
        if exchange.path == "/api/auth/me":
            body = {"user": {"id": "u1", "email": f"echo {headers}", "name": "\x1b[2J" + exchange.headers["X-API-Key"]}}
            exchange.answer(200, json.dumps(body).encode())
        elif exchange.path == "/api/projects":
            exchange.answer(200, json.dumps({"projects": [{"id": "p1", "name": headers}]}).encode())
        else:
            exchange.answer(500, f"<html><title>failed: {headers}</title></html>".encode(), "text/html")

    with loopback_server() as server:
        for path in ("/api/auth/me", "/api/projects", "/api/projects/p1/files"):
            server.route("GET", path, echo)
        environ = {"TEAM_VAULT_URL": server.url, "TEAM_VAULT_API_KEY": key, "TEAM_VAULT_PROJECT_ID": "p1"}
        environ["TEAM_VAULT_LOG_LEVEL"] = "debug"
        environ["TEAM_VAULT_CACHE_DIR"] = "off"
        assert main(["check"], environ) == 1
        assert main(["check", "--json"], environ) == 1
        sent = {exchange.headers["X-API-Key"] for exchange in server.exchanges}
    out, err = capsys.readouterr()
    assert sent == {key}
    assert key not in out + err
    assert "X-API-Key: ***" in out
    assert "\x1b" not in out  # a server's control characters cannot garble the terminal
    assert "accepted for echo" in out and "failed: " in out


def test_check_reports_the_instructions_note_read_whole_cut_or_missing(vault: LocalVault) -> None:
    seed(vault, "agents/conventions.md", "Meeting notes go in meetings/.\n", "text/markdown")
    checks, ok = run(env_for(vault, INSTRUCTIONS_NOTE="agents/conventions.md"))
    assert ok and checks["instructions"].status == "pass"
    assert checks["instructions"].detail == "agents/conventions.md: 31 characters, added to the instructions"

    seed(vault, "agents/long.md", "".join(f"Rule {n}: be kind.\n" for n in range(400)), "text/markdown")
    checks, ok = run(env_for(vault, INSTRUCTIONS_NOTE="agents/long.md"))
    assert ok and checks["instructions"].status == "warn"
    assert "only the first 4,000 go into the instructions" in checks["instructions"].detail
    assert "shorten the note" in (checks["instructions"].hint or "")

    checks, ok = run(env_for(vault, INSTRUCTIONS_NOTE="agents/nothing.md"))
    assert ok and checks["instructions"].status == "warn"  # the server starts without it: not a failure
    assert checks["instructions"].detail == "no note at agents/nothing.md: the instructions go without it"
    assert "TEAM_VAULT_INSTRUCTIONS_NOTE" in (checks["instructions"].hint or "")


@pytest.mark.parametrize(("setting", "said"), [("", "structured content off"), ("on", "structured content on")])
def test_the_config_check_reports_whether_results_carry_structured_content(
    vault: LocalVault, setting: str, said: str
) -> None:
    checks, _ = run({**env_for(vault), "TEAM_VAULT_STRUCTURED_CONTENT": setting})
    assert checks["config"].status == "pass" and said in checks["config"].detail
