"""Unified diffs of note texts, for edit results, conflicts and version comparisons. Pure.

Lines are compared without their endings, so a diff shows what a reader sees; an
edit keeps each note's own endings (see ``edits.py``).
"""

from __future__ import annotations

import difflib

from teamvault_mcp.text.markdown import split_lines

#: A diff shown inside an error message stops after this many lines.
SHORT_DIFF_LINES = 40


def unified_diff(old: str, new: str, *, before: str, after: str, context: int = 3) -> str:
    """The unified diff from ``old`` to ``new`` (``---``/``+++`` labelled ``before``/``after``); "" if equal."""
    old_lines = [line.rstrip("\r\n") for line in split_lines(old)]
    new_lines = [line.rstrip("\r\n") for line in split_lines(new)]
    return "\n".join(difflib.unified_diff(old_lines, new_lines, before, after, n=context, lineterm=""))


def hunks_only(diff: str) -> str:
    """``diff`` without its ``---``/``+++`` lines: for a text whose headline names the note already."""
    lines = diff.split("\n", 2)
    if len(lines) == 3 and lines[0].startswith("--- ") and lines[1].startswith("+++ "):
        return lines[2]
    return diff


def shortened(diff: str, limit: int = SHORT_DIFF_LINES) -> str:
    lines = diff.splitlines()
    if len(lines) <= limit:
        return diff
    return "\n".join([*lines[:limit], f"… {len(lines) - limit} more diff lines"])


def newline_of(text: str) -> str:
    """The note's own line ending: the most frequent of ``\\r\\n``, ``\\n`` and ``\\r`` (``\\n`` if none)."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    return max((crlf, "\r\n"), (lf, "\n"), (cr, "\r"), key=lambda pair: pair[0])[1] if crlf or lf or cr else "\n"


def with_newline(text: str, newline: str) -> str:
    """``text`` with every line ending written as ``newline``."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", newline)
