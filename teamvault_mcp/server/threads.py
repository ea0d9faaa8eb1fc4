"""The threads tool calls run in: kept between calls, each call handed over through a queue.

Only the hand-off lives here; what a call does in its thread, and how a cancel reaches it,
is ``runner.py``'s.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

#: Seconds a call thread waits for the next call before it ends.
THREAD_IDLE_LIMIT = 10.0


class CallThreads:
    """The threads tool calls run in, kept between calls and handed each call through a queue.

    anyio's ``to_thread`` costs about twice as much per call (its limiter, cancel scope and
    context copy); a thread idle for :data:`THREAD_IDLE_LIMIT` seconds ends, as anyio's do.
    The result (or exception) of ``work`` is set on ``done`` from the event loop's thread.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], asyncio.AbstractEventLoop, asyncio.Future[Any]] | None]
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a job and not yet promised one
        self._threads = 0

    def run(self, work: Callable[[], Any], loop: asyncio.AbstractEventLoop, done: asyncio.Future[Any]) -> None:
        """Start ``work`` in an idle thread, or in a new one when none is idle."""
        with self._lock:
            start = self._idle == 0
            if start:
                self._threads += 1
            else:
                self._idle -= 1
        self._jobs.put((work, loop, done))
        if start:
            threading.Thread(target=self._serve, name="teamvault-mcp call", daemon=True).start()

    def close(self) -> None:
        """End every thread once its call (if any) has ended."""
        with self._lock:
            threads = self._threads
        for _ in range(threads):
            self._jobs.put(None)

    def _serve(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=THREAD_IDLE_LIMIT)
            except queue.Empty:
                with self._lock:
                    if self._idle == 0:  # every idle thread is promised a job: this one's is coming
                        continue
                    self._idle -= 1
                    self._threads -= 1
                return
            if job is None:
                return
            work, loop, done = job
            try:
                outcome: tuple[Any, BaseException | None] = (work(), None)
            except BaseException as error:  # handed to the awaiting task, which raises it there
                outcome = (None, error)
            with self._lock:
                self._idle += 1
            with suppress(RuntimeError):  # the loop has closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, done, *outcome)


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.cancelled():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)
