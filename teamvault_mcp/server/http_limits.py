"""What one client can hold of ``serve --http``: connections, and how long it may take to send a request head.

uvicorn alone lets a client hold a connection for ever by sending its request head a byte at a
time (``timeout_keep_alive`` is cancelled by any byte, and there is no deadline for a head), and
its ``limit_concurrency`` answers 503 to everyone once slow connections fill it. So the HTTP
protocol is :class:`GuardedH11Protocol`, uvicorn's h11 protocol with, from :class:`ConnectionGuard`:

- **a deadline for the whole request head** (``head_timeout``, 10 s as the embedded local vault
  has): from the moment a connection is accepted, and again after each response on a kept-alive
  connection; a connection that has not sent a complete head by then is closed;
- **a cap on open connections** (``max_connections``, by default from the open-file limit) and
  **a cap per client address** (``connections_per_address``). A connection that finds a cap
  reached closes the oldest connection of that group still *waiting* for its head (a slow
  sender, or a kept-alive connection between requests); only when every one is busy with a
  request is the newcomer answered 503 and closed. A normal client sends its head at once, so
  it is busy before anyone can shed it, and it is served while an attack runs.

The TLS handshake happens before a connection reaches the protocol; asyncio bounds it (60 s).

The protocol sends what one response writes in one turn of the event loop as one write (a JSON
answer's head and body: one segment, one wake-up of the client, against two sends that each let
a worker thread take the GIL in between: :class:`CoalescedWrites`). It also tells a request when
its client has gone: each request's ASGI scope holds a
:class:`ClientGone` under :data:`GONE`, set when the connection closes before the answer is
complete. It needs no task reading ``receive()`` for ``http.disconnect`` (a JSON answer has none),
and what waits on it is a callback, not a task (``http.py`` cancels the client's call with it).
Everything here runs on the event loop's thread: no locks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_HEAD_TIMEOUT = 10.0
DEFAULT_CONNECTIONS_PER_ADDRESS = 32
#: Descriptors kept for everything but client connections: the listening socket, logs, the runners' pools to the vault.
RESERVED_DESCRIPTORS = 64
MIN_CONNECTIONS, MAX_CONNECTIONS = 16, 4096

_FULL_TEXT = b"Too many connections to this MCP server; try again later.\n"
#: The answer to a connection that finds every slot busy with a request; then it is closed.
ALL_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_FULL_TEXT), _FULL_TEXT)
)


#: Where a request's ASGI scope holds its :class:`ClientGone`.
GONE = "teamvault_mcp.gone"


class ClientGone:
    """Set once the client of one request has gone away; callbacks registered with :meth:`on_set` run then, once."""

    __slots__ = ("_callbacks", "is_set")

    def __init__(self) -> None:
        self.is_set = False
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        if self.is_set:
            return
        self.is_set = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when the client goes (at once if it has); returns what unregisters it."""
        if self.is_set:
            callback()
            return _nothing
        self._callbacks.append(callback)

        def forget() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return forget


def _nothing() -> None:
    pass


def default_max_connections(soft_limit: int | None = None) -> int:
    """Half of the descriptors left after the reserve (each connection also leads to the vault), in 16..4096.

    1,024 open files give 480 connections; 256 give 96.
    """
    if soft_limit is None:
        try:
            import resource  # not on Windows: there, the C runtime's default of 512 descriptors stands
        except ImportError:
            soft_limit = 512
        else:
            soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            if soft_limit == resource.RLIM_INFINITY:
                return MAX_CONNECTIONS
    return max(MIN_CONNECTIONS, min(MAX_CONNECTIONS, (soft_limit - RESERVED_DESCRIPTORS) // 2))


class Guarded(Protocol):
    """A connection as the guard sees it: where it comes from, and how to close it."""

    address: str

    def drop(self) -> None: ...


class ConnectionGuard:
    """The open connections of one server, in the order they were accepted, and which of them wait for a head.

    ``max_connections`` or ``connections_per_address`` 0 means no limit. ``counts`` says how often
    each thing happened (``shed``, ``refused``, ``head_deadline``), for tests and the bench.
    """

    def __init__(
        self,
        *,
        max_connections: int,
        connections_per_address: int = DEFAULT_CONNECTIONS_PER_ADDRESS,
        head_timeout: float = DEFAULT_HEAD_TIMEOUT,
    ) -> None:
        self.max_connections = max_connections
        self.connections_per_address = connections_per_address
        self.head_timeout = head_timeout
        self._live: dict[Guarded, None] = {}  # insertion order: oldest first
        self._by_address: dict[str, dict[Guarded, None]] = {}
        self._waiting: set[Guarded] = set()
        self.counts = {"shed": 0, "refused": 0, "head_deadline": 0}

    def admit(self, conn: Guarded) -> bool:
        """Register a new connection, waiting for its head, shedding to make room; False: refuse it."""
        same_address = self._by_address.get(conn.address, {})
        full_address = bool(self.connections_per_address) and len(same_address) >= self.connections_per_address
        if full_address and not self._shed_oldest_waiting(same_address):
            self.counts["refused"] += 1
            return False
        full = bool(self.max_connections) and len(self._live) >= self.max_connections
        if full and not self._shed_oldest_waiting(self._live):
            self.counts["refused"] += 1
            return False
        self._live[conn] = None
        self._by_address.setdefault(conn.address, {})[conn] = None
        self._waiting.add(conn)
        return True

    def busy(self, conn: Guarded) -> None:
        """``conn`` has sent a whole request head: it can no longer be shed."""
        self._waiting.discard(conn)

    def waiting(self, conn: Guarded) -> None:
        """``conn`` was answered and is kept alive: it waits for its next head."""
        if conn in self._live:
            self._waiting.add(conn)

    def gone(self, conn: Guarded) -> None:
        """``conn`` is closed (by either side); calling it twice is harmless."""
        self._live.pop(conn, None)
        self._waiting.discard(conn)
        same_address = self._by_address.get(conn.address)
        if same_address is not None:
            same_address.pop(conn, None)
            if not same_address:
                del self._by_address[conn.address]

    def open_count(self) -> int:
        return len(self._live)

    def waiting_count(self) -> int:
        return len(self._waiting)

    def _shed_oldest_waiting(self, group: dict[Guarded, None]) -> bool:
        victim = next((conn for conn in group if conn in self._waiting), None)
        if victim is None:
            return False
        self.counts["shed"] += 1
        self.gone(victim)
        victim.drop()
        return True


class CoalescedWrites(asyncio.Transport):
    """A connection's transport whose writes wait for the end of the loop's turn (or of the response) and go as one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def flush(self) -> None:
        """Send what is pending now (dropped once the connection is closing: nobody would read it)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        if not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending = []
        self._transport.abort()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(data) for data in self._pending)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol under a :class:`ConnectionGuard`; :func:`guarded_protocol` binds one guard."""

    guard: ClassVar[ConnectionGuard]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.address = ""
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = self.client[0] if self.client else ""
        if not self.guard.admit(self):
            transport.write(ALL_BUSY)
            transport.close()
            return
        self.transport = CoalescedWrites(transport, self.loop)  # each request's cycle writes through it
        self._expect_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_timer is not None and self.conn.their_state is not h11.IDLE:
            self._head_timer.cancel()
            self._head_timer = None
            self.guard.busy(self)

    def handle_events(self) -> None:
        super().handle_events()
        cycle = self.cycle
        if cycle is not None and GONE not in cycle.scope:  # a request just began: its task has not run yet
            cycle.scope[GONE] = ClientGone()  # type: ignore[literal-required]

    def on_response_complete(self) -> None:
        if isinstance(self.transport, CoalescedWrites):
            self.transport.flush()  # the whole answer at once, without waiting for the loop's turn to end
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self.guard.waiting(self)
            self._expect_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        self.guard.gone(self)
        cycle = self.cycle
        gone = cycle.scope.get(GONE) if cycle is not None and not cycle.response_complete else None
        super().connection_lost(exc)
        if isinstance(gone, ClientGone):
            gone.set()

    def drop(self) -> None:
        """Close this connection now (shed, or past its head deadline)."""
        self._cancel_head_timer()
        if not self.transport.is_closing():
            self.transport.close()

    def _expect_head(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.guard.head_timeout, self._head_deadline_passed)

    def _head_deadline_passed(self) -> None:
        self._head_timer = None
        self.guard.counts["head_deadline"] += 1
        self.guard.gone(self)
        self.drop()

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedH11Protocol]:
    """The protocol class uvicorn makes each connection with (``uvicorn.Config(http=...)``), bound to ``guard``."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": guard})
