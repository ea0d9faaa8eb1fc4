"""Writes to one note from this process, one at a time: :class:`NoteLocks`.

A write reads the note, works out its new text, writes it and checks what the server then has. Two such
writes to one note at once race even inside one process (a host's parallel calls, the agents of a team on
one ``serve --http``), and a server without conditional writes cannot refuse the loser. So every write
tool call holds the lock of each note it names for the whole call, read included (``server/runner.py``),
and every content write holds its note's lock while it writes and checks (``writing/content.py``): two
writes of this process never meet at the server; only writes from elsewhere can. A lock is per project
and stored path, reentrant in its thread, and kept only while held. Waiting for one is bounded by the
call's budget and ends at once on a cancel; a call that cannot have it in time fails, having written
nothing (:class:`~teamvault_mcp.errors.NoteBusyError`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from teamvault_mcp.errors import CallCancelledError, NoteBusyError

#: How long a write that already holds other notes' locks waits for one more (move_note relinking the notes
#: that link to it, while a move of one of them waits for this note): the first to give up ends the wait.
NESTED_WAIT = 5.0

#: Seconds between looks at the cancel token while waiting.
POLL = 0.05

#: A write waits for another write to its note until this much of its own budget is left (then it fails, having
#: written nothing): time enough to answer.
LOCK_RESERVE = 2.0


@dataclass
class _Lock:
    lock: threading.RLock = field(default_factory=threading.RLock)
    users: int = 0  # threads holding or waiting for it: the table forgets the lock when none is left


class NoteLocks:
    """The locks of the notes this process writes, by (project, stored path); shared by every runner of one
    server (``serve --http --key-from-client`` makes one runner per key)."""

    def __init__(self) -> None:
        self._table: dict[tuple[str, str], _Lock] = {}
        self._guard = threading.Lock()
        self._held = threading.local()  # per thread: the keys it holds, each with its depth

    def held(self) -> dict[tuple[str, str], int]:
        """The notes this thread holds, each with how often (a lock is reentrant)."""
        depths: dict[tuple[str, str], int] | None = getattr(self._held, "depths", None)
        if depths is None:
            depths = self._held.depths = {}
        return depths

    @contextlib.contextmanager
    def holding(
        self,
        project_id: str,
        paths: Iterable[str],
        *,
        seconds: Callable[[], float],
        cancelled: Callable[[], bool],
    ) -> Iterator[bool]:
        """Hold the locks of ``paths`` (in one order, so two calls never wait for each other's) until the block
        ends; yields whether any was newly taken (False: this thread held them all already).

        ``seconds()`` is how long the call may still wait; a cancel ends the wait with
        :class:`CallCancelledError`, a lock not had in time with :class:`NoteBusyError`.
        """
        keys = sorted({(project_id, path) for path in paths})
        taken: list[tuple[tuple[str, str], _Lock]] = []
        depths = self.held()
        fresh = False
        try:
            for key in keys:
                nested = bool(depths) and key not in depths  # holding other notes already
                entry = self._enter(key)
                try:
                    got = self._acquire(entry, seconds, cancelled, nested=nested)
                except BaseException:
                    self._leave(key, entry)
                    raise
                if not got:
                    self._leave(key, entry)
                    raise NoteBusyError(key[1])
                taken.append((key, entry))
                fresh = fresh or key not in depths
                depths[key] = depths.get(key, 0) + 1
            yield fresh
        finally:
            for key, entry in reversed(taken):
                depths[key] -= 1
                if not depths[key]:
                    del depths[key]
                entry.lock.release()
                self._leave(key, entry)

    def _enter(self, key: tuple[str, str]) -> _Lock:
        with self._guard:
            entry = self._table.get(key)
            if entry is None:
                entry = self._table[key] = _Lock()
            entry.users += 1
            return entry

    def _leave(self, key: tuple[str, str], entry: _Lock) -> None:
        with self._guard:
            entry.users -= 1
            if not entry.users:
                self._table.pop(key, None)

    def _acquire(
        self, entry: _Lock, seconds: Callable[[], float], cancelled: Callable[[], bool], *, nested: bool
    ) -> bool:
        """Wait for ``entry`` while the call has time (at most NESTED_WAIT when ``nested``), looking at the cancel
        token every POLL seconds."""
        # The machine's clock, not the budget's: Lock.acquire(timeout) waits in real time; the budget is met
        # through seconds(), read again at every look.
        limit = time.monotonic() + (min(seconds(), NESTED_WAIT) if nested else seconds())
        while True:
            if cancelled():
                raise CallCancelledError()
            left = min(limit - time.monotonic(), seconds())
            if left <= 0:
                return entry.lock.acquire(blocking=False)
            if entry.lock.acquire(timeout=min(POLL, left)):
                return True

    def __len__(self) -> int:
        """Notes whose lock is held or waited for now."""
        with self._guard:
            return len(self._table)
