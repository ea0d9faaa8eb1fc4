"""A round-robin HTTP proxy on 127.0.0.1: each request goes to the next backend, as a load balancer without
session affinity sends them (``serve --http --stateless`` replicas).

Per request, not per connection: a client keeps one connection alive for all its requests, and a proxy that
chose per connection would send them all to one backend. Each answer is read whole from the backend and passed
on with its length (a stream's events arrive together at its end: enough for answers that end).
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from support.waiting import GENEROUS

#: Headers that belong to one hop, not passed on.
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}


class RoundRobin(ThreadingHTTPServer):
    """The proxy: ``backends`` are base URLs (``http://127.0.0.1:PORT``); ``served[i]`` counts backend i's requests."""

    daemon_threads = True

    def __init__(self, backends: list[str]) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.backends = [urlsplit(url) for url in backends]
        self.served = [0] * len(backends)
        self._next = 0
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def choose(self) -> int:
        with self._lock:
            chosen = self._next
            self._next = (chosen + 1) % len(self.backends)
            self.served[chosen] += 1
            return chosen


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive with the client: its requests share one connection
    server: RoundRobin

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        backend = self.server.backends[self.server.choose()]
        upstream = http.client.HTTPConnection(backend.hostname or "", backend.port, timeout=GENEROUS * 3)
        try:
            headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_HEADERS}
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            content = answer.read()
            self.send_response(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in HOP_HEADERS:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)
        finally:
            upstream.close()

    do_GET = do_POST = do_DELETE = _forward


@contextmanager
def round_robin(backends: list[str]) -> Iterator[RoundRobin]:
    """A :class:`RoundRobin` in front of ``backends``, serving until the block ends."""
    proxy = RoundRobin(backends)
    thread = threading.Thread(target=proxy.serve_forever, name="round-robin proxy", daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(GENEROUS)
