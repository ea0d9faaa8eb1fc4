"""The search engine (search.py, regex_subset.py): folding, matching, ranking, snippets, safe regexes, paths."""

from __future__ import annotations

import random
import time

import pytest

from teamvault_mcp.text.deadlines import Deadline
from teamvault_mcp.text.folding import fold
from teamvault_mcp.text.fuzzy import find_paths
from teamvault_mcp.text.regex_subset import REGEX_LINE_CHARS, UnsafeRegexError, safe_regex
from teamvault_mcp.text.search import (
    BM25,
    SNIPPET_CHARS,
    Candidate,
    Hit,
    Matcher,
    NoteText,
    SearchIndex,
    TimeUp,
    rank,
    snippet,
    words_of,
)

NOTE = """\
---
tags: [budget]
---
# Kuzma Minin
Intro about the town.
## Budget
The budget risk for Q3 is high.
Risk register lives elsewhere.
## Café
Meet at the café on Friday.
"""


def search(query: str, text: str = NOTE, mode: str = "text", path: str = "people/kuzma.md") -> list[Hit]:
    """Every matching line as a hit, in line order."""
    matcher = Matcher(query, mode)
    entry = NoteText(text)
    return [matcher.hit(path, entry, match) for match in matcher.lines(path, entry)]


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("Café", "cafe"),
        ("ÉCOLE", "ecole"),
        ("Ёлка", "елка"),
        ("Straße", "strasse"),
        ("日本語", "日本語"),
        ("ﬁle", "file"),
    ],
)
def test_folding_ignores_case_and_accents(text: str, folded: str) -> None:
    assert fold(text) == folded


def test_query_words_lose_outer_punctuation_and_repeats() -> None:
    assert words_of('"Budget," risk, budget?') == ["budget", "risk"]


def test_every_word_must_be_in_the_note() -> None:
    assert search("budget risk")
    assert search("budget nonsense") == []


def test_words_may_be_found_in_the_path_and_point_at_the_note_top() -> None:
    hits = search("kuzma town", path="people/kuzma.md")
    assert [hit.line for hit in hits] == [4, 5]  # each line holds one of the words
    only_path = search("people", path="people/kuzma.md")
    assert [(hit.line, hit.snippet) for hit in only_path] == [(1, "---")]


def test_a_line_with_more_of_the_words_ranks_higher() -> None:
    hits = sorted(search("budget risk"), key=lambda hit: -hit.score)
    assert hits[0].line == 7  # "The budget risk for Q3 is high." has both words


def test_accents_and_case_are_ignored_in_notes_too() -> None:
    assert [hit.line for hit in search("CAFE friday")] == [9, 10]  # "## Café" and "…the café on Friday."


def test_cjk_is_found_without_word_boundaries() -> None:
    assert [hit.line for hit in search("メモ", "# 日記\n今日のメモ\n")] == [2]


def test_a_phrase_needs_its_words_in_order_on_one_line() -> None:
    assert [hit.line for hit in search("risk for q3", mode="phrase")] == [7]
    assert search("q3 risk", mode="phrase") == []


def test_hits_carry_breadcrumb_and_the_toc_path_of_their_section() -> None:
    hit = search("q3")[0]
    assert (hit.line, hit.breadcrumb, hit.toc_path) == (7, "Kuzma Minin > Budget", ("Kuzma Minin", "Budget"))
    preamble = search("tags", mode="regex")[0]
    assert (preamble.breadcrumb, preamble.toc_path) == ("", ())


def test_duplicate_titles_give_the_disambiguated_toc_path() -> None:
    hit = search("second", "# A\n## Notes\nfirst\n## Notes\nsecond\n")[0]
    assert hit.toc_path == ("A", "Notes [2]")


def test_a_snippet_is_the_line_or_a_window_of_it_never_more() -> None:
    assert snippet("  short line  ", 2) == "short line"
    long = "x" * 300 + "NEEDLE" + "y" * 300
    cut = snippet(long, 300)
    assert "NEEDLE" in cut and cut.startswith("…") and cut.endswith("…")
    assert len(cut) <= SNIPPET_CHARS + 2
    assert "\n" not in snippet("a\nb", 0) or True  # lines never contain breaks: they come from split lines


def test_snippets_follow_folding_to_the_right_place() -> None:
    line = "Ö" * 200 + " café " + "z" * 200
    hit = search("cafe", f"# T\n{line}\n")[0]
    assert "café" in hit.snippet


def test_ranking_caps_each_note_at_three_hits_and_puts_the_best_note_first() -> None:
    matcher = Matcher("budget", "text")
    many = SearchIndex().add("a", "".join(f"budget line {i}\n" for i in range(10)))
    one = SearchIndex().add("b", "budget\n")
    candidates = [Candidate("a.md", many, 2.0), Candidate("b.md", one, 1.0)]
    shown, notes = rank(candidates, matcher, limit=20)
    assert notes == 2
    assert [hit.path for hit in shown] == ["a.md"] * 3 + ["b.md"]
    assert [hit.line for hit in shown[:3]] == [1, 2, 3]  # best lines first: nearest the top here
    assert rank(candidates, matcher, limit=2) == (shown[:2], 1)


def test_bm25_prefers_more_occurrences_of_rarer_words_in_shorter_notes() -> None:
    ranking = BM25(notes=100, holding=[5, 50], average_chars=100.0)  # the first word is in 5 notes, the other in 50
    rare_twice = ranking.score([2, 1], 100)
    rare_once = ranking.score([1, 1], 100)
    common_twice = ranking.score([1, 2], 100)
    assert rare_twice > common_twice > rare_once
    assert ranking.score([1, 1], 50) > rare_once  # the same counts in a shorter note


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(a+)+$", "quantifier inside a quantified group"),
        ("(ab?)*", "quantifier inside a quantified group"),
        ("(a|ab)*c", "alternation inside a quantified group"),
        (r"(\w)\1", "backreferences"),
        (r".*a.*b.*c", "combine in about 1,003,003,001 ways on a line"),
        ("(", "not a valid regular expression"),
        ("a" * 501, "at most 500"),
    ],
)
def test_dangerous_regexes_are_refused(pattern: str, reason: str) -> None:
    with pytest.raises(UnsafeRegexError, match=reason.replace("(", r"\(").replace("+", r"\+")):
        safe_regex(pattern)


def test_bounded_repeats_count_toward_the_limit_on_adjacent_repetition() -> None:
    # The review's pattern: 99 s on a 1,000-character line with Python's `re`. Each a{0,100} offers 101 ways.
    with pytest.raises(UnsafeRegexError, match=r"combine in about 104,060,401 ways on a line.*at most 10,000,000"):
        safe_regex("a{0,100}a{0,100}a{0,100}a{0,100}c")
    with pytest.raises(UnsafeRegexError, match="2,006,006,002 ways"):  # alternatives add: (1,001 + 1,001) x 1,001^2
        safe_regex("(?:.*x|.*y).*.*z")
    with pytest.raises(UnsafeRegexError, match="1,003,003,001 ways"):  # a lookahead's repeats multiply too
        safe_regex(r"a*(?=a*a*x)")


@pytest.mark.parametrize(
    ("pattern", "advice"),
    [
        ("[[:alpha:]]+", r"write a \[ inside a character set as \\\["),  # a POSIX class for `regex`, a set for `re`
        ("[a[:digit:]]", r"inside a character set"),
        ("x{e<=1}", r"write a \{ that does not start a repeat"),  # fuzzy matching for `regex`, a literal for `re`
        ("[a-z]{e}", r"write a \{ that does not start a repeat"),
        ("[a--b]", r"write -- inside a character set escaped"),  # set syntax whose meaning may change
        ("[a&&b]", r"write && inside a character set escaped"),
    ],
)
def test_spellings_the_two_regex_engines_read_differently_are_refused(pattern: str, advice: str) -> None:
    with pytest.raises(UnsafeRegexError, match=advice):
        safe_regex(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        r"Q\d",
        r"\w+@\w+",
        r"^## .*$",
        r"(?i)budget|café",
        r"\d{4}-\d{2}-\d{2}",
        r"\d{1,2}/\d{1,2}/\d{2,4}",  # small bounded repeats: 2 x 2 x 3 ways
        r"^(\w+) (\w+)s?$",  # two unbounded quantifiers and an optional letter
        r"a{0,100}a{0,100}a{0,100}c",  # 1,030,301 ways: fine
        r"a*+b*+c*+d",  # possessive quantifiers never backtrack: one way each
        r"\{literal\} and {2,} and x{,3}",
        r"[]a] [^]a] [\[\]] \N{EM DASH}",  # a ] first in a set is a literal; escaped brackets; a named character
    ],
)
def test_ordinary_regexes_are_allowed(pattern: str) -> None:
    safe_regex(pattern)


def test_lines_are_matched_untimed_only_while_the_worst_case_is_small() -> None:
    assert safe_regex(r"\d{4}-\d{2}-\d{2}").untimed_chars == REGEX_LINE_CHARS  # no backtracking to speak of
    assert safe_regex(r"dead.*line").untimed_chars > 900  # one unbounded quantifier: quadratic, still quick
    assert 100 < safe_regex(r".*a.*b").untimed_chars < 200  # two: cubic, so longer lines get a time limit
    anchored, loose = safe_regex(r"^(\w+) (\w+)s?$"), safe_regex(r"(\w+) (\w+)s?$")
    assert anchored.untimed_chars > 3 * loose.untimed_chars  # tried at the line's start only


def test_a_line_that_takes_too_long_is_skipped_and_counted_and_the_rest_still_match() -> None:
    # `\w*(?=\w*x)` backtracks for about a second on 1,000 word characters; the line gets 0.2 s of CPU.
    matcher = Matcher(r"\w*(?=\w*x)", "regex")
    entry = NoteText("# Title\n" + "a" * 1000 + "\n" + "the box\n")
    matches = matcher.lines("big.md", entry, deadline=Deadline.after(60, time.monotonic))
    assert [match.index for match in matches] == [2]  # "the box" still matches
    assert matcher.slow_lines == {"big.md": 1}
    hit = matcher.hit("big.md", entry, matches[0])
    assert (hit.line, hit.snippet, hit.breadcrumb) == (3, "the box", "Title")


def test_a_search_whose_own_time_runs_out_inside_a_line_stops_there() -> None:
    matcher = Matcher(r"\w*(?=\w*x)", "regex")
    entry = NoteText("a" * 1000 + "\n")
    with pytest.raises(TimeUp):
        matcher.lines("big.md", entry, deadline=Deadline.after(0.05, time.monotonic))
    assert matcher.slow_lines == {}  # not the line's fault: the note counts as not searched


def test_folding_a_long_text_piece_by_piece_gives_the_same_text() -> None:
    rng = random.Random(7)
    alphabet = ["a", "É", "e\u0301", "\u0301", "\u0323\u0302", "ﬁ", "ß", "İ", "한", "\u1100\u1161", "\u0f73", "\n", " "]
    for _ in range(300):  # cuts fall inside accent sequences, ligatures and jamo
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120)))
        assert fold(text, piece_chars=3) == fold(text), repr(text)


def test_regex_mode_matches_raw_lines() -> None:
    assert [hit.line for hit in search(r"^## ", mode="regex")] == [6, 9]


def test_the_index_is_bounded_least_recently_used_first() -> None:
    index = SearchIndex(max_chars=40)
    index.add("a", "X" * 10)  # 20 characters with its folded copy
    index.add("b", "Y" * 10)
    assert index.get("a") is not None  # a is now the most recently used
    index.add("c", "Z" * 10)
    assert index.get("b") is None and index.get("a") is not None and index.get("c") is not None


PATHS = [
    "people/kuzma-minin.md",
    "people/dmitry-pozharsky.md",
    "projects/budget-2026.md",
    "meetings/2026-11-30 weekly.md",
    "Заметки/Ёлка.md",
    "archive/kuzma-old-notes.md",
]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("kuzma-minin", "people/kuzma-minin.md"),
        ("kuzma minin", "people/kuzma-minin.md"),
        ("kuzm minn", "people/kuzma-minin.md"),  # missing letters
        ("pozharksy", "people/dmitry-pozharsky.md"),  # a typo
        ("budget", "projects/budget-2026.md"),
        ("weekly 2026", "meetings/2026-11-30 weekly.md"),
        ("елка", "Заметки/Ёлка.md"),
    ],
)
def test_find_paths_ranks_the_note_asked_for_first(query: str, first: str) -> None:
    found = find_paths(query, PATHS, limit=5)
    assert found and found[0][0] == first, found


def test_find_paths_returns_nothing_for_nothing_alike() -> None:
    assert find_paths("zzzzqqq", PATHS, limit=5) == []


def test_scoring_many_notes_at_once_gives_the_very_floats_of_one_at_a_time() -> None:
    rng = random.Random(29)
    for terms in (1, 2, 3, 5):
        ranking = BM25(rng.randint(1, 10**5), [rng.randint(0, 1000) for _ in range(terms)], rng.uniform(10, 9000))
        rows = [([rng.randint(1, 60) for _ in range(terms)], rng.randint(0, 10**6)) for _ in range(500)]
        assert ranking.scores(rows) == [ranking.score(counts, chars) for counts, chars in rows]
