"""What a tool handler works with: the call's context in, a :class:`ToolOutput` out.

Handlers are plain blocking functions ``handler(ctx, args) -> ToolOutput`` that raise
:class:`~teamvault_mcp.errors.TeamVaultError` on failure. Each tool family
(``notes.py``, ``reading.py``, ``search.py``, ``frontmatter.py``, ``history.py``,
``schemas.py``) declares its tools next to its handlers; ``server/runner.py`` runs them in
worker threads.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from teamvault_mcp.errors import (
    CallCancelledError,
    EditFailedError,
    NoProjectError,
    NoteNotFoundError,
    NotTextError,
    ToolInputError,
    printable,
)
from teamvault_mcp.text.deadlines import Deadline
from teamvault_mcp.text.frontmatter import FrontMatterError
from teamvault_mcp.text.paths import stored_path_of
from teamvault_mcp.tools.missing import Listings, Revival, not_found
from teamvault_mcp.tools.writing.report import WriteReport

if TYPE_CHECKING:  # the client pulls in `requests`, which start-up does not need
    from teamvault_mcp.text.noteindex import NoteIndex
    from teamvault_mcp.text.search import SearchIndex
    from teamvault_mcp.tools.note_locks import NoteLocks
    from teamvault_mcp.tools.schema_registry import SchemaRegistry
    from teamvault_mcp.vault.cache import ContentCache
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.interrupt import CancelToken
    from teamvault_mcp.vault.listings import KeptListings
    from teamvault_mcp.vault.records import VaultFile, VaultUser
    from teamvault_mcp.vault.retry import Budget
    from teamvault_mcp.vault.sync import VaultSync

#: Reports progress to the host, if it asked for it: (done, total, message).
Progress = Callable[[float, float | None, str], None]


@dataclass(frozen=True)
class ToolOutput:
    """A tool's result: the text the model reads, everything that text says as data, and whether it failed.

    Hosts show the model one half or the other (README: Hosts and the two halves), so each is complete on its
    own: ``text`` is sent as the result's one text block; ``structured`` is sent as ``structuredContent`` only
    with TEAM_VAULT_STRUCTURED_CONTENT=on, and holds every fact of the text (``answer.py`` builds both at once).
    """

    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False


@dataclass(frozen=True)
class ToolSet:
    """The tools registered, and the settings their texts depend on: the limit of a plain read
    (TEAM_VAULT_MAX_READ_CHARS, 0: none), whether only one project can be meant (then ``projectId``
    is not offered) and whether results carry structured content (then each tool declares its output schema)."""

    names: frozenset[str]
    max_read_chars: int = 50_000
    one_project: bool = False
    structured: bool = False

    def has(self, *tools: str) -> bool:
        return set(tools) <= self.names

    def ways_on(self, *ways: tuple[str, str]) -> str | None:
        """One sentence of the ways on, each ``(tool, words)`` kept only when the tool is offered here:
        ``"Tick one with edit_note (…); its section: read_note(…)."``; None when no tool is."""
        said = "; ".join(words for tool, words in ways if self.has(tool))
        return f"{said[0].upper()}{said[1:]}." if said else None


class WorkspaceView(Protocol):
    """What a handler sees of the state its server's calls share: the workspace (``server/workspace.py``)."""

    @property
    def default_project_id(self) -> str | None: ...
    @property
    def index(self) -> SearchIndex: ...
    @property
    def note_index(self) -> NoteIndex: ...
    @property
    def kept_listings(self) -> KeptListings: ...
    @property
    def sync(self) -> VaultSync: ...
    @property
    def key_user(self) -> KeyUser: ...
    @property
    def note_locks(self) -> NoteLocks: ...
    @property
    def schemas(self) -> SchemaRegistry | None: ...
    def cache_for(self, project_id: str) -> ContentCache | None: ...


@dataclass
class ToolContext:
    """What a handler needs: the workspace its server's calls share (the indexes, the content cache, the
    syncs, the key's user, the note locks, the schemas), and the call's own client, budget, cancel token and
    progress reporter. ``Workspace.context`` (``server/workspace.py``) makes it, for every call and the warm-up."""

    workspace: WorkspaceView
    client: TeamVaultClient
    budget: Budget
    token: CancelToken
    progress: Progress | None = None
    #: What a write handler learnt for the audit log (the write pipeline fills it: ``writing/report.py``).
    report: WriteReport = field(default_factory=WriteReport)
    #: The folders writes may touch in the call's project (TEAM_VAULT_WRITE_PREFIXES), None: anywhere. The runner
    #: checks the paths a write's arguments name; a write that finds its notes itself checks each one.
    write_prefixes: tuple[str, ...] | None = None
    #: The tools registered with this one, and the settings their texts depend on.
    tools: ToolSet = field(default_factory=lambda: ToolSet(frozenset()))
    #: The listings made to explain a missing note (one per project and call, shared by a batch's threads).
    listings: Listings = field(default_factory=Listings)

    # -- the workspace's, by the names handlers use ---------------------------------------------------------

    @property
    def default_project_id(self) -> str | None:
        return self.workspace.default_project_id

    @property
    def index(self) -> SearchIndex:
        """Note texts by content hash, for searches."""
        return self.workspace.index

    @property
    def note_index(self) -> NoteIndex:
        """The notes' links, tags, tasks and front matter, parsed once per content."""
        return self.workspace.note_index

    @property
    def kept_listings(self) -> KeptListings:
        """A big vault's last listing, reused for a moment (``vault/listings.py``)."""
        return self.workspace.kept_listings

    @property
    def sync(self) -> VaultSync:
        """What is being fetched, and whether the server has folder archives."""
        return self.workspace.sync

    @property
    def key_user(self) -> KeyUser:
        """The key's own user, asked once per workspace."""
        return self.workspace.key_user

    @property
    def note_locks(self) -> NoteLocks | None:  # never None now; the write rules still have a branch for it
        """The locks that keep this process's writes to one note one at a time."""
        return self.workspace.note_locks

    @property
    def schemas(self) -> SchemaRegistry | None:
        """The schemas loaded from TEAM_VAULT_SCHEMA_DIR (None: not configured)."""
        return self.workspace.schemas

    def cache_for(self, project_id: str) -> ContentCache | None:
        """The disk cache of one project's note contents (None when TEAM_VAULT_CACHE_DIR=off)."""
        return self.workspace.cache_for(project_id)

    def project(self, args: Mapping[str, Any]) -> str:
        project_id = args.get("projectId") or self.default_project_id
        if not project_id:
            raise NoProjectError()
        if self.tools.one_project and project_id != self.default_project_id:
            raise ToolInputError(
                f"This server works in one project only, {self.default_project_id}; leave out projectId "
                f"(it was {printable(str(project_id))[:80]!r}). Nothing was sent."
            )
        return str(project_id)

    def existing(self, project_id: str, path: str) -> tuple[str, VaultFile]:
        """The stored form of ``path`` and the live file there; :class:`NoteNotFoundError` if none."""
        stored = stored_path_of(path)
        file = self.client.find_file(project_id, stored)
        if file is None:
            raise self.not_found(project_id, stored)
        return stored, file

    def not_found(self, project_id: str, stored: str) -> NoteNotFoundError:
        """``Note not found`` for ``stored``, saying what is there instead (``missing.py``)."""
        revival = Revival(self.tools.has("write_note"), self.tools.has("restore_note_version"))
        return not_found(self.client, project_id, stored, self.listings, revival)

    def note(self, project_id: str, path: str) -> Note:
        """The text note at ``path`` (not an image): its bytes from the content cache when it holds the
        ``contentHash`` the path resolved to, downloaded (and cached) otherwise. One request for an
        unchanged note, two for a changed or unseen one."""
        stored, file = self.existing(project_id, path)
        if file.file_type != "TEXT":
            raise NotTextError(stored, file.mime_type or file.file_type)
        cache = self.cache_for(project_id) if self.cache_for is not None else None
        if cache is not None and file.content_hash:
            data = cache.get(file.content_hash, file.size)
            if data is not None:
                return Note(stored, file, data)
        data = self.client.download(project_id, file.id)
        self.remember(project_id, data)
        return Note(stored, file, data)

    def deadline(self, reserve: float) -> Deadline | None:
        """When this call's CPU work stops, ``reserve`` seconds before its budget ends, so that the answer is sent
        in time; on the budget's clock (None: the call has no budget)."""
        return None if self.budget is None else Deadline(self.budget.seconds - reserve, self.budget.elapsed)

    def yaml_check(self, path: str) -> Callable[[], None]:
        """Stops reading or changing the YAML of ``path`` when the call is cancelled or its budget has run out:
        parsing is CPU work that no request's time limit covers."""

        def check() -> None:
            if self.token is not None and self.token.cancelled:
                raise CallCancelledError()
            if self.budget is not None and self.budget.remaining() <= 0:
                raise FrontMatterError(
                    f"The front matter of {path} took longer to read than this call's {self.budget.seconds:g} s "
                    "budget, so it was stopped; nothing was written. Read the note with read_note instead."
                )

        return check

    def remember(self, project_id: str, data: bytes) -> None:
        """Keep a note's bytes in the content cache (a read or a write just saw them)."""
        cache = self.cache_for(project_id) if self.cache_for is not None else None
        if cache is not None:
            cache.put(sha256_hex(data), data)


class KeyUser:
    """The user the API key belongs to: one ``whoami`` for the whole session, kept once it has answered."""

    def __init__(self) -> None:
        self._user: VaultUser | None = None
        self._lock = threading.Lock()

    def get(self, client: TeamVaultClient) -> VaultUser:
        with self._lock:
            if self._user is not None:
                return self._user
        user = client.whoami()  # not under the lock: a request; two first calls at once both ask, harmlessly
        with self._lock:
            self._user = user
        return user


@dataclass(frozen=True)
class Note:
    """A downloaded text note: its stored path, its file record and its bytes."""

    path: str
    file: VaultFile
    data: bytes

    @cached_property  # a handler may ask several times: decoded once
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    def editable_text(self, what: str) -> str:
        """The note's text for a change that must keep every other byte: :class:`EditFailedError` if not UTF-8."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            raise EditFailedError(f"{self.path} is not valid UTF-8 text; {what} cannot be changed safely.") from None

    @cached_property  # hashed once (read_note shows it twice; a long note's hash is not free)
    def content_hash(self) -> str:
        """The SHA-256 of exactly the bytes read: what ``expectedHash`` compares against."""
        return sha256_hex(self.data)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def json_output(value: Any, *, key: str | None = None, compact: bool = False) -> ToolOutput:
    """``value`` as JSON text, and as structured content (under ``key`` when it is a list)."""
    text = json.dumps(value, ensure_ascii=False, indent=None if compact else 2)
    return ToolOutput(text, {key: value} if key is not None else value)
