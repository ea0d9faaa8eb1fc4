"""When to try a request again, and for how long: the policy, the call's budget, the loop.

The policy is one immutable value and its arithmetic is pure functions (spec §5):
at most 3 attempts, pauses of 1 s then 3 s plus 0–0.25 s of jitter, ``Retry-After``
honoured up to 10 s, no attempt started with less than 2 s of budget left, and a
409 ``idempotency_key_in_use`` retried until the budget ends without counting as an
attempt. Time comes from an injected :class:`Clock`, so tests drive it by hand.
This module never imports ``requests``: an attempt is any callable.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Protocol, TypeVar

from teamvault_mcp.errors import (
    AttemptTimeoutError,
    CallCancelledError,
    HTTPStatusError,
    KeyInUseError,
    OutOfTimeError,
    StaleConnectionError,
    TeamVaultError,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How one request is retried. The defaults are the product's promises (spec §5.2–§5.4)."""

    max_attempts: int = 3
    #: Pause after the 1st failed attempt, after the 2nd, ... (the last repeats).
    pauses: tuple[float, ...] = (1.0, 3.0)
    #: Up to this many seconds are added to every pause, so clients do not retry in lockstep.
    jitter: float = 0.25
    retry_after_cap: float = 10.0
    #: Pause before asking again while the first attempt with our Idempotency-Key is still running.
    key_in_use_pause: float = 1.0
    #: No attempt starts, and no pause is taken, when it would leave less than this.
    min_time_to_start: float = 2.0
    attempt_timeout: float = 20.0

    def pause_after(self, failures: int, retry_after: float | None, random_fraction: float) -> float:
        """Seconds to wait after the ``failures``-th counted failure (1-based)."""
        scheduled = self.pauses[min(failures, len(self.pauses)) - 1] + random_fraction * self.jitter
        return self._with_retry_after(scheduled, retry_after)

    def key_in_use_pause_for(self, retry_after: float | None, random_fraction: float) -> float:
        return self._with_retry_after(self.key_in_use_pause + random_fraction * self.jitter, retry_after)

    def _with_retry_after(self, scheduled: float, retry_after: float | None) -> float:
        if retry_after is None:
            return scheduled
        return max(scheduled, min(retry_after, self.retry_after_cap))


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delay-seconds or an HTTP date); None if absent or junk.

    ``now`` is the wall-clock time (epoch seconds), needed for the date form.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # an HTTP date is always GMT
            return None
        seconds = when.timestamp() - now
    if seconds != seconds:  # NaN
        return None
    return max(seconds, 0.0)


class Clock(Protocol):
    """Where the retry loop gets time, randomness and its pauses."""

    def monotonic(self) -> float: ...

    def wall(self) -> float: ...

    def random(self) -> float: ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Pause up to ``seconds``; return True at once if ``event`` (the call's cancel) is set."""
        ...


class SystemClock:
    """The real clock: ``time.monotonic``, ``random.random`` and ``Event.wait``."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def random(self) -> float:
        return random.random()

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(seconds)


class Budget:
    """One tool call's time budget, on a monotonic clock, shared by all its requests."""

    def __init__(self, seconds: float, clock: Clock) -> None:
        self.seconds = seconds
        self._clock = clock
        self._deadline = clock.monotonic() + seconds

    def remaining(self) -> float:
        return self._deadline - self._clock.monotonic()

    def elapsed(self) -> float:
        return self.seconds - self.remaining()


#: One attempt: gets the attempt's time limit and its number (1-based), returns or raises.
Attempt = Callable[[float, int], T]


def run_with_retries(
    attempt: Attempt[T],
    *,
    what: tuple[str, str],
    policy: RetryPolicy,
    budget: Budget,
    clock: Clock,
    cancel: threading.Event,
) -> T:
    """Run ``attempt`` until it succeeds, fails for good, the budget ends, or the call is cancelled.

    ``what`` is ``(method, api_path)``, for messages. Raises the last error, with a
    note on how many attempts were made when there was more than one.
    """
    counted_failures = 0
    attempts = 0
    stale_resent = False  # a stale pooled connection is given one free, immediate resend
    earlier_uncertain = False
    pending = False  # some attempt may still be running on the server
    last: TeamVaultError | None = None
    while True:
        if cancel.is_set():
            raise CallCancelledError()
        remaining = budget.remaining()
        if remaining < policy.min_time_to_start:
            if last is not None:
                raise _final(last, attempts, budget, earlier_uncertain, out_of_time=True)
            raise OutOfTimeError(what[0], what[1], budget.seconds, remaining)
        attempts += 1
        try:
            return attempt(min(policy.attempt_timeout, remaining), attempts)
        except CallCancelledError:
            raise
        except TeamVaultError as error:
            if last is not None:
                earlier_uncertain = earlier_uncertain or last.uncertain
            pending = pending or _may_still_run(error)
            last = error
            last.pending = pending
        if isinstance(last, StaleConnectionError) and not stale_resent:
            stale_resent = True
            attempts -= 1  # not an attempt of its own: the request never got a fair chance
            log.debug("%s %s: %s; sending again at once", *what, last)
            continue
        if isinstance(last, KeyInUseError):
            pause = policy.key_in_use_pause_for(last.retry_after, clock.random())
        elif last.retryable and counted_failures + 1 < policy.max_attempts:
            counted_failures += 1
            pause = policy.pause_after(counted_failures, last.retry_after, clock.random())
        else:
            raise _final(last, attempts, budget, earlier_uncertain, out_of_time=False)
        if budget.remaining() - pause < policy.min_time_to_start:
            raise _final(last, attempts, budget, earlier_uncertain, out_of_time=True)
        log.info("%s %s: attempt %d failed (%s); retrying in %.2f s", *what, attempts, last, pause)
        if clock.wait(cancel, pause):
            raise CallCancelledError()


def _may_still_run(error: TeamVaultError) -> bool:
    """Whether the server may still be working on the attempt that ended in ``error``."""
    if isinstance(error, AttemptTimeoutError | KeyInUseError):
        return True
    return isinstance(error, HTTPStatusError) and error.status == 504  # the gateway gave up, not the server


def _final(
    error: TeamVaultError, attempts: int, budget: Budget, earlier_uncertain: bool, *, out_of_time: bool
) -> TeamVaultError:
    """The error to report, with what the loop knows that the error does not."""
    if out_of_time:
        error.extend(
            f"(Gave up after {attempts} attempt{'s' if attempts > 1 else ''} in {budget.elapsed():.1f} s: "
            f"this call's {budget.seconds:g} s budget is nearly used up.)"
        )
    elif attempts > 1:
        error.extend(f"(Gave up after {attempts} attempts in {budget.elapsed():.1f} s.)")
    if earlier_uncertain and not error.uncertain:
        # A definite answer now (say 409 path_exists) may be the echo of an earlier attempt that landed.
        error.uncertain = True
        error.extend("An earlier attempt got no answer and may have been applied.")
    return error
