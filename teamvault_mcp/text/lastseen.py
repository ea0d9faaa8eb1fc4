"""One object remembered weakly: whether a later call was given that very object again, without keeping it alive.

A big vault's listing is reused by the calls of a moment (``vault/listings.py``), and the tallies and the index
store skip their walk over a listing they have seen. Each held the last one it saw, strongly: at 20,000 notes, five
listings of some 12 MB each were alive where the kept ones are one or two. Remembered weakly, a listing lives as
long as someone uses it, and one that is gone is simply not the same any more.
"""

from __future__ import annotations

import weakref
from typing import Any


class LastSeen:
    """The last object :meth:`remember` was given, weakly: :meth:`is_same` tells whether another is that one."""

    __slots__ = ("_ref",)

    def __init__(self) -> None:
        self._ref: weakref.ref[Any] | None = None

    def remember(self, thing: object) -> None:
        """Remember ``thing``; one that cannot be referenced weakly (a plain ``list``) is never the same again."""
        try:
            self._ref = weakref.ref(thing)
        except TypeError:
            self._ref = None

    def is_same(self, thing: object) -> bool:
        ref = self._ref
        return ref is not None and ref() is thing

    def forget(self) -> None:
        self._ref = None
