"""Fault injection: scripted misbehaviour of the local vault, for tests (not a mock: real sockets).

A test scripts, per method and path (a glob such as ``/api/projects/*/files/*``),
what the next matching requests get:

- ``Fault.answer(503, retry_after="1")``: an error status, nothing applied;
- ``Fault.close_before()``: the connection closed before anything is applied;
- ``Fault.apply_then_close()``: applied, then the connection closed without an answer;
- ``Fault.delay(seconds)``: the work takes ``seconds`` longer (a keyed write is in flight meanwhile);
- ``Fault.drip(interval)``: applied, then the answer sent one byte per ``interval``;
- ``Fault.hang()``: nothing sent until the client goes away; nothing applied;
- ``Fault.first(action)``: ``action`` runs (a colleague's write, say), then the request is carried out.

``FaultPlan.chooser`` may also pick a fault for any request (the soak test's chaos).
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Fault:
    kind: str
    status: int = 0
    retry_after: str | None = None
    seconds: float = 0.0
    action: Callable[[], None] | None = None

    @classmethod
    def answer(cls, status: int, retry_after: str | None = None) -> Fault:
        return cls("answer", status=status, retry_after=retry_after)

    @classmethod
    def close_before(cls) -> Fault:
        return cls("close_before")

    @classmethod
    def apply_then_close(cls) -> Fault:
        return cls("apply_then_close")

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        return cls("delay", seconds=seconds)

    @classmethod
    def drip(cls, interval: float = 0.05) -> Fault:
        return cls("drip", seconds=interval)

    @classmethod
    def hang(cls, at_most: float = 60.0) -> Fault:
        return cls("hang", seconds=at_most)

    @classmethod
    def first(cls, action: Callable[[], None]) -> Fault:
        return cls("first", action=action)

    @property
    def applies(self) -> bool:
        """Whether the request is carried out under this fault."""
        return self.kind in ("apply_then_close", "delay", "drip", "first")


Chooser = Callable[[str, str], Fault | None]


@dataclass
class _Rule:
    method: str
    pattern: str
    fault: Fault
    remaining: int


@dataclass
class FaultPlan:
    """The faults still to deal out; thread-safe.

    ``seen`` records every request the vault routed, as ``(method, path)``; ``injected``
    each fault dealt, as ``(method, path, fault)``; ``hang_ended`` the monotonic time at
    which each hanging request saw its client go away.
    """

    chooser: Chooser | None = None
    seen: list[tuple[str, str]] = field(default_factory=list)
    injected: list[tuple[str, str, Fault]] = field(default_factory=list)
    hang_ended: list[float] = field(default_factory=list)
    _rules: list[_Rule] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, method: str, pattern: str, fault: Fault, times: int = 1) -> None:
        """The next ``times`` requests matching ``method`` and ``pattern`` get ``fault``."""
        with self._lock:
            self._rules.append(_Rule(method.upper(), pattern, fault, times))

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self.chooser = None

    def take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            self.seen.append((method, path))
            for rule in self._rules:
                if rule.method in (method, "*") and fnmatch.fnmatchcase(path, rule.pattern):
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._rules.remove(rule)
                    self.injected.append((method, path, rule.fault))
                    return rule.fault
            chooser = self.chooser
        fault = chooser(method, path) if chooser is not None else None
        if fault is not None:
            with self._lock:
                self.injected.append((method, path, fault))
        return fault
