"""MCP over Streamable HTTP: ``teamvault-mcp serve --http [HOST:]PORT``, the same server as over stdio.

The SDK's own :class:`StreamableHTTPSessionManager` speaks the protocol (sessions, SSE, idle
expiry, the session limit, 413 for an oversized body); the server is :func:`build_server` on
:class:`ToolRunner`, exactly as over stdio, so tool calls run in worker threads with their
budget, retries, progress and cancellation. In front of the manager, :class:`HttpFront` (an ASGI
app) decides, on every request, in this order:

1. the path is ``/mcp`` (else 404), or one of the probes, answered apart (:meth:`HttpFront._probe`):
   ``/healthz`` and ``/readyz`` without a token or a Host check (``http_probes.py``), ``/metrics``
   (``--metrics``, ``metrics.py``) with both;
2. a present ``Origin`` is exactly ``scheme://host[:port]`` (:func:`parse_origin`), sent once, and
   a loopback origin or one of TEAM_VAULT_HTTP_ORIGINS (else 403: a browser page of another site,
   DNS rebinding); on a loopback bind the ``Host`` is a loopback
   name or the host of an allowed origin (else 421);
3. ``Authorization: Bearer`` holds the shared token, compared in constant time (token mode), or
   a Team Vault key the vault accepts (``--key-from-client``); else 401 with
   ``WWW-Authenticate: Bearer``, the same answer for a missing, a malformed and a wrong one.

Each caller is a :class:`Caller`: one runner, so in the team mode every request, listing and
search of a key is that key's, and Team Vault's permissions decide. Only the content cache is
shared: it is addressed by content hash, and a runner asks only for the hashes its own key's
listings show. A session belongs to the caller that opened it (the SDK answers 404 to anyone
else). A client that goes away cancels its calls in flight as a host's cancel does: closing the
POST's connection, or deleting the session (the SDK ends it, which cancels its handlers). A request
in a session that asks for no progress is answered with one JSON body, not a stream (``http_answers.py``).
With ``--stateless`` the manager keeps no session: every request stands alone (replicas behind a load
balancer), and there is no share of sessions to keep.

The key and the token never leave this module and ``http_callers.py`` (:class:`Callers`): callers
are told apart by a digest of their key. Below the front, ``http_limits.py`` bounds connections and
the time to send a request head; in the team mode ``http_sessions.py`` gives each member its share
of the sessions.
"""

from __future__ import annotations

import functools
import logging
import re
import socket
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.datastructures import Headers

from teamvault_mcp.config import Config
from teamvault_mcp.errors import TeamVaultError
from teamvault_mcp.http_config import HttpConfig, is_loopback_host
from teamvault_mcp.server.http_answers import JSON_WHEN_ANSWER_ONLY, expect_body
from teamvault_mcp.server.http_callers import Callers, KeyRevoked, TooManyCallers
from teamvault_mcp.server.http_limits import (
    GONE,
    ClientGone,
    ConnectionGuard,
    default_max_connections,
    guarded_protocol,
)
from teamvault_mcp.server.http_probes import HEALTH_PATH, METRICS_PATH, READY_PATH, ReadinessCheck
from teamvault_mcp.server.http_sessions import SessionShares
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.vault.retry import Clock, RetryPolicy

if TYPE_CHECKING:
    from teamvault_mcp.server.metrics import Metrics

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


#: An Origin as browsers send it (RFC 6454): a scheme, a host name or address, an optional port, nothing else.
_ORIGIN = re.compile(r"(https?)://([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?", re.ASCII)


def parse_origin(origin: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) of an ``Origin`` header, lower case; None for anything else (``null``, userinfo, a path).

    Parsed by a strict pattern, not :func:`urllib.parse.urlsplit`, which reads ``http://evil.com\\@127.0.0.1``
    as a loopback host.
    """
    match = _ORIGIN.fullmatch(origin.strip().lower())
    if match is None:
        return None
    scheme, host, port = match.group(1), match.group(2), match.group(3)
    if port is not None and not 0 < int(port) <= 65535:
        return None
    return scheme, host, int(port) if port is not None else None


class HttpFront:
    """The ASGI app of ``serve --http``: the checks of the module docstring, then the SDK's session manager."""

    def __init__(self, callers: Callers, options: HttpConfig, metrics: Metrics | None = None) -> None:
        self.callers = callers
        self.options = options
        server = build_server(callers.template, runner_for=callers.runner_for)
        server.middleware.append(_cancel_when_client_goes)
        self.manager = StreamableHTTPSessionManager(
            server,
            stateless=options.stateless,  # a fresh transport per request: no session to find on another replica
            json_response=JSON_WHEN_ANSWER_ONLY,  # type: ignore[arg-type]  # JSON where only the answer comes
            session_idle_timeout=options.session_idle,
            max_request_body_size=options.max_body_bytes,
            max_sessions=options.max_sessions,
        )
        #: Each member's share of the sessions (team mode only: in token mode every client is the token's holder;
        #: with --stateless there are no sessions to share).
        self.shares = (
            SessionShares(
                per_owner=options.sessions_per_caller,
                max_sessions=options.max_sessions,
                session_idle=options.session_idle,
                clock=callers.clock,
            )
            if options.key_from_client and not options.stateless
            else None
        )
        self.readiness = ReadinessCheck(
            callers.config, key_from_client=options.key_from_client, clock=callers.clock, policy=callers.policy
        )
        #: What GET /metrics shows (--metrics), or None: then it is not found.
        self.metrics = metrics
        if metrics is not None:
            # The SDK keeps its open sessions in a dict of its own; it has no public count.
            metrics.count_sessions(lambda: len(self.manager._server_instances))
            metrics.count_cache_lookups(callers.cache_lookups)
        self._allowed_hosts = {urlsplit(origin).hostname or "" for origin in options.origins}
        #: Set once the session manager runs (the lifespan has started).
        self.started = threading.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] in (HEALTH_PATH, READY_PATH, METRICS_PATH):
            await self._probe(scope, send)
            return
        if scope["path"].rstrip("/") != MCP_PATH:
            await _answer(send, 404, f"Not found: the MCP endpoint is {MCP_PATH}.")
            return
        headers = Headers(scope=scope)
        if self._origin_refused(headers):
            await _answer(send, 403, "Forbidden: this origin may not call this MCP server.")
            return
        if self.options.is_loopback and not self._host_allowed(headers.get("host")):
            await _answer(send, 421, "Misdirected request: the Host header is not this server's.")
            return
        try:
            caller_id = await self.callers.identify(headers.get("authorization"))
        except KeyRevoked as revoked:
            log.warning("a caller's key is refused by the Team Vault server now: its sessions end")
            await self._end_sessions_of(revoked.caller_id)
            revoked.runner.close()
            caller_id = None
        except TooManyCallers:
            await _answer(send, 503, "Too many different keys are in use; try again later.", retry_after="60")
            return
        except TeamVaultError as error:
            log.warning("cannot check a caller's key at the Team Vault server: %s", error)
            await _answer(send, 503, "The Team Vault server could not be asked about this key; try again later.")
            return
        if caller_id is None:
            await _answer(
                send,
                401,
                "Unauthorized: send 'Authorization: Bearer <token>'.",
                www_authenticate='Bearer realm="teamvault-mcp"',
            )
            return
        gone = scope.get(GONE)
        if not isinstance(gone, ClientGone):  # served by another ASGI server than ours: receive() tells
            gone = ClientGone()
        scope = {**scope, "user": _principal(caller_id), GONE: gone}
        body = expect_body(scope, receive)  # JSON or a stream: http_answers.py

        async def watched_receive() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                gone.set()
            elif body is not None:
                body.passed(message)
            return message

        session_id = headers.get("mcp-session-id")
        if self.shares is None:
            await self.manager.handle_request(scope, watched_receive, send)
        elif session_id is not None:
            await self._in_session(self.shares, session_id, scope, watched_receive, send)
        else:
            await self._opening(self.shares, caller_id, scope, watched_receive, send)

    async def _opening(self, shares: SessionShares, caller_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session id (an ``initialize`` opens one): within the caller's share, or 503."""
        owner = self.callers.owner_of(caller_id)
        admitted, given_up = shares.admit(owner)
        for old_id, old_caller in given_up:
            log.info("a caller at its share of sessions opens another: its least recently used idle one ends")
            await self._end_session(old_id, old_caller)
        if not admitted:
            held = shares.count(owner)
            await _answer(
                send,
                503,
                f"Too many open sessions for this key: it holds {held} open session{'s' if held != 1 else ''}, "
                "all in use, and may open no more (TEAM_VAULT_HTTP_SESSIONS_PER_CALLER); end one (DELETE) or "
                "try again later.",
                retry_after="60",
            )
            return
        opened: str | None = None

        async def watched_send(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened = Headers(raw=message.get("headers", [])).get("mcp-session-id")
                if opened is not None:
                    shares.opened(owner, opened, caller_id)
            await send(message)

        try:
            await self.manager.handle_request(scope, receive, watched_send)
        finally:
            if opened is None:
                shares.not_opened(owner)

    async def _in_session(
        self, shares: SessionShares, session_id: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """A request in a session: in use while it runs; a ``DELETE`` or a 404 (expired, unknown) ends it here too."""
        status = 0

        async def watched_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        shares.begin(session_id)
        try:
            await self.manager.handle_request(scope, receive, watched_send)
        finally:
            shares.end(session_id)
            if scope["method"] == "DELETE" or status == 404:
                shares.closed(session_id)

    async def _end_sessions_of(self, caller_id: str) -> None:
        """End every session the caller ``caller_id`` opened (its key is refused now)."""
        if self.shares is None:
            return
        for session_id in self.shares.sessions_of_caller(caller_id):
            self.shares.closed(session_id)
            await self._end_session(session_id, caller_id)

    async def _end_session(self, session_id: str, caller_id: str) -> None:
        """End a session as its client's ``DELETE`` would (through the manager, as the caller that opened it)."""
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": MCP_PATH,
            "raw_path": MCP_PATH.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"mcp-session-id", session_id.encode())],
            "client": None,
            "server": None,
            "user": _principal(caller_id),
        }
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            pass

        await self.manager.handle_request(scope, receive, discard)

    async def _probe(self, scope: Scope, send: Send) -> None:
        """``GET /healthz``, ``/readyz`` (no token; no Host check: a probe's Host is whatever address it dialled, and
        the answers hold nothing a rebinding page could use) and ``/metrics`` (the token and the Host checked as for
        ``/mcp``); a browser of another origin is refused all three."""
        headers = Headers(scope=scope)
        path = scope["path"]
        if scope["method"] != "GET":
            await _answer(send, 405, f"Method not allowed: {path} answers GET only.", allow="GET")
        elif self._origin_refused(headers):
            await _answer(send, 403, "Forbidden: this origin may not call this MCP server.")
        elif path == HEALTH_PATH:
            await _answer(send, 200, "ok")
        elif path == READY_PATH:
            readiness = await self.readiness.current()
            await _answer(send, 200 if readiness.ready else 503, readiness.text)
        elif self.metrics is None:
            await _answer(send, 404, "Not found: metrics are off (--metrics or TEAM_VAULT_HTTP_METRICS=1).")
        elif self.options.is_loopback and not self._host_allowed(headers.get("host")):
            await _answer(send, 421, "Misdirected request: the Host header is not this server's.")
        elif not self.options.key_from_client and await self.callers.identify(headers.get("authorization")) is None:
            await _answer(
                send,
                401,
                "Unauthorized: send 'Authorization: Bearer <token>'.",
                www_authenticate='Bearer realm="teamvault-mcp"',
            )
        else:
            from teamvault_mcp.server.metrics import CONTENT_TYPE

            await _answer(send, 200, self.metrics.exposition().decode(), content_type=CONTENT_TYPE)

    def _origin_refused(self, headers: Headers) -> bool:
        """Whether a browser page may not call: an ``Origin`` that is not allowed, or two of them (logged)."""
        origins = headers.getlist("origin")
        origin = ", ".join(origins) if origins else None  # two Origin headers are one refused origin
        if origin is None or (len(origins) == 1 and self._origin_allowed(origin)):
            return False
        log.warning("refused a request from the browser origin %r (not in TEAM_VAULT_HTTP_ORIGINS)", origin[:200])
        return True

    def _origin_allowed(self, origin: str) -> bool:
        """Whether ``origin`` is exactly ``scheme://host[:port]``, a loopback one or one of TEAM_VAULT_HTTP_ORIGINS."""
        parsed = parse_origin(origin)
        if parsed is None:
            return False
        scheme, host, port = parsed
        exact = f"{scheme}://{host}" + (f":{port}" if port is not None else "")
        return exact in self.options.origins or is_loopback_host(host)

    def _host_allowed(self, host: str | None) -> bool:
        if host is None:
            return False
        name = _host_name(host)
        return is_loopback_host(name) or name in self._allowed_hosts

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        async with self.manager.run():
            await send({"type": "lifespan.startup.complete"})
            self.started.set()
            await receive()  # lifespan.shutdown
        self.callers.close()
        await send({"type": "lifespan.shutdown.complete"})


@functools.lru_cache(maxsize=1024)  # made once per caller, not per request (a pydantic model)
def _principal(caller_id: str) -> AuthenticatedUser:
    """What the SDK's session manager compares to tie a session to the caller that opened it (no key in it)."""
    return AuthenticatedUser(AccessToken(token="-", client_id=caller_id, scopes=[]))


async def _cancel_when_client_goes(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
    """Cancel a tool call whose client has closed its stream, as ``notifications/cancelled`` would."""
    gone = ctx.request.scope.get(GONE) if ctx.method == "tools/call" and ctx.request is not None else None
    if not isinstance(gone, ClientGone):
        return await call_next(ctx)
    result: Any = None
    with anyio.CancelScope() as scope:  # a callback, not a watching task: one task fewer a call
        forget = gone.on_set(scope.cancel)
        try:
            result = await call_next(ctx)
        finally:
            forget()
    if result is None:  # nobody is left to read it
        log.info("a tool call was cancelled: its client went away")
        return {"content": [{"type": "text", "text": "Cancelled: the client went away."}], "isError": True}
    return result


@functools.lru_cache(maxsize=256)  # every request's Host header; a client sends the same one each time
def _host_name(host: str) -> str:
    return urlsplit(f"//{host}").hostname or ""


async def _answer(
    send: Send, status: int, text: str, *, content_type: str = "text/plain; charset=utf-8", **headers: str
) -> None:
    extra = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class HttpService:
    """``serve --http`` in one object: the bound socket, uvicorn, and a stop that works from any thread."""

    def __init__(
        self,
        config: Config,
        options: HttpConfig,
        *,
        clock: Clock | None = None,
        policy: RetryPolicy | None = None,
    ) -> None:
        import uvicorn

        self.options = options
        metrics: Metrics | None = None
        if options.metrics:  # the metrics library is loaded only when they are on
            from teamvault_mcp.server.metrics import Metrics

            metrics = Metrics()
        #: What GET /metrics shows, or None (off).
        self.metrics = metrics
        self.callers = Callers(config, options, clock=clock, policy=policy, metrics=metrics)
        self.front = HttpFront(self.callers, options, metrics)
        family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on such sockets; without it, Nagle held the end of
        # every SSE response until the client's delayed ACK, 40 ms per call.
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((options.host, options.port))
            self.socket.listen(socket.SOMAXCONN)  # clients may connect before uvicorn runs: they wait
        except OSError:
            self.socket.close()
            raise
        self.port = int(self.socket.getsockname()[1])
        self.guard = ConnectionGuard(
            max_connections=options.max_connections or default_max_connections(),
            connections_per_address=options.connections_per_address,
            head_timeout=options.head_timeout,
        )
        self._server = uvicorn.Server(
            uvicorn.Config(
                self.front,
                log_config=None,
                log_level="warning",
                access_log=False,
                proxy_headers=False,  # nothing reads the client's address from the scope: no X-Forwarded-* to trust
                lifespan="on",
                http=guarded_protocol(self.guard),  # head deadline and connection caps (http_limits.py)
                ssl_certfile=str(options.tls_cert) if options.tls_cert else None,
                ssl_keyfile=str(options.tls_key) if options.tls_key else None,
                # Open GET streams never end by themselves: a stop waits this long for them at most.
                timeout_graceful_shutdown=3,
            )
        )
        self.started = self.front.started

    @property
    def url(self) -> str:
        return replace(self.options, port=self.port).url

    def run(self) -> None:
        """Serve until :meth:`stop` (blocking; call it in a thread other than the main one for signals)."""

        try:
            anyio.run(self._server.serve, [self.socket])
        finally:
            self.socket.close()
            self.started.set()  # nobody waits for a start that will not come

    def stop(self) -> None:
        self._server.should_exit = True
