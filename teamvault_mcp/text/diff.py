"""Unified diffs of note texts, for edit results, conflicts and version comparisons. Pure.

Lines are compared without their endings, so a diff shows what a reader sees; an
edit keeps each note's own endings (see ``edits.py``).

difflib's matcher is quadratic when many lines change apart from each other (a 40,000-line
note with every other line changed took 75 s), so every diff is bounded: by a count of the
matcher's work (:data:`DIFF_WORK`, the same on every machine) and, when the caller gives one,
by a deadline. A diff past either is :func:`too_large_summary`, a line that counts the
changed lines in linear time, instead of the diff.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from itertools import accumulate

from teamvault_mcp.text.deadlines import Deadline
from teamvault_mcp.text.markdown import split_lines

#: A diff shown inside an error message stops after this many lines.
SHORT_DIFF_LINES = 40

#: The matcher work a diff may take before it is summarised instead: lines of the two sides each search
#: looks at, plus the places their lines occur on the other side (bench/bounds_bench.py: 10,000,000 is
#: about 1 s of CPU here; a one-line change in a 40,000-line note costs 180,000).
DIFF_WORK = 10_000_000


class _TooMuchWork(Exception):
    """The matcher reached its work bound or its deadline."""


class _BoundedMatcher(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """difflib's matcher, stopped between two searches for the longest match when its work bound or its
    deadline is reached. Each search is charged before it runs: the lines of both ranges, and for each
    line of the first range every place it occurs in the second sequence (an upper bound on its loop)."""

    def __init__(self, a: Sequence[str], b: Sequence[str], max_work: int, deadline: Deadline | None) -> None:
        super().__init__(None, a, b)
        places: dict[str, list[int]] = vars(self)["b2j"]  # where each line of b is, popular lines left out
        self._occurring = [0, *accumulate(len(places.get(line, ())) for line in a)]
        self._sizes = len(a), len(b)
        self._work_left = max_work
        self._deadline = deadline

    def find_longest_match(self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None):  # type: ignore[no-untyped-def]
        ahi = self._sizes[0] if ahi is None else ahi
        bhi = self._sizes[1] if bhi is None else bhi
        self._work_left -= (ahi - alo) + (bhi - blo) + self._occurring[ahi] - self._occurring[alo]
        if self._work_left < 0 or (self._deadline is not None and self._deadline.passed()):
            raise _TooMuchWork()
        return super().find_longest_match(alo, ahi, blo, bhi)


def unified_diff(
    old: str,
    new: str,
    *,
    before: str,
    after: str,
    context: int = 3,
    deadline: Deadline | None = None,
    max_work: int = DIFF_WORK,
) -> str:
    """The unified diff from ``old`` to ``new`` (``---``/``+++`` labelled ``before``/``after``); "" if equal.

    Past ``max_work`` or ``deadline``, :func:`too_large_summary` instead: one line,
    never starting with ``---``.
    """
    old_lines = [line.rstrip("\r\n") for line in split_lines(old)]
    new_lines = [line.rstrip("\r\n") for line in split_lines(new)]
    if old_lines == new_lines:
        return ""
    try:
        groups = list(_BoundedMatcher(old_lines, new_lines, max_work, deadline).get_grouped_opcodes(context))
    except _TooMuchWork:
        return too_large_summary(old_lines, new_lines)
    lines = [f"--- {before}", f"+++ {after}"] if groups else []
    for group in groups:  # what difflib.unified_diff writes, from the opcodes it would use
        first, last = group[0], group[-1]
        lines.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in old_lines[i1:i2]]
                continue
            if tag in ("replace", "delete"):
                lines += ["-" + line for line in old_lines[i1:i2]]
            if tag in ("replace", "insert"):
                lines += ["+" + line for line in new_lines[j1:j2]]
    return "\n".join(lines)


def _range(start: int, stop: int) -> str:
    """A hunk header's range, as difflib writes it: ``3`` for one line, ``3,4`` for more, ``2,0`` for none."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start if not length else start + 1},{length}"


def too_large_summary(old_lines: Sequence[str], new_lines: Sequence[str]) -> str:
    """What a diff too costly to compute says instead: how many lines changed, counted in linear time.

    The count is of lines removed or added, whichever is more, as multisets (a line that only moved is
    not counted); a change that only reorders lines counts the lines between the first and last moved one.
    """
    old_count, new_count = Counter(old_lines), Counter(new_lines)
    changed = max(sum((old_count - new_count).values()), sum((new_count - old_count).values()))
    if not changed:
        changed = _reordered(old_lines, new_lines)
    return f"{changed:,} line{'s' if changed != 1 else ''} changed; diff too large to show — read_note to check"


def _reordered(old_lines: Sequence[str], new_lines: Sequence[str]) -> int:
    """Lines between the first and the last that differ, by position (same lines, another order)."""
    first = next((i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)) if a != b), len(old_lines))
    last = next(
        (i for i, (a, b) in enumerate(zip(reversed(old_lines), reversed(new_lines), strict=False)) if a != b),
        len(old_lines),
    )
    return max(len(old_lines) - first - last, 0)


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
