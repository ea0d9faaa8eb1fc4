"""The stdio transport, with two guards: every request read gets an answer, every message written can be written.

The SDK's stdio transport parses each line with pydantic, whose JSON parser stops at
200 levels of nesting and at escapes of lone surrogates; it drops such a line with a
debug log, and the host waits for an answer that never comes. :class:`AnswersEveryLine`
reads a refused line again with Python's parser and passes the request on (or answers
it with a JSON-RPC error under its id). A request whose id is neither a string nor an
integer (``1.5``, ``true``, ``null``) the SDK reads as a notification, ignoring the id,
and never answers: :func:`unusable_id` finds it from the line (:class:`HeardLines`
keeps each line until its message comes through) and it is answered ``-32600``
under id null. And the SDK writes each message with
``model_dump_json``, which raises on a lone surrogate or on deep nesting — in the task
that writes stdout, ending the process. :class:`WritesOnlyWritable` makes such a
message writable, or replaces it by an error, before it gets there.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, TextIO, cast

import anyio
import mcp.types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from teamvault_mcp.text.wire import is_valid_unicode, map_strings, nesting_depth, valid_unicode

log = logging.getLogger(__name__)

#: Deepest nesting of a message read when the SDK's own parser refuses it (it stops at 200 levels).
MAX_MESSAGE_DEPTH = 512
#: Deepest nesting of a message written after it had to be repaired (the SDK serialises up to about 250).
MAX_WRITTEN_DEPTH = 200

#: The answer to a request whose id is neither a string nor an integer.
UNUSABLE_ID = "Invalid Request: an id must be a string or an integer"

#: A JSON string (escapes included) or a bracket: enough to measure nesting without parsing.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


async def serve_stdio(
    server: Any,
    options: Any,
    stdin: Any = None,
    stdout: Any = None,
    *,
    on_start: Callable[[anyio.CancelScope], None] | None = None,
    on_end: Callable[[], None] | None = None,
) -> None:
    """Run ``server`` over stdin/stdout (or the given text streams, for tests) behind both guards.

    ``on_start`` gets the scope that ends serving when cancelled; ``on_end`` runs once every
    handler has ended — inside the transport, whose own end waits for a stdin read no signal wakes.
    """
    with ExitStack() as claim:
        if stdin is None and sys.platform != "win32":  # the SDK would claim fd 0 itself, out of our sight
            stdin = anyio.wrap_file(claim.enter_context(claimed_stdin()))
        heard = HeardLines(stdin) if stdin is not None else None
        async with stdio_server(cast(Any, heard), stdout) as (read_stream, write_stream):
            writes = WritesOnlyWritable(write_stream)
            with anyio.CancelScope() as scope:
                if on_start is not None:
                    on_start(scope)
                await server.run(AnswersEveryLine(read_stream, writes, heard), writes, options)
            if on_end is not None:
                on_end()


@contextmanager
def claimed_stdin() -> Iterator[TextIO]:
    """Stdin as the SDK's transport reads it (UTF-8 with replacement), from a private duplicate of fd 0, and
    fd 0 on /dev/null meanwhile, as the SDK's own claim leaves it; where fd 0 cannot be duplicated, in place.

    The duplicate is never closed: a worker thread may still be blocked reading it after serving ends (the
    SDK keeps its own open for the same reason).
    """
    import fcntl  # POSIX only, like this claim

    try:
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        yield io.TextIOWrapper(os.fdopen(0, "rb", closefd=False), encoding="utf-8", errors="replace")
        return
    diverted = False
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(devnull, 0)
            diverted = True
        finally:
            os.close(devnull)
    except OSError:
        pass  # fd 0 keeps the wire; only the duplicate is read
    try:
        yield io.TextIOWrapper(os.fdopen(private, "rb", closefd=False), encoding="utf-8", errors="replace")
    finally:
        if diverted:
            os.dup2(private, 0)


class HeardLines:
    """Stdin as the SDK's transport iterates it, each line kept until :meth:`take` is given its message.

    The SDK turns every line into exactly one item of its read stream (a message or an error), in order,
    so the line taken for an item is the one it came from.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lines: deque[str] = deque()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._inner:
            self._lines.append(line)
            yield line

    def take(self) -> str | None:
        """The line of the item the SDK has just sent on (None if there is none, which cannot happen)."""
        return self._lines.popleft() if self._lines else None


class AnswersEveryLine:
    """The stdio read stream, where each line the SDK could not read is read again or answered.

    A line that is valid JSON after all (nested deeper than the SDK reads) is passed on as
    the message it is, up to :data:`MAX_MESSAGE_DEPTH` levels; deeper, it is answered with
    ``-32600`` under its id. Otherwise JSON-RPC 2.0 §5.1: ``-32700`` (id null) for invalid
    JSON, ``-32600`` for JSON that is not a request. Blank lines are skipped silently.
    """

    def __init__(self, inner: Any, write_stream: Any, heard: HeardLines | None = None) -> None:
        self._inner = inner
        self._write_stream = write_stream
        self._heard = heard

    @property
    def last_context(self) -> Any:  # the dispatcher runs handlers in the sender's context
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            line = self._heard.take() if self._heard is not None else None
            if not isinstance(item, Exception):
                refused = unusable_id(item.message, line) if line is not None else None
                if refused is None:
                    return item
                await self._write_stream.send(SessionMessage(refused))
                continue
            reread = second_reading(item)
            if isinstance(reread, SessionMessage):
                return reread
            if reread is not None:
                await self._write_stream.send(SessionMessage(reread))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnswersEveryLine:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnswersEveryLine:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def second_reading(error: Exception) -> SessionMessage | types.JSONRPCError | None:
    """What a line the SDK refused with ``error`` is: a message after all, the error to answer, or nothing."""
    problems = error.errors() if isinstance(error, ValidationError) else []
    line = problems[0].get("input") if problems else None
    if any(problem["type"] == "json_invalid" for problem in problems):
        # Only then is the input the line itself: otherwise it is the member that failed (a blank "params", say),
        # and a request whose member is blank is no blank line: it is answered below.
        if isinstance(line, str) and not line.strip():
            return None
        return _read_with_python(line) if isinstance(line, str) else _parse_error()
    # The message is the input of the first problem, or of a later one when a member failed first.
    message = next((p["input"] for p in problems if isinstance(p.get("input"), dict) and "id" in p["input"]), line)
    return _not_a_message(message)


def unusable_id(message: Any, line: str | bytes) -> types.JSONRPCError | None:
    """The answer to a request whose id is neither a string nor an integer, which pydantic read from ``line``
    as the notification ``message`` (it ignores members it does not know); None for any other message.

    JSON-RPC 2.0 answers every request, a member ``id`` being what makes one; MCP allows only strings and
    integers, so the answer is ``-32600`` under id null (§5: the id could not be read).
    """
    if not isinstance(message, types.JSONRPCNotification):
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "id" not in value:
        return None
    return _invalid_request(None, UNUSABLE_ID)


def _read_with_python(line: str) -> SessionMessage | types.JSONRPCError:
    depth = json_depth(line)
    if depth > MAX_MESSAGE_DEPTH:
        return _invalid_request(
            _shallow_id(line),
            f"Invalid Request: it nests arrays and objects {depth:,} levels deep; this server reads at most "
            f"{MAX_MESSAGE_DEPTH}",
        )
    try:
        value = json.loads(line, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return _parse_error()
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError:
        return _not_a_message(value)
    if isinstance(message, types.JSONRPCNotification) and isinstance(value, dict) and "id" in value:
        return _invalid_request(None, UNUSABLE_ID)
    return SessionMessage(message)


def json_depth(line: str) -> int:
    """How deep arrays and objects nest in a JSON text, counted without parsing it (strings skipped)."""
    depth = deepest = 0
    for token in _TOKENS.finditer(line):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in ("]", "}"):
            depth -= 1
    return deepest


def _shallow_id(line: str) -> Any:
    """The ``id`` of a JSON object too deep to parse: each nested member value is replaced by null first."""
    pieces = []
    depth = 0
    kept_from = 0
    for token in _TOKENS.finditer(line):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth == 2:
                pieces.append(line[kept_from : token.start()] + "null")
        elif bracket in ("]", "}"):
            depth -= 1
            if depth == 1:
                kept_from = token.end()
    if depth != 0:
        return None
    try:
        shallow = json.loads("".join(pieces) + line[kept_from:])
    except (ValueError, RecursionError):
        return None
    return shallow.get("id") if isinstance(shallow, dict) else None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_error() -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=types.PARSE_ERROR, message="Parse error")
    )


def _not_a_message(value: Any) -> types.JSONRPCError:
    request_id = value.get("id") if isinstance(value, dict) else None
    return _invalid_request(request_id, "Invalid Request: not a JSON-RPC 2.0 message")


def _invalid_request(request_id: Any, message: str) -> types.JSONRPCError:
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        request_id = None
    elif isinstance(request_id, str):
        request_id = valid_unicode(request_id)
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=types.INVALID_REQUEST, message=message)
    )


class WritesOnlyWritable:
    """The stdio write stream, which lets through only messages that can be written as JSON.

    A message holding a lone surrogate (from a schema note, a progress message, an id) is
    sent with U+FFFD instead; one nested too deeply becomes an error under its id (a
    notification is dropped). Either is logged: it means a guard upstream missed it.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage) -> None:
        if not writable(item.message):
            fixed = repaired(item.message)
            if fixed is None:
                return
            item = SessionMessage(fixed, metadata=item.metadata)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WritesOnlyWritable:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:  # anything else the SDK asks of its write stream
        return getattr(self._inner, name)


def writable(message: Any) -> bool:
    """Whether ``model_dump_json`` can write ``message``: only valid Unicode, at most :data:`MAX_WRITTEN_DEPTH`
    levels of nesting. A walk over its values, without writing it (that would cost as much as the write)."""
    pending: list[tuple[Any, int]] = [(message, 0)]
    while pending:
        current, depth = pending.pop()
        if isinstance(current, str):
            if not is_valid_unicode(current):
                return False
            continue
        if isinstance(current, BaseModel):
            children: Any = vars(current).values()
        elif isinstance(current, dict):
            children = [*current.keys(), *current.values()]
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        if depth >= MAX_WRITTEN_DEPTH:
            return False
        pending.extend((child, depth + 1) for child in children if not isinstance(child, int | float | None))
    return True


def repaired(message: Any) -> Any:
    """``message`` with valid Unicode; an error under its id (None: nothing to send) when that is not enough."""
    try:
        data = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
    except (PydanticSerializationError, ValueError):
        data = {"id": getattr(message, "id", None), "method": getattr(message, "method", None)}
    request_id = data.get("id")
    if nesting_depth(data, MAX_WRITTEN_DEPTH) <= MAX_WRITTEN_DEPTH:
        try:
            repaired = types.jsonrpc_message_adapter.validate_python(map_strings(data, valid_unicode), by_name=False)
            repaired.model_dump_json(by_alias=True, exclude_unset=True)
        except (ValidationError, PydanticSerializationError, ValueError):
            pass
        else:
            log.warning("a message to the host held text that is not valid Unicode; sent with U+FFFD instead")
            return repaired
    log.error("a message to the host could not be written as JSON (id %r); an error is sent instead", request_id)
    if request_id is None or data.get("method") is not None:  # a notification or a request of ours: no answer
        return None
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=valid_unicode(request_id) if isinstance(request_id, str) else request_id,
        error=types.ErrorData(
            code=types.INTERNAL_ERROR,
            message="Internal error: the answer could not be written as JSON. This is a bug in teamvault-mcp.",
        ),
    )
