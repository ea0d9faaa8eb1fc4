"""A TCP proxy on 127.0.0.1 that delays every chunk by a fixed one-way time, in each direction.

Bytes pass through untouched (TLS included) and in order. Per connection and
direction, a reader thread stamps each chunk it receives with the time it is due
(arrival + delay) and queues it; a writer thread sends each chunk when it is due. A
close (EOF) travels the same way, as a half-close, delayed like data.

The kernel completes the client's TCP handshake at once on loopback (before the proxy
even accepts), so the proxy charges it instead: whatever the client sends before it has
received anything is held one extra round trip (2 x delay). A new connection then costs
a round trip before the first request, as on a real network, and the client's time from
``connect`` to its first answer is what it would be there.

    with delay_proxy(("127.0.0.1", port), delay=0.020) as proxy:
        requests.get(f"https://127.0.0.1:{proxy.port}/...")   # ≈ 3 round trips: TCP, TLS 1.3, request
        proxy.accepts                                           # connections accepted so far
"""

from __future__ import annotations

import contextlib
import queue
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class DelayProxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, upstream: tuple[str, int], delay: float, *, emulate_handshake: bool = True) -> None:
        super().__init__(("127.0.0.1", 0), _Connection)
        self.upstream = upstream
        self.delay = delay
        self.emulate_handshake = emulate_handshake
        self.port: int = self.server_address[1]
        self.accepts = 0  # connections accepted = TCP handshakes the clients made
        self._lock = threading.Lock()

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        with self._lock:
            self.accepts += 1
        super().process_request(request, client_address)


class _Connection(socketserver.BaseRequestHandler):
    server: DelayProxy
    request: socket.socket

    def handle(self) -> None:
        proxy = self.server
        client = self.request
        upstream = socket.create_connection(proxy.upstream)
        # Forward each chunk as it comes. With Nagle on, an answer written as headers then body has its body
        # held until the client ACKs the headers, and a delayed ACK makes every warm request 2 RTT, not 1.
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        answered = threading.Event()  # the client has been sent its first bytes

        def hold() -> float:
            return 2 * proxy.delay if proxy.emulate_handshake and not answered.is_set() else 0.0

        threads = [
            *_carry(client, upstream, proxy.delay, hold, lambda: None),
            *_carry(upstream, client, proxy.delay, lambda: 0.0, answered.set),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        upstream.close()  # the client socket is closed by socketserver


def _carry(
    source: socket.socket,
    target: socket.socket,
    delay: float,
    hold: Callable[[], float],
    before_send: Callable[[], None],
) -> tuple[threading.Thread, threading.Thread]:
    """The reader and writer threads that carry ``source``'s bytes to ``target``, ``delay`` (+ ``hold()``) late."""
    chunks: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

    def read() -> None:
        try:
            while chunk := source.recv(65536):
                chunks.put((time.monotonic() + delay + hold(), chunk))
        except OSError:
            pass  # a reset ends the direction like a close
        chunks.put((time.monotonic() + delay, b""))  # b"": end of stream

    def write() -> None:
        while True:
            due, chunk = chunks.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                if not chunk:
                    target.shutdown(socket.SHUT_WR)
                    return
                before_send()
                target.sendall(chunk)
            except OSError:  # the target is gone: end both directions
                for sock in (source, target):
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                return

    return threading.Thread(target=read, daemon=True), threading.Thread(target=write, daemon=True)


@contextmanager
def delay_proxy(
    upstream: tuple[str, int], delay: float = 0.020, *, emulate_handshake: bool = True
) -> Iterator[DelayProxy]:
    """Run a :class:`DelayProxy` to ``upstream`` on 127.0.0.1 (a free port) while the block runs."""
    proxy = DelayProxy(upstream, delay, emulate_handshake=emulate_handshake)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
