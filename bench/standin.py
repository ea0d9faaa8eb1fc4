"""A loopback stand-in for a Team Vault server, for the benchmarks: one note, answered from memory.

Serves ``GET /api/projects/bench/files?path=…`` (the resolve, whose record carries the
note's real ``contentHash``) and ``GET /api/projects/bench/files/f1`` (the download)
with HTTP/1.1 keep-alive (a resolve of ``notes/hang.md`` is never answered: it waits for the
client to drop the connection, for cancel latency), over plain HTTP or, with ``tls=True``, HTTPS with the test
certificate in ``tests/fixtures`` (clients trust it with ``REQUESTS_CA_BUNDLE=CERT`` or
``verify=CERT``). Connections are served by a pool of reused threads, as production
servers do, not by a new thread per connection (``ThreadingHTTPServer``): that would
charge every new TCP connection the cost of starting a thread in the stand-in.

It counts what it sees (:meth:`StandIn.counts`): TCP accepts, successful TLS handshakes
(and how many of them resumed a session), resolves, downloads and other requests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
#: The self-signed test certificate (SAN IP:127.0.0.1, DNS:localhost) and its key.
CERT = FIXTURES / "tls-cert.pem"
KEY = FIXTURES / "tls-key.pem"

PROJECT = "bench"
NOTE_PATH = "notes/bench.md"
#: A note whose resolve is never answered: until the client drops the connection (a cancel), for cancel latency.
HANG_PATH = "notes/hang.md"
NOTE = ("# Bench note\n\n" + "A line of a typical team note, with some words in it.\n" * 40).encode()
RECORD = {
    "id": "f1",
    "path": NOTE_PATH,
    "fileType": "TEXT",
    "contentHash": hashlib.sha256(NOTE).hexdigest(),
    "size": str(len(NOTE)),
    "mimeType": "text/markdown",
    "deletedAt": None,
    "createdAt": "2026-11-30T10:00:00.000Z",
    "updatedAt": "2026-11-30T10:00:00.000Z",
    "lastModifiedById": "u1",
}
LISTING = json.dumps({"files": [RECORD]}).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes
    server: _PooledHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith(f"/api/projects/{PROJECT}/files?") and HANG_PATH in unquote(self.path):
            self._hang()
        elif self.path.startswith(f"/api/projects/{PROJECT}/files?"):
            self.server.count("resolves")
            self._answer(LISTING, "application/json")
        elif self.path == f"/api/projects/{PROJECT}/files/f1":
            self.server.count("downloads")
            self._answer(NOTE, "text/markdown")
        else:
            self.server.count("other")
            self._answer(b'{"error":{"code":"not_found","message":"no"}}', "application/json", 404)

    def _hang(self) -> None:
        """Answer never; note when the request arrived and when the client dropped the connection."""
        self.server.stamp("hang_started")
        self.rfile.read(1)  # b"" once the client shuts the connection down (a cancel does)
        self.server.stamp("hang_ended")
        self.close_connection = True

    def _answer(self, body: bytes, content_type: str, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _PooledHTTPServer(HTTPServer):
    def __init__(self, address: tuple[str, int], tls: ssl.SSLContext | None) -> None:
        super().__init__(address, _Handler)
        self.tls = tls
        self.pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="standin")
        self.counter: Counter[str] = Counter()
        self.stamps: dict[str, list[float]] = {}
        self.open_connections: set[Any] = set()
        self._lock = threading.Lock()

    def count(self, what: str) -> None:
        with self._lock:
            self.counter[what] += 1

    def stamp(self, what: str) -> None:
        with self._lock:
            self.counter[what] += 1
            self.stamps.setdefault(what, []).append(time.perf_counter())

    def get_request(self) -> tuple[Any, Any]:
        accepted = super().get_request()
        self.count("accepts")
        return accepted

    def process_request(self, request: Any, client_address: Any) -> None:
        self.pool.submit(self._serve_connection, request, client_address)

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self.open_connections.add(request)
        try:
            if self.tls is not None:  # the handshake runs here, in a pool thread, not in the accepting one
                request.settimeout(30)
                wrapped = self.tls.wrap_socket(request, server_side=True)
                with self._lock:
                    self.open_connections.discard(request)  # detached now
                    self.open_connections.add(wrapped)
                request = wrapped
                request.settimeout(None)
                self.count("tls_handshakes")
                if request.session_reused:
                    self.count("tls_resumed")
            self.finish_request(request, client_address)
        except Exception:
            self.count("failed_connections")
        finally:
            self.shutdown_request(request)
            with self._lock:
                self.open_connections.discard(request)

    def close_connections(self) -> None:
        """End the connections still open: their pool threads would keep the interpreter from exiting."""
        with self._lock:
            connections = list(self.open_connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class StandIn:
    """A running stand-in: its base URL and what it has seen."""

    def __init__(self, server: _PooledHTTPServer) -> None:
        self._server = server
        self.port: int = server.server_address[1]
        self.url = f"{'https' if server.tls else 'http'}://127.0.0.1:{self.port}"

    def stamps(self, what: str) -> list[float]:
        """When each ``hang_started`` or ``hang_ended`` happened (``time.perf_counter``)."""
        with self._server._lock:
            return list(self._server.stamps.get(what, []))

    def counts(self) -> Counter[str]:
        """A snapshot: accepts, tls_handshakes, tls_resumed, resolves, downloads, other, failed_connections."""
        with self._server._lock:
            return Counter(self._server.counter)


@contextmanager
def run_standin(*, tls: bool = False) -> Iterator[StandIn]:
    """Run the stand-in on 127.0.0.1 (a free port), over HTTPS with the test certificate if ``tls``."""
    context = None
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(CERT, KEY)
    server = _PooledHTTPServer(("127.0.0.1", 0), context)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield StandIn(server)
    finally:
        server.shutdown()
        server.server_close()
        server.close_connections()
        server.pool.shutdown(wait=False, cancel_futures=True)


@contextmanager
def standin_server() -> Iterator[str]:
    """Run the plain-HTTP stand-in on 127.0.0.1 (a free port); yields its base URL."""
    with run_standin() as standin:
        yield standin.url
