"""A loopback stand-in for a Team Vault server, for the benchmarks: one note, answered from memory.

Serves ``GET /api/projects/bench/files?path=…`` (the resolve) and
``GET /api/projects/bench/files/f1`` (the download) with HTTP/1.1 keep-alive.
Connections are served by a pool of reused threads, as production servers do, not
by a new thread per connection (``ThreadingHTTPServer``): that would charge every
new TCP connection the cost of starting a thread in the stand-in.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

PROJECT = "bench"
NOTE_PATH = "notes/bench.md"
NOTE = ("# Bench note\n\n" + "A line of a typical team note, with some words in it.\n" * 40).encode()
RECORD = {
    "id": "f1",
    "path": NOTE_PATH,
    "fileType": "TEXT",
    "contentHash": "0" * 64,
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

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith(f"/api/projects/{PROJECT}/files?"):
            self._answer(LISTING, "application/json")
        elif self.path == f"/api/projects/{PROJECT}/files/f1":
            self._answer(NOTE, "text/markdown")
        else:
            self._answer(b'{"error":{"code":"not_found","message":"no"}}', "application/json", 404)

    def _answer(self, body: bytes, content_type: str, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _PooledHTTPServer(HTTPServer):
    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="standin")

    def process_request(self, request: Any, client_address: Any) -> None:
        self.pool.submit(self._serve_connection, request, client_address)

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)


@contextmanager
def standin_server() -> Iterator[str]:
    """Run the stand-in on 127.0.0.1 (a free port); yields its base URL."""
    server = _PooledHTTPServer(("127.0.0.1", 0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        server.pool.shutdown(wait=False, cancel_futures=True)
