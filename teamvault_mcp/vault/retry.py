"""When to try a request again, and what a failure means: the policy, the outcome table, the loop.

The policy is one immutable value and its arithmetic is pure functions (README: Reliability):
at most 3 attempts, pauses of 1 s then 3 s plus 0–0.25 s of jitter, ``Retry-After``
honoured up to 10 s, no attempt started with less than 2 s of budget left, and a
409 ``idempotency_key_in_use`` retried until the budget ends without counting as an
attempt. Time comes from an injected :class:`Clock`, so tests drive it by hand.

What a failed attempt means is data: :data:`OUTCOMES`, one table keyed by the kind of error
and its status, says whether the request may be sent again (and how), whether a write that
ended so may or may not have been applied, and whether the attempt may still be running on
the server. :func:`outcome` reads it; the loop, ``settle`` (``tools/writing/rules.py``) and the end
of a tool call (:func:`call_failure`: its message, and whether the write may have been applied) all ask
it, and nothing else decides. The loop returns what happened — the answer, or :class:`RequestFailure` — and never
edits an exception. This module never imports ``requests``: an attempt is any callable.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal, Protocol, TypeVar

from teamvault_mcp.errors import (
    Attempts,
    AttemptTimeoutError,
    CallCancelledError,
    CallStop,
    HTTPStatusError,
    InternalError,
    NetworkError,
    OutOfTimeError,
    OverdueError,
    StaleConnectionError,
    TeamVaultError,
    TlsRefusedError,
    UnexpectedAnswerError,
    failure_text,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How one request is retried. The defaults are the product's promises (README: Reliability)."""

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


# -- what a failure means ------------------------------------------------------------------------

#: How a failed request is sent again: ``never``; ``counted`` (after a pause, up to ``max_attempts``); ``at once``
#: (once, without a pause or counting an attempt); ``until the budget ends`` (after ``key_in_use_pause``, uncounted).
Retry = Literal["never", "counted", "at once", "until the budget ends"]


@dataclass(frozen=True)
class Outcome:
    """What a failure means: how the request may be sent again; whether a write that ended so may or may not
    have been applied (``uncertain``); whether an attempt may still be running on the server, so that a note
    found unchanged now may still change (``may_still_run``)."""

    retry: Retry
    uncertain: bool = False
    may_still_run: bool = False

    @property
    def retryable(self) -> bool:
        return self.retry != "never"


@dataclass(frozen=True)
class Rule:
    """One row of :data:`OUTCOMES`: an error of ``kind`` (and of ``status``, ``code``, ``connected`` when given)."""

    kind: type[CallStop]
    outcome: Outcome
    status: int | range | None = None
    code: str | None = None
    connected: bool | None = None

    def matches(self, error: CallStop) -> bool:
        if not isinstance(error, self.kind):
            return False
        status = error.status if isinstance(error, HTTPStatusError) else None
        if self.status is not None and (
            status is None or (status != self.status if isinstance(self.status, int) else status not in self.status)
        ):
            return False
        if self.code is not None and (not isinstance(error, HTTPStatusError) or error.code != self.code):
            return False
        return self.connected is None or (isinstance(error, NetworkError) and error.connected == self.connected)


#: What each failure means, most specific row first: the first row that matches is used.
OUTCOMES: tuple[Rule, ...] = (
    # The host cancelled: no further request. A write in flight may land yet.
    Rule(CallCancelledError, Outcome("never", uncertain=True, may_still_run=True)),
    # A certificate this client does not accept, or no TLS at that port: the next attempt would meet the same.
    Rule(TlsRefusedError, Outcome("never")),
    # DNS or the TCP connect failed: nothing reached the server, even for a write.
    Rule(NetworkError, Outcome("counted"), connected=False),
    # A kept-alive connection the server had closed: most likely nothing reached it, but a server that applies
    # a write and then drops the connection looks the same.
    Rule(StaleConnectionError, Outcome("at once", uncertain=True)),
    # Our attempt limit cut it: the server may be working on it still.
    Rule(AttemptTimeoutError, Outcome("counted", uncertain=True, may_still_run=True)),
    # A reset, a cut-off body: the request may have been applied.
    Rule(NetworkError, Outcome("counted", uncertain=True)),
    # An earlier attempt with our Idempotency-Key is being applied right now.
    Rule(HTTPStatusError, Outcome("until the budget ends", True, True), status=409, code="idempotency_key_in_use"),
    # Rate limited: refused, not processed.
    Rule(HTTPStatusError, Outcome("counted"), status=429),
    # The proxy got no answer, or the server is overloaded: it may have done the work first.
    Rule(HTTPStatusError, Outcome("counted", uncertain=True), status=502),
    Rule(HTTPStatusError, Outcome("counted", uncertain=True), status=503),
    # The gateway gave up waiting, not the server: it may be working on it still.
    Rule(HTTPStatusError, Outcome("counted", uncertain=True, may_still_run=True), status=504),
    # Any other server failure may come after the work was done.
    Rule(HTTPStatusError, Outcome("never", uncertain=True), status=range(500, 1000)),
    # A success status we cannot read: a write may have been applied.
    Rule(UnexpectedAnswerError, Outcome("never", uncertain=True)),
    # The call's work was still running at the end of its budget (answered without it): a write may land yet.
    Rule(OverdueError, Outcome("never", uncertain=True, may_still_run=True)),
    # A bug or a recursion limit in our own code may strike after a write was sent.
    Rule(InternalError, Outcome("never", uncertain=True)),
    # Every other answer (4xx, 3xx) and our own errors: definite, nothing was changed.
    Rule(TeamVaultError, Outcome("never")),
)


def outcome(error: CallStop) -> Outcome:
    """What ``error`` means: its row of :data:`OUTCOMES`, and, when it ended the retry loop, what the loop saw
    (an earlier attempt that got no answer makes it uncertain; one that may still run, ``may_still_run``)."""
    found = next(rule.outcome for rule in OUTCOMES if rule.matches(error))
    seen = error.attempts
    if seen is None:
        return found
    return Outcome(found.retry, found.uncertain or seen.earlier_unanswered, found.may_still_run or seen.may_still_run)


@dataclass(frozen=True)
class CallFailure:
    """How a failed tool call ends: the error, the message the model reads, and whether that message says the
    write may have been applied (a write was sent, and :func:`outcome` says it may have landed). Its audit
    outcome is ``tools/writing/report.audit_outcome``'s to say."""

    error: CallStop
    text: str
    may_have_applied: bool

    @property
    def cancelled(self) -> bool:
        return isinstance(self.error, CallCancelledError)

    @property
    def uncertain(self) -> bool:
        """The write may or may not have been applied, and the host did not cancel the call."""
        return self.may_have_applied and not self.cancelled


def call_failure(error: CallStop, *, write_sent: bool) -> CallFailure:
    """The end of a tool call that failed with ``error``; ``write_sent``: it sent a write request.

    Only a write that was sent can have been applied: then, when :func:`outcome` says it may
    have been, the message ends with the hint to check before calling again.
    """
    may_have_applied = write_sent and outcome(error).uncertain
    return CallFailure(error, failure_text(error, hint=may_have_applied), may_have_applied)


# -- the loop ------------------------------------------------------------------------------------


#: One attempt: gets the attempt's time limit and its number (1-based), returns or raises.
Attempt = Callable[[float, int], T]


@dataclass(frozen=True)
class RequestFailure:
    """How a request failed: its last error, and what the loop saw (the client attaches it and raises)."""

    error: TeamVaultError
    attempts: Attempts


def run_with_retries(
    attempt: Attempt[T],
    *,
    what: tuple[str, str],
    policy: RetryPolicy,
    budget: Budget,
    clock: Clock,
    cancel: threading.Event,
) -> T | RequestFailure:
    """Run ``attempt`` until it succeeds, fails for good, the budget ends, or the call is cancelled.

    ``what`` is ``(method, api_path)``, for messages. Returns the answer, or :class:`RequestFailure`
    with the last error and what the loop saw. A cancel raises :class:`CallCancelledError`.
    """
    counted_failures = 0
    made = 0
    stale_resent = False  # a stale pooled connection is given one free, immediate resend
    earlier_uncertain = False
    may_still_run = False  # some attempt may still be running on the server
    last: TeamVaultError | None = None

    def failed(error: TeamVaultError, *, out_of_time: bool) -> RequestFailure:
        # A definite answer now (say 409 path_exists) may be the echo of an earlier attempt that landed.
        echo = earlier_uncertain and not outcome(error).uncertain
        seen = Attempts(made, budget.elapsed(), budget.seconds, out_of_time, echo, may_still_run)
        return RequestFailure(error, seen)

    while True:
        if cancel.is_set():
            raise CallCancelledError()
        remaining = budget.remaining()
        if remaining < policy.min_time_to_start:
            if last is not None:
                return failed(last, out_of_time=True)
            return failed(OutOfTimeError(what[0], what[1], budget.seconds, remaining), out_of_time=True)
        made += 1
        try:
            return attempt(min(policy.attempt_timeout, remaining), made)
        except TeamVaultError as error:
            if last is not None:
                earlier_uncertain = earlier_uncertain or outcome(last).uncertain
            last = error
        now = outcome(last)
        may_still_run = may_still_run or now.may_still_run
        if now.retry == "at once" and not stale_resent:
            stale_resent = True
            made -= 1  # not an attempt of its own: the request never got a fair chance
            log.debug("%s %s: %s; sending again at once", *what, last)
            continue
        if now.retry == "until the budget ends":
            pause = policy.key_in_use_pause_for(last.retry_after, clock.random())
        elif now.retryable and counted_failures + 1 < policy.max_attempts:
            counted_failures += 1
            pause = policy.pause_after(counted_failures, last.retry_after, clock.random())
        else:
            return failed(last, out_of_time=False)
        if budget.remaining() - pause < policy.min_time_to_start:
            return failed(last, out_of_time=True)
        log.info("%s %s: attempt %d failed (%s); retrying in %.2f s", *what, made, last, pause)
        if clock.wait(cancel, pause):
            raise CallCancelledError()
