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

import anyio

#: Seconds a call thread waits for the next call before it ends.
THREAD_IDLE_LIMIT = 10.0

#: Seconds an overdue call's work is given to stop once told to, before the call is answered without it.
LATE_GRACE = 0.4


class _Job:
    """One call handed to a thread: ``done`` gets its outcome unless the awaiting task was cancelled
    meanwhile; ``ended`` (made only then) is set once the work has returned anyway."""

    __slots__ = ("done", "ended", "loop", "returned", "work")

    def __init__(self, work: Callable[[], Any], loop: asyncio.AbstractEventLoop) -> None:
        self.work = work
        self.loop = loop
        self.done: asyncio.Future[Any] = loop.create_future()
        self.returned = False  # read and written on the loop's thread only
        self.ended: asyncio.Future[None] | None = None


class CallThreads:
    """The threads tool calls run in, kept between calls and handed each call through a queue.

    anyio's ``to_thread`` costs about twice as much per call (its limiter, cancel scope and
    context copy); a thread idle for :data:`THREAD_IDLE_LIMIT` seconds ends, as anyio's do.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a job and not yet promised one
        self._threads = 0

    async def run(
        self,
        work: Callable[[], Any],
        *,
        on_cancel: Callable[[], None],
        grace: float,
        limit: float | None = None,
        on_late: Callable[[], None] | None = None,
        late: Callable[[], Any] | None = None,
        ended_late: Callable[[], None] | None = None,
    ) -> Any:
        """``work()`` in an idle thread (a new one when none is idle), awaited.

        If the awaiting task is cancelled meanwhile, ``on_cancel()`` is called at once (it
        should make the work stop) and the work is waited for, up to ``grace`` seconds,
        before the cancel goes on: the caller's slot lasts exactly as long as the work. (The
        future is awaited directly, not through ``asyncio.shield``: one loop turn less per call.)

        With ``limit``: when the work has not returned ``limit`` seconds from now,
        ``on_late()`` is called (it should make the work stop, and say why), and if it has not
        returned :data:`LATE_GRACE` seconds later either, ``late()`` is the answer instead (the
        thread runs on; what it returns is dropped, and ``ended_late()`` is called once it has).
        """
        loop = asyncio.get_running_loop()
        job = _Job(work, loop)
        self._start(job)
        timer: asyncio.TimerHandle | None = None
        if limit is not None and on_late is not None and late is not None:
            stop, answer_late = on_late, late

            def give_up() -> None:
                if not job.done.done():
                    job.done.set_result(answer_late())
                    job.ended = loop.create_future()
                    if ended_late is not None:
                        job.ended.add_done_callback(lambda _: ended_late())

            def overdue() -> None:
                nonlocal timer
                stop()
                timer = loop.call_later(LATE_GRACE, give_up)

            timer = loop.call_later(max(limit, 0.0), overdue)
        try:
            return await job.done
        except asyncio.CancelledError:
            on_cancel()
            if not job.returned:
                job.ended = job.loop.create_future()
                with anyio.CancelScope(shield=True):
                    await asyncio.wait({job.ended}, timeout=grace)
            raise
        finally:
            if timer is not None:
                timer.cancel()

    def close(self) -> None:
        """End every thread once its call (if any) has ended."""
        with self._lock:
            threads = self._threads
        for _ in range(threads):
            self._jobs.put(None)

    def _start(self, job: _Job) -> None:
        with self._lock:
            start = self._idle == 0
            if start:
                self._threads += 1
            else:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name="teamvault-mcp call", daemon=True).start()

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
            try:
                outcome: tuple[Any, BaseException | None] = (job.work(), None)
            except BaseException as error:  # handed to the awaiting task, which raises it there
                outcome = (None, error)
            with self._lock:
                self._idle += 1
            with suppress(RuntimeError):  # the loop has closed: nobody waits any more
                job.loop.call_soon_threadsafe(_settle, job, *outcome)


def _settle(job: _Job, result: Any, error: BaseException | None) -> None:
    job.returned = True
    if job.done.done():  # cancelled, or answered late without it (run's limit): its outcome is dropped
        if job.ended is not None:
            job.ended.set_result(None)
    elif error is not None:
        job.done.set_exception(error)
    else:
        job.done.set_result(result)
