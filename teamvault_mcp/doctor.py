"""``teamvault-mcp check``: a doctor for the configured environment.

Each check gives one line: a mark, its name, what it found, and for a problem a
hint on how to fix it. The checks run in order and each needs the ones before it:
the variables, then the way to the server (DNS, TCP, TLS), then the API (the key,
the project, whether the key can write, the latency, Idempotency-Key support).
When one that others need fails, they are reported as skipped.

Nothing is written. The Idempotency-Key probe sends a move of an existing note to
the path it already has, twice with the same key: a server that supports the key
answers the second with ``Idempotent-Replayed: true``; a move to the same path
changes nothing either way (docs/teamvault-api.md §11.1).

Status ``fail`` is a required check that failed (exit code 1); ``warn`` is a problem
the server can run with; ``unknown`` could not be found out; ``skip`` was not tried.

Longer than most modules on purpose: one concern, a list of checks that each need the
ones before, read top to bottom in the order they run and are reported.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from teamvault_mcp.config import Config, load_config
from teamvault_mcp.errors import (
    ConfigError,
    HTTPStatusError,
    TeamVaultError,
    UnexpectedAnswerError,
    printable,
    server_said,
)
from teamvault_mcp.text.redact import Redactor
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget, RetryPolicy, SystemClock

#: The checks, in the order they run and are reported.
CHECKS = ("config", "dns", "tcp", "tls", "key", "project", "latency", "write", "idempotency", "schemas", "instructions")
MARKS = {"pass": "✓", "fail": "✗", "warn": "!", "unknown": "?", "skip": "–"}
#: Roles whose holders can change notes (the Team Vault server's editor roles).
WRITE_ROLES = frozenset({"OWNER", "ADMIN", "EDITOR"})
READ_ROLES = frozenset({"VIEWER", "READER", "GUEST"})
#: Seconds for each network step of the doctor, and for each of its API calls.
STEP_TIMEOUT = 5.0
API_BUDGET = 15.0
LATENCY_SAMPLES = 5
SLOW_MS = 1000.0
CERT_WARN_DAYS = 14

Resolver = Callable[..., list[Any]]


@dataclass
class Check:
    name: str
    status: str  # one of MARKS
    detail: str
    hint: str | None = None


class Doctor:
    """Runs the checks for one environment; :meth:`run` returns them in order."""

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        resolve: Resolver = socket.getaddrinfo,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        policy: RetryPolicy | None = None,
    ) -> None:
        self.environ = environ
        self.resolve = resolve
        self.now = now
        self.policy = policy  # None: the server's own, for the configured attempt timeout
        self.checks: list[Check] = []

    def run(self) -> list[Check]:
        """The checks, in order. A server's words in them (names, error texts) never carry the API key,
        which a server may echo, nor control characters that would garble a terminal."""
        self.checks = []
        self._run()
        redactor = Redactor(self.environ.get("TEAM_VAULT_API_KEY", "").strip())
        for check in self.checks:
            check.detail = printable(redactor.text(check.detail))
            check.hint = printable(redactor.text(check.hint)) if check.hint is not None else None
        return self.checks

    def _run(self) -> list[Check]:
        config = self._config()
        if config is None:
            return self._skip_the_rest("the other checks need a valid configuration")
        if not self._way_to_server(config):
            return self._skip_the_rest("the server cannot be reached")
        with self._client(config) as client:
            if not self._key(client):
                return self._skip_the_rest("the key was not accepted")
            project = self._project(config, client)
            self._latency(client)
        self._write_and_idempotency(config, project)
        self._schemas(config, project)
        self._instructions(config, project)
        return self.checks

    @property
    def ok(self) -> bool:
        return not any(check.status == "fail" for check in self.checks)

    def _add(self, name: str, status: str, detail: str, hint: str | None = None) -> Check:
        check = Check(name, status, detail, hint)
        self.checks.append(check)
        return check

    def _skip(self, why: str, *names: str) -> None:
        for name in names:
            self._add(name, "skip", f"skipped: {why}")

    def _skip_the_rest(self, why: str) -> list[Check]:
        done = {check.name for check in self.checks}
        self._skip(why, *(name for name in CHECKS if name not in done))
        return self.checks

    # -- the variables ---------------------------------------------------------------------------

    @staticmethod
    def _index_line(config: Config) -> str:
        """Where the persistent index lives, and whether its SQLite has FTS5."""
        if config.cache_dir is None:
            return "no index on disk (TEAM_VAULT_CACHE_DIR=off: facts kept in memory only)"
        from teamvault_mcp.vault.index_db import sqlite_build

        return f"index beside the cache in {config.cache_dir} ({sqlite_build()})"

    def _config(self) -> Config | None:
        try:
            config = load_config(self.environ)
        except ConfigError as error:
            self._add(
                "config",
                "fail",
                str(error).replace("\n", " "),
                "set the variables named above (the README's Configuration table lists them all)",
            )
            return None
        project = f"default project {config.project_id}" if config.project_id else "no default project"
        parts = [f"TEAM_VAULT_URL={config.base_url}", "TEAM_VAULT_API_KEY set", project]
        if config.read_only:
            parts.append("read-only")
        parts.append(
            "structured content on (outputSchema and structuredContent besides the text)"
            if config.structured_content
            else "structured content off (results are text only)"
        )
        parts.append(self._index_line(config))
        if config.writes_fenced:
            parts.append(f"writes limited to {config.write_scope_text()}")
        if config.audit_log is not None:
            parts.append(f"audit log {config.audit_log}")
        self._add("config", "pass", "; ".join(parts))
        return config

    # -- DNS, TCP, TLS ---------------------------------------------------------------------------

    def _way_to_server(self, config: Config) -> bool:
        from teamvault_mcp.vault.transport import environment_settings

        url = urlsplit(config.base_url)
        host = url.hostname or ""
        port = url.port or (443 if url.scheme == "https" else 80)
        proxies, verify = environment_settings(config.base_url)
        proxy = proxies.get(url.scheme) or proxies.get("all")
        if proxy:
            shown = _without_credentials(proxy)
            self._skip(f"requests go through the proxy {shown}; the API checks below test that way", "dns", "tcp")
            self._add("tls", "skip", f"skipped: requests go through the proxy {shown}")
            return True
        addresses = self._dns(host, port)
        if not addresses:
            return False
        connected = self._tcp(host, port, addresses)
        if connected is None:
            return False
        with connected:
            if url.scheme == "https":
                return self._tls(connected, host, verify)
        if _is_loopback(host):
            self._add("tls", "pass", "plain http on this machine (loopback)")
        else:
            self._add(
                "tls",
                "warn",
                f"plain http to {host}: the API key and the notes travel unencrypted",
                "use https:// in TEAM_VAULT_URL",
            )
        return True

    def _dns(self, host: str, port: int) -> list[str]:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            self._add("dns", "pass", f"{host} is an IP address")
            return [host]
        try:
            found = self.resolve(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as error:
            self._add(
                "dns",
                "fail",
                f"cannot resolve {host}: {error}",
                "check the host name in TEAM_VAULT_URL (a typo? a VPN or internal DNS needed?)",
            )
            return []
        addresses = list(dict.fromkeys(str(entry[4][0]) for entry in found))
        self._add("dns", "pass", f"{host} → {', '.join(addresses)}")
        return addresses

    def _tcp(self, host: str, port: int, addresses: list[str]) -> socket.socket | None:
        problems = []
        for address in addresses:
            started = time.perf_counter()
            try:
                connected = socket.create_connection((address, port), timeout=STEP_TIMEOUT)
            except TimeoutError:
                problems.append(f"{address}: no answer within {STEP_TIMEOUT:g} s")
                continue
            except OSError as error:
                problems.append(f"{address}: {error.strerror or error}")
                continue
            ms = (time.perf_counter() - started) * 1000
            self._add("tcp", "pass", f"connected to {address} port {port} in {ms:.1f} ms")
            return connected
        self._add(
            "tcp",
            "fail",
            f"cannot connect to {host} port {port} ({'; '.join(problems)})",
            "is the server running, and is the port in TEAM_VAULT_URL right? A firewall in between?",
        )
        return None

    def _tls(self, connected: socket.socket, host: str, verify: Any) -> bool:
        context = ssl.create_default_context()
        if isinstance(verify, str):  # the CA bundle requests uses (REQUESTS_CA_BUNDLE, or certifi's)
            context = ssl.create_default_context(cafile=verify)
        elif verify is False:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        connected.settimeout(STEP_TIMEOUT)
        try:
            with context.wrap_socket(connected, server_hostname=host) as secured:
                version = secured.version()
                certificate = secured.getpeercert() or {}
        except ssl.SSLCertVerificationError as error:
            self._add(
                "tls",
                "fail",
                f"the certificate of {host} is not trusted: {error.verify_message or error}",
                "for a private CA, set REQUESTS_CA_BUNDLE to its PEM file; an expired or misnamed certificate "
                "must be replaced on the server",
            )
            return False
        except (ssl.SSLError, OSError) as error:
            self._add(
                "tls",
                "fail",
                f"TLS handshake with {host} failed: {error}",
                "does this port speak TLS? If the server serves plain http here, use http:// in TEAM_VAULT_URL",
            )
            return False
        expires = certificate.get("notAfter")
        if not isinstance(expires, str):
            self._add("tls", "pass", f"{version}; certificate not checked (verification is off)")
            return True
        until = datetime.fromtimestamp(ssl.cert_time_to_seconds(expires), UTC)
        days = (until - self.now()).days
        detail = f"{version}; certificate valid until {until:%Y-%m-%d} ({days} days)"
        if days < CERT_WARN_DAYS:
            self._add("tls", "warn", detail, "renew the server's certificate soon")
        else:
            self._add("tls", "pass", detail)
        return True

    # -- the API ---------------------------------------------------------------------------------

    def _key(self, client: Any) -> bool:
        try:
            user = client.whoami()
        except HTTPStatusError as error:
            if error.status in (401, 403):
                self._add(
                    "key",
                    "fail",
                    f"the server refused the API key (HTTP {error.status})",
                    "the key is wrong, revoked or expired: create one in Team Vault (Settings → API keys) "
                    "and set TEAM_VAULT_API_KEY to it",
                )
            elif 300 <= error.status < 400:
                self._add("key", "fail", str(error), "set TEAM_VAULT_URL to the address the server redirects to")
            elif error.not_team_vault:
                self._not_team_vault("key", error)
            else:
                self._add("key", "fail", str(error), "the server is in trouble: see its logs, try again later")
            return False
        except UnexpectedAnswerError as error:
            self._not_team_vault("key", error)
            return False
        except TeamVaultError as error:
            self._add("key", "fail", str(error), "the server answers too slowly or drops the connection")
            return False
        name = user.name
        who = user.email or user.id
        self._add("key", "pass", f"accepted for {who}" + (f" ({name})" if name else ""))
        return True

    def _not_team_vault(self, name: str, error: TeamVaultError) -> None:
        said = str(error)
        if isinstance(error, HTTPStatusError):  # its own explanation says what the line below says: the answer only
            said = f"{error.method} {error.api_path} → HTTP {error.status}" + server_said(error.detail)
        self._add(
            name,
            "fail",
            f"no Team Vault API at this address: {said}",
            "TEAM_VAULT_URL must be the address of the Team Vault web app, without /api "
            "(e.g. https://vault.example.com)",
        )

    def _project(self, config: Config, client: Any) -> Project | None:
        try:
            projects = client.list_projects()
        except TeamVaultError as error:
            self._add("project", "fail", f"cannot list the projects: {error}")
            return None
        names = ", ".join(f"{p.get('id')} ({p.get('name')})" for p in projects) or "none"
        if config.project_id is None:
            only = f" (this key sees one: TEAM_VAULT_PROJECT_ID={projects[0].get('id')})" if len(projects) == 1 else ""
            self._add(
                "project",
                "warn",
                f"no default project: every tool call must name projectId. This key sees: {names}",
                f"set TEAM_VAULT_PROJECT_ID{only}",
            )
            return None
        record = next((p for p in projects if p.id == config.project_id), None)
        try:
            files = client.list_files(config.project_id)
        except HTTPStatusError as error:
            if error.not_team_vault:
                self._not_team_vault("project", error)
            elif error.status in (403, 404):
                self._add(
                    "project",
                    "fail",
                    f"project {config.project_id} is unknown or not shared with this key's user "
                    f"(HTTP {error.status}). This key sees: {names}",
                    "set TEAM_VAULT_PROJECT_ID to one of those ids"
                    if projects
                    else "ask a project owner to add this key's user to the project",
                )
            else:
                self._add("project", "fail", f"cannot list the notes of {config.project_id}: {error}")
            return None
        except TeamVaultError as error:
            self._add("project", "fail", f"cannot list the notes of {config.project_id}: {error}")
            return None
        title = f' "{record.get("name")}"' if record and record.get("name") else ""
        count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
        self._add("project", "pass", f"{config.project_id}{title}: readable, {count}")
        role = record.get("role") if record else None
        return Project(config.project_id, files, role if isinstance(role, str) else None)

    def _latency(self, client: Any) -> None:
        samples = []
        for _ in range(LATENCY_SAMPLES):
            started = time.perf_counter()
            try:
                client.whoami()
            except TeamVaultError as error:
                self._add("latency", "warn", f"a request failed while measuring: {error}")
                return
            samples.append((time.perf_counter() - started) * 1000)
        median = statistics.median(samples)
        detail = (
            f"{median:.1f} ms per request (median of {len(samples)}: GET /api/auth/me; "
            f"{min(samples):.1f}–{max(samples):.1f} ms)"
        )
        if median > SLOW_MS:
            self._add(
                "latency",
                "warn",
                detail,
                "a slow link: a tool call makes one to three requests; a larger TEAM_VAULT_CALL_BUDGET "
                "(and the host's timeout) gives them room",
            )
        else:
            self._add("latency", "pass", detail)

    def _write_and_idempotency(self, config: Config, project: Project | None) -> None:
        if config.read_only:
            self._add("write", "skip", "TEAM_VAULT_READ_ONLY is on: no write tools are offered")
            self._add("idempotency", "skip", "skipped: in read-only mode nothing is sent that could write")
            return
        if project is None:
            self._skip("no readable default project", "write", "idempotency")
            return
        role = (project.role or "").upper()
        if role in WRITE_ROLES:
            write = self._add("write", "pass", f"yes: role {project.role} in the project")
        elif role in READ_ROLES:
            self._add(
                "write",
                "warn",
                f"no: role {project.role} in the project; the server will refuse every write tool",
                "set TEAM_VAULT_READ_ONLY=1 so agents are not offered writes, or ask a project owner for an "
                "editor role",
            )
            self._add("idempotency", "skip", "skipped: this key cannot write")
            return
        else:
            shown = f"role {project.role!r} is not one this check knows" if project.role else "no role reported"
            write = self._add("write", "unknown", f"unknown: {shown} (the idempotency probe below may tell)")
        self._probe(config, project, write)

    def _schemas(self, config: Config, project: Project | None) -> None:
        if config.schema_dir is None:
            self._add("schemas", "skip", "skipped: TEAM_VAULT_SCHEMA_DIR is not set (no schema tools)")
            return
        if project is None:
            self._add("schemas", "skip", "skipped: no readable default project")
            return
        from teamvault_mcp.tools.schema_registry import SchemaRegistry

        registry = SchemaRegistry(project.id, config.schema_dir)
        with self._client(config) as client:
            try:
                loaded = registry.load(client)
            except TeamVaultError as error:
                self._add("schemas", "warn", f"the schema notes in {config.schema_dir} could not be read: {error}")
                return
        tools = ", ".join(schema.tool_name for schema in loaded.schemas) or "none"
        detail = f"{len(loaded.schemas)} in {config.schema_dir} ({tools})"
        if not loaded.problems:
            self._add("schemas", "pass" if loaded.schemas else "warn", detail)
            return
        first_source, first_problem = loaded.problems[0]
        more = f" (and {len(loaded.problems) - 1} more)" if len(loaded.problems) > 1 else ""
        self._add(
            "schemas",
            "warn",
            f"{detail}; {len(loaded.problems)} note(s) not loaded: {first_source}: {first_problem}{more}",
            "fix those schema notes; list_schemas (or teamvault-mcp call list_schemas) shows every problem",
        )

    def _instructions(self, config: Config, project: Project | None) -> None:
        """TEAM_VAULT_INSTRUCTIONS_NOTE: is the note there, and is it sent whole? As the server reads it at start-up."""
        if config.instructions_note is None:
            self._add("instructions", "skip", "skipped: TEAM_VAULT_INSTRUCTIONS_NOTE is not set")
            return
        if project is None:
            self._add("instructions", "skip", "skipped: no readable default project")
            return
        from teamvault_mcp.tools.team_note import read_team_note

        with self._client(config) as client:
            try:
                note = read_team_note(client, project.id, config.instructions_note)
            except TeamVaultError as error:
                self._add("instructions", "warn", f"{config.instructions_note} could not be read: {error}")
                return
        if note.text is None:
            self._add(
                "instructions",
                "warn",
                note.status,
                "create the note, or fix TEAM_VAULT_INSTRUCTIONS_NOTE; the server starts without it meanwhile",
            )
        elif note.cut:
            self._add("instructions", "warn", note.status, "shorten the note; agents get its first part only")
        else:
            self._add("instructions", "pass", note.status)

    @contextmanager
    def _client(self, config: Config) -> Iterator[Any]:
        """A client as a tool call gets one, with a budget of its own for each part of the check."""
        from teamvault_mcp.vault.client import TeamVaultClient

        clock = SystemClock()
        client = TeamVaultClient(
            config.base_url,
            config.api_key,
            budget=Budget(min(API_BUDGET, config.call_budget), clock),
            token=CancelToken(),
            clock=clock,
            policy=self.policy or RetryPolicy(attempt_timeout=min(config.attempt_timeout, API_BUDGET)),
        )
        try:
            yield client
        finally:
            client.close()

    def _probe(self, config: Config, project: Project, write: Check) -> None:
        prefixes = config.write_prefixes_for(project.id)
        candidates = [f for f in project.files if prefixes is None or f.path.startswith(prefixes)]
        if not candidates:
            if prefixes == ():
                why = f"TEAM_VAULT_WRITE_PREFIXES opens no folder of project {project.id}"
            else:
                where = f" under {', '.join(p or 'anywhere' for p in prefixes)}" if prefixes else ""
                why = f"the project has no file{where} to probe with"
            self._add("idempotency", "skip", f"probe skipped: {why}")
            return
        file = candidates[0]
        with self._client(config) as client:
            try:
                client.move_file(project.id, file.id, file.path)
                client.move_file(project.id, file.id, file.path)
            except HTTPStatusError as error:
                if error.status == 403 and write.status == "unknown":
                    write.status, write.detail = "warn", "no: the server refused a move that changes nothing (403)"
                    write.hint = "set TEAM_VAULT_READ_ONLY=1 so agents are not offered writes that will fail"
                self._add("idempotency", "unknown", f"probe inconclusive: {error}")
                return
            except TeamVaultError as error:
                self._add("idempotency", "unknown", f"probe inconclusive: {error}")
                return
        if write.status == "unknown":
            write.status, write.detail = "pass", "yes: the server accepted a move that changes nothing"
        probe = f"a repeated move of {file.path} to its own path"
        if client.replayed:
            self._add("idempotency", "pass", f"supported: {probe} was answered with Idempotent-Replayed: true")
        else:
            self._add(
                "idempotency",
                "warn",
                f"not supported: {probe} was carried out twice (an older Team Vault server ignores "
                "Idempotency-Key). Writes still work: an unanswered write is checked by reading the note back, "
                "but some outcomes stay uncertain",
                "upgrade the Team Vault server to a version that honours Idempotency-Key",
            )


@dataclass
class Project:
    id: str
    files: list[Any]
    role: str | None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return parts._replace(netloc=(parts.hostname or "") + (f":{parts.port}" if parts.port else "")).geturl()


def report_text(checks: list[Check], ok: bool) -> str:
    width = max(len(check.name) for check in checks)
    lines = []
    for check in checks:
        lines.append(f"{MARKS[check.status]} {check.name.ljust(width)}  {check.detail}")
        if check.hint:
            lines.append(f"  {' ' * width}  fix: {check.hint}")
    failed = sum(check.status == "fail" for check in checks)
    warned = sum(check.status == "warn" for check in checks)
    notes = f" ({warned} warning{'s' if warned != 1 else ''})" if warned else ""
    if ok:
        lines.append(f"All required checks passed{notes}.")
    else:
        lines.append(f"{failed} required check{'s' if failed != 1 else ''} failed{notes}.")
    return "\n".join(lines) + "\n"


def report_json(checks: list[Check], ok: bool) -> str:
    return json.dumps({"ok": ok, "checks": [asdict(check) for check in checks]}, ensure_ascii=False, indent=2) + "\n"
