"""Unified diffs (text/diff.py): difflib's diff, bounded by matcher work and a deadline, else a count of lines."""

from __future__ import annotations

import difflib
import random
import time

from teamvault_mcp.text.deadlines import Deadline
from teamvault_mcp.text.diff import DIFF_WORK, unified_diff

#: 40,000 lines, every other one changed by the edit: difflib takes over a minute on it (bench/bounds_bench.py).
OLD = "".join(f"line {number} {'even' if number % 2 == 0 else 'odd'} of the log\n" for number in range(40_000))
NEW = OLD.replace("even", "EVEN")


def difflib_diff(old: list[str], new: list[str], context: int) -> str:
    return "\n".join(difflib.unified_diff(old, new, "a", "b", n=context, lineterm=""))


def test_a_bounded_diff_is_difflibs_unified_diff_line_for_line() -> None:
    chance = random.Random(27)
    for _ in range(400):
        old = [chance.choice("abcde") for _ in range(chance.randrange(0, 250))]
        new = list(old)
        for _ in range(chance.randrange(0, 25)):
            where = chance.randrange(len(new) + 1)
            kind = chance.randrange(3)
            if kind == 0 and where < len(new):
                del new[where]
            elif kind == 1:
                new.insert(where, chance.choice("abcdef"))
            elif where < len(new):
                new[where] = chance.choice("xyz")
        context = chance.randrange(0, 4)
        ours = unified_diff("\n".join(old), "\n".join(new), before="a", after="b", context=context)
        assert ours == difflib_diff(old, new, context), (old, new, context)


def test_a_diff_past_its_work_bound_is_one_line_counting_the_changed_lines() -> None:
    started = time.process_time()
    said = unified_diff(OLD, NEW, before="a/log.md", after="b/log.md")
    assert said == "20,000 lines changed; diff too large to show — read_note to check"
    # the bound is a count, not a clock: this only says the count stopped it long before difflib would have
    assert time.process_time() - started < 30, "too slow: the work bound did not stop the matcher"


def test_a_one_line_change_in_a_long_note_is_diffed_in_full_well_within_the_bound() -> None:
    changed = OLD.replace("line 20000 even", "line 20000 changed")
    diff = unified_diff(OLD, changed, before="a", after="b")
    assert "\n-line 20000 even of the log\n+line 20000 changed of the log\n" in diff
    assert diff == difflib_diff(OLD.splitlines(), changed.splitlines(), 3)
    assert unified_diff(OLD, changed, before="a", after="b", max_work=DIFF_WORK // 20) == diff


def test_a_diff_past_its_deadline_is_the_count_too() -> None:
    said = unified_diff("a\nb\nc\n", "a\nB\nc\nd\n", before="a", after="b", deadline=Deadline.after(-1, time.monotonic))
    assert said == "2 lines changed; diff too large to show — read_note to check"


def test_the_count_of_a_change_that_only_reorders_lines_is_the_lines_between_the_first_and_last_moved() -> None:
    said = unified_diff("a\nb\nc\nd\ne\n", "a\nd\nc\nb\ne\n", before="a", after="b", max_work=0)
    assert said == "3 lines changed; diff too large to show — read_note to check"


def test_equal_texts_have_an_empty_diff_whatever_the_bound() -> None:
    assert unified_diff(OLD, OLD, before="a", after="b", max_work=0) == ""
