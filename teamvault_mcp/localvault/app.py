"""The local vault's HTTP face: the connection, the pipeline of a request, and the wire.

One :class:`VaultHandler` serves each connection (HTTP/1.1 keep-alive), within the
deadlines of limits.py. A request goes: framing (400 for an ambiguous length, 411 for
``Transfer-Encoding``, 413 over 50 MB; the connection is closed) → the key is looked up
and only then is the body read (without a valid key it is never read, and the
connection is closed after the answer) → route (404/405, routes.py) → injected fault →
auth (401) → project (404) → permission (403) → idempotency (replay, 409 in use, 422
mismatch: idempotency.py) → the route's work (routes.py) in the
:class:`~teamvault_mcp.localvault.store.Store`, where ``If-Match`` is checked in the
write's own transaction (412) → the answer, with a ``Content-Length``, or chunked when it
is made as it is sent (a folder archive: archives.py, streaming.py). The order of the
answers is the real server's (teamvault-api.md §1.2), with the proxy's refusals first.
Anything that escapes becomes a bare 500, as Next.js answers an uncaught exception.

What a request and an answer hold is exchange.py; what the handler threads share, state.py.
"""

from __future__ import annotations

import email.errors
import io
import logging
import re
import select
import socket
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, NoReturn
from urllib.parse import parse_qs, urlsplit

from teamvault_mcp.localvault.exchange import Answer, Request, cors
from teamvault_mcp.localvault.faults import Fault
from teamvault_mcp.localvault.idempotency import idempotent
from teamvault_mcp.localvault.limits import BUSY, HEAD, IDLE, DeadlineReader
from teamvault_mcp.localvault.records import EDIT_ROLES, VaultError
from teamvault_mcp.localvault.routes import Routes, route_of, routes_of
from teamvault_mcp.localvault.state import VaultState
from teamvault_mcp.localvault.streaming import CHUNK_SIZE, ChunkedBody, StreamBroken

log = logging.getLogger(__name__)

#: Request bodies above this are refused before they are read, as the shipped Caddy config does (50 MB).
MAX_BODY_BYTES = 50 * 1024 * 1024
#: On every answer under /api/ while conditional writes are on: If-Match on a write was checked atomically.
CONDITIONAL_WRITES_HEADER = "X-TeamVault-Conditional-Writes"
_DIGITS = re.compile(r"[0-9]+")  # not \d: that takes other scripts' digits too
#: A line that is no header: the parser takes it, and every line after it, as the start of a body.
_HEADER_LINE_DEFECTS = (email.errors.MissingHeaderBodySeparatorDefect, email.errors.FirstHeaderLineIsContinuationDefect)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class _Closed(Exception):
    """The connection is to be dropped without an answer (an injected fault)."""


class VaultHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "teamvault-local"
    state: VaultState  # set on the class made for each server
    reader: DeadlineReader
    rfile: io.BufferedReader  # ours (setup), so that peek is there

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def setup(self) -> None:
        super().setup()
        limits = self.state.connections.limits
        self.rfile.close()  # replaced by a reader that keeps the deadlines of limits.py
        self.reader = DeadlineReader(self.connection)
        self.reader.until(time.monotonic() + limits.head_timeout)  # the first head, from the accept
        self.rfile = io.BufferedReader(self.reader)
        self.routes = Routes(self.state)
        self._answered = 0
        self._expects_continue = False

    def handle_one_request(self) -> None:
        self._expects_continue = False
        if self._answered and not self._await_next_request():
            self.close_connection = True
            return
        super().handle_one_request()  # parses the head, then calls do_<METHOD>; a TimeoutError closes
        self._answered += 1
        if self.reader.expired:
            self.state.connections.note("head_deadline")

    def _await_next_request(self) -> bool:
        """Idle until the next request's first byte (``idle_timeout``); then its head gets a deadline of its own."""
        connections = self.state.connections
        connections.enter(self.connection, IDLE)
        self.reader.each_receive(connections.limits.idle_timeout)  # one receive: the first byte
        try:
            more = self.rfile.peek(1)
        except TimeoutError:
            connections.note("idle_timeout")
            return False
        except OSError:
            return False
        if not more:
            return False
        connections.enter(self.connection, HEAD)
        self.reader.until(time.monotonic() + connections.limits.head_timeout)
        return True

    def handle_expect_100(self) -> bool:
        self._expects_continue = True  # "100 Continue" only once the key is checked (_read_body)
        return True

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = do_GET

    # -- the pipeline ----------------------------------------------------------------------------

    def _serve(self) -> None:
        started = time.perf_counter()
        if self.reader.ended:  # the stream ended inside the head: a truncated request is no request
            self.close_connection = True
            return
        self.state.connections.enter(self.connection, BUSY)
        self.reader.each_receive(self.state.connections.limits.io_timeout)
        try:
            answer = self._answer()
        except _Closed:
            self.close_connection = True
            return
        except (ConnectionError, TimeoutError):  # the client went away, or stopped sending its body
            self.close_connection = True
            return
        except Exception:
            log.exception("internal error on %s %s", self.command, self.path)
            answer = Answer(500, b"", None)  # Next.js: no JSON envelope on an uncaught error
            self.close_connection = True
        try:
            self._send(answer, started)
        except OSError:
            self.close_connection = True

    def _answer(self) -> Answer:
        length = self._body_length()
        url = urlsplit(self.path)
        path = url.path
        user = self.state.store.user_for_key(self.headers.get("X-API-Key", ""))
        body = self._read_body(length) if user is not None else self._leave_body(length)
        route = route_of(path, routes_of(self.state))
        if route is None:
            return Answer.error(VaultError(404, "not_found", f"No such route: {path}"))
        params, methods = route
        name = methods.get(self.command)
        if name is None:
            allowed = ", ".join(sorted(methods))
            answer = Answer.error(VaultError(405, "method_not_allowed", f"Method {self.command} is not supported"))
            answer.headers = (("Allow", allowed),)
            return answer
        fault = self.state.faults.take(self.command, path)
        if fault is not None and not fault.applies:
            return self._fault_instead(fault)
        if fault is not None and fault.action is not None:
            fault.action()  # e.g. a colleague's write that lands just before this request
        if name == "preflight":
            return Answer(204, b"", None, cors())
        if user is None:
            return Answer.error(VaultError(401, "unauthorized", "Authentication required"))
        if_match = self.headers.get_all("If-Match") if self.state.conditional_writes else None
        request = Request(
            self.command,
            path,
            parse_qs(url.query),
            params,
            body,
            self.headers.get("Content-Type", ""),
            user,
            self.headers.get("Idempotency-Key") if self.command in WRITE_METHODS else None,
            fault,
            if_match=None if if_match is None else ", ".join(if_match),
        )
        handle: Callable[[Request], Answer] = getattr(self.routes, f"route_{name}")
        try:
            self._authorize(request)
        except VaultError as error:
            return Answer.error(error)
        answer = idempotent(self.state, request, lambda request: self._guarded(request, handle))
        if fault is not None and fault.kind == "apply_then_close":
            raise _Closed()
        if fault is not None and fault.kind == "drip":
            self._drip(answer, fault.seconds)
            raise _Closed()
        return answer

    def _authorize(self, request: Request) -> None:
        """404 for an unknown project (or a non-member), then 403 for a write without edit rights."""
        if request.params:  # every /api/projects/:id/... route
            role = self.state.store.role_in(request.project_id, request.user)
            if request.method in WRITE_METHODS and role not in EDIT_ROLES:
                raise VaultError(403, "forbidden", "Insufficient permissions")

    def _guarded(self, request: Request, handle: Callable[[Request], Answer]) -> Answer:
        if request.fault is not None and request.fault.kind == "delay":
            self.state.stopping.wait(request.fault.seconds)  # slow work; a keyed write is "in flight" here
        try:
            return handle(request)
        except VaultError as error:
            return Answer.error(error)

    # -- the wire ------------------------------------------------------------------------------------

    def _body_length(self) -> int:
        """The body's length under strict framing; anything two parsers could read two ways is refused.

        A duplicate or malformed Content-Length (``+5``, ``1_0``, ``5,5``, hex), any
        Transfer-Encoding, and a header line that is no header (``Name : value``, an
        obsolete line folding) are refused and the connection closed: a proxy in front
        could otherwise see a different request boundary, and the rest of the stream
        would be read as a hidden second request.
        """
        headers = self.headers
        if any(isinstance(defect, _HEADER_LINE_DEFECTS) for defect in headers.defects):
            self._refuse(400, b"Bad Request: a malformed header line")
        if any("\r" in value or "\n" in value for value in headers.values()):
            self._refuse(400, b"Bad Request: a folded header line")
        lengths = headers.get_all("Content-Length") or []
        if headers.get_all("Transfer-Encoding") is not None:
            if lengths:  # the classic smuggling pair: which of the two frames the body?
                self._refuse(400, b"Bad Request: both Transfer-Encoding and Content-Length")
            self._refuse(411, b"Length Required: Transfer-Encoding is not supported, send Content-Length")
        if len(lengths) > 1:
            self._refuse(400, b"Bad Request: more than one Content-Length")
        if not lengths:
            return 0
        raw = lengths[0].rstrip(" \t")
        if not _DIGITS.fullmatch(raw):
            self._refuse(400, b"Bad Request: Content-Length is not a decimal number")
        if len(raw) > 18 or int(raw) > MAX_BODY_BYTES:
            self._refuse(413, b"Request Entity Too Large")
        return int(raw)

    def _read_body(self, length: int) -> bytes:
        """The body, read only once the key has been checked; a body cut short is no request (close)."""
        if not length:
            return b""
        if self._expects_continue:
            self.send_response_only(100)
            self.end_headers()
        body = self.rfile.read(length)
        if len(body) < length:
            raise _Closed()
        return body

    def _leave_body(self, length: int) -> bytes:
        """No valid key: the body is not read; the connection is closed after the answer."""
        if length:
            self.close_connection = True
        return b""

    def _refuse(self, status: int, text: bytes) -> NoReturn:
        """Answer as the proxy in front of the server would (plain text), and drop the connection."""
        self.close_connection = True
        self._send(Answer(status, text, "text/plain; charset=utf-8"), time.perf_counter())
        raise _Closed()

    def _send(self, answer: Answer, started: float) -> None:
        self.send_response(answer.status)
        self._framing_headers(answer)
        if self.close_connection and not any(name.lower() == "connection" for name, _ in answer.headers):
            self.send_header("Connection", "close")
        self.send_header("Server-Timing", f"app;dur={(time.perf_counter() - started) * 1000:.2f}")
        self.end_headers()
        if self.command == "HEAD":
            return
        if answer.stream is None:
            self.wfile.write(answer.body)
        else:
            self._stream(answer, self.state.stopping.is_set)

    def _framing_headers(self, answer: Answer) -> None:
        if answer.content_type is not None:
            self.send_header("Content-Type", answer.content_type)
        if answer.stream is None:
            self.send_header("Content-Length", str(len(answer.body)))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        for name, value in self._extension_headers() + answer.headers:
            self.send_header(name, value)

    def _stream(self, answer: Answer, pause: Callable[[], bool], chunk_size: int = CHUNK_SIZE) -> None:
        """Send the body as ``answer.stream`` makes it; one that breaks off closes the connection, unfinished."""
        assert answer.stream is not None
        body = ChunkedBody(self.wfile, pause=pause, chunk_size=chunk_size)
        try:
            answer.stream(body)
            body.finish()
        except StreamBroken as broken:
            log.debug("%s %s: the answer broke off: %s", self.command, self.path, broken)
            self.close_connection = True
        except OSError:  # reading the data failed midway (a disk error): the client must not take it for whole
            log.exception("%s %s: the answer broke off", self.command, self.path)
            self.close_connection = True
        finally:
            body.close()

    def _extension_headers(self) -> tuple[tuple[str, str], ...]:
        if self.state.conditional_writes and self.path.startswith("/api/"):
            return ((CONDITIONAL_WRITES_HEADER, "if-match"),)
        return ()

    def _fault_instead(self, fault: Fault) -> Answer:
        """A fault that replaces the request's processing: nothing is applied."""
        if fault.kind == "answer":
            headers = (("Retry-After", fault.retry_after),) if fault.retry_after is not None else ()
            return Answer(fault.status, b"injected fault", "text/plain; charset=utf-8", headers)
        if fault.kind == "hang":
            self._wait_for_disconnect(fault.seconds)
            self.state.faults.hang_ended.append(time.monotonic())
        raise _Closed()  # close_before, and hang once the client is gone

    def _wait_for_disconnect(self, at_most: float) -> None:
        watcher = select.poll()  # not select.select: it fails on descriptors above 1023
        watcher.register(self.connection, select.POLLIN | select.POLLHUP | select.POLLERR)
        deadline = time.monotonic() + at_most
        while time.monotonic() < deadline and not self.state.stopping.is_set():
            if watcher.poll(10):
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return
                except OSError:
                    return
                self.state.stopping.wait(0.01)  # readable but not closed: the client sent more; keep holding

    def _drip(self, answer: Answer, interval: float) -> None:
        self.send_response(answer.status)
        self._framing_headers(answer)
        self.end_headers()
        self.wfile.flush()
        if answer.stream is not None:  # a chunk of one byte each
            self._stream(answer, lambda: self.state.stopping.wait(interval), chunk_size=1)
            return
        try:
            for index in range(len(answer.body)):
                self.wfile.write(answer.body[index : index + 1])
                self.wfile.flush()
                if self.state.stopping.wait(interval):
                    return
        except OSError:
            pass  # the client gave up: that is the point of dripping
