"""A TLS front for a plain-HTTP server on 127.0.0.1: it ends TLS (the test certificate) and passes the bytes on.

The local vault speaks plain HTTP; a real Team Vault sits behind Caddy's TLS. Put this in front
of the vault, and bench/delay_proxy.py in front of this, and a client pays what it would on a
real network: the TCP and TLS handshakes and every request, each a round trip.

    with tls_front(("127.0.0.1", vault_port)) as front:
        ...  # https://127.0.0.1:{front.port}, trusted with REQUESTS_CA_BUNDLE=CERT
        front.handshakes                             # TLS handshakes completed so far
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from standin import CERT, KEY


class TlsFront(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, upstream: tuple[str, int]) -> None:
        super().__init__(("127.0.0.1", 0), _Connection)
        self.upstream = upstream
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(CERT, KEY)
        self.port: int = self.server_address[1]
        self.handshakes = 0
        #: When each handshake completed (``time.perf_counter()``), in order.
        self.handshake_times: list[float] = []
        self._lock = threading.Lock()

    def handshake_done(self) -> None:
        with self._lock:
            self.handshakes += 1
            self.handshake_times.append(time.perf_counter())


class _Connection(socketserver.BaseRequestHandler):
    server: TlsFront

    def handle(self) -> None:
        try:
            client = self.server.context.wrap_socket(self.request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        self.server.handshake_done()
        upstream = socket.create_connection(self.server.upstream)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        upstream.close()
        client.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    for sock in (source, target):  # one side is done: so is the connection
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


@contextmanager
def tls_front(upstream: tuple[str, int]) -> Iterator[TlsFront]:
    front = TlsFront(upstream)
    thread = threading.Thread(target=front.serve_forever, daemon=True)
    thread.start()
    try:
        yield front
    finally:
        front.shutdown()
        front.server_close()
