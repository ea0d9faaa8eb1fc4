"""The retry policy (README: Reliability): what is retried, pauses, Retry-After, budget, idempotency keys."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
import requests
import responses
from freezegun import freeze_time
from support.fakes import FILES, PROJECT, FakeClock, file_record

from teamvault_mcp.errors import (
    UNCERTAIN_WRITE_HINT,
    Attempts,
    AttemptTimeoutError,
    CallCancelledError,
    ConflictError,
    HTTPStatusError,
    InternalError,
    KeyInUseError,
    NetworkError,
    NoteNotFoundError,
    OutOfTimeError,
    PreconditionFailedError,
    StaleConnectionError,
    TeamVaultError,
    ToolInputError,
    UnexpectedAnswerError,
)
from teamvault_mcp.tools.writing.report import audit_outcome
from teamvault_mcp.vault.retry import (
    Budget,
    Outcome,
    RequestFailure,
    RetryPolicy,
    SystemClock,
    call_failure,
    outcome,
    parse_retry_after,
    run_with_retries,
)

POLICY = RetryPolicy()


def http_error(status: int, *, code: str | None = None, retry_after: float | None = None) -> HTTPStatusError:
    return HTTPStatusError("GET", "/api/x", status, "body", code=code, retry_after=retry_after)


def network_error() -> NetworkError:
    return NetworkError("GET", "/api/x", "the connection was reset")


class Script:
    """An attempt function that fails with the given errors in order, then returns "ok"."""

    def __init__(self, *outcomes: TeamVaultError, clock: FakeClock | None = None, takes: float = 0.0) -> None:
        self.outcomes = list(outcomes)
        self.limits: list[float] = []
        self.clock = clock
        self.takes = takes

    def __call__(self, limit: float, number: int) -> str:
        self.limits.append(limit)
        if self.clock is not None:
            self.clock.advance(self.takes)
        if self.outcomes:
            raise self.outcomes.pop(0)
        return "ok"


def run(script: Script, clock: FakeClock, *, budget: float = 45.0, cancel: threading.Event | None = None) -> str:
    """The loop as the client runs it: the answer, or the last error raised with what the loop saw."""
    result = run_with_retries(
        script,
        what=("GET", "/api/x"),
        policy=POLICY,
        budget=Budget(budget, clock),
        clock=clock,
        cancel=cancel or threading.Event(),
    )
    if isinstance(result, RequestFailure):
        raise result.error.attach(result.attempts)
    return result


# -- the policy's arithmetic -------------------------------------------------------------------


def test_pauses_are_1s_then_3s_plus_up_to_a_quarter_second_of_jitter() -> None:
    assert POLICY.pause_after(1, None, 0.0) == 1.0
    assert POLICY.pause_after(2, None, 0.0) == 3.0
    assert POLICY.pause_after(1, None, 1.0) == 1.25
    assert POLICY.pause_after(2, None, 0.5) == 3.125


def test_retry_after_wins_when_longer_and_is_capped_at_10s() -> None:
    assert POLICY.pause_after(1, 7.0, 0.0) == 7.0
    assert POLICY.pause_after(1, 60.0, 0.0) == 10.0
    assert POLICY.pause_after(2, 2.0, 0.0) == 3.0  # the scheduled pause is longer


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("7", 7.0), (" 2.5 ", 2.5), ("0", 0.0), ("-3", 0.0), ("", None), ("soon", None), (None, None)],
)
def test_retry_after_seconds_form(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header, now=1_800_000_000.0) == seconds


def test_retry_after_http_date_form_counts_from_now() -> None:
    now = 1_800_000_000.0
    date = format_datetime(datetime.fromtimestamp(now + 8, tz=UTC), usegmt=True)
    assert parse_retry_after(date, now) == pytest.approx(8.0)
    past = format_datetime(datetime.fromtimestamp(now - 100, tz=UTC), usegmt=True)
    assert parse_retry_after(past, now) == 0.0


# -- the loop ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_statuses_without_an_answer_are_retried(clock: FakeClock, status: int) -> None:
    script = Script(http_error(status))
    assert run(script, clock) == "ok"
    assert len(script.limits) == 2
    assert clock.waits == [1.0]


def test_network_errors_are_retried_up_to_3_attempts_with_1s_then_3s_pauses(clock: FakeClock) -> None:
    script = Script(network_error(), network_error(), network_error())
    with pytest.raises(NetworkError) as caught:
        run(script, clock)
    assert len(script.limits) == 3
    assert clock.waits == [1.0, 3.0]
    assert "Gave up after 3 attempts" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "invalid_path"),
        (401, "unauthorized"),
        (403, "forbidden"),
        (404, "not_found"),
        (409, "path_exists"),
        (422, "idempotency_key_mismatch"),
        (500, None),
    ],
)
def test_definite_answers_are_never_retried(clock: FakeClock, status: int, code: str | None) -> None:
    script = Script(http_error(status, code=code))
    with pytest.raises(HTTPStatusError) as caught:
        run(script, clock)
    assert len(script.limits) == 1
    assert clock.waits == []
    assert "Gave up" not in str(caught.value)  # a single attempt keeps the server's exact error text


def test_retry_after_is_honoured_between_attempts(clock: FakeClock) -> None:
    script = Script(http_error(503, retry_after=7.0), http_error(429, retry_after=30.0))
    assert run(script, clock) == "ok"
    assert clock.waits == [7.0, 10.0]


def test_jitter_is_added_to_each_pause(clock: FakeClock) -> None:
    clock.random_value = 0.8
    script = Script(network_error(), network_error())
    assert run(script, clock) == "ok"
    assert clock.waits == [pytest.approx(1.2), pytest.approx(3.2)]


def test_key_in_use_is_retried_until_the_budget_ends_without_counting_attempts(clock: FakeClock) -> None:
    in_use = [KeyInUseError("PUT", "/api/x", "{}", retry_after=None) for _ in range(5)]
    script = Script(*in_use, network_error(), network_error())
    assert run(script, clock) == "ok"
    assert len(script.limits) == 8  # 5 in-use answers do not use up the 3 attempts
    assert clock.waits == [1.0] * 5 + [1.0, 3.0]


def test_key_in_use_at_the_end_of_the_budget_is_an_uncertain_failure(clock: FakeClock) -> None:
    script = Script(*[KeyInUseError("PUT", "/api/x", "{}", retry_after=None) for _ in range(100)])
    with pytest.raises(KeyInUseError) as caught:
        run(script, clock, budget=10.0)
    assert outcome(caught.value).uncertain
    assert "budget is nearly used up" in str(caught.value)
    assert clock.monotonic() - 1000.0 <= 10.0 - POLICY.min_time_to_start


def test_attempt_limit_is_20s_while_the_budget_allows(clock: FakeClock) -> None:
    script = Script(network_error(), clock=clock, takes=5.0)
    assert run(script, clock) == "ok"
    assert script.limits == [20.0, 20.0]


def test_attempt_limit_is_cut_to_the_remaining_budget(clock: FakeClock) -> None:
    script = Script(network_error(), clock=clock, takes=12.0)
    assert run(script, clock, budget=25.0) == "ok"
    assert script.limits == [20.0, pytest.approx(25.0 - 12.0 - 1.0)]


def test_a_pause_that_would_leave_less_than_2s_is_not_taken(clock: FakeClock) -> None:
    script = Script(network_error(), network_error(), clock=clock, takes=10.0)
    with pytest.raises(NetworkError) as caught:
        run(script, clock, budget=24.0)
    # 10 s attempt, 1 s pause, 10 s attempt; a 3 s pause would leave 0 s: fail at once
    assert len(script.limits) == 2
    assert clock.waits == [1.0]
    assert "budget is nearly used up" in str(caught.value)


def test_no_attempt_starts_with_less_than_2s_left(clock: FakeClock) -> None:
    budget = Budget(45.0, clock)
    clock.advance(43.5)
    script = Script()
    result = run_with_retries(
        script, what=("GET", "/api/x"), policy=POLICY, budget=budget, clock=clock, cancel=threading.Event()
    )
    assert isinstance(result, RequestFailure) and isinstance(result.error, OutOfTimeError)
    assert script.limits == [] and result.attempts.made == 0
    assert not outcome(result.error.attach(result.attempts)).uncertain
    assert "Nothing was sent" in str(result.error) and "Gave up" not in str(result.error)


def test_cancel_during_a_pause_stops_without_another_attempt(clock: FakeClock) -> None:
    cancel = threading.Event()
    clock.on_wait = lambda seconds: cancel.set()
    script = Script(network_error(), network_error())
    with pytest.raises(CallCancelledError):
        run(script, clock, cancel=cancel)
    assert len(script.limits) == 1


def test_a_cancelled_call_makes_no_attempt(clock: FakeClock) -> None:
    cancel = threading.Event()
    cancel.set()
    script = Script()
    with pytest.raises(CallCancelledError):
        run(script, clock, cancel=cancel)
    assert script.limits == []


def test_a_definite_answer_after_an_unanswered_attempt_is_uncertain(clock: FakeClock) -> None:
    script = Script(network_error(), http_error(409, code="path_exists"))
    with pytest.raises(HTTPStatusError) as caught:
        run(script, clock)
    assert outcome(caught.value).uncertain
    assert "may have been applied" in str(caught.value)


def test_a_429_is_not_uncertain_but_a_503_is(clock: FakeClock) -> None:
    assert not outcome(http_error(429)).uncertain
    assert outcome(http_error(503)).uncertain
    assert not outcome(http_error(404)).uncertain


# -- what a failure means: one table --------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (NetworkError("PUT", "/api/x", "cannot connect", connected=False), Outcome("counted")),
        (StaleConnectionError("PUT", "/api/x"), Outcome("at once", uncertain=True)),
        (AttemptTimeoutError("PUT", "/api/x", 20.0), Outcome("counted", uncertain=True, may_still_run=True)),
        (network_error(), Outcome("counted", uncertain=True)),
        (http_error(429), Outcome("counted")),
        (http_error(502), Outcome("counted", uncertain=True)),
        (http_error(503), Outcome("counted", uncertain=True)),
        (http_error(504), Outcome("counted", uncertain=True, may_still_run=True)),
        (KeyInUseError("PUT", "/api/x", "{}", retry_after=None), Outcome("until the budget ends", True, True)),
        (http_error(409, code="idempotency_key_in_use"), Outcome("until the budget ends", True, True)),
        (http_error(500), Outcome("never", uncertain=True)),
        (http_error(507), Outcome("never", uncertain=True)),
        (UnexpectedAnswerError("PUT", "/api/x", "not JSON"), Outcome("never", uncertain=True)),
        (InternalError("Internal error in write_note: KeyError: 'x'."), Outcome("never", uncertain=True)),
        (CallCancelledError(), Outcome("never", uncertain=True, may_still_run=True)),
        (http_error(409, code="path_exists"), Outcome("never")),
        (http_error(404), Outcome("never")),
        (http_error(302), Outcome("never")),
        (PreconditionFailedError("PUT", "/api/x", "{}", current_hash=None), Outcome("never")),
        (OutOfTimeError("PUT", "/api/x", 45.0, 1.0), Outcome("never")),
        (NoteNotFoundError("a.md"), Outcome("never")),
        (ConflictError("a.md", "0" * 64, "1" * 64, None), Outcome("never")),
        (ToolInputError("Argument 'path' must not be empty."), Outcome("never")),
    ],
)
def test_the_outcome_table_says_what_each_failure_means(error: TeamVaultError, expected: Outcome) -> None:
    assert outcome(error) == expected


def test_the_loop_returns_what_happened_and_leaves_the_error_as_it_was(clock: FakeClock) -> None:
    timeout, answer = AttemptTimeoutError("PUT", "/api/x", 20.0), http_error(409, code="path_exists")
    text = str(answer)
    result = run_with_retries(
        Script(timeout, answer),
        what=("PUT", "/api/x"),
        policy=POLICY,
        budget=Budget(45, clock),
        clock=clock,
        cancel=threading.Event(),
    )
    assert isinstance(result, RequestFailure) and result.error is answer
    assert result.attempts == Attempts(2, 1.0, 45.0, out_of_time=False, earlier_unanswered=True, may_still_run=True)
    assert str(answer) == text and answer.attempts is None  # nothing was edited: the client attaches the record
    assert outcome(answer) == Outcome("never")  # the 409 on its own is definite...
    answer.attach(result.attempts)
    assert outcome(answer) == Outcome("never", uncertain=True, may_still_run=True)  # ...after a timed-out attempt not
    assert (
        str(answer)
        == f"{text} (Gave up after 2 attempts in 1.0 s.) An earlier attempt got no answer and may have been applied."
    )
    with pytest.raises(ValueError):
        answer.attach(result.attempts)  # once


def test_the_final_message_has_the_hint_only_when_a_write_request_was_sent() -> None:
    error = http_error(503).attach(Attempts(3, 4.2, 45.0))
    sent = call_failure(error, write_sent=True)
    assert sent.text == f"{error} {UNCERTAIN_WRITE_HINT}" and audit_outcome(sent) == "uncertain"
    assert "(Gave up after 3 attempts in 4.2 s.)" in sent.text
    unsent = call_failure(error, write_sent=False)
    assert unsent.text == str(error) and audit_outcome(unsent) == "failed"
    definite = call_failure(http_error(409, code="path_exists"), write_sent=True)
    assert UNCERTAIN_WRITE_HINT not in definite.text and audit_outcome(definite) == "failed"
    cancelled = call_failure(CallCancelledError(), write_sent=True)
    assert (
        cancelled.text == f"The call was cancelled. {UNCERTAIN_WRITE_HINT}" and audit_outcome(cancelled) == "cancelled"
    )


def test_a_note_a_handler_adds_comes_after_what_the_loop_saw() -> None:
    error = network_error().attach(Attempts(3, 4.0, 45.0))
    error.extend("The schemas loaded before stay in use.")
    assert str(error).endswith("(Gave up after 3 attempts in 4.0 s.) The schemas loaded before stay in use.")


# -- through the client: the Idempotency-Key ---------------------------------------------------


def test_every_attempt_of_a_write_carries_the_same_idempotency_key(
    http_mock: responses.RequestsMock, make_client, clock: FakeClock
) -> None:
    url = f"{FILES}/f1"
    http_mock.put(url, body=requests.ConnectionError("reset"))
    http_mock.put(url, status=503, body="upstream is down")
    http_mock.put(url, json={"file": file_record("a.md")})
    make_client().replace_content(PROJECT, "f1", b"hello")
    keys = [call.request.headers["Idempotency-Key"] for call in http_mock.calls]
    assert len(keys) == 3
    assert len(set(keys)) == 1
    assert len(keys[0]) == 36  # a UUID


def test_each_tool_call_gets_a_new_idempotency_key(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.put(f"{FILES}/f1", json={"file": file_record("a.md")})
    make_client().replace_content(PROJECT, "f1", b"one")
    make_client().replace_content(PROJECT, "f1", b"two")
    first, second = (call.request.headers["Idempotency-Key"] for call in http_mock.calls)
    assert first != second


def test_reads_carry_no_idempotency_key(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(FILES, json={"files": []})
    make_client().list_files(PROJECT)
    assert "Idempotency-Key" not in http_mock.calls[0].request.headers


def test_a_replayed_answer_is_a_success(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.put(f"{FILES}/f1", body=requests.ReadTimeout("read timed out"))
    http_mock.put(f"{FILES}/f1", json={"file": file_record("a.md")}, headers={"Idempotent-Replayed": "true"})
    client = make_client()
    written = client.replace_content(PROJECT, "f1", b"hello")
    assert written.path == "a.md"
    assert client.replayed


def test_422_key_mismatch_is_not_retried(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.put(
        f"{FILES}/f1",
        status=422,
        json={"error": {"code": "idempotency_key_mismatch", "message": "different request"}},
    )
    with pytest.raises(HTTPStatusError) as caught:
        make_client().replace_content(PROJECT, "f1", b"hello")
    assert caught.value.code == "idempotency_key_mismatch"
    assert len(http_mock.calls) == 1


def test_409_key_in_use_from_the_server_is_retried(http_mock: responses.RequestsMock, make_client) -> None:
    busy = {"error": {"code": "idempotency_key_in_use", "message": "in flight"}}
    for _ in range(4):
        http_mock.put(f"{FILES}/f1", status=409, json=busy)
    http_mock.put(f"{FILES}/f1", json={"file": file_record("a.md")})
    make_client().replace_content(PROJECT, "f1", b"hello")
    assert len(http_mock.calls) == 5


def test_the_requests_timeout_is_the_attempt_limit_cut_to_the_budget(
    http_mock: responses.RequestsMock, make_client, clock: FakeClock
) -> None:
    def slow_answer(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        clock.advance(37.0)
        return 503, {}, "busy"

    http_mock.add_callback(responses.GET, FILES, callback=slow_answer)
    http_mock.get(FILES, json={"files": []})
    make_client().list_files(PROJECT)
    first, second = (call.request.req_kwargs["timeout"] for call in http_mock.calls)
    assert first[1] == 20.0
    assert second[1] == pytest.approx(45.0 - 37.0 - 1.0)  # 7 s left after the 1 s pause
    assert second[0] <= second[1]


def test_the_system_clock_reads_retry_after_dates_against_wall_time() -> None:
    # freezegun moves time.time (the wall clock), which the real clock must follow for HTTP dates.
    with freeze_time("2026-11-30 12:00:00"):
        assert parse_retry_after("Mon, 30 Nov 2026 12:00:08 GMT", SystemClock().wall()) == pytest.approx(8.0)
