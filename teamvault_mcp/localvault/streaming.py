"""An answer's body sent while it is being made: HTTP/1.1 chunked transfer encoding (RFC 9112 §7.1).

Used by the folder archive (archives.py), whose length is unknown until its last byte:
its entries are deflated as they are read, and a blob that is gone by the time it is
read is skipped. A ``Content-Length`` would need the archive made twice, or held whole
in memory; chunks let it go to the socket as it is made, in pieces of at most
:data:`CHUNK_SIZE`, so the vault holds one piece at a time whatever the folder's size.

A body that cannot be finished (the client went away or stopped reading, the vault is
stopping) raises :class:`StreamBroken`; the caller closes the connection without the
last chunk, so that the client sees an incomplete answer, never a short one taken for whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

#: The most the vault buffers of a streamed body before it sends it as one chunk.
CHUNK_SIZE = 64 * 1024


class StreamBroken(Exception):
    """The body cannot be finished: the client went away or stopped reading, or the vault is stopping."""


class _Socket(Protocol):
    def write(self, data: bytes, /) -> object: ...


class ChunkedBody:
    """A writable file that sends what is written to it as chunks; :meth:`finish` sends the last one.

    ``pause`` runs after each chunk and returns True when the body is to end there (the
    vault is stopping); a drip fault also waits in it. Once the body has broken off or
    been closed, writes are dropped: zipfile's clean-up still writes (the entry's data
    descriptor, the central directory), and those bytes have nowhere to go.
    """

    def __init__(self, socket: _Socket, *, pause: Callable[[], bool], chunk_size: int = CHUNK_SIZE) -> None:
        self._socket = socket
        self._pause = pause
        self._chunk_size = chunk_size
        self._buffer = bytearray()
        self._done = False
        self.chunks = 0  # sent so far, the last (empty) one included
        self.sent = 0  # bytes of body sent so far, without the framing

    def write(self, data: bytes, /) -> int:
        if self._done:
            return len(data)
        self._buffer += data
        while len(self._buffer) >= self._chunk_size:
            piece = bytes(self._buffer[: self._chunk_size])
            del self._buffer[: self._chunk_size]
            self._send(piece)
        return len(data)

    def flush(self) -> None:
        """Nothing: chunks are cut by size, not where the writer flushes (zipfile flushes only at its end)."""

    def close(self) -> None:
        """Drop whatever is written from now on; the body is finished only by :meth:`finish`."""
        self._done = True

    def finish(self) -> None:
        """Send what is buffered, then the last chunk: the body is complete."""
        if self._buffer:
            self._send(bytes(self._buffer))
            self._buffer.clear()
        self._send(b"")
        self._done = True

    def _send(self, piece: bytes) -> None:
        try:
            self._socket.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        except OSError as error:  # a reset, a broken pipe, or no progress within the connection's io_timeout
            self._done = True
            raise StreamBroken(f"the client went away or stopped reading ({error})") from error
        self.chunks += 1
        self.sent += len(piece)
        if piece and self._pause():
            self._done = True
            raise StreamBroken("the vault is stopping")
