"""The lean stdio transport: stdin read and stdout written by the event loop itself, one write per message.

The SDK's ``stdio_server`` runs every ``readline``, ``write`` and ``flush`` in a worker
thread and passes each message through two memory streams, about 0.3 ms per request.
Here the read stream that ``Server.run`` consumes reads stdin when the loop finds it
readable, and the write stream writes a message when stdout has room for it: no thread,
no stream between. Neither needs ``O_NONBLOCK``, which would change the descriptors a
terminal or a parent shares with us: readiness comes from ``poll``, and each write is at
most what a ready pipe or socket takes without blocking (``PIPE_BUF``). While serving,
fd 0 points at /dev/null and fd 1 at stderr, as under the stock transport (children and
stray output miss the wire); both are restored at the end. Where stdin or stdout is a
terminal, ``serve`` uses the stock transport instead: a terminal's write may block.

Messages are the stock transport's, byte for byte: lines decoded as its text wrapper
decodes them (UTF-8 with replacement, universal newlines), parsed and written by the
same SDK calls, behind the same guards (``stdio.py``). One thing differs, on purpose:
at the end of input every request already read is answered before the read stream
ends. The SDK cancels the handlers still running when its read stream ends and drops
those not started yet, so a burst piped in (``… | teamvault-mcp``) lost answers.
"""

from __future__ import annotations

import asyncio
import codecs
import io
import logging
import os
import select
import stat
import sys
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import anyio
import mcp.types as types
from mcp.server.runner import serve_loop
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from pydantic_core import PydanticSerializationError

from teamvault_mcp.server.stdio import repaired, second_reading, unusable_id
from teamvault_mcp.text.wire import valid_unicode

log = logging.getLogger(__name__)

#: Whether this platform can serve the lean transport: it needs poll() and fcntl() on pipes (not Windows).
AVAILABLE = sys.platform != "win32" and hasattr(select, "poll")

#: Bytes read from stdin at a time: a Linux pipe's whole capacity.
READ_SIZE = 65536

#: Bytes written at a time to a pipe, socket or terminal that poll() finds writable: what it then takes whole.
WRITE_SIZE = select.PIPE_BUF

#: Messages kept that came before the host's first request (``Server.run`` keeps as many; the rest are dropped).
PRE_REQUEST_LIMIT = 8


def on_a_terminal() -> bool:
    """Whether stdin or stdout is a terminal: there the stock transport serves (a terminal's writes may block)."""
    try:
        return os.isatty(0) or os.isatty(1)
    except OSError:
        return False


async def serve_lean(
    server: Any,
    options: Any,
    wire: tuple[int, int] | None = None,
    *,
    drain_limit: float,
    on_start: Callable[[anyio.CancelScope], None] | None = None,
    on_end: Callable[[], None] | None = None,
) -> None:
    """Run ``server`` over stdin/stdout (or the descriptors ``wire`` = (read, write), for tests).

    At the end of input, the requests already read are waited for up to ``drain_limit``
    seconds (a call's budget and more), then the SDK answers any left with its
    ``Connection closed``. ``on_start`` gets the scope that ends serving when cancelled;
    ``on_end`` runs once every handler has ended. A host that closes stdout ends serving too.
    """
    with claimed_stdio() if wire is None else _given(wire) as (read_fd, write_fd):
        unanswered = Unanswered()
        stdin = Stdin(read_fd)
        with anyio.CancelScope() as scope:
            stdout = Stdout(write_fd, on_broken=scope.cancel)
            writes = MessageWriter(stdout, unanswered)
            reads = MessageReader(stdin, writes, unanswered, drain_limit)
            if on_start is not None:
                on_start(scope)
            try:
                if await reads.opens_with_initialize():
                    # The handshake era, the only one a stdio host speaks today: the SDK's loop for it. Server.run
                    # would put a task between this read stream and the dispatcher, to find the era from the first
                    # request: one more task switch and memory stream per message, for an answer already known.
                    reads.refuse_envelopes = True
                    async with server.lifespan(server) as lifespan_state:
                        await serve_loop(server, reads, writes, lifespan_state=lifespan_state, init_options=options)
                else:
                    await server.run(reads, writes, options)  # the SDK finds the era (the 2026-07-28 one, say)
            finally:
                stdin.close()
        if on_end is not None:
            on_end()


@contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """The wire on private duplicates of fd 0 and 1, fd 0 on /dev/null and fd 1 on stderr meanwhile.

    Only descriptors move; no flag of the open files changes. Where fd 0 or 1 cannot be
    duplicated (closed at start), the wire is served in place.
    """
    try:
        read_fd = _private_copy(0)
        write_fd = _private_copy(1)
    except OSError:
        log.debug("stdin or stdout cannot be duplicated; serving them in place")
        yield 0, 1
        return
    try:
        _point(0, os.devnull, os.O_RDONLY)
        try:
            os.dup2(2, 1)
        except OSError:
            _point(1, os.devnull, os.O_WRONLY)
        yield read_fd, write_fd
    finally:
        with suppress(Exception):  # whatever was printed meanwhile belongs on stderr, not on the wire
            sys.stdout.flush()
        os.dup2(write_fd, 1)
        os.dup2(read_fd, 0)
        os.close(write_fd)
        os.close(read_fd)


@contextmanager
def _given(wire: tuple[int, int]) -> Iterator[tuple[int, int]]:
    yield wire


def _private_copy(fd: int) -> int:
    import fcntl  # POSIX only, like the transport

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


def _point(fd: int, path: str, flags: int) -> None:
    opened = os.open(path, flags)
    try:
        os.dup2(opened, fd)
    finally:
        os.close(opened)


class Stdin:
    """Lines from the read end of the wire, decoded as the stock transport's text wrapper decodes them.

    Once a read has had to wait, the loop goes on watching the descriptor and takes what comes
    as it comes, until :data:`READ_SIZE` characters of whole lines are held: registering and
    unregistering it for every message cost two ``epoll_ctl`` calls and a ``poll`` each.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._decoder = io.IncrementalNewlineDecoder(decoder, translate=True)  # \r\n and \r end lines too
        self._lines: deque[str] = deque()
        self._held = 0  # characters in _lines
        self._partial: list[str] = []
        self._ended = False
        self._watching: asyncio.AbstractEventLoop | None = None  # the loop watching the descriptor, if one is
        self._waiter: asyncio.Future[None] | None = None

    async def readline(self) -> str | None:
        """The next line with its newline (the last one may have none); None at the end of input."""
        while not self._lines:
            if self._ended:
                return None
            await self._more()
        line = self._lines.popleft()
        self._held -= len(line)
        return line

    def close(self) -> None:
        """Stop watching the descriptor (it outlives serving: it is the host's stdin again)."""
        if self._watching is not None:
            with suppress(RuntimeError):  # the loop has closed
                self._watching.remove_reader(self._fd)
            self._watching = None

    async def _more(self) -> None:
        """Until more was read: a line, or the end of input."""
        if self._watching is None:
            # poll() finds a regular file or /dev/null always ready; the loop's epoll would refuse them.
            if self._poll.poll(0):
                self._take()
                return
            self._watching = asyncio.get_running_loop()
            self._watching.add_reader(self._fd, self._readable)
        waiter = self._waiter = self._watching.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def _readable(self) -> None:
        """The loop's callback while it watches the descriptor."""
        if self._poll.poll(0):  # else a process we share it with took what there was
            self._take()
        if self._ended or self._held >= READ_SIZE:  # enough held: watched again when a read has to wait
            self.close()
        if (self._lines or self._ended) and self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _take(self) -> None:
        """Read what is there (the descriptor is ready) and split it into lines."""
        try:
            chunk = os.read(self._fd, READ_SIZE)
        except BlockingIOError:  # O_NONBLOCK, set by a process we share the descriptor with: nothing now
            return
        except OSError as error:  # a terminal that hung up, say: the input has ended
            log.warning("reading stdin failed (%s); treating it as the end of input", error)
            chunk = b""
        text = self._decoder.decode(chunk, final=not chunk)
        self._ended = not chunk
        pieces = text.split("\n")
        lines = []
        if len(pieces) > 1:
            self._partial.append(pieces[0])
            lines.append("".join(self._partial) + "\n")
            lines.extend(piece + "\n" for piece in pieces[1:-1])
            self._partial = []
        if pieces[-1]:
            self._partial.append(pieces[-1])
        if self._ended and self._partial:
            lines.append("".join(self._partial))
            self._partial = []
        self._lines.extend(lines)
        self._held += sum(map(len, lines))


class Stdout:
    """The write end of the wire: whole messages, one at a time, never blocking the event loop."""

    def __init__(self, fd: int, *, on_broken: Callable[[], None]) -> None:
        self._fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)
        # A regular file (`> answers.jsonl`) takes any write whole; a pipe, socket or terminal that poll()
        # finds writable takes WRITE_SIZE bytes without blocking.
        self._chunk = sys.maxsize if stat.S_ISREG(os.fstat(fd).st_mode) else WRITE_SIZE
        self._lock = anyio.Lock(fast_acquire=True)
        self._on_broken = on_broken
        self.broken = False

    async def write(self, data: bytes) -> None:
        """Write ``data`` whole; a message once begun is finished, whatever is cancelled meanwhile."""
        async with self._lock:
            view = memoryview(data)
            done = self._write_ready(view)
            if done == len(view):
                return
            if done == 0:
                await self._writable()  # cancellable: nothing of this message is out yet
                done = self._write_ready(view)
            with anyio.CancelScope(shield=True):  # part of it is out: without the rest the wire is broken
                while done < len(view):
                    await self._writable()
                    done += self._write_ready(view[done:])

    def _write_ready(self, view: memoryview) -> int:
        """Write what stdout takes now, without blocking; how many bytes that was."""
        done = 0
        while done < len(view) and self._poll.poll(0):
            try:
                done += os.write(self._fd, view[done : done + self._chunk])
            except BlockingIOError:  # O_NONBLOCK, set by a process we share the descriptor with
                break
            except OSError as error:
                self._break(error)
        return done

    async def _writable(self) -> None:
        if self.broken:
            raise anyio.BrokenResourceError
        await anyio.wait_writable(self._fd)

    def _break(self, error: OSError) -> None:
        if not self.broken:
            self.broken = True
            log.warning("stdout is closed (%s): the host has gone; stopping", error)
            self._on_broken()
        raise anyio.BrokenResourceError from error


class Unanswered:
    """The requests read and not answered yet, by id: what the end of input waits for.

    Ids are compared as the SDK compares them ("7" is 7), and as they are written (a lone
    surrogate goes out as U+FFFD); a request the host cancelled is never answered (the SDK
    sends nothing for it), so its cancel settles it.
    """

    def __init__(self) -> None:
        self._ids: Counter[Any] = Counter()
        self._none_left: anyio.Event | None = None

    def read(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self._ids[_key(message.id)] += 1
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            request_id = cancelled_request_id_from_params(message.params)
            if request_id is not None:
                self._settle(request_id)

    def written(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self._settle(message.id)

    def _settle(self, request_id: Any) -> None:
        key = _key(request_id)
        if self._ids[key] > 1:
            self._ids[key] -= 1
        else:
            self._ids.pop(key, None)
        if not self._ids and self._none_left is not None:
            self._none_left.set()

    async def wait(self, limit: float) -> None:
        """Until every request read is answered, or ``limit`` seconds have passed."""
        if not self._ids:
            return
        self._none_left = anyio.Event()
        with anyio.move_on_after(limit):
            await self._none_left.wait()
        if self._ids:
            log.warning("the end of input came %.0f s ago; %d requests are still unanswered", limit, len(self._ids))


def _enveloped(request: types.JSONRPCRequest) -> bool:
    """Whether a request other than ``initialize`` comes in the 2026-07-28 envelope (its ``_meta`` names the
    protocol version): the SDK's own test for a request of the other era."""
    meta = (request.params or {}).get("_meta")
    return request.method != "initialize" and isinstance(meta, dict) and types.PROTOCOL_VERSION_META_KEY in meta


def _envelope_refused(request_id: Any) -> types.JSONRPCError:
    """What ``Server.run`` answers to an enveloped request on a connection that opened with ``initialize``."""
    message = (
        "this connection serves the handshake protocol era; requests carrying the 2026-07-28 envelope are not "
        "accepted on it"
    )
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=types.INVALID_REQUEST, message=message)
    )


def _key(request_id: Any) -> Any:
    return coerce_request_id(valid_unicode(request_id) if isinstance(request_id, str) else request_id)


class MessageReader:
    """The read stream the SDK consumes: one message per line, as the stock transport reads them.

    A line the SDK's parser refuses is read again or answered under its id (``second_reading``),
    a blank line skipped. At the end of input it ends only once the requests read are answered.
    """

    def __init__(self, stdin: Stdin, writes: MessageWriter, unanswered: Unanswered, drain_limit: float) -> None:
        self._stdin = stdin
        self._writes = writes
        self._unanswered = unanswered
        self._drain_limit = drain_limit
        self._ahead: deque[SessionMessage] = deque()  # read to find the era, handed out first
        #: Serving the handshake era alone: a request in the 2026-07-28 envelope is refused here, as ``Server.run``
        #: refuses it on a connection that opened with ``initialize``.
        self.refuse_envelopes = False

    async def opens_with_initialize(self) -> bool:
        """Read up to the host's first request; whether it is ``initialize`` (the handshake era).

        What was read is handed out again first; of what came before the first request, at
        most :data:`PRE_REQUEST_LIMIT` messages are kept, as ``Server.run`` keeps them.
        """
        while True:
            try:
                item = await self._read()
            except anyio.EndOfStream:
                return False
            if isinstance(item.message, types.JSONRPCRequest):
                self._ahead.append(item)
                return item.message.method == "initialize"
            if len(self._ahead) < PRE_REQUEST_LIMIT:
                self._ahead.append(item)
            else:
                log.debug("dropped a message received before the first request: %r", item.message)

    async def receive(self) -> SessionMessage:
        if self._ahead:
            return self._ahead.popleft()
        while True:
            item = await self._read()
            message = item.message
            if self.refuse_envelopes and isinstance(message, types.JSONRPCRequest) and _enveloped(message):
                await self._writes.send(SessionMessage(_envelope_refused(message.id)))
                continue
            return item

    async def _read(self) -> SessionMessage:
        while True:
            line = await self._stdin.readline()
            if line is None:
                await self._unanswered.wait(self._drain_limit)
                raise anyio.EndOfStream
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValueError as refused:  # pydantic's ValidationError, as the stock transport gets it
                reread = second_reading(refused)
                if reread is None:
                    continue
                if not isinstance(reread, SessionMessage):
                    await self._writes.send(SessionMessage(reread))
                    continue
                message = reread.message
            else:
                answer = unusable_id(message, line)
                if answer is not None:
                    await self._writes.send(SessionMessage(answer))
                    continue
            self._unanswered.read(message)
            return SessionMessage(message)

    async def aclose(self) -> None:
        pass  # stdin belongs to claimed_stdio, which restores it

    def __aiter__(self) -> MessageReader:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> MessageReader:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class MessageWriter:
    """The write stream: each message serialised as the stock transport does, and written whole.

    What cannot be written as JSON (a lone surrogate, nesting deeper than pydantic writes) is
    repaired as the stock transport's guard repairs it (``stdio.repaired``), but only once
    the serialiser has refused it: no walk over every message before it is written.
    """

    def __init__(self, stdout: Stdout, unanswered: Unanswered) -> None:
        self._stdout = stdout
        self._unanswered = unanswered
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        message = item.message
        try:
            data = _json_line(message)
        except PydanticSerializationError:
            message = repaired(message)
            if message is None:  # a notification or a request of ours that cannot be written: dropped
                return
            data = _json_line(message)
        try:
            await self._stdout.write(data)
        finally:  # written, or never to be: either way nothing more will come for its id
            self._unanswered.written(message)

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> MessageWriter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _json_line(message: Any) -> bytes:
    """What ``model_dump_json`` returns, as bytes: the stock transport's exact output, without a decode and encode."""
    data: bytes = message.__pydantic_serializer__.to_json(message, by_alias=True, exclude_unset=True)
    return data + b"\n"
