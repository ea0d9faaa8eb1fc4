"""One HTTP attempt, on a keep-alive pool shared by all calls, whose sockets can be shut from another thread.

Two things can end an attempt from outside the worker thread that is blocked in
``requests``: the host cancels the tool call, or the attempt's time limit runs out.
Both shut the attempt's sockets down (see :mod:`teamvault_mcp.vault.interrupt`). To reach
the sockets, the urllib3 connection classes here register themselves with the
:class:`~teamvault_mcp.vault.interrupt.AttemptGuard` running on their thread when they
connect and when they send. The TCP connect and the TLS handshake cannot be
interrupted this way; they are bounded by the connect timeout, and a stop that
arrives meanwhile is applied the moment they return.

Here ``requests``/``urllib3`` failures become :mod:`teamvault_mcp.errors`, as facts (did
the connection ever open?); what an HTTP *status* means is ``client.py``'s business, and
what a failure means for a retry or a write, ``retry.py``'s outcome table.
"""

from __future__ import annotations

import functools
import logging
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from http.client import HTTPException, IncompleteRead, RemoteDisconnected
from typing import IO, Any
from urllib.parse import quote, urlencode, urlsplit

import requests
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict

from teamvault_mcp import __version__
from teamvault_mcp.errors import (
    AttemptTimeoutError,
    CallCancelledError,
    NetworkError,
    StaleConnectionError,
    TeamVaultError,
    TlsRefusedError,
    UnexpectedAnswerError,
    printable,
)
from teamvault_mcp.vault.interrupt import AttemptGuard, CancelToken, stop_when_expired

log = logging.getLogger(__name__)

#: The uninterruptible part of an attempt (TCP connect, TLS handshake) gets at most this long.
CONNECT_TIMEOUT = 5.0
DEFAULT_HEADERS = {"User-Agent": f"teamvault-mcp/{__version__}", "Accept-Encoding": "gzip, deflate"}
#: Idle keep-alive connections kept per server (more may be open at once; extra ones are closed after use).
POOL_SIZE = 16
#: The largest answer read (after gzip): more than twice the 50 MB a Team Vault server's proxy lets a note have.
MAX_ANSWER_BYTES = 128 * 1024 * 1024

_running = threading.local()  # .attempt: the AttemptGuard running on this thread, if any


@dataclass(frozen=True)
class Answer:
    """A complete HTTP answer: status, headers and the whole body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class _TrackedConnectionMixin:
    """Registers the connection with the attempt running on this thread, and counts its requests."""

    #: The attempt using the connection now; None while it waits in the pool.
    teamvault_guard: AttemptGuard | None = None
    #: Requests it has answered completely (0: a new connection).
    teamvault_served = 0

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self.teamvault_served = 0  # a new socket, even on a connection object that had one before
        _register(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)  # type: ignore[misc]


def _register(connection: Any) -> None:
    attempt: AttemptGuard | None = getattr(_running, "attempt", None)
    if attempt is not None:
        connection.teamvault_guard = attempt
        attempt.register(connection, reused=connection.teamvault_served > 0)


class _HTTPConnection(_TrackedConnectionMixin, urllib3.connection.HTTPConnection):
    pass


class _HTTPSConnection(_TrackedConnectionMixin, urllib3.connection.HTTPSConnection):
    pass


class _GuardedPoolMixin:
    """A pool that takes a connection back only from an attempt that was not stopped.

    The connection is released from its attempt first (under the attempt's lock), so a
    cancel or an expiry that comes later can never shut a connection another call has
    taken from the pool by then; one that came earlier has shut it, and it is dropped.
    """

    def _put_conn(self, conn: Any) -> None:
        if conn is not None:
            guard, conn.teamvault_guard = conn.teamvault_guard, None
            if guard is not None and not guard.release(conn):
                conn.close()
                conn = None
            else:
                conn.teamvault_served += 1
        super()._put_conn(conn)  # type: ignore[misc]


class _HTTPConnectionPool(_GuardedPoolMixin, urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSConnectionPool(_GuardedPoolMixin, urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOL_CLASSES = {"http": _HTTPConnectionPool, "https": _HTTPSConnectionPool}


class _CancellableAdapter(HTTPAdapter):
    """An adapter whose pools hand out tracked connections; urllib3 retries stay off (our loop retries)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOL_CLASSES

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = _POOL_CLASSES
        return manager


@functools.lru_cache(maxsize=8)
def environment_settings(base_url: str) -> tuple[dict[str, str], Any]:
    """The proxy and CA-bundle settings ``requests`` takes from the environment, looked up once.

    ``requests`` repeats this lookup (and reads ``~/.netrc``) on every request, which
    costs a third of a millisecond per read_note; the environment does not change
    while the server runs.
    """
    with requests.Session() as session:
        settings = session.merge_environment_settings(base_url, {}, None, None, None)
    return dict(settings["proxies"]), settings["verify"]


class HttpPool:
    """The keep-alive connections to one server, shared by every tool call (and closed with the server).

    Requests go straight to the adapter, without a ``requests`` session: no cookies are
    kept between calls, and no per-request environment lookup. Bounded: at most
    :data:`POOL_SIZE` idle connections are kept; a call that finds none idle opens a new one.
    :meth:`connect_ahead` opens some before any call needs them (the server's warm-up).
    """

    def __init__(self, base_url: str, *, connecting_ahead: bool = False) -> None:
        """``connecting_ahead``: :meth:`connect_ahead` is called next; requests wait for it from now on."""
        self.base_url = base_url
        self.proxies, self.verify = environment_settings(base_url)
        self.adapter = _CancellableAdapter(pool_connections=2, pool_maxsize=POOL_SIZE)
        self._connecting = threading.Event()
        #: Set by :meth:`close`; a request or connect still under way then closes what it opened.
        self._closed = False
        self._closing = threading.Lock()
        if not connecting_ahead:
            self._connecting.set()  # set: no connect_ahead under way
        _open_pools.add(self)

    def connect_ahead(self, count: int) -> int:
        """Open ``count`` connections at once (TCP, TLS, a proxy's tunnel) and keep them idle; how many opened.

        A request sent meanwhile waits for them (:meth:`wait_for_connect_ahead`) rather than
        paying a handshake of its own, which could only end later. Each connect is bounded by
        :data:`CONNECT_TIMEOUT`; a failure is logged, not raised: the calls will meet it themselves.
        """
        opened: list[Any] = []

        def open_one() -> None:
            try:
                pool: Any = self.adapter.get_connection_with_tls_context(prepared, self.verify, self.proxies)
                connection = pool._get_conn()
                try:
                    connection.timeout = CONNECT_TIMEOUT
                    started = time.monotonic()
                    connection.connect()
                    _take_session_tickets(connection.sock, 1.5 * (time.monotonic() - started) + 0.02)
                except BaseException:
                    connection.close()
                    pool._put_conn(None)  # gives its slot back
                    raise
                opened.append((pool, connection))
            except _FAILURES as exc:
                log.info("could not connect ahead to %s: %s", self.base_url, describe_failure(exc))

        self._connecting.clear()
        try:
            prepared = _prepared("GET", self.base_url + "/", dict(DEFAULT_HEADERS), None, None, None)
            threads = [threading.Thread(target=open_one, name="teamvault-connect", daemon=True) for _ in range(count)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            with self._closing:
                for pool, connection in opened:  # idle in the pool, as if a request had just used them
                    if self._closed:  # the server went away meanwhile
                        connection.close()
                    else:
                        pool._put_conn(connection)
        finally:
            self._connecting.set()
        return len(opened)

    def wait_for_connect_ahead(self, cancelled: threading.Event) -> None:
        """Wait while :meth:`connect_ahead` runs (at most its connect timeout), or until ``cancelled`` is set."""
        if self._connecting.is_set():
            return
        deadline = time.monotonic() + CONNECT_TIMEOUT
        while not self._connecting.wait(0.01) and not cancelled.is_set() and time.monotonic() < deadline:
            pass

    def drop_idle(self) -> None:
        """Close the idle connections; connections in use are closed when their request ends."""
        self.adapter.poolmanager.clear()

    def close(self) -> None:
        with self._closing:
            self._closed = True
        self.adapter.close()
        _open_pools.discard(self)

    def closed_after(self) -> None:
        """Called as a request ends: if the pool was closed while it ran, close what that request left idle (a
        request sent after :meth:`close` makes a fresh connection pool that nothing else would close)."""
        if self._closed:
            self.adapter.poolmanager.clear()


_open_pools: weakref.WeakSet[HttpPool] = weakref.WeakSet()


def close_all_pools() -> None:
    """Close every pool's idle connections (for tests: each test's servers go away with it)."""
    for pool in list(_open_pools):
        pool.close()


class HttpSession:
    """One tool call's HTTP: attempts on the shared pool that obey the call's :class:`CancelToken`."""

    def __init__(self, token: CancelToken, pool: HttpPool) -> None:
        self._token = token
        self._pool = pool

    def send(
        self,
        method: str,
        url: str,
        *,
        api_path: str,
        limit: float,
        headers: Mapping[str, str],
        params: Mapping[str, str] | None = None,
        data: Any = None,
        files: Any = None,
        sink: IO[bytes] | None = None,
        max_body: int | None = None,
        stall: float | None = None,
    ) -> Answer:
        """Make one attempt that ends within ``limit`` seconds, whatever the server does.

        With ``sink``, a success's body is written into it as it arrives (memory holds one
        chunk) instead of into :attr:`Answer.body`; an error's body is read as usual. At most
        ``max_body`` bytes are taken (None: :data:`MAX_ANSWER_BYTES`). ``stall``: the longest wait for the
        next bytes (default ``limit``), for a long download that may take the whole ``limit`` while it moves.

        A request that fails on a pooled connection before any answer — most likely the
        server closed it while it was idle — raises :class:`StaleConnectionError`, which the
        retry loop sends again at once on a new connection; the other idle ones are dropped.
        """
        if self._token.cancelled:
            raise CallCancelledError()
        self._pool.wait_for_connect_ahead(self._token.event)
        prepared = _prepared(method, url, {**DEFAULT_HEADERS, **headers}, params, data, files)
        limit_bytes = MAX_ANSWER_BYTES if max_body is None else max_body
        attempt = AttemptGuard()
        self._token.attach(attempt)
        _running.attempt = attempt
        stop_when_expired(attempt, limit)
        answered = False  # a status line arrived
        try:
            response = self._pool.adapter.send(
                prepared,
                stream=True,  # the body is read below, within the attempt: the watchdog bounds it
                timeout=(min(limit, CONNECT_TIMEOUT), min(limit, stall or limit)),
                verify=self._pool.verify,
                proxies=self._pool.proxies,
            )
            answered = True
            # The adapter never follows a redirect (one would carry X-API-Key elsewhere).
            if sink is not None and 200 <= response.status_code < 300:
                _stream_into(sink, response, limit_bytes, method, api_path)
                return Answer(response.status_code, response.headers, b"")
            return Answer(response.status_code, response.headers, _body(response, method, api_path, limit_bytes))
        except _FAILURES as exc:
            raise self._translate(exc, attempt, method, api_path, limit, answered) from exc
        finally:
            attempt.finish()
            _running.attempt = None
            self._token.detach(attempt)
            self._pool.closed_after()

    def _translate(
        self,
        exc: BaseException,
        attempt: AttemptGuard,
        method: str,
        api_path: str,
        limit: float,
        answered: bool,
    ) -> TeamVaultError | CallCancelledError:
        if self._token.cancelled or attempt.stopped_because == "cancelled":
            return CallCancelledError()
        if not answered and _stale_connection(exc, attempt):
            self._pool.drop_idle()  # opened about when this one was: likely closed by the server too
            return StaleConnectionError(method, api_path)
        if not answered and (refused := refused_handshake(exc)) is not None:
            verify_message = refused.verify_message if isinstance(refused, ssl.SSLCertVerificationError) else None
            address = address_of(self._pool.base_url)
            return TlsRefusedError(method, api_path, address, verify_message=verify_message, reason=refused.reason)
        if _never_connected(exc):  # nothing reached the server: a definite failure, even for a write
            return NetworkError(method, api_path, describe_failure(exc), connected=False)
        if attempt.stopped_because == "expired" or isinstance(exc, requests.Timeout | urllib3.exceptions.TimeoutError):
            return AttemptTimeoutError(method, api_path, limit)
        return NetworkError(method, api_path, describe_failure(exc))


#: What an attempt can fail with (urllib3 wraps most socket errors, not all of them).
_FAILURES = (urllib3.exceptions.HTTPError, OSError, HTTPException, requests.RequestException)

#: Failures to resolve the host or open the TCP connection: the request was never sent.
_NOT_CONNECTED = (
    urllib3.exceptions.NewConnectionError,  # includes NameResolutionError
    urllib3.exceptions.ConnectTimeoutError,
    requests.exceptions.ConnectTimeout,
)


def _prepared(
    method: str, url: str, headers: dict[str, str], params: Mapping[str, str] | None, data: Any, files: Any
) -> requests.PreparedRequest:
    """The request as ``requests`` sends it, made directly: our URLs are already quoted, so
    :meth:`requests.Request.prepare`'s parsing and re-quoting (a tenth of a read) is skipped."""
    prepared = requests.PreparedRequest()
    prepared.method = method
    prepared.url = f"{url}?{urlencode(params, quote_via=quote)}" if params else url
    prepared.headers = CaseInsensitiveDict(headers)
    prepared.hooks = {"response": []}
    prepared._cookies = None  # type: ignore[attr-defined]
    if files:
        prepared.prepare_body(data, files)  # multipart/form-data, with its Content-Type and length
    else:
        prepared.body = data
        prepared.prepare_content_length(data)
    return prepared


def _body(response: requests.Response, method: str, api_path: str, limit: int) -> bytes:
    """The whole body of an answer, up to ``limit`` bytes; a longer one is not read on."""
    chunks: list[bytes] = []
    _stream_into(chunks, response, limit, method, api_path)
    return b"".join(chunks)


def _stream_into(sink: Any, response: requests.Response, limit: int, method: str, api_path: str) -> None:
    """Pass the body to ``sink`` chunk by chunk (a list gathers them), up to ``limit`` bytes; past it, stop."""
    write = sink.append if isinstance(sink, list) else sink.write
    size = 0
    for chunk in response.iter_content(64 * 1024):
        size += len(chunk)
        if size > limit:
            response.close()  # drops the connection: the rest of the body is never read
            raise UnexpectedAnswerError(method, api_path, f"an answer of more than {_size_text(limit)}")
        write(chunk)


def _size_text(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"


def _take_session_tickets(sock: Any, wait: float) -> None:
    """Read what a TLS 1.3 server sends right after the handshake (its session tickets), waiting at most ``wait``.

    Unread, those bytes make the idle connection look readable, which urllib3 takes for a
    connection the server closed: the first request would throw it away and pay a handshake.
    """
    if not isinstance(sock, ssl.SSLSocket):
        return
    sock.settimeout(min(wait, CONNECT_TIMEOUT))
    try:
        if sock.recv(1):  # no application data comes unasked: a server that sends some is not one to keep
            raise ConnectionError("the server sent data before any request")
    except (TimeoutError, ssl.SSLWantReadError):
        pass  # the tickets, if any, were taken in; nothing else came


def _stale_connection(exc: BaseException, attempt: AttemptGuard) -> bool:
    """A reused connection the server had closed: it failed before any answer, and not by our stop."""
    if attempt.stopped_because is not None or not attempt.reused_connection:
        return False
    return any(isinstance(cause, RemoteDisconnected | ConnectionResetError | BrokenPipeError) for cause in _causes(exc))


#: OpenSSL's reasons when the other side of a handshake does not speak TLS (a plain HTTP port, most likely),
#: as OpenSSL 3.0 and later name it, and as older versions did.
NOT_TLS_REASONS = frozenset(
    {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL"}
)


def refused_handshake(exc: BaseException) -> ssl.SSLError | None:
    """The TLS error in ``exc`` that no retry can change: a certificate this client does not accept
    (``ssl.SSLCertVerificationError``), or an answer that is not TLS (:data:`NOT_TLS_REASONS`); None for any
    other failure, a reset in the middle of a handshake among them. ``check --http`` asks it of httpx2's errors."""
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError) or (
            isinstance(cause, ssl.SSLError) and cause.reason in NOT_TLS_REASONS
        ):
            return cause
    return None


def address_of(url: str) -> str:
    """``host:port`` of ``url``, as messages name a server."""
    parts = urlsplit(url)
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    return f"{host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


def _never_connected(exc: BaseException) -> bool:
    return any(isinstance(cause, _NOT_CONNECTED) for cause in _causes(exc))


def describe_failure(exc: BaseException) -> str:
    """A short cause for a failed request, instead of urllib3's nested wrapper text."""
    causes = _causes(exc)

    def found(*kinds: type[BaseException]) -> BaseException | None:
        return next((cause for cause in causes if isinstance(cause, kinds)), None)

    if cause := found(socket.gaierror):
        return f"cannot resolve the server's host name ({cause}); is TEAM_VAULT_URL right?"
    if cause := found(ssl.SSLError):
        return f"TLS failed: {cause}"
    if cause := found(ConnectionRefusedError):
        return f"cannot connect: {cause}"
    if found(RemoteDisconnected):  # before ConnectionResetError, its base class
        return "the server closed the connection without answering"
    if found(ConnectionResetError):
        return "the connection was reset"
    if found(IncompleteRead, urllib3.exceptions.IncompleteRead, urllib3.exceptions.InvalidChunkLength):
        return "the answer was cut off before its end"
    if cause := found(HTTPException):
        return f"the answer is not valid HTTP ({type(cause).__name__}: {printable(str(cause).strip()[:80])})"
    deepest = causes[-1]
    return str(deepest) or type(deepest).__name__


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and everything it wraps: urllib3 nests causes in ``args``, ``reason`` and ``__cause__``."""
    found: list[BaseException] = []
    pending = [exc]
    while pending:
        current = pending.pop(0)
        if any(current is seen for seen in found):
            continue
        found.append(current)
        nested = [arg for arg in current.args if isinstance(arg, BaseException)]
        nested += [getattr(current, "reason", None), current.__cause__, current.__context__]  # type: ignore[list-item]
        pending += [item for item in nested if isinstance(item, BaseException)]
    return found
