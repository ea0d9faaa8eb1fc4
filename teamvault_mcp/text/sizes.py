"""The size a change's result would have, in bytes of UTF-8, counted before the result is built. Pure.

A replacement repeated over many matches can make a note thousands of times its size, and
building it first fills the memory (100,000 matches of a 100 KB replacement: 10 GB). So
``edits.py`` and ``replace.py`` add the size up from the matches and the replacement's length,
and refuse past a limit their caller gives (:class:`~teamvault_mcp.errors.ResultTooLargeError`).
"""

from __future__ import annotations

from teamvault_mcp.errors import ResultTooLargeError


def byte_count(size: int) -> str:
    """``1 byte``, ``4,096 bytes``: a size as an answer says it."""
    return "1 byte" if size == 1 else f"{size:,} bytes"


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (ASCII, the usual note, without encoding it)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def refuse_past(limit: int | None, size: int, path: str, what: str) -> None:
    """Raise :class:`ResultTooLargeError` when ``size`` is past ``limit`` (None: no limit)."""
    if limit is not None and size > limit:
        raise ResultTooLargeError(path, what, size, limit)
