"""Configuration: one frozen :class:`Config`, built from an explicitly passed environment.

Nothing below this module reads ``os.environ``. Every variable is validated at
once, so a user with two mistakes sees both in one start. The API key is kept
out of ``repr`` and out of every message. ``serve --http`` has its own value,
:class:`~teamvault_mcp.http_config.HttpConfig` (its variables and flags), in ``http_config.py``,
which reads its numbers with :func:`read_number` and :func:`read_count` from here.
Past 400 lines on purpose: every variable of :class:`Config` is validated here, side by side.
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
#: TEAM_VAULT_STRUCTURED_CONTENT: whether results also carry ``structuredContent`` (README: Hosts and the two halves).
STRUCTURED_CONTENT_VALUES = ("off", "on")
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off", "")

DEFAULT_CALL_BUDGET = 45.0
DEFAULT_CACHE_MAX_MB = 512
DEFAULT_ATTEMPT_TIMEOUT = 20.0
#: A plain read_note longer than this is cut (TEAM_VAULT_MAX_READ_CHARS): ~12,500 tokens, half of the 25,000 tokens
#: above which Claude Code refuses a tool result by default.
DEFAULT_MAX_READ_CHARS = 50_000
#: The largest TEAM_VAULT_MAX_READ_CHARS: a write takes at most 5 MiB, and no host takes a result this size anyway.
MAX_READ_CHARS_LIMIT = 5 * 1024 * 1024
#: A call needs room for at least one attempt (README: Reliability: none starts with less than 2 s left).
MIN_CALL_BUDGET = 2.0
#: Above an hour the "shorter than the host's timeout" promise means nothing.
MAX_SECONDS = 3600.0
#: TEAM_VAULT_LISTING_REUSE: its default and its most (``vault/listings.py`` says what it does).
DEFAULT_LISTING_REUSE = 2.0
MAX_LISTING_REUSE = 60.0

USAGE = (
    "usage: TEAM_VAULT_URL=https://vault.example.com TEAM_VAULT_API_KEY=osync_... teamvault-mcp "
    "(optional: TEAM_VAULT_PROJECT_ID, TEAM_VAULT_READ_ONLY, TEAM_VAULT_CALL_BUDGET, "
    "TEAM_VAULT_ATTEMPT_TIMEOUT, TEAM_VAULT_LOG_LEVEL, TEAM_VAULT_CACHE_DIR, TEAM_VAULT_CACHE_MAX_MB, "
    "TEAM_VAULT_CACHE_NAMESPACE, TEAM_VAULT_AUDIT_LOG, TEAM_VAULT_WRITE_PREFIXES, TEAM_VAULT_SCHEMA_DIR, "
    "TEAM_VAULT_SINGLE_PROJECT, TEAM_VAULT_MAX_READ_CHARS, TEAM_VAULT_INSTRUCTIONS_NOTE, TEAM_VAULT_TOOLS, "
    "TEAM_VAULT_PREFETCH, TEAM_VAULT_LISTING_REUSE, TEAM_VAULT_STDIO, TEAM_VAULT_STRUCTURED_CONTENT)"
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
    #: The default project is the only one agents work in (TEAM_VAULT_SINGLE_PROJECT, and ``--local``): the
    #: tools' schemas leave ``projectId`` out, and a call naming another project is refused.
    single_project: bool = False
    #: A plain read_note longer than this many characters is cut, with the call that reads on; 0: never cut.
    max_read_chars: int = DEFAULT_MAX_READ_CHARS
    #: A note of the default project whose text is added to the server's instructions; None: none.
    instructions_note: str | None = None
    #: TEAM_VAULT_TOOLS: the tools named (None: all of them) and those dropped (``-name``).
    tools_named: frozenset[str] | None = None
    tools_dropped: frozenset[str] = frozenset()
    #: Whether the server syncs the default project's notes in the background after start-up (TEAM_VAULT_PREFETCH).
    prefetch: bool = True
    #: Seconds a big vault's listing is reused by the calls that read every note (TEAM_VAULT_LISTING_REUSE; 0: never).
    listing_reuse_seconds: float = DEFAULT_LISTING_REUSE
    #: The stdio transport: ``lean`` (ours) or ``stock`` (the SDK's ``stdio_server``).
    stdio: str = "lean"
    #: Whether every tool declares an ``outputSchema`` and every result carries ``structuredContent`` holding all
    #: its text says, as data (TEAM_VAULT_STRUCTURED_CONTENT=on); off, the default: one text block, nothing else.
    structured_content: bool = False

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


def load_config(environ: Mapping[str, str], *, key_required: bool = True) -> Config:
    """Build a :class:`Config` from ``environ``; raise :class:`ConfigError` naming every problem.

    ``key_required=False`` (``serve --http --key-from-client``): every caller brings its own key, so
    TEAM_VAULT_API_KEY is ignored and the configuration's ``api_key`` is empty.
    """
    problems: list[str] = []
    required = ("TEAM_VAULT_URL", "TEAM_VAULT_API_KEY") if key_required else ("TEAM_VAULT_URL",)
    missing = [name for name in required if not environ.get(name, "").strip()]
    if missing:
        without = (
            " To try it without a server: teamvault-mcp --local DIR (an embedded vault kept in DIR)."
            if "TEAM_VAULT_URL" in missing
            else ""
        )
        raise ConfigError(f"{' and '.join(missing)} must be set.{without} {USAGE}")

    base_url = _base_url(environ["TEAM_VAULT_URL"], problems)
    api_key = environ.get("TEAM_VAULT_API_KEY", "").strip() if key_required else ""
    if any(ch.isspace() or not ch.isprintable() for ch in api_key):
        problems.append("TEAM_VAULT_API_KEY contains whitespace or control characters (value not shown).")
    project_id = environ.get("TEAM_VAULT_PROJECT_ID", "").strip() or None
    read_only = read_flag(environ, "TEAM_VAULT_READ_ONLY", problems)
    prefetch = read_flag(environ, "TEAM_VAULT_PREFETCH", problems, default=True)
    listing_reuse = _listing_reuse(environ, problems)
    call_budget = read_number(environ, "TEAM_VAULT_CALL_BUDGET", DEFAULT_CALL_BUDGET, MIN_CALL_BUDGET, problems)
    attempt_timeout = read_number(environ, "TEAM_VAULT_ATTEMPT_TIMEOUT", DEFAULT_ATTEMPT_TIMEOUT, 0.0, problems)
    log_level = environ.get("TEAM_VAULT_LOG_LEVEL", "").strip().lower() or "warning"
    if log_level not in LOG_LEVELS:
        problems.append(
            f"TEAM_VAULT_LOG_LEVEL={environ['TEAM_VAULT_LOG_LEVEL']!r} is not one of {', '.join(LOG_LEVELS)}."
        )

    cache_dir = _cache_dir(environ, problems)
    audit_log = _absolute_path(environ, "TEAM_VAULT_AUDIT_LOG", problems)
    write_prefixes, project_write_prefixes = _write_prefixes(environ, problems)
    schema_dir = _schema_dir(environ, project_id, problems)
    single_project = read_flag(environ, "TEAM_VAULT_SINGLE_PROJECT", problems)
    if single_project and project_id is None:
        problems.append("TEAM_VAULT_SINGLE_PROJECT needs TEAM_VAULT_PROJECT_ID: the project agents work in.")
    max_read_chars = read_count(
        environ, "TEAM_VAULT_MAX_READ_CHARS", DEFAULT_MAX_READ_CHARS, MAX_READ_CHARS_LIMIT, problems
    )
    instructions_note = _instructions_note(environ, project_id, problems)
    tools_named, tools_dropped = _tools(environ, read_only, schema_dir, problems)
    cache_max_mb = read_number(
        environ, "TEAM_VAULT_CACHE_MAX_MB", DEFAULT_CACHE_MAX_MB, 0.0, problems, unit="megabytes", maximum=1e6
    )
    stdio = _choice(environ, "TEAM_VAULT_STDIO", STDIO_TRANSPORTS, problems)
    structured = _choice(environ, "TEAM_VAULT_STRUCTURED_CONTENT", STRUCTURED_CONTENT_VALUES, problems)
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
        single_project=single_project,
        max_read_chars=max_read_chars,
        instructions_note=instructions_note,
        tools_named=tools_named,
        tools_dropped=tools_dropped,
        prefetch=prefetch,
        listing_reuse_seconds=listing_reuse,
        stdio=stdio,
        structured_content=structured == "on",
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


def read_flag(environ: Mapping[str, str], name: str, problems: list[str], *, default: bool = False) -> bool:
    raw = environ.get(name, "")
    word = raw.strip().lower()
    if not word:
        return default
    if word in TRUE_WORDS:
        return True
    if word not in FALSE_WORDS:
        problems.append(f"{name}={raw!r} is not a yes/no value (use 1/true/yes/on or 0/false/no/off).")
        return default
    return False


def read_number(
    environ: Mapping[str, str],
    name: str,
    default: float,
    minimum: float,
    problems: list[str],
    *,
    unit: str = "seconds",
    maximum: float = MAX_SECONDS,
) -> float:
    """A number of ``unit`` above ``minimum``, at most ``maximum``; ``default`` if unset (or bad: then a problem)."""
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


def _choice(environ: Mapping[str, str], name: str, values: tuple[str, ...], problems: list[str]) -> str:
    """One of ``values`` (any case), the first when unset."""
    value = environ.get(name, "").strip().lower() or values[0]
    if value not in values:
        problems.append(f"{name}={environ[name]!r} is not one of {', '.join(values)}.")
    return value


def _listing_reuse(environ: Mapping[str, str], problems: list[str]) -> float:
    """TEAM_VAULT_LISTING_REUSE: seconds from 0 (never reuse) to 60."""
    raw = environ.get("TEAM_VAULT_LISTING_REUSE", "").strip()
    if not raw:
        return DEFAULT_LISTING_REUSE
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 <= value <= MAX_LISTING_REUSE:
        problems.append(
            f"TEAM_VAULT_LISTING_REUSE={environ['TEAM_VAULT_LISTING_REUSE']!r} is not a number of seconds from 0 "
            f"(always list) to {MAX_LISTING_REUSE:g}."
        )
        return DEFAULT_LISTING_REUSE
    return value


def read_count(environ: Mapping[str, str], name: str, default: int, maximum: int, problems: list[str]) -> int:
    """A whole number from 0 to ``maximum`` (0 meaning "no limit" where the variable says so)."""
    raw = environ.get(name, "").strip().replace("_", "").replace(",", "")
    if not raw:
        return default
    if not raw.isdigit() or int(raw) > maximum:
        problems.append(f"{name}={environ[name]!r} is not a whole number from 0 (no limit) to {maximum:,}.")
        return default
    return int(raw)


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


def _instructions_note(environ: Mapping[str, str], project_id: str | None, problems: list[str]) -> str | None:
    from teamvault_mcp.errors import InvalidPathError
    from teamvault_mcp.text.paths import stored_path_of

    raw = environ.get("TEAM_VAULT_INSTRUCTIONS_NOTE", "").strip()
    if not raw:
        return None
    if project_id is None:
        problems.append("TEAM_VAULT_INSTRUCTIONS_NOTE needs TEAM_VAULT_PROJECT_ID: the note is read from that project.")
    if raw.endswith("/"):
        problems.append(f"TEAM_VAULT_INSTRUCTIONS_NOTE={raw!r} is a folder; name the note, e.g. agents/conventions.md.")
        return None
    try:
        return stored_path_of(raw)
    except InvalidPathError as error:
        problems.append(f"TEAM_VAULT_INSTRUCTIONS_NOTE={raw!r} is not a note's path ({error}).")
        return None


def _tools(
    environ: Mapping[str, str], read_only: bool, schema_dir: str | None, problems: list[str]
) -> tuple[frozenset[str] | None, frozenset[str]]:
    """``read_note, search_notes`` → only those tools; ``-delete_note`` → all but that one (both may be mixed).

    Every name must be a tool this server can register: a misspelt name would silently take a tool away.
    ``upsert_*`` names every schema tool; ``upsert_<schema>`` one of them (checked when the schemas load).
    """
    name = "TEAM_VAULT_TOOLS"
    raw = environ.get(name, "")
    items = [item for item in raw.replace(",", " ").split() if item]
    if not items:
        return None, frozenset()
    # Only now: the tool table takes a fifth of a second to import, and serve opens its connections ahead
    # right after the configuration is read.
    from teamvault_mcp.tools.table import SCHEMA_TOOLS, TOOLS, closest_name

    writes = {tool.name for tool in TOOLS if tool.writes}
    needs_schemas = {tool.name for tool in TOOLS if tool.needs_schemas}
    known = [tool.name for tool in TOOLS]
    named: set[str] = set()
    dropped: set[str] = set()
    unknown: list[str] = []
    for item in items:
        tool = item[1:] if item.startswith("-") else item
        is_schema_tool = tool == SCHEMA_TOOLS or (tool.startswith("upsert_") and tool[7:].isidentifier())
        if tool not in known and not is_schema_tool:
            unknown.append(item)
            continue
        if is_schema_tool and schema_dir is None:
            problems.append(f"{name} names {tool}, but TEAM_VAULT_SCHEMA_DIR is not set: there are no schema tools.")
        if not item.startswith("-"):
            if read_only and (tool in writes or is_schema_tool):
                problems.append(f"{name} names {tool}, a write tool, but TEAM_VAULT_READ_ONLY registers none.")
            if tool in needs_schemas and schema_dir is None:
                problems.append(f"{name} names {tool}, which exists only with TEAM_VAULT_SCHEMA_DIR.")
        (dropped if item.startswith("-") else named).add(tool)
    if unknown:
        hints = []
        for item in unknown:
            close = closest_name(item.lstrip("-"), known)
            hints.append(f"{item} (did you mean {close}?)" if close else item)
        problems.append(f"{name} names tools this server does not have: {', '.join(hints)}. Tools: {', '.join(known)}.")
    if named and named <= dropped:
        problems.append(f"{name}={raw.strip()!r} leaves no tool at all.")
    return (frozenset(named) if named else None), frozenset(dropped)


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
