"""Find and replace across note texts (text/replace.py): matching rules, group references, refusals, previews."""

from __future__ import annotations

import random
import threading
import time

import pytest
import regex

from teamvault_mcp.errors import EditFailedError, ResultTooLargeError, ToolInputError
from teamvault_mcp.text.deadlines import Deadline
from teamvault_mcp.text.markdown import split_lines
from teamvault_mcp.text.replace import (
    CHANGE_CHARS,
    CONTEXT_CHARS,
    Match,
    Replacer,
    compact_diff,
    find_matches,
    preview,
    replace_all,
)
from teamvault_mcp.text.search import REGEX_LINE_SECONDS, TimeUp

# (text, find, replace, regex, case_sensitive, expected text, expected count)
REPLACED = {
    "literal, every occurrence": ("Acme and Acme.", "Acme", "Globex", False, True, "Globex and Globex.", 2),
    "literal means literal: . and $ are characters": ("a.b axb $1", "a.b", "$1", False, True, "$1 axb $1", 1),
    "case-sensitive by default: other cases stay": ("Acme ACME acme", "Acme", "X", False, True, "X ACME acme", 1),
    "case-insensitive: any case": ("Acme ACME acme", "acme", "X", False, False, "X X X", 3),
    "case-insensitive, one letter for one: ß is not SS": (
        "Straße STRASSE",
        "strasse",
        "W",
        False,
        False,
        "Straße W",
        1,
    ),
    "case-insensitive keeps accents apart": ("Café cafe CAFE", "cafe", "bar", False, False, "Café bar bar", 2),
    "cyrillic cases": ("Ёлка ёлка ЁЛКА", "ёлка", "ель", False, False, "ель ель ель", 3),
    "no match: the text as it was": ("nothing here", "Acme", "X", False, True, "nothing here", 0),
    "a literal line break matches CRLF, and the replacement takes the note's ending": (
        "one\r\ntwo\r\nthree\r\n",
        "one\ntwo",
        "1\n2",
        False,
        True,
        "1\r\n2\r\nthree\r\n",
        1,
    ),
    "a literal line break matches CR": ("a\rb\r", "a\nb", "ab", False, True, "ab\r", 1),
    "a line break in the replacement, in a CRLF note": ("a; b\r\n", "; ", "\n", False, True, "a\r\nb\r\n", 1),
    "matches do not overlap": ("aaaa", "aa", "b", False, True, "bb", 2),
    "replacing with the same text counts the matches": ("Acme", "Acme", "Acme", False, True, "Acme", 1),
    "regex: groups by number": (
        "on 2024-05-02 and 2023-12-31",
        r"(\d{4})-(\d\d)-(\d\d)",
        "$3.$2.$1",
        True,
        True,
        "on 02.05.2024 and 31.12.2023",
        2,
    ),
    "regex: named groups, the whole match and a literal $": (
        "cost 5",
        r"(?P<n>\d+)",
        "$$${n} ($0)",
        True,
        True,
        "cost $5 (5)",
        1,
    ),
    "regex: $12 is group 1 and a 2 when there is no group 12; ${1}2 says so outright": (
        "x",
        r"(x)",
        "$12 ${1}2",
        True,
        True,
        "x2 x2",
        1,
    ),
    "regex: a $ before anything else is a $": ("x", r"x", "$ and $x", True, True, "$ and $x", 1),
    "regex: backslashes in the replacement are literal (LaTeX)": ("a", "a", r"\alpha\\", True, True, r"\alpha\\", 1),
    "regex: a group that did not take part is empty": ("b", r"(a)?b", "[$1]", True, True, "[]", 1),
    "regex: ^ is each line's start": ("- a\n- b\r\n- c", r"^- ", "* ", True, True, "* a\n* b\r\n* c", 3),
    "regex: $ is each line's end, before a CRLF": ("a  \r\nb \r\n", r"[ \t]+$", "", True, True, "a\r\nb\r\n", 2),
    "regex: \\s+$ never eats the line ending": ("a  \r\nb\n", r"\s+$", "", True, True, "a\r\nb\n", 1),
    "regex: a match never spans lines": ("a x\ny b", r"a.*b", "!", True, True, "a x\ny b", 0),
    "regex: case-insensitive": ("TODO todo ToDo", r"to\w+", "done", True, False, "done done done", 3),
    "regex: (?i) in the pattern wins": ("TODO", r"(?i)todo", "done", True, True, "done", 1),
    "regex: past 1,000 characters of a line too": ("a" * 1500 + "Acme", r"Ac\w+", "X", True, True, "a" * 1500 + "X", 1),
}


@pytest.mark.parametrize(
    ("text", "find", "replace", "regex", "case_sensitive", "expected", "count"),
    list(REPLACED.values()),
    ids=list(REPLACED),
)
def test_replace_all(
    text: str, find: str, replace: str, regex: bool, case_sensitive: bool, expected: str, count: int
) -> None:
    assert replace_all(text, find, replace, regex=regex, case_sensitive=case_sensitive) == (expected, count)
    assert len(find_matches(text, find, regex=regex, case_sensitive=case_sensitive)) == count


def test_literal_and_case_sensitive_are_the_defaults() -> None:
    assert replace_all("A.c a.c", "a.c", "x") == ("A.c x", 1)


# (find, replace, regex, the error says)
REFUSED = {
    "an empty find": ("", "x", False, "find is empty"),
    "an empty pattern": ("", "x", True, "find is empty"),
    "a pattern that matches empty text: x*": ("x*", "y", True, "can match empty text"),
    "a pattern that matches empty text: ^": ("^", "> ", True, "find ^(.) replace > $1"),
    "a pattern that matches empty text: \\b": (r"\b", "|", True, "can match empty text"),
    "a pattern that matches empty text: a lookahead": ("(?=a)", "x", True, "can match empty text"),
    "a pattern that matches empty text: an optional": ("a?", "x", True, "x+ instead of x*"),
    "a line break in a pattern": (r"end\n", "x", True, "a regex match stays within one line"),
    "a line break in a pattern's alternative": ("(ab|\r)", "x", True, "use regex=false with the line break"),
    "a nested quantifier": ("(a+)+", "x", True, "The regex is refused: a quantifier inside a quantified group"),
    "not a regex": ("(a", "x", True, "The regex is refused: not a valid regular expression"),
    "a Python group reference": ("(a)", r"\1", True, r"'\\1', a Python-style group reference; write groups as $1"),
    "a Python named reference": ("(?P<n>a)", r"\g<n>", True, "Python-style group reference"),
    "a group the pattern lacks": ("(a)", "$2", True, "refers to $2, but the pattern has 1 group. Write $$"),
    "a group reference without groups": ("a", "$1", True, "the pattern has no groups"),
    "a name the pattern lacks": ("(?P<x>a)", "${y}", True, "refers to ${y}, but the pattern has 1 group (named: x)"),
    "$& of JavaScript": ("a", "[$&]", True, "write $0 for the whole match"),
}


@pytest.mark.parametrize(("find", "replace", "regex", "says"), list(REFUSED.values()), ids=list(REFUSED))
def test_refused(find: str, replace: str, regex: bool, says: str) -> None:
    with pytest.raises(ToolInputError) as caught:
        Replacer(find, replace, regex=regex)
    assert says in str(caught.value)


def test_a_python_reference_is_text_in_literal_mode() -> None:
    assert replace_all("a", "a", r"\1 $1") == (r"\1 $1", 1)


def test_case_insensitive_matching_ends_on_patterns_that_full_case_folding_loops_on() -> None:
    # The regex package (2026.11.19) never returns from these with full case folding (IGNORECASE | FULLCASE).
    done = threading.Event()

    def run() -> None:
        Replacer(r".?\S*ss", regex=True, case_sensitive=False).count("ßa")
        Replacer(r"\w{1,3}ssB*", regex=True, case_sensitive=False).count("aßa\naSSBB")
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(60), "a case-insensitive match did not end within 60 s (a loop, or the machine is too slow)"


def test_matches_say_where_they_are() -> None:
    text = "first Acme\r\nthen\r\n  Acme and Acme"
    assert find_matches(text, "Acme") == [
        Match(6, 10, 1, 7, "Acme"),
        Match(20, 24, 3, 3, "Acme"),
        Match(29, 33, 3, 12, "Acme"),
    ]
    assert find_matches(text, "acme", regex=True, case_sensitive=False) == find_matches(text, "Acme")
    assert find_matches("x\ny\nz", "y\nz") == [Match(2, 5, 2, 1, "y\nz")]  # a literal match across lines


def test_a_regex_line_that_takes_too_long_fails_its_note_rather_than_being_skipped() -> None:
    # In the safe subset (two unbounded repeats) but cubic: 20,000 word characters are hours of work on
    # any machine, so the per-line CPU limit always ends it.
    slow = "a" * 20_000
    replacer = Replacer(r"\w+(?=\w*x)", "y", regex=True)
    with pytest.raises(EditFailedError) as caught:
        replacer.apply(f"fine\n{slow}\n")
    assert f"more than {REGEX_LINE_SECONDS:g} s of CPU time on line 2 (20,000 characters)" in str(caught.value)
    assert "nothing was replaced in this note" in str(caught.value)


def test_a_regex_replace_past_its_deadline_raises_time_up() -> None:
    replacer = Replacer("a+", "b", regex=True)
    with pytest.raises(TimeUp):
        replacer.apply("a\n" * 10, deadline=Deadline.after(-1, time.monotonic))


def test_one_replacer_serves_many_notes() -> None:
    replacer = Replacer("old", "new", case_sensitive=False)
    assert [replacer.apply(text) for text in ("old", "OLD\r\nold", "none")] == [
        ("new", 1),
        ("new\r\nnew", 2),
        ("none", 0),
    ]


# -- previews ------------------------------------------------------------------------------------------------


def test_a_preview_shows_only_the_changed_lines_cut_around_the_change() -> None:
    long_line = "intro " * 20 + "the Acme contract " + "tail " * 20
    old = f"# Title\nuntouched\n{long_line}\nmore\nAcme\n"
    new, count = replace_all(old, "Acme", "Globex")
    shown = preview(old, new, count)
    assert shown.count == 2
    assert shown.diff.split("\n") == [
        "@@ -3 +3 @@",
        "-…tro intro intro the Acme contract tail tail …",
        "+…tro intro intro the Globex contract tail tail …",
        "@@ -5 +5 @@",
        "-Acme",
        "+Globex",
    ]
    assert shown.as_json() == {"matches": 2, "diff": shown.diff}


def test_a_preview_pairs_each_removed_line_with_what_it_became() -> None:
    old = "a Acme\nb Acme\n"
    new, _ = replace_all(old, "Acme", "X")
    assert compact_diff(old, new) == "@@ -1,2 +1,2 @@\n-a Acme\n+a X\n-b Acme\n+b X"


def test_a_long_change_is_cut_in_its_middle() -> None:
    half = "y" * (CHANGE_CHARS // 2)
    assert compact_diff("x\n", "y" * 500 + "\n").split("\n") == ["@@ -1 +1 @@", "-x", f"+{half}…{half}"]
    changed = compact_diff("k " * 100 + "a" + "k " * 100, "k " * 100 + "b" * 300 + "k " * 100).split("\n")
    context = "k " * (CONTEXT_CHARS // 2)
    assert changed[2] == f"+…{context}{'b' * (CHANGE_CHARS // 2)}…{'b' * (CHANGE_CHARS // 2)}{context}…"
    assert max(len(line) for line in changed) == 1 + 2 * CONTEXT_CHARS + CHANGE_CHARS + 3  # the three …


def test_a_preview_is_capped_with_a_count_of_the_rest() -> None:
    old = "".join(f"line {n} Acme\n" for n in range(50))
    new, count = replace_all(old, "Acme", "X")
    shown = preview(old, new, count, max_lines=8)
    lines = shown.diff.split("\n")
    assert count == 50 and len(lines) == 9
    assert lines[-1] == "… 93 more diff lines"  # one hunk of 50 removed and 50 added lines, and its header
    assert preview(old, new, count).diff.split("\n")[-1] == "… 95 more diff lines"  # PREVIEW_DIFF_LINES by default


def test_no_change_no_diff() -> None:
    assert compact_diff("same\n", "same\n") == ""


# -- regex mode finds what a plain line-by-line match finds, whatever shortcut it takes --------------------------

PATTERNS = [
    r"\bAcme\b",
    r"^- \w+",
    r"\w+$",
    r"(?<=x)y",
    r"(?<!\s)foo",
    r"(?<![a-z])foo",
    r"\Afoo",
    r"foo\Z",
    r"[^z]*+y",
    r"[^a]++$",
    r"(?>[^a]+)$",
    r"(?>a|ab)c",
    r"\s\w",
    r"[^a]+",
    r"a[^b]*b",
    r"(?m)^x",
    r"(?s)x.",
    r"\W+",
    r"\Bo",
    r"o\b",
    r"(?i)acme",
    r"x(?=\s*$)",
]
PIECES = ["a", "b", "x", "y", "z", "foo", "Acme", "ACME", "-", " ", "\t", "\n", "\r\n", "\r", "- "]


def line_by_line(text: str, pattern: str) -> list[tuple[int, int]]:
    compiled = regex.compile(pattern, regex.VERSION0)
    found: list[tuple[int, int]] = []
    offset = 0
    for line in split_lines(text):
        found += [(offset + m.start(), offset + m.end()) for m in compiled.finditer(line.rstrip("\r\n"))]
        offset += len(line)
    return found


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_matches_are_those_of_each_line_on_its_own(pattern: str) -> None:
    rng = random.Random(pattern)
    replacer = Replacer(pattern, "_", regex=True)
    for _ in range(300):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30)))
        expected = line_by_line(text, pattern)
        assert [(m.start, m.end) for m in replacer.matches(text)] == expected, repr(text)
        assert replacer.count(text) == len(expected)


def test_a_pattern_slow_across_lines_is_still_matched_line_by_line() -> None:
    # [^x]*y scans to the note's end from every position of a note without a y: quadratic in the whole note
    # (past its CPU allowance on any machine), linear in each short line.
    replacer = Replacer("[^x]*y", "_", regex=True)
    note = "a" * 100 + "\n"
    for lines in (2_000, 2_000, 10):
        assert replacer.count(note * lines) == 0
        assert replacer.count(note * lines + "ay\n") == 1


# -- the size of a result, counted before it is built ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "find", "replace", "regex", "case_sensitive"),
    [
        ("Acme and Acme.\n", "Acme", "Globex", False, True),
        ("Ёлка и ЁЛКА\r\nёлка\r\n", "ёлка", "Tännchen\n", False, False),
        ("a-1 b-22 c-333\nd-4\n", r"(\w)-(\d+)", "$2$2:$1 ñ $0", True, True),
        ("café\rcafé\r", "(?P<w>caf)(é)", "${w}${2}\n€", True, True),
        ("x" * 1_000, "(x)", "$1" * 50, True, True),
        ("nothing here\n", "absent", "whatever", False, True),
    ],
)
def test_measure_is_the_utf8_size_of_what_apply_builds(
    text: str, find: str, replace: str, regex: bool, case_sensitive: bool
) -> None:
    replacer = Replacer(find, replace, regex=regex, case_sensitive=case_sensitive)
    new, count = replacer.apply(text)
    assert replacer.measure(text) == (count, len(new.encode("utf-8")))


def test_apply_refuses_a_result_past_max_bytes_before_building_it() -> None:
    replacer = Replacer("x", "y" * 100_000)
    assert replacer.measure("x" * 100_000) == (100_000, 10_000_000_000)
    with pytest.raises(ResultTooLargeError) as caught:
        replacer.apply("x" * 100_000, max_bytes=5 * 1024 * 1024, path="big.md")
    assert (caught.value.path, caught.value.size, caught.value.limit) == ("big.md", 10_000_000_000, 5 * 1024 * 1024)
    assert str(caught.value).startswith("The replacement (100,000 matches) would make big.md 10,000,000,000 bytes")
    assert replacer.apply("x" * 10, max_bytes=1_000_000) == ("y" * 1_000_000, 10)  # exactly the limit: made
