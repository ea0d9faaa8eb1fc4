"""Configuration: one frozen :class:`Config`, built from an explicitly passed environment.

Nothing below this module reads ``os.environ``. Every variable is validated at
once, so a user with two mistakes sees both in one start. The API key is kept
out of ``repr`` and out of every message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from teamvault_mcp.errors import ConfigError

LOG_LEVELS = ("debug", "info", "warning", "error")
#: TEAM_VAULT_STDIO: the stdio transport; ``stock`` is the SDK's own, the escape hatch (README: Configuration).
STDIO_TRANSPORTS = ("lean", "stock")
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off", "")

DEFAULT_CALL_BUDGET = 45.0
DEFAULT_CACHE_MAX_MB = 512
DEFAULT_ATTEMPT_TIMEOUT = 20.0
#: A call needs room for at least one attempt (README: Reliability: none starts with less than 2 s left).
MIN_CALL_BUDGET = 2.0
#: Above an hour the "shorter than the host's timeout" promise means nothing.
MAX_SECONDS = 3600.0

USAGE = (
    "usage: TEAM_VAULT_URL=https://vault.example.com TEAM_VAULT_API_KEY=osync_... teamvault-mcp "
    "(optional: TEAM_VAULT_PROJECT_ID, TEAM_VAULT_READ_ONLY, TEAM_VAULT_CALL_BUDGET, "
    "TEAM_VAULT_ATTEMPT_TIMEOUT, TEAM_VAULT_LOG_LEVEL, TEAM_VAULT_CACHE_DIR, TEAM_VAULT_CACHE_MAX_MB, "
    "TEAM_VAULT_CACHE_NAMESPACE, TEAM_VAULT_AUDIT_LOG, TEAM_VAULT_WRITE_PREFIXES, TEAM_VAULT_SCHEMA_DIR, "
    "TEAM_VAULT_STDIO)"
)


@dataclass(frozen=True)
class Config:
    """Everything the server needs to know, validated."""

    base_url: str
    api_key: str = field(repr=False)
    project_id: str | None = None
    read_only: bool = False
    call_budget: float = DEFAULT_CALL_BUDGET
    attempt_timeout: float = DEFAULT_ATTEMPT_TIMEOUT
    log_level: str = "warning"
    #: Where note contents are cached; None when caching is off (TEAM_VAULT_CACHE_DIR=off).
    cache_dir: Path | None = None
    cache_max_bytes: int = DEFAULT_CACHE_MAX_MB * 1024 * 1024
    #: What the cache files this server's notes under instead of ``base_url``: ``--local DIR`` sets it to
    #: the data directory, whose embedded vault gets a new port at every start.
    cache_namespace: str | None = None
    #: Where each write tool call is recorded as one JSON line; None: no audit log.
    audit_log: Path | None = None
    #: Folders (``"agents/"``) that write tools may touch in every project.
    write_prefixes: tuple[str, ...] = ()
    #: ``(projectId, folder)``: a folder write tools may touch in that project only (``""``: all of it).
    project_write_prefixes: tuple[tuple[str, str], ...] = ()
    #: The folder (``"schemas/"``) of the schema notes that define upsert_<name> tools; None: none.
    schema_dir: str | None = None
    #: The stdio transport: ``lean`` (ours) or ``stock`` (the SDK's ``stdio_server``).
    stdio: str = "lean"

    @property
    def writes_fenced(self) -> bool:
        """Whether TEAM_VAULT_WRITE_PREFIXES limits the write tools at all."""
        return bool(self.write_prefixes or self.project_write_prefixes)

    def write_prefixes_for(self, project_id: str | None) -> tuple[str, ...] | None:
        """The folders write tools may touch in ``project_id``; None: writes are not fenced.

        The bare prefixes hold in every project, a project's own ones in it alone. When
        any prefix is set, a project none of them reaches gets an empty tuple: no writes.
        """
        if not self.writes_fenced:
            return None
        own = tuple(prefix for project, prefix in self.project_write_prefixes if project == project_id)
        return tuple(dict.fromkeys(self.write_prefixes + own))

    def write_scope_text(self) -> str:
        """The write scopes in words: ``agents/, inbox/``; with project scopes ``agents/ (every project),
        inbox/ (project p1)``."""
        if not self.project_write_prefixes:
            return ", ".join(self.write_prefixes)
        parts = [f"{prefix} (every project)" for prefix in self.write_prefixes]
        parts += [f"{prefix or 'everything'} (project {project})" for project, prefix in self.project_write_prefixes]
        return ", ".join(parts)


def load_config(environ: Mapping[str, str]) -> Config:
    """Build a :class:`Config` from ``environ``; raise :class:`ConfigError` naming every problem."""
    problems: list[str] = []
    missing = [name for name in ("TEAM_VAULT_URL", "TEAM_VAULT_API_KEY") if not environ.get(name, "").strip()]
    if missing:
        raise ConfigError(f"{' and '.join(missing)} must be set. {USAGE}")

    base_url = _base_url(environ["TEAM_VAULT_URL"], problems)
    api_key = environ["TEAM_VAULT_API_KEY"].strip()
    if any(ch.isspace() or not ch.isprintable() for ch in api_key):
        problems.append("TEAM_VAULT_API_KEY contains whitespace or control characters (value not shown).")
    project_id = environ.get("TEAM_VAULT_PROJECT_ID", "").strip() or None
    read_only = _flag(environ, "TEAM_VAULT_READ_ONLY", problems)
    call_budget = _number(environ, "TEAM_VAULT_CALL_BUDGET", DEFAULT_CALL_BUDGET, MIN_CALL_BUDGET, problems)
    attempt_timeout = _number(environ, "TEAM_VAULT_ATTEMPT_TIMEOUT", DEFAULT_ATTEMPT_TIMEOUT, 0.0, problems)
    log_level = environ.get("TEAM_VAULT_LOG_LEVEL", "").strip().lower() or "warning"
    if log_level not in LOG_LEVELS:
        problems.append(
            f"TEAM_VAULT_LOG_LEVEL={environ['TEAM_VAULT_LOG_LEVEL']!r} is not one of {', '.join(LOG_LEVELS)}."
        )

    cache_dir = _cache_dir(environ, problems)
    audit_log = _absolute_path(environ, "TEAM_VAULT_AUDIT_LOG", problems)
    write_prefixes, project_write_prefixes = _write_prefixes(environ, problems)
    schema_dir = _schema_dir(environ, project_id, problems)
    cache_max_mb = _number(
        environ, "TEAM_VAULT_CACHE_MAX_MB", DEFAULT_CACHE_MAX_MB, 0.0, problems, unit="megabytes", maximum=1e6
    )
    stdio = environ.get("TEAM_VAULT_STDIO", "").strip().lower() or "lean"
    if stdio not in STDIO_TRANSPORTS:
        problems.append(
            f"TEAM_VAULT_STDIO={environ['TEAM_VAULT_STDIO']!r} is not one of {', '.join(STDIO_TRANSPORTS)}."
        )
    if problems:
        # Belt and braces: a key pasted into the wrong variable must not be echoed either.
        raise ConfigError("\n".join(problems).replace(api_key, "***") if api_key else "\n".join(problems))
    return Config(
        base_url=base_url,
        api_key=api_key,
        project_id=project_id,
        read_only=read_only,
        call_budget=call_budget,
        attempt_timeout=attempt_timeout,
        log_level=log_level,
        cache_dir=cache_dir,
        cache_max_bytes=int(cache_max_mb * 1024 * 1024),
        cache_namespace=environ.get("TEAM_VAULT_CACHE_NAMESPACE", "").strip() or None,
        audit_log=audit_log,
        write_prefixes=write_prefixes,
        project_write_prefixes=project_write_prefixes,
        schema_dir=schema_dir,
        stdio=stdio,
    )


def _base_url(raw: str, problems: list[str]) -> str:
    url = raw.strip().rstrip("/")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        parts = None
    # A URL with user info, a query or a fragment may hold a secret: never echo it.
    secret = parts is None or bool(parts.username or parts.password or parts.query or parts.fragment)
    shown = "(value not shown: it may hold a secret)" if secret else repr(raw)
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        problems.append(f"TEAM_VAULT_URL={shown} is not an http(s) URL such as https://vault.example.com.")
    elif any(ch.isspace() for ch in url):
        problems.append(f"TEAM_VAULT_URL={shown} contains whitespace.")
    elif parts.username or parts.password:
        problems.append("TEAM_VAULT_URL must not carry user:password@; put the key in TEAM_VAULT_API_KEY.")
    elif parts.query or parts.fragment:
        problems.append("TEAM_VAULT_URL must not carry a query (?…) or fragment (#…).")
    return url


def _flag(environ: Mapping[str, str], name: str, problems: list[str]) -> bool:
    raw = environ.get(name, "")
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word not in FALSE_WORDS:
        problems.append(f"{name}={raw!r} is not a yes/no value (use 1/true/yes/on or 0/false/no/off).")
    return False


def _number(
    environ: Mapping[str, str],
    name: str,
    default: float,
    minimum: float,
    problems: list[str],
    *,
    unit: str = "seconds",
    maximum: float = MAX_SECONDS,
) -> float:
    raw = environ.get(name, "")
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= minimum or value > maximum:
        lower = f"more than {minimum:g}" if minimum else "more than 0"
        problems.append(f"{name}={raw!r} is not a number of {unit} {lower} and at most {maximum:g}.")
        return default
    return value


def _cache_dir(environ: Mapping[str, str], problems: list[str]) -> Path | None:
    from teamvault_mcp.vault.cache import default_cache_dir

    raw = environ.get("TEAM_VAULT_CACHE_DIR", "").strip()
    if raw.lower() == "off":
        return None
    if not raw:
        return default_cache_dir(environ)
    path = Path(raw).expanduser()
    if not path.is_absolute():
        problems.append(f"TEAM_VAULT_CACHE_DIR={raw!r} must be an absolute path, or off.")
        return None
    return path


def _absolute_path(environ: Mapping[str, str], name: str, problems: list[str]) -> Path | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_absolute():
        problems.append(f"{name}={raw!r} must be an absolute path.")
        return None
    return path


def _folder(name: str, item: str, problems: list[str], *, shown: str | None = None) -> str | None:
    """``./agents`` → ``agents/``: a folder in the server's stored spelling, or None (a problem noted)."""
    from teamvault_mcp.errors import InvalidPathError
    from teamvault_mcp.text.paths import stored_path_of

    try:
        return stored_path_of(item, incoming=True) + "/"
    except InvalidPathError as error:
        problems.append(f"{name}: {shown or item!r} is not a folder a note could be in ({error.rule}).")
        return None


def _schema_dir(environ: Mapping[str, str], project_id: str | None, problems: list[str]) -> str | None:
    raw = environ.get("TEAM_VAULT_SCHEMA_DIR", "").strip()
    if not raw:
        return None
    if project_id is None:
        problems.append(
            "TEAM_VAULT_SCHEMA_DIR needs TEAM_VAULT_PROJECT_ID: the schema notes are read from that project."
        )
    return _folder("TEAM_VAULT_SCHEMA_DIR", raw, problems)


def _write_prefixes(
    environ: Mapping[str, str], problems: list[str]
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """``agents/, p1:inbox, p2:/`` → ``("agents/",)`` and ``(("p1", "inbox/"), ("p2", ""))``.

    A bare folder holds in every project; ``<projectId>:<folder>`` in that project only, and
    ``<projectId>:/`` opens all of it. Folders are in the server's stored spelling. A colon
    cannot be part of a folder (the server refuses ``:`` in new paths), so it always names a project.
    """
    name = "TEAM_VAULT_WRITE_PREFIXES"
    raw = environ.get(name, "")
    everywhere: list[str] = []
    scoped: list[tuple[str, str]] = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        project, colon, folder_part = item.partition(":")
        if not colon:
            folder = _folder(name, item, problems)
            if folder is not None:
                everywhere.append(folder)
            continue
        project = project.strip()
        if not project:
            problems.append(f"{name}: {item!r} names no project before the colon (use <projectId>:<folder>).")
            continue
        folder_part = folder_part.strip()
        if folder_part in ("", "/"):
            scoped.append((project, ""))
            continue
        folder = _folder(name, folder_part, problems, shown=item)
        if folder is not None:
            scoped.append((project, folder))
    if raw.strip() and not everywhere and not scoped and not problems:
        problems.append(f"{name} names no folder; leave it unset to allow writes everywhere.")
    return tuple(dict.fromkeys(everywhere)), tuple(dict.fromkeys(scoped))
