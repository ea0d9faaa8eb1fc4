"""A big vault's whole listing, reused for a moment by the calls that read every note.

The listing is how the tools that read every note (search, the link, tag, task and property
tools) learn each note's ``contentHash``, and the server has no cheaper way to say what
changed (``GET /files`` has no "since", no ETag, no pages). On a big vault that listing is
most of a warm call: at 20,000 notes it is about 190 ms (the server's answer, the JSON and a
:class:`~teamvault_mcp.vault.client.VaultFile` per file), at 100,000 about a second. An
agent's tool calls come in bursts (a search, then the links of what it found, then the
tasks), so a listing of :data:`REUSE_MIN_FILES` files or more is kept per project, and a call
that starts within ``TEAM_VAULT_LISTING_REUSE`` seconds (default 2, ``config.py``;
``0``: never) of that listing's request answers from it, a folder's calls too (a folder's call
without one asks for that folder only, and keeps nothing).

Listings alive at once (the kept one, the tombstones', one a call still holds) share their records: a new whole
listing takes, for each file unchanged since the project's last listing still alive, that listing's own record
(:meth:`KeptListings._shared`), so each unchanged file's strings are in memory once.

``recent_changes`` keeps its listing with the tombstones (``includeDeleted``) the same way, apart; and
``find_notes``, which needs only the paths, asks for the whole listing (and keeps it) once the project's last
one was big (:meth:`KeptListings.was_big`). What the tools work out from a kept listing that depends on it
alone — its Markdown notes by path, its set of paths, the link graph made of it — is kept with it
(:meth:`KeptListings.derived`), so a call that reuses the listing does not walk 100,000 files again; it
goes with the listing.

Freshness rules: a smaller vault is listed by every call, as before (its listing is cheap);
any write call of this server forgets every kept listing as it starts and as it ends, so
an agent always sees its own writes (:meth:`KeptListings.forget`); a listing that was under way
while a write happened is not kept. What another client changed shows at the latest that
many seconds late. ``list_notes`` and the uncertain-outcome checks always ask the server.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from teamvault_mcp.vault.records import VaultListing

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.records import VaultFile
    from teamvault_mcp.vault.retry import Clock

#: A listing of fewer files is never reused: it costs little, and small vaults stay fresh to the call.
REUSE_MIN_FILES = 10_000
#: Projects whose listing is kept (the last listed first out; each may keep recent_changes' listing with its
#: tombstones besides): a 100,000-file listing is tens of megabytes.
PROJECTS_KEPT = 2


T = TypeVar("T")


@dataclass(frozen=True)
class _Kept:
    files: list[VaultFile]
    asked_at: float  # the clock's monotonic time when its request began
    derived: dict[Hashable, Any] = field(default_factory=dict)  # see KeptListings.derived


class KeptListings:
    """The last big listing of each project, and when it was asked for (see the module docstring); thread-safe."""

    def __init__(self, clock: Clock, reuse_seconds: float, min_files: int = REUSE_MIN_FILES) -> None:
        self._clock = clock
        self.reuse_seconds = reuse_seconds
        self.min_files = min_files
        self._kept: dict[tuple[str, bool], _Kept] = {}  # by (project, tombstones included)
        self._big: set[str] = set()  # the projects whose last whole listing had min_files or more
        self._writes = 0  # how many times a write made the kept listings stale
        self._last: dict[str, weakref.ref[list[VaultFile]]] = {}  # each project's last whole listing, weakly
        self._lock = threading.Lock()
        #: Listings answered from a kept one: how tests see a reuse.
        self.reused = 0

    def files(
        self, client: TeamVaultClient, project_id: str, prefix: str | None = None, *, include_deleted: bool = False
    ) -> list[VaultFile]:
        """Every live file of the project under ``prefix`` (a stored folder prefix, as the server's ``prefix=``
        matches it; None: all), from a kept listing while it may be reused, else from the server; with
        ``include_deleted``, the tombstones too (a listing of its own)."""
        with self._lock:
            writes = self._writes
        asked_at = self._clock.monotonic()
        kept = self.reusable(project_id, include_deleted=include_deleted)
        if kept is not None:
            return kept if prefix is None else [file for file in kept if file.path.startswith(prefix)]
        if prefix is not None:  # one folder: less to ask for than the whole
            return client.list_files(project_id, prefix=prefix, include_deleted=include_deleted)
        files = self._shared(project_id, client.list_files(project_id, include_deleted=include_deleted))
        key = (project_id, include_deleted)
        with self._lock:
            self._kept.pop(key, None)
            if not include_deleted:
                (self._big.add if len(files) >= self.min_files else self._big.discard)(project_id)
            if self.reuse_seconds > 0 and len(files) >= self.min_files and self._writes == writes:
                # (a write that began or ended meanwhile may postdate this listing: it is not kept)
                self._kept[key] = _Kept(files, asked_at)
                while len(self._kept) > 2 * PROJECTS_KEPT:
                    del self._kept[next(iter(self._kept))]
        return files

    def _shared(self, project_id: str, files: list[VaultFile]) -> list[VaultFile]:
        """``files`` with each record that is unchanged since the project's last whole listing still alive (kept,
        or held by a call) replaced by that listing's own object: a listing is some 600 bytes a file of strings,
        and the listings alive at once (the kept one, the tombstones', a call's) then share them."""
        with self._lock:
            ref = self._last.get(project_id)
        before = ref() if ref is not None else None
        if before is not None:
            by_id = {file.id: file for file in before}
            files = VaultListing([old if (old := by_id.get(file.id)) == file else file for file in files])
        try:
            made = weakref.ref(files)
        except TypeError:  # not a VaultListing (a stand-in client's): shared with nothing
            return files
        with self._lock:
            self._last[project_id] = made
            while len(self._last) > 2 * PROJECTS_KEPT:
                del self._last[next(iter(self._last))]
        return files

    def reusable(self, project_id: str, *, include_deleted: bool = False) -> list[VaultFile] | None:
        """The project's kept listing if a call starting now may answer from it; None otherwise."""
        now = self._clock.monotonic()
        with self._lock:
            kept = self._kept.get((project_id, include_deleted))
            if kept is None:
                return None
            if now - kept.asked_at > self.reuse_seconds:
                # Past its moment: let it go (and what was worked out of it) before the next listing is made, so
                # that two big listings are not alive at once.
                del self._kept[(project_id, include_deleted)]
                return None
            self.reused += 1
            return kept.files

    def was_big(self, project_id: str) -> bool:
        """Whether the project's last whole listing had :attr:`min_files` files or more (and reuse is on): the next
        one is worth keeping, even for a call that needs only its paths."""
        with self._lock:
            return self.reuse_seconds > 0 and project_id in self._big

    def derived(self, listing: list[VaultFile], key: Hashable, make: Callable[[], T]) -> T:
        """What ``make`` works out from ``listing`` alone (``key`` names it), made once while that very listing
        is kept: a reused listing's Markdown notes, its paths, the graph of its links. A listing not kept (a small
        vault's, a folder's) is worked on anew by every call."""
        found: T | None = self.recall(listing, key)
        if found is not None:
            return found
        value = make()
        self.remember(listing, key, value)
        return value

    def recall(self, listing: list[VaultFile], key: Hashable) -> Any:
        """What :meth:`remember` kept under ``key`` with ``listing`` while it is kept; None otherwise."""
        with self._lock:
            kept = self._holding(listing)
            return kept.derived.get(key) if kept is not None else None

    def remember(self, listing: list[VaultFile], key: Hashable, value: object) -> None:
        """Keep ``value`` (true of ``listing`` alone, never None) with that listing, if it is kept."""
        with self._lock:
            kept = self._holding(listing)
            if kept is not None:
                kept.derived[key] = value

    def _holding(self, listing: list[VaultFile]) -> _Kept | None:
        """The kept entry of this very listing (the same object), under the lock."""
        return next((kept for kept in self._kept.values() if kept.files is listing), None)

    def forget(self) -> None:
        """A write call begins or ends: no kept listing is reused again."""
        with self._lock:
            self._writes += 1
            self._kept.clear()
