"""Cancel tokens, attempt guards and the watchdog, on real socket pairs."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from support.waiting import wait_until

from teamvault_mcp.vault.interrupt import AttemptGuard, CancelToken, stop_when_expired


@dataclass(eq=False)
class Connection:
    """What a guard needs of a urllib3 connection: its socket."""

    sock: socket.socket | None


def is_shut(sock: socket.socket) -> bool:
    try:
        sock.send(b"x")
    except OSError:
        return True
    return False


def test_cancel_sets_the_event_and_shuts_the_attempts_socket() -> None:
    mine, theirs = socket.socketpair()
    with mine, theirs:
        token, guard = CancelToken(), AttemptGuard()
        token.attach(guard)
        guard.register(Connection(mine))
        token.cancel()
        assert token.cancelled and token.event.is_set()
        assert guard.stopped_because == "cancelled"
        assert is_shut(mine)


def test_a_connection_registered_after_the_stop_is_shut_at_once() -> None:
    mine, theirs = socket.socketpair()
    with mine, theirs:
        guard = AttemptGuard()
        guard.stop("cancelled")
        guard.register(Connection(mine))
        assert is_shut(mine)


def test_a_late_cancel_never_reaches_a_finished_attempts_connection() -> None:
    mine, theirs = socket.socketpair()
    with mine, theirs:
        token, guard = CancelToken(), AttemptGuard()
        token.attach(guard)
        guard.register(Connection(mine))
        guard.finish()
        token.detach(guard)
        token.cancel()
        guard.stop("expired")  # the watchdog firing late
        assert guard.stopped_because is None
        assert not is_shut(mine)  # the pooled connection may serve the next request


def test_attaching_to_a_cancelled_token_stops_the_attempt() -> None:
    token = CancelToken()
    token.cancel()
    guard = AttemptGuard()
    token.attach(guard)
    assert guard.stopped_because == "cancelled"


def test_the_watchdog_stops_an_attempt_when_its_time_is_up() -> None:
    mine, theirs = socket.socketpair()
    with mine, theirs:
        slow, quick = AttemptGuard(), AttemptGuard()
        slow.register(Connection(mine))
        stop_when_expired(slow, 0.2)
        stop_when_expired(quick, 0.05)  # an earlier deadline, added later
        wait_until(lambda: slow.stopped_because is not None, "the watchdog stopping a 0.2 s attempt")
        assert quick.stopped_because == "expired"
        assert slow.stopped_because == "expired"
        assert is_shut(mine)


def test_cancel_shuts_every_attempt_in_flight_of_a_batch() -> None:
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        token = CancelToken()
        guards = [AttemptGuard() for _ in pairs]
        for guard, (mine, _) in zip(guards, pairs, strict=True):
            token.attach(guard)
            guard.register(Connection(mine))
        token.detach(guards[2])
        guards[2].finish()
        token.cancel()
        assert [guard.stopped_because for guard in guards] == ["cancelled", "cancelled", None]
        assert [is_shut(mine) for mine, _ in pairs] == [True, True, False]
    finally:
        for mine, theirs in pairs:
            mine.close()
            theirs.close()
