"""Three-way merge of note texts, line by line: two sets of changes to one base, in one text. Pure.

Used when a colleague's write slipped in between our read and our write and we have
replaced their version: their change (base → theirs) is merged into the note as it is
now (base → ours), so nothing of theirs is lost. The rules are diff3's:

- a stretch changed on one side only takes that side's lines;
- the same change on both sides is taken once;
- lines inserted at the same place on both sides (and nothing deleted there) are
  both kept, theirs first; a line both sides inserted is kept once — the usual case
  of two people adding a line under the same heading;
- anything else that overlaps is a conflict: :func:`merge3` returns None and the
  caller decides (it never guesses which of two edits of one line to keep).

``additive=True`` is for changes that only add lines (appends, new list items) when
many writers collided at once: their versions were written over one another, so a
line missing from one of them was lost by accident, not deleted. The merge is then
ours, whole, plus every line theirs added to the base that ours does not have yet,
each placed after the line it follows in theirs: lines are only ever added, never
dropped, and never doubled. The price: a line a colleague changed or deleted in that
same moment stays beside (or instead of) their version of it — visible in the diff and
the history, and never a loss.

Lines keep their own endings. A text that does not end with a line break is merged
as if it did, and the result ends without one when neither side has one.
"""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher

from teamvault_mcp.text.markdown import split_lines

#: Texts with more lines than this are not merged (the matcher is quadratic at worst): a conflict.
MAX_MERGE_LINES = 50_000

_BREAKS = ("\n", "\r")


def merge3(base: str, ours: str, theirs: str, *, additive: bool = False) -> str | None:
    """``base`` with the changes of both ``ours`` and ``theirs``; None when they conflict."""
    open_ended = not ours.endswith(_BREAKS) and not theirs.endswith(_BREAKS)
    old, mine, other = (split_lines(_closed(text)) for text in (base, ours, theirs))
    if max(len(old), len(mine), len(other)) > MAX_MERGE_LINES:
        return None
    if additive:  # the lines theirs added that ours lacks, each placed once
        added = Counter(other) - Counter(old) - (Counter(mine) - Counter(old))
        return _ended(_weave(mine, other, added), open_ended)
    merged: list[str] = []
    at_old = at_mine = at_other = 0
    end = (len(old), len(old), len(mine), len(mine), len(other), len(other))
    for old_start, old_end, mine_start, mine_end, other_start, other_end in [*_stable(old, mine, other), end]:
        chunk = _resolve(old[at_old:old_start], mine[at_mine:mine_start], other[at_other:other_start])
        if chunk is None:
            return None
        merged += chunk
        merged += old[old_start:old_end]
        at_old, at_mine, at_other = old_end, mine_end, other_end
    return _ended(merged, open_ended)


def _ended(lines: list[str], open_ended: bool) -> str:
    text = "".join(lines)
    return text[:-1] if open_ended and text.endswith("\n") else text


def only_adds(before: str, after: str) -> bool:
    """Whether ``after`` is ``before`` with lines added (none removed or changed)."""
    return not Counter(split_lines(_closed(before))) - Counter(split_lines(_closed(after)))


def _closed(text: str) -> str:
    return text if not text or text.endswith(_BREAKS) else text + "\n"


def _stable(old: list[str], mine: list[str], other: list[str]) -> list[tuple[int, int, int, int, int, int]]:
    """Stretches of ``old`` kept unchanged by both sides: (old, mine, other) start and end of each."""
    with_mine = SequenceMatcher(None, old, mine, autojunk=False).get_matching_blocks()
    with_other = SequenceMatcher(None, old, other, autojunk=False).get_matching_blocks()
    stable = []
    i = j = 0
    while i < len(with_mine) and j < len(with_other):
        old_a, mine_a, size_a = with_mine[i]
        old_b, other_b, size_b = with_other[j]
        start, end = max(old_a, old_b), min(old_a + size_a, old_b + size_b)
        if start < end:
            stable.append(
                (
                    start,
                    end,
                    mine_a + start - old_a,
                    mine_a + end - old_a,
                    other_b + start - old_b,
                    other_b + end - old_b,
                )
            )
        if old_a + size_a < old_b + size_b:
            i += 1
        else:
            j += 1
    return stable


def _resolve(old: list[str], mine: list[str], other: list[str]) -> list[str] | None:
    """One unstable stretch: what the merge holds there, or None for a conflict."""
    if mine == other or other == old:
        return mine
    if mine == old:
        return other
    if old:
        return None
    return _weave(mine, other, Counter(other) - Counter(mine))  # both inserted here: theirs' lines first


def _weave(mine: list[str], other: list[str], budget: Counter[str]) -> list[str]:
    """``mine`` with lines of ``other`` that ``budget`` counts (and uses up), each after the line it follows there."""
    woven = list(mine)
    at = 0  # where the next line of `other` goes in `woven`
    for line in other:
        if budget[line] > 0:
            budget[line] -= 1
            woven.insert(at, line)
            at += 1
        elif line in woven[at:]:  # else a line of theirs that ours does not have and is not to be added
            at = woven.index(line, at) + 1
    return woven


def swap_additions(text: str, base: str, ours: str, theirs: str) -> str:
    """``text`` with the lines ``ours`` added to ``base`` taken out, and those ``theirs`` added put in.

    Puts a colleague's version back after ours was written over it, when both only
    added lines: whatever else the note holds now (others' lines) stays. Idempotent.
    """
    open_ended = not text.endswith(_BREAKS)
    old, mine, other = (split_lines(_closed(part)) for part in (base, ours, theirs))
    ours_added = Counter(mine) - Counter(old) - (Counter(other) - Counter(old))
    kept = []
    for line in split_lines(_closed(text)):
        if ours_added[line] > 0:
            ours_added[line] -= 1
            continue
        kept.append(line)
    added = Counter(other) - Counter(old) - (Counter(kept) - Counter(old))
    return _ended(_weave(kept, other, added), open_ended)


def newest_consistent(base: str, versions: list[str]) -> int:
    """Of ``versions`` written one after another on top of ``base``, the newest that holds every line the
    earlier ones added (by index). One that lacks them was written over them by someone who read an older
    text — a writer who lost the race, whose version must not be restored."""
    old = Counter(split_lines(_closed(base)))
    lines = [Counter(split_lines(_closed(text))) for text in versions]
    added = [have - old for have in lines]
    for index in range(len(versions) - 1, 0, -1):
        if all(not added[earlier] - lines[index] for earlier in range(index)):
            return index
    return 0
