"""SIGINT and SIGTERM for a command whose main thread waits while others work (``serve``, ``local-vault``).

A Python signal handler runs in the main thread between two bytecodes: possibly while that thread holds the
lock inside the ``threading.Event`` it is waiting on. A handler that sets such an Event then waits for a lock
its own thread holds, for ever: the process hung after Ctrl-C, now and then, on a loaded machine. So the
handler here takes no lock: it notes the signal and writes a byte to a pipe, and the main thread waits by
reading that pipe (a read a signal interrupts is resumed, PEP 475, and finds the byte).

After the signal, :func:`end_within` bounds how long the stopped process may take to end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Seconds a stopped process may take to end, beyond cancelling its calls, before :func:`end_within` ends it.
EXIT_GRACE = 5.0


class SignalWait:
    """``with SignalWait() as signals: ... signals.wait()``: until SIGINT, SIGTERM or :meth:`wake`.

    ``again``, if given, is called by the handler of every signal after the first, with the first's number
    (it may raise, to end a wait that has gone on too long). The handlers in place before are put back at exit.
    """

    def __init__(self, again: Callable[[int], None] | None = None) -> None:
        self.received: list[int] = []
        self._again = again
        self._previous: dict[int, object] = {}
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # a full pipe already holds a wake-up: never block a handler
        self._lock = threading.Lock()  # :meth:`wake` (another thread) against closing; never the handler's
        self._closed = False

    def __enter__(self) -> SignalWait:
        self._previous = {signum: signal.signal(signum, self._handle) for signum in STOP_SIGNALS}
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]  # what signal.signal returned
        with self._lock:
            self._closed = True
            os.close(self._read)
            os.close(self._write)

    def wait(self) -> int | None:
        """Block until a signal comes or :meth:`wake` is called; the first signal's number, or None."""
        if not self.received:
            os.read(self._read, 1)
        return self.received[0] if self.received else None

    def wake(self) -> None:
        """End :meth:`wait` (from any thread; after the ``with`` block, nothing)."""
        with self._lock:
            if not self._closed:
                self._poke()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received and self._again is not None:
            self._again(self.received[0])
        self.received.append(signum)
        self._poke()

    def _poke(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.write(self._write, b"\0")


def end_within(seconds: float, exit_code: int, prog: str) -> None:
    """After a stop signal: end the process with ``exit_code`` if it is still running ``seconds`` from now.

    The stop itself takes milliseconds (the calls in flight up to their grace); but the interpreter waits at exit
    for every thread that is not a daemon, and a stuck one (in a blocking call of a library's worker pool, say)
    would keep a stopped server alive for ever. Then this says on stderr which threads, where each stands and
    where the main thread is, and, once the main thread has ended, ends the process without them.
    """

    def force() -> None:
        frames = sys._current_frames()
        stuck = [thread for thread in threading.enumerate() if thread is not threading.current_thread()]
        where = "; ".join(f"{thread.name} at {_top_of(frames.get(thread.ident or -1))}" for thread in stuck)
        # The main thread is marked ended as the interpreter begins to exit: then only the wait for threads is
        # left, and this ends it. Alive, it is still at work (a stuck step of the stop, or a program that called
        # ``main`` and goes on): that is said, and the process is left to it.
        exiting = not threading.main_thread().is_alive()
        with contextlib.suppress(OSError, ValueError):
            action = "ending it" if exiting else "the main thread is still at work"
            sys.stderr.write(f"{prog}: still running {seconds:g} s after the stop; {action} ({where})\n")
            sys.stderr.flush()
        if exiting:
            os._exit(exit_code)

    timer = threading.Timer(seconds, force)
    timer.name = "teamvault-mcp exit watchdog"
    timer.daemon = True  # never itself a thread the exit waits for
    timer.start()


def _top_of(frame: FrameType | None) -> str:
    """The innermost frames of a stack as ``file:line function`` (ours and the library's), innermost first."""
    if frame is None:
        return "?"
    places: list[str] = []
    while frame is not None and len(places) < 4:
        code = frame.f_code
        places.append(f"{os.path.basename(code.co_filename)}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return " < ".join(places)
