"""Waiting in tests without depending on how fast the machine is today.

A test waits for an event (``wait_until``, ``await_until``), never for a guessed number of
seconds, and bounds the wait generously: CI runs on 2 shared cores, sometimes at load 8.
When a bound is reached the failure says the machine was too slow, not that the code was wrong.
A bound that proves something (an attempt cut at its limit, a budget that ended a search) is
set far below what the unbounded work would take, so that it can still tell the two apart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import anyio

#: Seconds within which anything that takes milliseconds on an idle machine has happened, even at load 8.
GENEROUS = 20.0


def too_slow(what: str, seconds: float) -> str:
    return f"{what} took more than {seconds:g} s: the machine is too slow (or {what} never happens)"


def wait_until(condition: Callable[[], object], what: str, limit: float = GENEROUS) -> None:
    """Block until ``condition()`` is true; fail after ``limit`` seconds, naming ``what``."""
    deadline = time.monotonic() + limit
    pause = threading.Event()
    while not condition():
        assert time.monotonic() < deadline, too_slow(what, limit)
        pause.wait(0.005)


async def await_until(condition: Callable[[], object], what: str, limit: float = GENEROUS) -> None:
    """:func:`wait_until` for async tests: the event loop keeps running meanwhile."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, too_slow(what, limit)
        await anyio.sleep(0.005)


def assert_within(elapsed: float, limit: float, what: str) -> None:
    """``elapsed`` is under ``limit``: a generous bound, whose failure blames the machine's speed."""
    assert elapsed < limit, too_slow(what, limit)
