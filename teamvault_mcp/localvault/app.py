"""The local vault's HTTP face: framing, routes, auth, conditional writes, the idempotency layer, faults.

One :class:`VaultHandler` serves each connection (HTTP/1.1 keep-alive), within the
deadlines of limits.py. A request goes: framing (400 for an ambiguous length, 411 for
``Transfer-Encoding``, 413 over 50 MB; the connection is closed) → the key is looked up
and only then is the body read (without a valid key it is never read, and the
connection is closed after the answer) → route (404/405) → injected fault → auth (401)
→ project (404) → permission (403) → idempotency (replay, 409 in use, 422 mismatch) →
the route's work in the :class:`~teamvault_mcp.localvault.store.Store`, where
``If-Match`` is checked in the write's own transaction (412) → the answer, with a
``Content-Length``, or chunked when it is made as it is sent (a folder archive:
archives.py, streaming.py). The order of
the answers is the real server's (teamvault-api.md §1.2), with the proxy's refusals
first. Anything that escapes becomes a bare 500, as Next.js answers an uncaught exception.

The module reads better whole: the handler's pipeline and its routes are one class.
"""

from __future__ import annotations

import email.errors
import hashlib
import io
import json
import logging
import re
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, NoReturn
from urllib.parse import parse_qs, unquote, urlsplit

from teamvault_mcp.localvault.archives import folder_archive
from teamvault_mcp.localvault.faults import Fault, FaultPlan
from teamvault_mcp.localvault.limits import BUSY, HEAD, IDLE, Connections, DeadlineReader, Limits
from teamvault_mcp.localvault.multipart import MultipartError, Part, parse_form
from teamvault_mcp.localvault.preconditions import IfMatch, entity_tag, parse_if_match
from teamvault_mcp.localvault.store import (
    CREATE_FIELDS,
    EDIT_ROLES,
    REPLACE_FIELDS,
    Change,
    Store,
    User,
    VaultError,
)
from teamvault_mcp.localvault.streaming import CHUNK_SIZE, ChunkedBody, StreamBroken

log = logging.getLogger(__name__)

#: Request bodies above this are refused before they are read, as the shipped Caddy config does (50 MB).
MAX_BODY_BYTES = 50 * 1024 * 1024
IDEMPOTENCY_RETENTION = 24 * 3600.0
OBSIDIAN_ORIGIN = "app://obsidian.md"
#: On every answer under /api/ while conditional writes are on: If-Match on a write was checked atomically.
CONDITIONAL_WRITES_HEADER = "X-TeamVault-Conditional-Writes"
_DIGITS = re.compile(r"[0-9]+")  # not \d: that takes other scripts' digits too
#: A line that is no header: the parser takes it, and every line after it, as the start of a body.
_HEADER_LINE_DEFECTS = (email.errors.MissingHeaderBodySeparatorDefect, email.errors.FirstHeaderLineIsContinuationDefect)

_ID = r"([^/]+)"
Route = tuple[re.Pattern[str], dict[str, str]]
#: (pattern, {method: route name}); a route name is a VaultHandler method ``route_<name>``.
ROUTES: tuple[Route, ...] = (
    (re.compile(r"/api/auth/me"), {"GET": "me"}),
    (re.compile(r"/api/projects"), {"GET": "projects"}),
    (re.compile(rf"/api/projects/{_ID}"), {"GET": "project"}),
    (re.compile(rf"/api/projects/{_ID}/files"), {"GET": "list_files", "POST": "create_file"}),
    (
        re.compile(rf"/api/projects/{_ID}/files/{_ID}"),
        {"GET": "download", "PUT": "replace", "PATCH": "move", "DELETE": "delete", "OPTIONS": "preflight"},
    ),
    (re.compile(rf"/api/projects/{_ID}/files/{_ID}/versions"), {"GET": "versions"}),
    (re.compile(rf"/api/projects/{_ID}/files/{_ID}/versions/{_ID}"), {"GET": "version", "OPTIONS": "preflight"}),
    (re.compile(rf"/api/projects/{_ID}/folders"), {"PATCH": "move_folder", "DELETE": "delete_folder"}),
)
#: Left out with ``LocalVault(folder_download=False)``: then it is an unknown route, as on servers without it.
FOLDER_DOWNLOAD_ROUTE: Route = (re.compile(rf"/api/projects/{_ID}/folders/download"), {"GET": "download_folder"})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass
class Answer:
    status: int
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    #: Writes a body made as it is sent, instead of ``body``: it goes out chunked (streaming.py).
    stream: Callable[[ChunkedBody], object] | None = None

    @classmethod
    def json(cls, status: int, payload: Any) -> Answer:
        return cls(status, json.dumps(payload, ensure_ascii=False).encode())

    @classmethod
    def error(cls, error: VaultError) -> Answer:
        answer = cls.json(error.status, {"error": {"code": error.code, "message": error.message, **error.fields}})
        answer.headers = error.headers
        return answer


class _Closed(Exception):
    """The connection is to be dropped without an answer (an injected fault)."""


Scope = tuple[str, str, str, str]  # (user id, method, route, Idempotency-Key)


@dataclass
class VaultState:
    """What every handler thread shares: the data, the faults, the keyed writes in flight."""

    store: Store
    faults: FaultPlan
    idempotency_retention: float = IDEMPOTENCY_RETENTION
    #: False emulates the public Team Vault server, which ignores Idempotency-Key (teamvault-api.md §11.1).
    idempotency: bool = True
    #: False emulates it too in ignoring If-Match: no 412, no ETag, no X-TeamVault-Conditional-Writes.
    conditional_writes: bool = True
    connections: Connections = field(default_factory=lambda: Connections(Limits(max_connections=64)))
    in_flight: dict[Scope, str] = field(default_factory=dict)  # scope → fingerprint
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_purge: float = 0.0
    #: Set when the vault stops: injected delays, drips and hangs end at once, and so do streamed answers.
    stopping: threading.Event = field(default_factory=threading.Event)
    #: False leaves out GET …/folders/download, as on servers older than it (teamvault-api.md §5.3).
    folder_download: bool = True

    @property
    def routes(self) -> tuple[Route, ...]:
        return (*ROUTES, FOLDER_DOWNLOAD_ROUTE) if self.folder_download else ROUTES


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    params: tuple[str, ...]
    body: bytes
    content_type: str
    user: User
    key: str | None = None  # the Idempotency-Key of a write
    fault: Fault | None = None
    #: Where a successful write's answer is remembered, in the write's own transaction.
    remember: tuple[Scope, str] | None = None
    #: The If-Match fields as sent, joined; None without them or while conditional writes are off.
    if_match: str | None = None

    def arg(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    @property
    def precondition(self) -> IfMatch | None:
        return None if self.if_match is None else parse_if_match([self.if_match])

    @property
    def project_id(self) -> str:
        return self.params[0]


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
        route = _route(path, self.state.routes)
        if route is None:
            return Answer.error(VaultError(404, "not_found", f"Нет такого маршрута: {path}"))
        params, methods = route
        name = methods.get(self.command)
        if name is None:
            allowed = ", ".join(sorted(methods))
            answer = Answer.error(VaultError(405, "method_not_allowed", f"Метод {self.command} не поддерживается"))
            answer.headers = (("Allow", allowed),)
            return answer
        fault = self.state.faults.take(self.command, path)
        if fault is not None and not fault.applies:
            return self._fault_instead(fault)
        if fault is not None and fault.action is not None:
            fault.action()  # e.g. a colleague's write that lands just before this request
        if name == "preflight":
            return Answer(204, b"", None, _cors())
        if user is None:
            return Answer.error(VaultError(401, "unauthorized", "Требуется авторизация"))
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
        handle: Callable[[Request], Answer] = getattr(self, f"route_{name}")
        try:
            self._authorize(request)
        except VaultError as error:
            return Answer.error(error)
        answer = self._idempotent(request, handle)
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
                raise VaultError(403, "forbidden", "Недостаточно прав")

    def _guarded(self, request: Request, handle: Callable[[Request], Answer]) -> Answer:
        if request.fault is not None and request.fault.kind == "delay":
            self.state.stopping.wait(request.fault.seconds)  # slow work; a keyed write is "in flight" here
        try:
            return handle(request)
        except VaultError as error:
            return Answer.error(error)

    def _idempotent(self, request: Request, handle: Callable[[Request], Answer]) -> Answer:
        """The request, through the idempotency layer of teamvault-api.md §11.2 if it is a write with a key."""
        key = request.key
        if key is None or not self.state.idempotency:
            return self._guarded(request, handle)
        if not key.strip() or len(key) > 255:
            return Answer.error(VaultError(400, "invalid_idempotency_key", "Некорректный Idempotency-Key"))
        state = self.state
        scope: Scope = (request.user.id, request.method, request.path, key)
        fingerprint = _fingerprint(request)
        # Under the lock, a key is either running (in_flight) or answered (remembered): an
        # attempt removes itself from in_flight only after its answer is committed.
        with state.lock:
            running = state.in_flight.get(scope)
            remembered = None
            if running is None:
                remembered = state.store.remembered_answer(*scope, retention=state.idempotency_retention)
                if remembered is None:
                    state.in_flight[scope] = fingerprint
        if running is not None:
            if running != fingerprint:
                return _key_mismatch()
            return Answer.error(VaultError(409, "idempotency_key_in_use", "Запрос с этим ключом ещё выполняется"))
        if remembered is not None:
            if remembered.fingerprint != fingerprint:
                return _key_mismatch()
            headers = (("Idempotent-Replayed", "true"), *remembered.headers)
            return Answer(remembered.status, remembered.body, remembered.content_type, headers)
        try:
            self._purge_old_answers()
            request.remember = (scope, fingerprint)
            answer = self._guarded(request, handle)
            if 400 <= answer.status < 500:  # a definite refusal is an answer too; nothing was applied
                with state.store.write() as db:
                    state.store.remember_answer(
                        db, *scope, fingerprint, answer.status, answer.content_type, answer.body, answer.headers
                    )
            return answer
        finally:
            with state.lock:
                state.in_flight.pop(scope, None)

    def change(self, request: Request, work: Callable[[Change], Answer]) -> Answer:
        """Run ``work`` in one write transaction; its success answer is remembered in the same one."""
        with self.state.store.write() as db:
            answer = work(Change(db, request.project_id, request.user, request.key))
            if request.remember is not None and answer.status < 300:
                scope, fingerprint = request.remember
                self.state.store.remember_answer(
                    db, *scope, fingerprint, answer.status, answer.content_type, answer.body, answer.headers
                )
        return answer

    def _purge_old_answers(self) -> None:
        if time.monotonic() - self.state.last_purge > 60:
            self.state.last_purge = time.monotonic()
            self.state.store.forget_answers_older_than(self.state.idempotency_retention)

    # -- routes ------------------------------------------------------------------------------------

    def route_me(self, request: Request) -> Answer:
        user = request.user
        return Answer.json(200, {"user": {"id": user.id, "email": user.email, "name": user.name}})

    def route_projects(self, request: Request) -> Answer:
        return Answer.json(200, {"projects": self.state.store.projects_of(request.user)})

    def route_project(self, request: Request) -> Answer:
        return Answer.json(200, {"project": self.state.store.project(request.project_id, request.user)})

    def route_list_files(self, request: Request) -> Answer:
        body = self.state.store.list_json(
            request.project_id,
            path=request.arg("path"),
            prefix=request.arg("prefix"),
            include_deleted=request.arg("includeDeleted") == "true",
        )
        return Answer(200, body)

    def route_download(self, request: Request) -> Answer:
        file, content = self.state.store.content(request.project_id, request.params[1])
        mime_type = file.mime_type or "application/octet-stream"
        return Answer(200, content, mime_type, _cors() + self._etag(file.content_hash))

    def _etag(self, content_hash: str) -> tuple[tuple[str, str], ...]:
        return (("ETag", entity_tag(content_hash)),) if self.state.conditional_writes else ()

    def route_create_file(self, request: Request) -> Answer:
        if not request.content_type.lower().startswith("multipart/form-data"):
            raise VaultError(400, "expected_multipart", "Ожидается multipart/form-data")
        try:
            form = parse_form(request.content_type, request.body)
        except MultipartError:
            raise VaultError(400, "expected_multipart", "Ожидается multipart/form-data") from None
        path = _text_field(form.get("path"))
        if not path:
            raise VaultError(400, "path_required", "Параметр path обязателен")
        file = form.get("file")
        if file is None or file.filename is None:
            raise VaultError(400, "file_required", "Файл обязателен")

        def create(change: Change) -> Answer:
            created = self.state.store.create(change, path, file.data, file.content_type)
            return Answer.json(201, {"file": created.as_json(*CREATE_FIELDS)})

        return self.change(request, create)

    def route_replace(self, request: Request) -> Answer:
        def replace(change: Change) -> Answer:
            replaced = self.state.store.replace(change, request.params[1], request.body, request.precondition)
            answer = Answer.json(200, {"file": replaced.as_json(*REPLACE_FIELDS)})
            answer.headers = self._etag(replaced.content_hash)
            return answer

        return self.change(request, replace)

    def route_move(self, request: Request) -> Answer:
        new_path = _json_body(request.body).get("newPath")
        if not isinstance(new_path, str) or not new_path:
            raise VaultError(400, "invalid_body", "newPath: ожидается непустая строка")

        def move(change: Change) -> Answer:
            moved = self.state.store.move(change, request.params[1], new_path, request.precondition)
            return Answer.json(200, {"file": {"id": moved.id, "path": moved.path}})

        return self.change(request, move)

    def route_delete(self, request: Request) -> Answer:
        def delete(change: Change) -> Answer:
            self.state.store.delete(change, request.params[1], request.precondition)
            return Answer.json(200, {"success": True})

        return self.change(request, delete)

    def route_versions(self, request: Request) -> Answer:
        return Answer.json(200, {"versions": self.state.store.versions(request.project_id, request.params[1])})

    def route_version(self, request: Request) -> Answer:
        content = self.state.store.version_content(request.project_id, request.params[1], request.params[2])
        return Answer(200, content, "application/octet-stream", _cors())

    def route_download_folder(self, request: Request) -> Answer:
        archive = folder_archive(self.state.store, request.project_id, request.arg("path"))
        disposition = (("Content-Disposition", archive.content_disposition),)
        return Answer(200, b"", "application/zip", disposition, stream=archive.write_to)

    def route_move_folder(self, request: Request) -> Answer:
        body = _json_body(request.body)
        path, new_path = body.get("path"), body.get("newPath")
        if not isinstance(path, str) or not path or not isinstance(new_path, str) or not new_path:
            raise VaultError(400, "invalid_body", "path и newPath: ожидаются непустые строки")
        return self.change(
            request, lambda change: Answer.json(200, self.state.store.move_folder(change, path, new_path))
        )

    def route_delete_folder(self, request: Request) -> Answer:
        folder = request.arg("path")
        if not folder:
            raise VaultError(400, "invalid_path", "Недопустимый путь папки")
        return self.change(request, lambda change: Answer.json(200, self.state.store.delete_folder(change, folder)))

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


def _route(path: str, routes: tuple[Route, ...]) -> tuple[tuple[str, ...], dict[str, str]] | None:
    for pattern, methods in routes:
        match = pattern.fullmatch(path)
        if match:
            return tuple(unquote(group) for group in match.groups()), methods
    return None


def _fingerprint(request: Request) -> str:
    """Method, route, query and a digest of the body; for multipart the fields, not the boundary."""
    digest = hashlib.sha256()
    digest.update(f"{request.method} {request.path}?{sorted(request.query.items())}\n".encode())
    if request.if_match is not None:  # the same key with another precondition is another request
        digest.update(f"If-Match: {request.if_match}\n".encode("utf-8", errors="surrogateescape"))
    form = None
    if request.content_type.lower().startswith("multipart/"):
        try:
            form = parse_form(request.content_type, request.body)
        except MultipartError:
            form = None
    if form is None:
        digest.update(request.body)
    else:
        for name in sorted(form):
            part = form[name]
            digest.update(f"{name}\0{part.content_type}\0{len(part.data)}\0".encode())
            digest.update(part.data)
    return digest.hexdigest()


def _key_mismatch() -> Answer:
    return Answer.error(VaultError(422, "idempotency_key_mismatch", "Ключ уже использован для другого запроса"))


def _json_body(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested beyond the parser's depth
        value = None
    if not isinstance(value, dict):
        raise VaultError(400, "invalid_body", "Некорректное тело запроса: ожидается JSON-объект")
    return value


def _text_field(part: Part | None) -> str | None:
    if part is None or part.filename is not None:
        return None  # missing, or a file where a string is expected
    return part.data.decode("utf-8", errors="replace")


def _cors() -> tuple[tuple[str, str], ...]:
    return (
        ("Access-Control-Allow-Origin", OBSIDIAN_ORIGIN),
        ("Access-Control-Allow-Headers", "X-API-Key, Content-Type"),
        ("Access-Control-Allow-Methods", "GET, OPTIONS"),
    )
