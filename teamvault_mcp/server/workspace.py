"""The workspace: what the tool calls of one server (one key, in ``serve --http --key-from-client``) share.

Its configuration, clock and retry policy; the keep-alive pool to the server; the search and note
indexes, the disk content cache, the syncs (what is being fetched), the key's own user and the
locks of the notes being written; the schema notes loaded and the tools they make; the calls
running, which the warm-up steps aside for; and the audit log. :meth:`Workspace.context` is the
one place a handler's :class:`~teamvault_mcp.tools.context.ToolContext` is made: this workspace
and the call's own client, budget, cancel token and progress reporter.

Running a call (its budget, worker thread, cancel, errors turned into answers, its audit line)
is ``runner.py``'s, not this module's.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import TYPE_CHECKING

import anyio.to_thread

from teamvault_mcp.config import Config
from teamvault_mcp.errors import CallCancelledError, TeamVaultError
from teamvault_mcp.server.audit import AuditLog
from teamvault_mcp.text.noteindex import FACTS_VERSION, NoteIndex
from teamvault_mcp.text.search import INDEX_CHARS, INDEX_CHARS_BESIDE_STORE, SearchIndex
from teamvault_mcp.tools.context import KeyUser, Progress, ToolContext, ToolSet
from teamvault_mcp.tools.gathering import warm_up
from teamvault_mcp.tools.indexing import index_in_background
from teamvault_mcp.tools.note_locks import NoteLocks
from teamvault_mcp.tools.schema_registry import SCHEMA_LOAD_LIMIT, SchemaRegistry
from teamvault_mcp.tools.spec import Tool
from teamvault_mcp.tools.table import tools_for
from teamvault_mcp.vault.ahead import CONNECTIONS_AHEAD, ConnectionsAhead
from teamvault_mcp.vault.background import Foreground, WarmUp
from teamvault_mcp.vault.cache import ContentCache, ProjectCaches
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.listings import KeptListings
from teamvault_mcp.vault.observer import NO_OBSERVER, VaultObserver
from teamvault_mcp.vault.retry import Budget, Clock, RetryPolicy, SystemClock
from teamvault_mcp.vault.sync import VaultSync

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.index_db import IndexStore
    from teamvault_mcp.vault.transport import HttpPool

log = logging.getLogger(__name__)

#: Seconds tools/list waits beyond the schema load's own limit for the loader thread to finish.
SCHEMA_LOAD_GRACE = 2.0

#: Connections the warm-up opens ahead: one more than it uses, so a call always finds one idle.
#: (``vault/ahead.py`` holds the number: serve opens them before it imports the tools.)
WARM_UP_CONNECTIONS = CONNECTIONS_AHEAD
#: The warm-up's own budget: no host waits for it, but it must end.
WARM_UP_SECONDS = 600.0
#: How long closing waits for the cancelled warm-up to end (a step: one note parsed, or a request cut short).
WARM_UP_JOIN_SECONDS = 2.0


class Workspace:
    """The state the calls of one server share, made once and closed once (see the module docstring)."""

    def __init__(
        self,
        config: Config,
        *,
        clock: Clock | None = None,
        policy: RetryPolicy | None = None,
        caches: ProjectCaches | None = None,
        audit_user: str | None = None,
        ahead: ConnectionsAhead | None = None,
        note_locks: NoteLocks | None = None,
        observer: VaultObserver = NO_OBSERVER,
    ) -> None:
        """``caches``: a content cache shared with other workspaces (``serve --http --key-from-client``: it is
        addressed by content hash); ``audit_user``: the caller's user id for each audit line; ``ahead``: the
        pool ``serve`` began connecting in start-up's first moments, for the calls and the warm-up;
        ``note_locks``: the locks of the notes being written, shared with the other workspaces of one server;
        ``observer``: told of every attempt and retry of the calls' clients (``serve --http --metrics``)."""
        self.config = config
        self.observer = observer
        self.clock: Clock = clock or SystemClock()
        self.policy = policy or default_policy(config)
        self.schemas = SchemaRegistry(config.project_id or "", config.schema_dir) if config.schema_dir else None
        self._tools: tuple[int, dict[str, Tool], ToolSet] = (-1, {}, ToolSet(frozenset()))
        self._pool: HttpPool | None = None  # made by the first call (it loads `requests`), or taken from `ahead`
        self._ahead = ahead
        # note texts by content hash, for searches, shared by all calls; with a cache directory the words are counted
        # on disk (``vault/terms_db.py``), and memory keeps only the texts read lately
        self.index = SearchIndex(INDEX_CHARS if config.cache_dir is None else INDEX_CHARS_BESIDE_STORE)
        # links, tags, tasks, front matter by content hash (in memory, then on disk); the link graphs
        self.note_index = NoteIndex(stores=self.index_store_for)
        # a big vault's last listing, reused for a moment by the calls that read every note
        self.kept_listings = KeptListings(self.clock, config.listing_reuse_seconds)
        self.key_user = KeyUser()
        # One write to a note at a time, in this process (an empty table is falsy: compare with None).
        self.note_locks = note_locks if note_locks is not None else NoteLocks()
        self.sync = VaultSync()  # what is being fetched, and whether the server has folder archives
        self.foreground = Foreground()  # the calls running, which the warm-up steps aside for
        self.warm_up: WarmUp | None = None
        self._warm_thread: threading.Thread | None = None
        self._warm_token = CancelToken()
        self._caches = caches or (
            ProjectCaches(
                config.cache_dir,
                max_bytes=config.cache_max_bytes,
                server=config.cache_namespace or config.base_url,
            )
            if config.cache_dir is not None
            else None
        )
        self.audit = AuditLog(config.audit_log, user=audit_user) if config.audit_log is not None else None
        self._lock = threading.Lock()  # the pool and the warm-up are made once, whichever thread asks first

    @property
    def default_project_id(self) -> str | None:
        """TEAM_VAULT_PROJECT_ID: the project a call works in when it names none."""
        return self.config.project_id

    # -- the tools -------------------------------------------------------------------------------------------

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools by name: the fixed ones, and one for each schema loaded now."""
        return self._current_tools()[1]

    def tool_set(self) -> ToolSet:
        """The tools registered now, and the settings their descriptions and results depend on."""
        return self._current_tools()[2]

    @property
    def tools_generation(self) -> int:
        return self.schemas.generation if self.schemas is not None else 0

    def _current_tools(self) -> tuple[int, dict[str, Tool], ToolSet]:
        """The tools of the schemas' current generation, made again only when it changes (not for each call)."""
        generation = self.schemas.generation if self.schemas is not None else 0
        current = self._tools
        if current[0] != generation:
            schemas = self.schemas.current.schemas if self.schemas is not None else None
            config = self.config
            chosen = tools_for(config.read_only, schemas, named=config.tools_named, dropped=config.tools_dropped)
            tools = {tool.name: tool for tool in chosen}
            registered = ToolSet(
                frozenset(tools), config.max_read_chars, config.single_project, config.structured_content
            )
            current = (generation, tools, registered)
            self._tools = current
        return current

    def start_schema_load(self) -> None:
        """Begin reading the schema notes in a thread (once), within SCHEMA_LOAD_LIMIT seconds."""
        if self.schemas is not None:
            budget = min(SCHEMA_LOAD_LIMIT, self.config.call_budget)
            self.schemas.start_loading(lambda: self.client(Budget(budget, self.clock), CancelToken()))

    def wait_for_schemas(self) -> None:
        """Block until the start-up load of the schemas has ended (it is bounded by its own budget)."""
        if self.schemas is not None:
            self.start_schema_load()
            self.schemas.started.wait(SCHEMA_LOAD_LIMIT + SCHEMA_LOAD_GRACE)

    async def schemas_ready(self) -> None:
        """:meth:`wait_for_schemas` without blocking the event loop."""
        if self.schemas is not None and not self.schemas.started.is_set():
            await anyio.to_thread.run_sync(self.wait_for_schemas)

    # -- the server ------------------------------------------------------------------------------------------

    def http_pool(self) -> HttpPool:
        """The keep-alive connections to the server, shared by all calls."""
        from teamvault_mcp.vault.transport import HttpPool

        early = self._ahead.pool() if self._ahead is not None else None  # waits while it is being made
        with self._lock:
            if self._pool is None:
                self._pool = early if early is not None else HttpPool(self.config.base_url)
                self._ahead = None  # taken: after close(), a late call makes a pool of its own
            return self._pool

    def client(self, budget: Budget, token: CancelToken) -> TeamVaultClient:
        """A client for one call (or the schema load), on the shared pool."""
        return open_client(
            self.config,
            budget,
            token,
            clock=self.clock,
            policy=self.policy,
            pool=self.http_pool(),
            observer=self.observer,
        )

    def cache_for(self, project_id: str) -> ContentCache | None:
        """The disk cache of one project's note contents (None when TEAM_VAULT_CACHE_DIR=off)."""
        return self._caches.for_project(project_id) if self._caches is not None else None

    def index_store_for(self, project_id: str) -> IndexStore | None:
        """The persistent index of one project's facts (None when TEAM_VAULT_CACHE_DIR=off: memory only)."""
        return self._caches.index_for(project_id, FACTS_VERSION) if self._caches is not None else None

    def context(
        self,
        client: TeamVaultClient,
        budget: Budget,
        token: CancelToken,
        *,
        project_id: str | None = None,
        progress: Progress | None = None,
    ) -> ToolContext:
        """What a handler works with: this workspace and the call's own client, budget, token and progress; the
        write scope of ``project_id`` (the call's ``projectId``; None: the default project) and the tools
        registered as the call begins."""
        return ToolContext(
            self,
            client,
            budget,
            token,
            progress=progress,
            write_prefixes=self.config.write_prefixes_for(project_id or self.config.project_id),
            tools=self.tool_set(),
        )

    # -- the warm-up and the end ----------------------------------------------------------------------------

    def start_warm_up(self) -> WarmUp:
        """Open connections to the server ahead of the first call and, unless TEAM_VAULT_PREFETCH=off, sync
        the default project's notes into the cache and the search index, then index their links, tags, tasks and
        front matter (``indexing.index_in_background``), in a background thread (once)."""
        with self._lock:
            if self.warm_up is None:
                self.warm_up = WarmUp()
                self._warm_thread = threading.Thread(
                    target=self._warm_up, args=(self.warm_up,), name="teamvault-warm-up", daemon=True
                )
                self._warm_thread.start()
            return self.warm_up

    def _warm_up(self, report: WarmUp) -> None:
        budget = Budget(WARM_UP_SECONDS, self.clock)
        client: TeamVaultClient | None = None
        try:
            ahead = self._ahead
            if ahead is not None:  # serve began connecting before it imported the SDK
                ahead.done.wait()
                report.connections = ahead.connections
            else:
                report.connections = self.http_pool().connect_ahead(WARM_UP_CONNECTIONS)
            report.connected.set()
            self._say_sqlite_build()  # after the connections: they are what the first call waits for
            if not self.config.prefetch or not self.config.project_id or self._warm_token.cancelled:
                return
            client = self.client(budget, self._warm_token)
            context = self.context(client, budget, self._warm_token)
            listing = warm_up(context, self.foreground, report)
            if report.stopped is None:
                index_in_background(context, self.foreground, report, listing)
            release_freed_memory()  # what the sync and the index made and dropped: hundreds of MB at 100,000 notes
        except (TeamVaultError, CallCancelledError) as error:  # a cancel (the server closing) stops it too
            report.stopped = str(error)
            log.info("the warm-up stopped: %s", error)
        except Exception:  # a bug must not go unseen, nor end the server
            report.stopped = "an internal error"
            log.exception("internal error in the warm-up")
        finally:
            if client is not None:
                client.close()
            report.connected.set()
            report.done.set()

    def _say_sqlite_build(self) -> None:
        """One line on stderr when this Python's SQLite lacks FTS5 (info otherwise): in the warm-up, off start-up's
        path (the probe loads ``sqlite3``)."""
        if self._caches is None:
            return
        from teamvault_mcp.vault.index_db import fts5_available, sqlite_build

        if fts5_available():
            log.info("the index: %s", sqlite_build())
        else:
            log.warning("the index: %s", sqlite_build())

    def close(self) -> None:
        """Stop the warm-up and close the idle pooled connections (the server is going away)."""
        self._warm_token.cancel()
        self.foreground.wake()
        if self._warm_thread is not None:  # cancelled, it ends at its next step: its connection goes back first
            self._warm_thread.join(WARM_UP_JOIN_SECONDS)
        with self._lock:
            pool, self._pool = self._pool, None
            ahead, self._ahead = self._ahead, None
        if pool is None and ahead is not None and ahead.made.is_set():  # made ahead, never used
            pool = ahead.pool()
        if pool is not None:
            pool.close()


def default_policy(config: Config) -> RetryPolicy:
    """The retry policy of a server that is given none: the defaults, with TEAM_VAULT_ATTEMPT_TIMEOUT."""
    return RetryPolicy(attempt_timeout=config.attempt_timeout)


def open_client(
    config: Config,
    budget: Budget,
    token: CancelToken,
    *,
    clock: Clock,
    policy: RetryPolicy,
    pool: HttpPool | None = None,
    observer: VaultObserver = NO_OBSERVER,
) -> TeamVaultClient:
    """A client on ``config``'s server and key: on ``pool``, or on a pool of its own that it closes with itself."""
    from teamvault_mcp.vault.client import TeamVaultClient  # `requests` is loaded by the first call, not at start

    return TeamVaultClient(
        config.base_url,
        config.api_key,
        budget=budget,
        token=token,
        clock=clock,
        policy=policy,
        pool=pool,
        observer=observer,
    )


def release_freed_memory() -> bool:
    """Hand the free pages of the C heap back to the system (glibc's ``malloc_trim``; ctypes lets go of the GIL
    meanwhile, so calls go on): Python frees its objects into the heap, which otherwise keeps the warm-up's high-water
    mark resident. False where the C library has no such function (musl, macOS): nothing to do there."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True
