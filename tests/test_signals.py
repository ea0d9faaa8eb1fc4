"""The wait for SIGINT and SIGTERM (``commands/signals.py``): its handler takes no lock, so a signal that comes
while the main thread holds one cannot hang the process (the stdio server once hung after Ctrl-C, now and then,
under load: its handler set a ``threading.Event`` whose lock the interrupted thread could be holding)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

import pytest
from support.children import ROOT
from support.env import child_env
from support.waiting import GENEROUS, too_slow

from teamvault_mcp.commands.signals import SignalWait


def run_child(program: str, what: str) -> subprocess.CompletedProcess[bytes]:
    """``program`` run by this Python in a child; a child that does not end is a failure naming ``what``."""
    try:
        return subprocess.run(
            [sys.executable, "-c", program], capture_output=True, env=child_env(), cwd=ROOT, timeout=GENEROUS
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(too_slow(what, GENEROUS)) from None


def test_a_signal_while_the_main_thread_holds_the_waits_lock_is_taken_at_once() -> None:
    # In a child: were the handler to take the lock the main thread holds, the child would hang, not this suite.
    program = (
        "import signal\n"
        "from teamvault_mcp.commands.signals import SignalWait\n"
        "with SignalWait() as signals:\n"
        "    with signals._lock:\n"
        "        signal.raise_signal(signal.SIGTERM)  # the handler runs here, inside the held lock\n"
        "    print(signals.wait())\n"
    )
    done = run_child(program, "a signal taken while a lock is held")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == f"{int(signal.SIGTERM)}\n"


def test_wake_from_another_thread_ends_the_wait_without_a_signal() -> None:
    with SignalWait() as signals:
        waker = threading.Thread(target=signals.wake)
        waker.start()
        assert signals.wait() is None
        waker.join()
    signals.wake()  # after the block: nothing, not a write to a closed (or reused) descriptor


def test_the_first_signal_is_the_answer_and_each_later_one_goes_to_again() -> None:
    seen: list[int] = []
    before = signal.getsignal(signal.SIGINT)
    with SignalWait(again=seen.append) as signals:
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)
        assert signals.wait() == signal.SIGINT
        assert signals.wait() == signal.SIGINT  # the answer stays the first signal's
    assert seen == [signal.SIGINT]  # again() hears of the second signal, with the first one's number
    assert signal.getsignal(signal.SIGINT) is before  # the handlers in place before are back


def test_again_may_raise_to_end_a_wait_that_has_gone_on_too_long() -> None:
    class GiveUp(Exception):
        pass

    def again(first: int) -> None:
        raise GiveUp(first)

    with pytest.raises(GiveUp), SignalWait(again) as signals:
        signal.raise_signal(signal.SIGTERM)
        assert signals.wait() == signal.SIGTERM
        signal.raise_signal(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) != signals._handle


def test_a_thread_stuck_at_exit_does_not_keep_a_stopped_process_alive() -> None:
    # The interpreter waits at exit for every thread that is not a daemon: one stuck for ever would hold it.
    program = (
        "import threading\n"
        "from teamvault_mcp.commands.signals import end_within\n"
        "stuck = threading.Thread(target=threading.Event().wait, name='stuck-worker')\n"
        "stuck.start()\n"
        "end_within(0.5, 7, 'teamvault-mcp')\n"
    )
    done = run_child(program, "a stopped process with a stuck thread ending")
    assert done.returncode == 7
    line = done.stderr.decode()
    assert line.startswith("teamvault-mcp: still running 0.5 s after the stop; ending it (")
    assert "stuck-worker at threading.py:" in line and "MainThread at threading.py:" in line  # where each stands


def test_while_the_main_thread_is_still_at_work_the_process_is_only_told_not_ended() -> None:
    # A stuck step of the stop itself is named; a program that called main() and goes on is not ended under it.
    program = (
        "import threading, time\n"
        "from teamvault_mcp.commands.signals import end_within\n"
        "end_within(0.2, 7, 'teamvault-mcp')\n"
        "while any(t.name == 'teamvault-mcp exit watchdog' for t in threading.enumerate()):\n"
        "    time.sleep(0.01)\n"
        "print('still here')\n"
    )
    done = run_child(program, "the watchdog firing")
    assert (done.returncode, done.stdout) == (0, b"still here\n")
    line = done.stderr.decode()
    assert line.startswith("teamvault-mcp: still running 0.2 s after the stop; the main thread is still at work (")
    assert "MainThread at " in line
