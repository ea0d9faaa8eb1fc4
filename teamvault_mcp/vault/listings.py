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

Freshness rules: a smaller vault is listed by every call, as before (its listing is cheap);
any write call of this server forgets every kept listing as it starts and as it ends, so
an agent always sees its own writes (:meth:`KeptListings.forget`); a listing that was under way
while a write happened is not kept. What another client changed shows at the latest that
many seconds late. ``list_notes``, ``recent_changes`` and the uncertain-outcome checks always
ask the server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.records import VaultFile
    from teamvault_mcp.vault.retry import Clock

#: A listing of fewer files is never reused: it costs little, and small vaults stay fresh to the call.
REUSE_MIN_FILES = 10_000
#: Projects whose listing is kept (the last listed first out): a 100,000-file listing is tens of megabytes.
PROJECTS_KEPT = 2


@dataclass(frozen=True)
class _Kept:
    files: list[VaultFile]
    asked_at: float  # the clock's monotonic time when its request began


class KeptListings:
    """The last big listing of each project, and when it was asked for (see the module docstring); thread-safe."""

    def __init__(self, clock: Clock, reuse_seconds: float, min_files: int = REUSE_MIN_FILES) -> None:
        self._clock = clock
        self.reuse_seconds = reuse_seconds
        self.min_files = min_files
        self._kept: dict[str, _Kept] = {}
        self._writes = 0  # how many times a write made the kept listings stale
        self._lock = threading.Lock()
        #: Listings answered from a kept one: how tests see a reuse.
        self.reused = 0

    def files(self, client: TeamVaultClient, project_id: str, prefix: str | None = None) -> list[VaultFile]:
        """Every live file of the project under ``prefix`` (a stored folder prefix, as the server's ``prefix=``
        matches it; None: all), from a kept listing while it may be reused, else from the server."""
        with self._lock:
            writes = self._writes
        asked_at = self._clock.monotonic()
        kept = self.reusable(project_id)
        if kept is not None:
            return kept if prefix is None else [file for file in kept if file.path.startswith(prefix)]
        if prefix is not None:
            return client.list_files(project_id, prefix=prefix)  # one folder: less to ask for than the whole
        files = client.list_files(project_id)
        with self._lock:
            self._kept.pop(project_id, None)
            if self.reuse_seconds > 0 and len(files) >= self.min_files and self._writes == writes:
                # (a write that began or ended meanwhile may postdate this listing: it is not kept)
                self._kept[project_id] = _Kept(files, asked_at)
                while len(self._kept) > PROJECTS_KEPT:
                    del self._kept[next(iter(self._kept))]
        return files

    def reusable(self, project_id: str) -> list[VaultFile] | None:
        """The project's kept listing if a call starting now may answer from it; None otherwise."""
        now = self._clock.monotonic()
        with self._lock:
            kept = self._kept.get(project_id)
            if kept is None or now - kept.asked_at > self.reuse_seconds:
                return None
            self.reused += 1
            return kept.files

    def forget(self) -> None:
        """A write call begins or ends: no kept listing is reused again."""
        with self._lock:
            self._writes += 1
            self._kept.clear()
