"""The three-way merge of note texts: diff3's rules, with insertions at one place both kept."""

from __future__ import annotations

import pytest

from teamvault_mcp.text.merge import MAX_MERGE_LINES, merge3, newest_consistent, only_adds, swap_additions

BASE = "# Log\n- one\n- two\n\n# Notes\ntext\n"

CASES = [
    # (what the case is, base, ours, theirs, merged or None for a conflict)
    ("nothing changed", BASE, BASE, BASE, BASE),
    ("only ours changed", BASE, BASE.replace("text", "more text"), BASE, BASE.replace("text", "more text")),
    ("only theirs changed", BASE, BASE, BASE.replace("- two", "- 2"), BASE.replace("- two", "- 2")),
    (
        "changes far apart",
        BASE,
        BASE.replace("text", "TEXT"),
        BASE.replace("- one", "- ONE"),
        BASE.replace("text", "TEXT").replace("- one", "- ONE"),
    ),
    (
        "the same change on both sides, once",
        BASE,
        BASE.replace("two", "2"),
        BASE.replace("two", "2"),
        BASE.replace("two", "2"),
    ),
    (
        "two lines added under one heading: theirs first",
        BASE,
        BASE.replace("# Log\n", "# Log\n- mine\n"),
        BASE.replace("# Log\n", "# Log\n- theirs\n"),
        BASE.replace("# Log\n", "# Log\n- theirs\n- mine\n"),
    ),
    ("both appended at the end", "a\n", "a\nmine\n", "a\ntheirs\n", "a\ntheirs\nmine\n"),
    ("an insertion that holds the other's is taken alone", "a\n", "a\nx\ny\n", "a\nx\n", "a\nx\ny\n"),
    ("and the other way round", "a\n", "a\nx\n", "a\nw\nx\n", "a\nw\nx\n"),
    ("one line edited differently on each side", BASE, BASE.replace("two", "2"), BASE.replace("two", "II"), None),
    (
        "a line deleted on one side, edited on the other",
        BASE,
        BASE.replace("- two\n", ""),
        BASE.replace("two", "2"),
        None,
    ),
    ("a deletion on one side only", BASE, BASE.replace("- one\n", ""), BASE, BASE.replace("- one\n", "")),
    ("no final line break: appends still merge", "a\nb", "a\nb\nmine", "a\nb\ntheirs", "a\nb\ntheirs\nmine"),
    ("one side keeps a final break", "a", "a\nmine\n", "a\ntheirs", "a\ntheirs\nmine\n"),
    (
        "CRLF lines are kept as they are",
        "a\r\nb\r\n",
        "a\r\nb\r\nmine\r\n",
        "a\r\ntheirs\r\nb\r\n",
        "a\r\ntheirs\r\nb\r\nmine\r\n",
    ),
    ("empty base: both wrote a whole note", "", "mine\n", "theirs\n", "theirs\nmine\n"),
    ("a whole rewrite against a change", "a\nb\nc\n", "x\ny\nz\n", "a\nB\nc\n", None),
    ("a line both inserted at one place is kept once", "a\n", "a\nx\ny\n", "a\nw\nx\n", "a\nw\nx\ny\n"),
    ("both replaced one line differently", "h\n- 1\n", "h\n- 1\n- 2\n", "h\n- 3\n", None),
]

ADDITIVE = [
    (
        "theirs was written over a line ours keeps: their line joins",
        "h\n- 1\n",
        "h\n- 1\n- 2\n",
        "h\n- 3\n",
        "h\n- 3\n- 1\n- 2\n",
    ),
    (
        "a base line ours lacks is not brought back: its loss is not theirs",
        "h\n- 1\n",
        "h\n- 3\n",
        "h\n- 1\n- 2\n",
        "h\n- 2\n- 3\n",
    ),
    (
        "both lost a base line: only lines of one of them are kept",
        "h\n- 2\n",
        "h\n- 11\n",
        "h\n- 1\n",
        "h\n- 1\n- 11\n",
    ),
    (
        "no line twice, and a new line goes after the one it follows",
        "h\n",
        "h\n- 1\n- 2\n",
        "h\n- 2\n- 3\n",
        "h\n- 1\n- 2\n- 3\n",
    ),
    ("lines repeated on purpose stay repeated", "h\n", "h\n- [ ]\n", "h\n- [ ]\n- [ ]\n", "h\n- [ ]\n- [ ]\n"),
    (
        "a line theirs changed stays beside their version: never dropped",
        "a\nb\nc\n",
        "A\nb\nc\n",
        "a\nb\nC\n",
        "A\nb\nC\nc\n",
    ),
]


@pytest.mark.parametrize(("base", "ours", "theirs", "merged"), [case[1:] for case in CASES], ids=[c[0] for c in CASES])
def test_merge3_follows_diff3_with_insertions_at_one_place_kept(
    base: str, ours: str, theirs: str, merged: str | None
) -> None:
    assert merge3(base, ours, theirs) == merged


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "merged"), [case[1:] for case in ADDITIVE], ids=[c[0] for c in ADDITIVE]
)
def test_additive_merge3_only_ever_adds_lines(base: str, ours: str, theirs: str, merged: str) -> None:
    assert merge3(base, ours, theirs, additive=True) == merged


@pytest.mark.parametrize(
    ("before", "after", "adds"),
    [("a\n", "a\nb\n", True), ("a\nb\n", "a\n", False), ("a\n", "b\n", False), ("a", "a\nb", True), ("", "x", True)],
)
def test_only_adds_tells_appends_from_other_changes(before: str, after: str, adds: bool) -> None:
    assert only_adds(before, after) is adds


def test_merge3_of_16_appenders_keeps_every_line() -> None:
    """Each merge adds one colleague's line to a head that already holds others: all survive, none twice."""
    base = "# Log\n"
    head = base
    for number in range(16):
        theirs = f"{base}- entry {number}\n"
        head_with_it = merge3(base, head, theirs)
        assert head_with_it is not None
        head = head_with_it
    assert sorted(head.splitlines()[1:]) == sorted(f"- entry {n}" for n in range(16))


def test_merge3_refuses_texts_too_long_to_merge_safely() -> None:
    long = "x\n" * (MAX_MERGE_LINES + 1)
    assert merge3(long, long + "a\n", long + "b\n") is None


@pytest.mark.parametrize(
    ("text", "merged"),
    [
        ("h\n- mine\n", "h\n- theirs\n"),  # nobody else wrote: theirs, exactly
        ("h\n- other\n- mine\n", "h\n- theirs\n- other\n"),  # another writer's line stays
        ("h\n- theirs\n- other\n", "h\n- theirs\n- other\n"),  # done already: nothing changes
    ],
)
def test_swap_additions_puts_theirs_back_and_takes_ours_out_keeping_the_rest(text: str, merged: str) -> None:
    assert swap_additions(text, "h\n", "h\n- mine\n", "h\n- theirs\n") == merged


@pytest.mark.parametrize(
    ("versions", "newest"),
    [
        (["h\n- 1\n"], 0),
        (["h\n- 1\n", "h\n- 1\n- 2\n"], 1),  # built on the first
        (["h\n- 1\n", "h\n- 2\n"], 0),  # written over the first: a loser
        (["h\n- 1\n", "h\n- 1\n- r\n", "h\n- 2\n"], 1),
        (["h\n- 1\n", "h\n- 2\n", "h\n- 1\n- 2\n- 3\n"], 2),  # a repair that holds both
    ],
)
def test_newest_consistent_passes_over_versions_written_over_others(versions: list[str], newest: int) -> None:
    assert newest_consistent("h\n", versions) == newest
