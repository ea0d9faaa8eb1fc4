"""Cancellation and attempt deadlines: stopping blocked HTTP from another thread.

A :class:`CancelToken` belongs to one tool call: its Event is what the worker polls
between attempts and waits on during pauses, and :meth:`CancelToken.cancel` also
shuts down the socket of the attempt in flight. An :class:`AttemptGuard` holds the
connections of one attempt; the watchdog stops a guard whose time limit has passed,
which bounds the *whole* attempt, a server that drips bytes included.

Shutting a socket (``shutdown(SHUT_RDWR)``) wakes a blocked ``recv`` at once, where
``close`` would not. This module knows nothing of ``requests``: ``transport.py`` makes the
connections register themselves with the guard that runs on their thread.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from typing import Any


class AttemptGuard:
    """The connections one HTTP attempt uses, so another thread can shut them down.

    Connections come from a pool shared by all calls. One that goes back to the pool is
    first :meth:`released` from its guard, under the guard's lock: from then on a stop
    cannot reach it, and a connection whose attempt was stopped never goes back.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connections: set[Any] = set()
        self._finished = False
        self.stopped_because: str | None = None  # "cancelled" or "expired"
        #: Whether the connection registered last had served a request before (came from the pool).
        self.reused_connection = False

    def register(self, connection: Any, *, reused: bool = False) -> None:
        with self._lock:
            if self._finished:
                return
            self._connections.add(connection)
            self.reused_connection = reused
            stopped = self.stopped_because is not None
        if stopped:
            _shut(connection)

    def release(self, connection: Any) -> bool:
        """``connection`` leaves this attempt for the pool: True if it may be reused, False if it was stopped."""
        with self._lock:
            self._connections.discard(connection)
            return self.stopped_because is None

    def stop(self, reason: str) -> None:
        with self._lock:
            if self._finished:
                return  # its connection may be serving the next request by now: hands off
            if self.stopped_because is None:
                self.stopped_because = reason
            connections = list(self._connections)
        for connection in connections:
            _shut(connection)

    def finish(self) -> None:
        with self._lock:
            self._finished = True
            self._connections.clear()


class _Watchdog:
    """One daemon thread that stops attempts whose time is up.

    Cheaper than a ``threading.Timer`` (a new thread) per attempt. Finished attempts
    stay in the heap until their deadline and are skipped then.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._deadlines: list[tuple[float, int, AttemptGuard]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, attempt: AttemptGuard, seconds: float) -> None:
        entry = (time.monotonic() + seconds, next(self._order), attempt)
        with self._condition:
            heapq.heappush(self._deadlines, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="teamvault-watchdog", daemon=True)
                self._thread.start()
            if self._deadlines[0] is entry:  # only an earlier deadline needs the thread awake
                self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                if not self._deadlines:
                    self._condition.wait()
                    continue
                deadline, _, attempt = self._deadlines[0]
                left = deadline - time.monotonic()
                if left > 0:
                    self._condition.wait(left)
                    continue
                heapq.heappop(self._deadlines)
            attempt.stop("expired")


_watchdog = _Watchdog()


def stop_when_expired(attempt: AttemptGuard, seconds: float) -> None:
    """Stop ``attempt`` (shut its sockets) if it is still running ``seconds`` from now."""
    _watchdog.watch(attempt, seconds)


def _shut(connection: Any) -> None:
    sock = connection.sock
    if sock is None:
        return
    # The base-class method on an SSLSocket shuts the TCP socket without touching the
    # SSL object the worker thread may be reading from. OSError: already closed.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class CancelToken:
    """One tool call's cancellation: an Event the worker polls, and the in-flight socket to shut."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._attempts: set[AttemptGuard] = set()  # several when a batch reads notes concurrently

    @property
    def cancelled(self) -> bool:
        return self.event.is_set()

    def cancel(self) -> None:
        """Stop the call: no further attempt, and those in flight are aborted now."""
        self.event.set()
        with self._lock:
            attempts = list(self._attempts)
        for attempt in attempts:
            attempt.stop("cancelled")

    def attach(self, attempt: AttemptGuard) -> None:
        """``attempt`` is a request of the call in flight; a cancel from now on shuts its sockets."""
        with self._lock:
            self._attempts.add(attempt)
        if self.event.is_set():
            attempt.stop("cancelled")

    def detach(self, attempt: AttemptGuard) -> None:
        """The attempt is over: a late cancel can no longer reach a connection another request reuses."""
        with self._lock:
            self._attempts.discard(attempt)
