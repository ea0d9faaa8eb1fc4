"""A real HTTP server on 127.0.0.1 whose answers a test scripts, for behaviour that needs sockets.

Each request is answered by the route registered for ``(method, path)`` (query
ignored). Routes are functions of the :class:`Exchange`; helpers build the usual
ones: a JSON answer, a hang until the client goes away, a body dripped byte by byte.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Exchange:
    """One request as the server saw it, and the means to answer it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    handler: BaseHTTPRequestHandler
    #: When the server noticed that the client closed or shut down the connection.
    disconnected_at: float | None = None

    def answer(self, status: int, body: bytes = b"", content_type: str = "application/json", **headers: str) -> None:
        self.handler.send_response(status)
        self.handler.send_header("Content-Type", content_type)
        self.handler.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.handler.send_header(name.replace("_", "-"), value)
        self.handler.end_headers()
        self.handler.wfile.write(body)
        self.handler.wfile.flush()

    def wait_for_disconnect(self, timeout: float) -> bool:
        """Block until the client goes away (True) or ``timeout`` passes (False)."""
        conn = self.handler.connection
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            readable, _, _ = select.select([conn], [], [], 0.01)
            if readable:
                try:
                    if conn.recv(1, socket.MSG_PEEK) == b"":
                        self.disconnected_at = time.monotonic()
                        return True
                except OSError:
                    self.disconnected_at = time.monotonic()
                    return True
        return False


Route = Callable[[Exchange], None]


@dataclass
class LoopbackServer:
    url: str
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    exchanges: list[Exchange] = field(default_factory=list)
    accepted: int = 0  # TCP connections accepted
    lock: threading.Lock = field(default_factory=threading.Lock)

    def route(self, method: str, path: str, route: Route) -> None:
        self.routes[(method, path)] = route

    def requests_to(self, method: str, path: str) -> list[Exchange]:
        with self.lock:
            return [e for e in self.exchanges if e.method == method and e.path == path]


def on_arrival(callback: Callable[[], object], route: Route) -> Route:
    """``route``, after calling ``callback`` in the server's thread as the request arrives (the client is then
    waiting for the answer's head): a test acts at that moment, not after a guessed number of seconds."""

    def arrived(exchange: Exchange) -> None:
        callback()
        route(exchange)

    return arrived


def json_answer(status: int, payload: Any, **headers: str) -> Route:
    return lambda exchange: exchange.answer(status, json.dumps(payload).encode(), **headers)


def hang(seconds: float = 10.0) -> Route:
    """Send nothing until the client disconnects (or ``seconds`` pass, then answer 200)."""

    def route(exchange: Exchange) -> None:
        if not exchange.wait_for_disconnect(seconds):
            exchange.answer(200, b'{"late": true}')

    return route


def drip(interval: float = 0.05, total: int = 10_000, on_sent: Callable[[int], object] | None = None) -> Route:
    """Headers at once, then a body of ``total`` bytes, one byte every ``interval`` seconds; ``on_sent`` is
    called in the server's thread with the number of body bytes sent so far after each one."""

    def route(exchange: Exchange) -> None:
        handler = exchange.handler
        handler.send_response(200)
        handler.send_header("Content-Type", "text/markdown")
        handler.send_header("Content-Length", str(total))
        handler.end_headers()
        try:
            for sent in range(1, total + 1):
                handler.wfile.write(b"x")
                handler.wfile.flush()
                if on_sent is not None:
                    on_sent(sent)
                if exchange.wait_for_disconnect(interval):
                    return
        except OSError:
            exchange.disconnected_at = time.monotonic()

    return route


@contextmanager
def loopback_server() -> Iterator[LoopbackServer]:
    state = LoopbackServer(url="")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are separate writes

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            exchange = Exchange(self.command, parts.path, parts.query, dict(self.headers), body, self)
            with state.lock:
                state.exchanges.append(exchange)
            route = state.routes.get((self.command, parts.path))
            if route is None:
                exchange.answer(404, b'{"error":{"code":"not_found","message":"no route"}}')
            else:
                route(exchange)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self) -> tuple[socket.socket, Any]:
            request = super().get_request()
            with state.lock:
                state.accepted += 1
            return request

    server = Server(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
