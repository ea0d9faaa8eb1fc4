"""How ``serve --http`` answers a request POSTed in a session: one JSON body when nothing but the answer can come.

The SDK's transport answers each request POST with an SSE stream, or, when its session manager
is made with ``json_response=True``, every one with a JSON body, dropping whatever a call sends
before its answer (its progress). MCP clients must take both. The stream costs about 0.6 ms a
call on this machine (its response's tasks and memory streams, chunked framing:
``bench/http_bench.py``), so the manager is given :data:`JSON_WHEN_ANSWER_ONLY` as
``json_response``: the transport tests it (``bool()``) while it handles a POST, and it is true
only for a request that :func:`expect_body` was called for (a POST in a session, accepting both
answers) whose body asks for no progress (no ``params._meta.progressToken``). This server then
sends nothing but the answer on that request's stream: no sampling, no elicitation, no log
messages, and a changed tool list goes on the session's GET stream. ``initialize``, a request
that asks for progress, and anything else get the SDK's stream as before.

Which request the transport is handling comes from a context variable set in the request's own
task. The session's own tasks (its message router among them) were started by its opening
request, which sets none, so the router keeps every message it routes (it drops a request's
other messages only where it finds JSON on).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from contextvars import ContextVar
from typing import Any

import pydantic_core
from mcp.server.streamable_http import check_accept_headers
from starlette.requests import Request

Message = MutableMapping[str, Any]


class PostBody:
    """A POST's body as it passes on to the SDK, and whether its request may be answered with one JSON body."""

    __slots__ = ("_chunks", "answer_only")

    def __init__(self) -> None:
        self.answer_only = False
        self._chunks: list[bytes] = []

    def passed(self, message: Message) -> None:
        """``message`` came from the ASGI ``receive()``: once the body is whole, decide."""
        if message["type"] != "http.request":
            return
        chunk = bytes(message.get("body", b""))
        if message.get("more_body", False):
            self._chunks.append(chunk)
            return
        body = b"".join([*self._chunks, chunk]) if self._chunks else chunk
        self._chunks = []
        self.answer_only = not asks_for_progress(body)


_BODY: ContextVar[PostBody | None] = ContextVar("teamvault_mcp.post_body", default=None)


class _JsonWhenAnswerOnly:
    """``json_response`` for the SDK's session manager: true while it handles a request only its answer follows."""

    def __bool__(self) -> bool:
        body = _BODY.get()
        return body is not None and body.answer_only

    def __repr__(self) -> str:
        return "JSON_WHEN_ANSWER_ONLY"


JSON_WHEN_ANSWER_ONLY = _JsonWhenAnswerOnly()


def expect_body(scope: MutableMapping[str, Any], receive: Any) -> PostBody | None:
    """For a POST in a session that accepts both kinds of answer: its :class:`PostBody`, which the caller shows each
    message ``receive()`` gives, in this task (the SDK's transport then reads it); None for any other request.

    Requiring both media types keeps the transport's Accept check what it is for a stream (406 otherwise).
    """
    if scope["method"] != "POST":
        return None
    request = Request(scope, receive)
    if request.headers.get("mcp-session-id") is None:
        return None
    has_json, has_sse = check_accept_headers(request)
    if not (has_json and has_sse):
        return None
    body = PostBody()
    _BODY.set(body)  # this request's task only: it ends with the request
    return body


def asks_for_progress(body: bytes) -> bool:
    """Whether a JSON-RPC message asks for progress (``params._meta.progressToken``).

    The key can only be spelt out or written with ``\\u`` escapes: a body with neither is not parsed. One that does
    not parse gets the stream (the SDK answers it with a parse error either way).
    """
    if b"progressToken" not in body and b"\\u" not in body:
        return False
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return True  # the SDK answers the parse error
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get("progressToken") is not None
