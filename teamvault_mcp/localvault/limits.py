"""Limits that keep the local vault answering whatever its clients do, above all clients without a key.

Each connection is in one phase: sending a request head (``head``: from the moment it
is accepted, or from the first byte of its next request), being served (``busy``), or
idle between keep-alive requests (``idle``).

- **A cap on open connections**, by default derived from the soft limit on open files
  (:func:`default_max_connections`), so that connections alone never use up the
  descriptors the database and the blobs need.
- **Shedding instead of locking out.** A new connection near the cap closes the
  longest-idle keep-alive connection; at the cap with none idle, the connection that
  has been sending its head the longest (a client that connects and sends nothing holds
  its slot only until someone needs it); when every connection is busy with a request,
  the newcomer gets a 503 and is closed.
- **A deadline for the whole request head**, not a timeout per receive: a client that
  drips a header byte a second is closed when the deadline passes. A keep-alive
  connection waits ``idle_timeout`` for the first byte of its next request.
- **A long listen backlog**, so that a burst of connects waits in the kernel instead of
  being dropped and retried by the client a second or more later.

A request body is read only after the key has been checked (app.py); while it is
read, and while an answer is written, each receive or send may take ``io_timeout``.
"""

from __future__ import annotations

import collections
import contextlib
import io
import resource
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from teamvault_mcp.localvault.database import DATABASE_POOL

HEAD, BUSY, IDLE = "head", "busy", "idle"
LISTEN_BACKLOG = 1024
DEFAULT_HEAD_TIMEOUT = 10.0
DEFAULT_IDLE_TIMEOUT = 120.0
DEFAULT_IO_TIMEOUT = 120.0  # as the handler's one timeout was before there were phases
#: Descriptors kept for everything but client connections: the database pool (a database
#: and a WAL file per connection), the listening socket, logs, and the MCP server's own
#: connections when the vault is embedded (``--local``).
RESERVED_DESCRIPTORS = 2 * DATABASE_POOL + 64
MIN_CONNECTIONS, MAX_CONNECTIONS = 16, 1024


def default_max_connections(soft_limit: int | None = None) -> int:
    """Half of the descriptors left after the reserve (a busy connection may open a blob too), in 16..1024.

    1,024 open files (a common default) give 464 connections; 256 give 80.
    """
    if soft_limit is None:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_limit == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(MIN_CONNECTIONS, min(MAX_CONNECTIONS, (soft_limit - RESERVED_DESCRIPTORS) // 2))


@dataclass(frozen=True)
class Limits:
    """The connection limits of one vault; built once, passed to the server and to every handler."""

    max_connections: int
    head_timeout: float = DEFAULT_HEAD_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    io_timeout: float = DEFAULT_IO_TIMEOUT

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {self.max_connections}")
        if min(self.head_timeout, self.idle_timeout, self.io_timeout) <= 0:
            raise ValueError("the connection timeouts must be positive")

    @property
    def shed_idle_at(self) -> int:
        """From this many open connections on, a new one closes the longest-idle keep-alive connection."""
        return max(1, self.max_connections - self.max_connections // 8)


class Connections:
    """The vault's open connections by phase; admits a new one, shedding the least useful when full.

    ``closed`` counts why the vault closed connections on its own: ``shed_idle``,
    ``shed_head``, ``refused`` (all busy), ``head_deadline``, ``idle_timeout``.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        # Longest in its phase first: a dict keeps insertion order, and a connection that changes
        # phase is inserted anew (the dicts are used as ordered sets).
        self._phases: dict[str, dict[socket.socket, None]] = {HEAD: {}, BUSY: {}, IDLE: {}}
        self._phase_of: dict[socket.socket, str] = {}
        self._shed: set[socket.socket] = set()  # closed by us, their threads not yet finished
        self._changed = threading.Condition()
        self.closed: collections.Counter[str] = collections.Counter()

    def admit(self, sock: socket.socket) -> bool:
        """Register a new connection in the ``head`` phase; False if every slot is busy (refuse it)."""
        limits = self.limits
        with self._changed:
            live = len(self._phase_of)
            if live >= limits.shed_idle_at and self._phases[IDLE]:
                self._shed_oldest(IDLE, "shed_idle")
            elif live >= limits.max_connections and self._phases[HEAD]:
                self._shed_oldest(HEAD, "shed_head")
            elif live >= limits.max_connections:
                self.closed["refused"] += 1
                return False
            self._phase_of[sock] = HEAD
            self._phases[HEAD][sock] = None
            self._changed.notify_all()
        return True

    def _shed_oldest(self, phase: str, reason: str) -> None:
        victim = next(iter(self._phases[phase]))
        del self._phases[phase][victim]
        del self._phase_of[victim]
        self._shed.add(victim)
        self.closed[reason] += 1
        # Under the lock: the victim's thread unregisters (leave) before it closes the socket, so
        # this cannot reach a descriptor that was closed and reused meanwhile.
        with contextlib.suppress(OSError):
            victim.shutdown(socket.SHUT_RDWR)  # its thread's receive returns at once, with end of file

    def enter(self, sock: socket.socket, phase: str) -> None:
        """The connection moves to ``phase``; nothing happens for one that was shed."""
        with self._changed:
            old = self._phase_of.get(sock)
            if old is None:
                return
            del self._phases[old][sock]
            self._phases[phase][sock] = None
            self._phase_of[sock] = phase
            self._changed.notify_all()

    def leave(self, sock: socket.socket) -> None:
        """The connection's thread is done with it; call before closing the socket."""
        with self._changed:
            phase = self._phase_of.pop(sock, None)
            if phase is not None:
                del self._phases[phase][sock]
            self._shed.discard(sock)
            self._changed.notify_all()

    def note(self, reason: str) -> None:
        with self._changed:
            self.closed[reason] += 1
            self._changed.notify_all()

    def count(self, phase: str | None = None) -> int:
        """How many connections are open (in ``phase``, or in all)."""
        with self._changed:
            return len(self._phase_of) if phase is None else len(self._phases[phase])

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``condition()`` holds (checked at every change); for tests and operators."""
        with self._changed:
            return self._changed.wait_for(condition, timeout)


class DeadlineReader(io.RawIOBase):
    """A connection's receiving side, bounded by a deadline for a whole phase or by a time per receive.

    ``expired`` tells whether the last failure was a deadline; ``ended`` whether the
    peer (or a shed) ended the stream. The socket's own timeout is what bounds each
    receive (and each send, made while a per-receive time is set); it is changed only
    when it has to be, since each change is a system call.
    """

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self._deadline: float | None = None
        self._timeout = sock.gettimeout()
        self.expired = False
        self.ended = False

    def readable(self) -> bool:
        return True

    def until(self, deadline: float) -> None:
        """Every receive from now on must end by ``deadline`` (monotonic)."""
        self._deadline = deadline
        self.expired = False

    def each_receive(self, seconds: float) -> None:
        """From now on each receive (and send) may take ``seconds``, however many there are."""
        self._deadline = None
        self.expired = False
        self._set_timeout(seconds)

    def _set_timeout(self, seconds: float) -> None:
        if seconds != self._timeout:
            self._sock.settimeout(seconds)
            self._timeout = seconds

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._deadline is not None:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                self.expired = True
                raise TimeoutError("the deadline for this request head has passed")
            self._set_timeout(remaining)
        try:
            received = self._sock.recv_into(buffer)
        except TimeoutError:
            self.expired = self._deadline is not None
            raise
        if received == 0:
            self.ended = True
        return received
