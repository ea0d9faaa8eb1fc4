"""When a piece of CPU work stops: a :class:`Deadline` on the clock of the call it belongs to. Pure.

Matching, diffing and counting words take no request, so no request's time limit bounds them: each checks a
deadline between lines. A deadline carries the clock it is read on, so that the work and the call's budget
agree on what time it is (``vault/retry.py``'s ``Budget``: tests drive it with a fake clock) and no module
below ``tools/`` reads the machine's clock itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Deadline:
    """The moment ``at`` on the clock ``now`` (seconds, monotonic) past which the work stops."""

    at: float
    now: Callable[[], float]

    @classmethod
    def after(cls, seconds: float, now: Callable[[], float]) -> Deadline:
        """``seconds`` from now on the clock ``now``."""
        return cls(now() + seconds, now)

    def left(self) -> float:
        """Seconds until the deadline; negative once it has passed."""
        return self.at - self.now()

    def passed(self) -> bool:
        return self.now() > self.at

    def within(self, seconds: float) -> Deadline:
        """This deadline, or ``seconds`` from now on the same clock if that comes first."""
        return Deadline(min(self.at, self.now() + seconds), self.now)
