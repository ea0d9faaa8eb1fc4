"""What the server does in the background, and how it steps aside for tool calls.

:class:`Foreground` counts the tool calls running; background work asks it before each step
(a job of a sync, a note read from the disk cache) and waits while any call runs, so that
it never holds a connection or the CPU a call needs. What it was doing at that moment
finishes first: a download in flight, or the archive it is reading (a search may be waiting
for exactly those notes).

:class:`WarmUp` is what the server's warm-up did, for the log and the tests: events in the
order they happen and counters, never timings.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


class Foreground:
    """The tool calls running now; background work steps aside while there are any."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._calls = 0
        #: Times background work waited for calls to end.
        self.stepped_aside = 0

    def enter(self) -> None:
        with self._cond:
            self._calls += 1

    def leave(self) -> None:
        with self._cond:
            self._calls -= 1
            if not self._calls:
                self._cond.notify_all()

    @property
    def busy(self) -> bool:
        return self._calls > 0

    def wait_until_idle(self, stop: threading.Event) -> None:
        """Return when no call is running, or at once when ``stop`` is set."""
        with self._cond:
            if self._calls and not stop.is_set():
                self.stepped_aside += 1
            while self._calls and not stop.is_set():
                self._cond.wait(0.05)  # ``stop`` is another lock's event: look at it now and then

    def wake(self) -> None:
        """Let waiters look at their stop event now (the server is closing)."""
        with self._cond:
            self._cond.notify_all()


@dataclass
class WarmUp:
    """What the warm-up did: ``connected`` (the pool's connections are open), ``listed`` (the default
    project's listing came), ``done`` (it ended, however); and how much of each."""

    connected: threading.Event = field(default_factory=threading.Event)
    listed: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    #: Connections opened ahead.
    connections: int = 0
    #: Text notes in the listing; of them, read from the disk cache into the search index; fetched.
    notes: int = 0
    from_cache: int = 0
    fetched: int = 0
    #: Markdown notes whose links, tags, tasks and front matter it set out to index; those at hand when it ended.
    to_index: int = 0
    indexed: int = 0
    #: Whether it then resolved the vault's links (the graph note_links and broken_links answer from).
    resolved: bool = False
    #: Why it ended before every note was in the index (None: it did not, or it had nothing to do).
    stopped: str | None = None
