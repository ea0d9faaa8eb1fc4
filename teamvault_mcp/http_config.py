"""``serve --http``'s configuration: one frozen :class:`HttpConfig`, from its flags and TEAM_VAULT_HTTP_* variables.

Validated all at once, as :class:`~teamvault_mcp.config.Config` is (its number readers are shared); the shared
token is kept out of ``repr`` and out of every message. :class:`HttpStartError` is the one-line refusal to start
(no way to tell callers apart, an open bind without TLS, a TLS file missing or not what it should be): exit code 2.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from teamvault_mcp.config import read_count, read_flag, read_number
from teamvault_mcp.errors import ConfigError
from teamvault_mcp.errors import HttpStartError as HttpStartError

DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 8765
DEFAULT_HTTP_MAX_SESSIONS = 100
DEFAULT_HTTP_SESSION_IDLE = 1800.0
DEFAULT_HTTP_MAX_BODY_MB = 4.0
#: A smaller body limit could not hold an ``initialize`` (and 0 bytes is no limit the SDK accepts).
MIN_HTTP_BODY_BYTES = 1024
#: Sessions one caller (a Team Vault user, with --key-from-client) may hold at once (0: no share).
DEFAULT_HTTP_SESSIONS_PER_CALLER = 10
#: Open connections from one client address (0: no limit, e.g. behind a reverse proxy on this machine).
DEFAULT_HTTP_CONNECTIONS_PER_ADDRESS = 32
#: Seconds a connection may take to send a whole request head (as the embedded local vault).
DEFAULT_HTTP_HEAD_TIMEOUT = 10.0
#: A shorter shared token could be guessed; ``openssl rand -hex 32`` gives 64 characters.
MIN_HTTP_TOKEN_CHARS = 16


@dataclass(frozen=True)
class HttpConfig:
    """How ``serve --http`` listens and whom it serves, validated (the variables and flags in the README)."""

    host: str = DEFAULT_HTTP_HOST
    port: int = DEFAULT_HTTP_PORT
    #: TEAM_VAULT_HTTP_TOKEN: the shared Bearer token (token mode); None with ``key_from_client``.
    token: str | None = field(default=None, repr=False)
    #: ``--key-from-client``: each caller's Bearer token is its own Team Vault API key.
    key_from_client: bool = False
    #: TEAM_VAULT_HTTP_ORIGINS: browser origins allowed besides loopback ones (``https://agent.example.com``).
    origins: tuple[str, ...] = ()
    max_sessions: int = DEFAULT_HTTP_MAX_SESSIONS
    session_idle: float = DEFAULT_HTTP_SESSION_IDLE
    max_body_bytes: int = int(DEFAULT_HTTP_MAX_BODY_MB * 1024 * 1024)
    #: TEAM_VAULT_HTTP_SESSIONS_PER_CALLER: sessions per Team Vault user, ``key_from_client`` only (0: no share).
    sessions_per_caller: int = DEFAULT_HTTP_SESSIONS_PER_CALLER
    #: TEAM_VAULT_HTTP_CONNECTIONS_PER_ADDRESS: open connections from one client address (0: no limit).
    connections_per_address: int = DEFAULT_HTTP_CONNECTIONS_PER_ADDRESS
    #: Open connections in all; None: from the open-file limit (``server/http_limits.py``).
    max_connections: int | None = None
    head_timeout: float = DEFAULT_HTTP_HEAD_TIMEOUT
    tls_cert: Path | None = None
    tls_key: Path | None = None
    insecure_bind: bool = False
    #: ``--stateless``: no sessions; every request stands alone (replicas behind a load balancer need no affinity).
    stateless: bool = False
    #: ``--metrics`` or TEAM_VAULT_HTTP_METRICS: ``GET /metrics`` answers in the Prometheus text format.
    metrics: bool = False

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)

    @property
    def url(self) -> str:
        """The endpoint's URL as clients on this machine reach it."""
        scheme = "https" if self.tls_cert is not None else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}/mcp"


@functools.lru_cache(maxsize=256)  # asked on every request (the bind's and the Host header's): 10 µs of parsing each
def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine only."""
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"


def parse_listen(raw: str) -> tuple[str, int]:
    """``8765``, ``0.0.0.0:8765``, ``[::1]:8765`` → (host, port); :class:`HttpStartError` otherwise."""
    text = raw.strip()
    host, port_text = DEFAULT_HTTP_HOST, text
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise HttpStartError(f"--http {raw!r} is not [HOST:]PORT, e.g. 8765, 127.0.0.1:8765 or [::1]:8765.")
        host, port_text = inside, rest[1:]
    elif ":" in text:
        host, _, port_text = text.rpartition(":")
    if (
        not port_text.isdigit()
        or not 0 <= int(port_text) <= 65535
        or not host
        or (":" in host.strip("[]") and not text.startswith("["))
    ):
        raise HttpStartError(f"--http {raw!r} is not [HOST:]PORT with a port from 0 to 65535, e.g. 127.0.0.1:8765.")
    return host, int(port_text)


def load_http_config(
    environ: Mapping[str, str],
    *,
    listen: str | None = None,
    key_from_client: bool = False,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    insecure_bind: bool = False,
    stateless: bool = False,
    metrics: bool = False,
) -> HttpConfig:
    """The :class:`HttpConfig` of ``serve --http [listen]`` in ``environ``.

    Raises :class:`HttpStartError` (one line) when no caller could be authenticated or the bind is open
    without TLS, and :class:`ConfigError` naming every bad TEAM_VAULT_HTTP_* value.
    """
    host, port = parse_listen(listen) if listen else (DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT)
    token = environ.get("TEAM_VAULT_HTTP_TOKEN", "").strip() or None
    _check_start(
        host,
        port,
        token,
        key_from_client=key_from_client,
        tls_cert=tls_cert,
        tls_key=tls_key,
        insecure_bind=insecure_bind,
    )
    problems = _token_problems(token)
    origins = _origins(environ, problems)
    max_sessions = read_number(
        environ,
        "TEAM_VAULT_HTTP_MAX_SESSIONS",
        DEFAULT_HTTP_MAX_SESSIONS,
        0.0,
        problems,
        unit="sessions",
        maximum=100_000,
    )
    if max_sessions != int(max_sessions):
        problems.append(
            f"TEAM_VAULT_HTTP_MAX_SESSIONS={environ['TEAM_VAULT_HTTP_MAX_SESSIONS']!r} is not a whole number."
        )
    idle = read_number(
        environ, "TEAM_VAULT_HTTP_SESSION_IDLE", DEFAULT_HTTP_SESSION_IDLE, 0.0, problems, maximum=86_400
    )
    body_mb = read_number(
        environ, "TEAM_VAULT_HTTP_MAX_BODY_MB", DEFAULT_HTTP_MAX_BODY_MB, 0.0, problems, unit="megabytes", maximum=1024
    )
    if int(body_mb * 1024 * 1024) < MIN_HTTP_BODY_BYTES:
        problems.append(f"TEAM_VAULT_HTTP_MAX_BODY_MB={environ['TEAM_VAULT_HTTP_MAX_BODY_MB']!r} is below 1 KiB.")
        body_mb = DEFAULT_HTTP_MAX_BODY_MB
    per_caller = read_count(
        environ, "TEAM_VAULT_HTTP_SESSIONS_PER_CALLER", DEFAULT_HTTP_SESSIONS_PER_CALLER, 100_000, problems
    )
    per_address = read_count(
        environ, "TEAM_VAULT_HTTP_CONNECTIONS_PER_ADDRESS", DEFAULT_HTTP_CONNECTIONS_PER_ADDRESS, 100_000, problems
    )
    metrics = read_flag(environ, "TEAM_VAULT_HTTP_METRICS", problems) or metrics
    if problems:
        text = "\n".join(problems)
        raise ConfigError(text.replace(token, "***") if token else text)
    cert, key = _tls_files(tls_cert, tls_key)
    return HttpConfig(
        host=host,
        port=port,
        token=token,
        key_from_client=key_from_client,
        origins=origins,
        max_sessions=int(max_sessions),
        session_idle=idle,
        max_body_bytes=int(body_mb * 1024 * 1024),
        sessions_per_caller=per_caller,
        connections_per_address=per_address,
        tls_cert=cert,
        tls_key=key,
        insecure_bind=insecure_bind,
        stateless=stateless,
        metrics=metrics,
    )


def _check_start(
    host: str,
    port: int,
    token: str | None,
    *,
    key_from_client: bool,
    tls_cert: str | None,
    tls_key: str | None,
    insecure_bind: bool,
) -> None:
    """:class:`HttpStartError` when no caller could be authenticated, or the bind is open without TLS."""
    if token is None and not key_from_client:
        raise HttpStartError(
            "serve --http needs a way to tell who calls: set TEAM_VAULT_HTTP_TOKEN (clients send it as "
            "'Authorization: Bearer <token>') or pass --key-from-client (each client sends its own Team Vault key)."
        )
    if token is not None and key_from_client:
        raise HttpStartError(
            "TEAM_VAULT_HTTP_TOKEN and --key-from-client are both given: with --key-from-client each client's "
            "Bearer token is its own Team Vault key, so unset TEAM_VAULT_HTTP_TOKEN (or drop the flag)."
        )
    if (tls_cert is None) != (tls_key is None):
        raise HttpStartError("--tls-cert and --tls-key go together: give both (PEM files) or neither.")
    if not is_loopback_host(host) and tls_cert is None and not insecure_bind:
        raise HttpStartError(
            f"--http {host}:{port} listens beyond this machine without TLS: give --tls-cert and --tls-key, or "
            "--insecure-bind when a TLS reverse proxy in front of it is the only way in (see the README)."
        )


def _token_problems(token: str | None) -> list[str]:
    """What is wrong with the shared token (never the token itself): [] when it is long and plain enough."""
    if token is not None and (
        len(token) < MIN_HTTP_TOKEN_CHARS or any(ch.isspace() or not ch.isprintable() for ch in token)
    ):
        return [
            f"TEAM_VAULT_HTTP_TOKEN must be at least {MIN_HTTP_TOKEN_CHARS} printable characters without spaces "
            "(value not shown); make one with: openssl rand -hex 32"
        ]
    return []


def _origins(environ: Mapping[str, str], problems: list[str]) -> tuple[str, ...]:
    """TEAM_VAULT_HTTP_ORIGINS: comma-separated ``scheme://host[:port]``, compared exactly (lower case)."""
    origins = []
    for item in (part.strip() for part in environ.get("TEAM_VAULT_HTTP_ORIGINS", "").split(",")):
        if not item:
            continue
        parts = urlsplit(item)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") or parts.query:
            problems.append(
                f"TEAM_VAULT_HTTP_ORIGINS: {item!r} is not an origin such as https://agent.example.com "
                "(scheme, host and optional port, nothing after)."
            )
            continue
        origins.append(item.rstrip("/").lower())
    return tuple(dict.fromkeys(origins))


def _tls_files(tls_cert: str | None, tls_key: str | None) -> tuple[Path | None, Path | None]:
    """``--tls-cert`` and ``--tls-key`` loaded as the server will load them, before it says it serves:
    :class:`HttpStartError` naming the file and what is wrong with it (``_check_start`` saw both or neither)."""
    if tls_cert is None or tls_key is None:
        return None, None
    import ssl

    cert, key = _existing_file("--tls-cert", tls_cert), _existing_file("--tls-key", tls_key)
    try:  # a certificate file holds a certificate: a key or anything else is named as this file's problem
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=cert)
    except ssl.SSLError:
        raise HttpStartError(
            f"--tls-cert {tls_cert}: no certificate in it (a PEM file with '-----BEGIN CERTIFICATE-----' is expected)."
        ) from None
    except OSError as error:
        raise HttpStartError(f"--tls-cert {tls_cert}: cannot be read ({error.strerror or error}).") from None

    def no_passphrase() -> str:
        raise _KeyNeedsPassphrase  # OpenSSL would ask for it on the terminal

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key, password=no_passphrase)
    except _KeyNeedsPassphrase:
        raise HttpStartError(
            f"--tls-key {tls_key}: the key is encrypted, and serve --http takes no passphrase: give it the key "
            f"without one (openssl pkey -in {tls_key} -out plain-key.pem writes it; keep that file private)."
        ) from None
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise HttpStartError(
                f"--tls-key {tls_key} does not belong to the certificate in --tls-cert {tls_cert}: give the private "
                "key that certificate was made with."
            ) from None
        raise HttpStartError(
            f"--tls-key {tls_key}: no private key in it "
            "(a PEM file with a '-----BEGIN … PRIVATE KEY-----' block is expected)."
        ) from None
    except OSError as error:
        raise HttpStartError(f"--tls-key {tls_key}: cannot be read ({error.strerror or error}).") from None
    return cert, key


class _KeyNeedsPassphrase(Exception):
    """Raised by the passphrase callback of ``load_cert_chain``: the key is encrypted."""


def _existing_file(flag: str, raw: str) -> Path:
    path = Path(raw).expanduser()
    if not path.is_file():
        raise HttpStartError(f"{flag} {raw}: no such file (a PEM file is expected).")
    return path
