"""Each caller's share of the sessions of ``serve --http --key-from-client``: one member cannot lock the team out.

The SDK's session manager bounds sessions in all (TEAM_VAULT_HTTP_MAX_SESSIONS, then 503 ``Too many
open sessions``) but not per caller, so one key could open them all. :class:`SessionShares` keeps,
per owner (the Team Vault user a key belongs to), the sessions it opened, least recently used
first, and how many requests each has in flight. Before a session is opened, :meth:`SessionShares.admit`
decides:

- an owner holding ``per_owner`` sessions (TEAM_VAULT_HTTP_SESSIONS_PER_CALLER, 10 by default)
  gives up its least recently used idle one first;
- the last ``per_owner`` of all sessions are kept for owners holding none yet: an owner that
  already holds some gives up one of its own instead of taking them;
- when it has no idle session to give up, the request is refused (503).

A session given up is ended through the session manager as a client's ``DELETE`` would end it;
its id then answers 404 and its client opens a new one. Sessions end by themselves too (idle
expiry, a client's ``DELETE``): one not used for longer than the idle timeout is forgotten here,
one that was already gone when given up costs nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from teamvault_mcp.vault.retry import Clock


@dataclass
class HeldSession:
    """A session as its owner's share sees it: who opened it, when it was last used, requests in it."""

    caller_id: str
    last_used: float
    in_flight: int = 0


class SessionShares:
    """The sessions each owner holds; not thread-safe (it lives on the event loop's thread)."""

    def __init__(self, *, per_owner: int, max_sessions: int, session_idle: float, clock: Clock) -> None:
        self.per_owner = per_owner
        self.max_sessions = max_sessions
        self.session_idle = session_idle
        self.clock = clock
        self._held: dict[str, OrderedDict[str, HeldSession]] = {}
        self._owner_of: dict[str, str] = {}
        self._opening: dict[str, int] = {}

    def admit(self, owner: str) -> tuple[bool, list[tuple[str, str]]]:
        """May ``owner`` open a session: (yes or no, the (session id, caller id) pairs to end first).

        A yes reserves a place until :meth:`opened` or :meth:`not_opened`.
        """
        self._forget_expired()
        held = self._held.get(owner, OrderedDict())
        mine = len(held) + self._opening.get(owner, 0)
        total = sum(len(sessions) for sessions in self._held.values()) + sum(self._opening.values())
        over_share = bool(self.per_owner) and mine >= self.per_owner
        reserve = min(self.per_owner, self.max_sessions // 2)
        into_reserve = mine > 0 and total >= self.max_sessions - reserve
        given_up: list[tuple[str, str]] = []
        if over_share or into_reserve:
            idle = next((sid for sid, session in held.items() if session.in_flight == 0), None)
            if idle is None:
                return False, []
            given_up.append((idle, held[idle].caller_id))
            self.closed(idle)
        self._opening[owner] = self._opening.get(owner, 0) + 1
        return True, given_up

    def opened(self, owner: str, session_id: str, caller_id: str) -> None:
        """The session ``owner`` was admitted for exists: ``session_id``."""
        self.not_opened(owner)
        self._held.setdefault(owner, OrderedDict())[session_id] = HeldSession(caller_id, self.clock.monotonic())
        self._owner_of[session_id] = owner

    def not_opened(self, owner: str) -> None:
        """The request ``owner`` was admitted for opened no session (or :meth:`opened` did the bookkeeping)."""
        left = self._opening.get(owner, 0) - 1
        if left > 0:
            self._opening[owner] = left
        else:
            self._opening.pop(owner, None)

    def begin(self, session_id: str) -> None:
        """A request to ``session_id`` starts (it is in use, so it is not given up)."""
        session = self._session(session_id)
        if session is not None:
            session.in_flight += 1
            session.last_used = self.clock.monotonic()
            self._held[self._owner_of[session_id]].move_to_end(session_id)

    def end(self, session_id: str) -> None:
        """A request to ``session_id`` has ended."""
        session = self._session(session_id)
        if session is not None:
            session.in_flight = max(0, session.in_flight - 1)
            session.last_used = self.clock.monotonic()

    def closed(self, session_id: str) -> None:
        """``session_id`` has ended (deleted, given up, or unknown to the session manager)."""
        owner = self._owner_of.pop(session_id, None)
        if owner is None:
            return
        held = self._held[owner]
        held.pop(session_id, None)
        if not held:
            del self._held[owner]

    def sessions_of_caller(self, caller_id: str) -> list[str]:
        """The sessions the caller ``caller_id`` (one key) opened."""
        return [sid for held in self._held.values() for sid, session in held.items() if session.caller_id == caller_id]

    def count(self, owner: str) -> int:
        return len(self._held.get(owner, ()))

    def _session(self, session_id: str) -> HeldSession | None:
        owner = self._owner_of.get(session_id)
        return self._held[owner].get(session_id) if owner is not None else None

    def _forget_expired(self) -> None:
        """Forget sessions unused for longer than the idle timeout: the session manager has ended them."""
        now = self.clock.monotonic()
        expired = [
            session_id
            for held in self._held.values()
            for session_id, session in held.items()
            if session.in_flight == 0 and now - session.last_used > self.session_idle
        ]
        for session_id in expired:
            self.closed(session_id)
