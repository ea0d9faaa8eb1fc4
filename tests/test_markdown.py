"""Outline and section extraction over real-world markdown (markdown.py), table-driven."""

from __future__ import annotations

import random

import pytest

from teamvault_mcp.text.markdown import Document, Heading, MissingHeading, find_section, parse, split_lines


def outline(text: str) -> list[tuple[int, str, int, int]]:
    """Every heading in document order as (level, path, startLine, endLine)."""
    found: list[tuple[int, str, int, int]] = []

    def walk(headings: list[Heading]) -> None:
        for heading in headings:
            found.append((heading.level, " > ".join(heading.path), heading.start_line, heading.end_line))
            walk(heading.children)

    walk(parse(text).headings)
    return found


def section(text: str, *toc: str) -> str:
    document = parse(text)
    heading = find_section(document, list(toc))
    return document.text(heading.start_line, heading.end_line)


CASES = {
    "atx levels and nesting": (
        "# A\ntext\n## B\n### C\n## D\n# E\n",
        [(1, "A", 1, 5), (2, "A > B", 3, 4), (3, "A > B > C", 4, 4), (2, "A > D", 5, 5), (1, "E", 6, 6)],
    ),
    "front matter is not headings": (
        "---\ntitle: x\n# not a heading\n---\n# Real\n",
        [(1, "Real", 5, 5)],
    ),
    "an unclosed front matter is ordinary text": (
        "---\n# Heading\n",
        [(1, "Heading", 2, 2)],
    ),
    "fenced code with # lines": (
        "# Top\n```python\n# a comment\n## not either\n```\n## After\n",
        [(1, "Top", 1, 6), (2, "Top > After", 6, 6)],
    ),
    "tilde fences and a longer closing fence": (
        "~~~~\n# no\n~~~\n# still code\n~~~~~\n# Yes\n",
        [(1, "Yes", 6, 6)],
    ),
    "an unclosed fence runs to the end": (
        "# One\n```\n# two\n",
        [(1, "One", 1, 3)],
    ),
    "backticks in a backtick fence's info string: not a fence": (
        "``` a`b\n# Heading\n",
        [(1, "Heading", 2, 2)],
    ),
    "setext headings": (
        "Title\n=====\ntext\n\nSub\n---\n",
        [(1, "Title", 1, 6), (2, "Title > Sub", 5, 6)],
    ),
    "a setext title over two lines": (
        "First line\nsecond line\n-----------\n",
        [(2, "First line second line", 1, 3)],
    ),
    "--- after a blank line is a rule, not a heading": (
        "# A\ntext\n\n---\nmore\n",
        [(1, "A", 1, 5)],
    ),
    "--- under a list item is a rule": (
        "# A\n- item\n---\n",
        [(1, "A", 1, 3)],
    ),
    "trailing #s are dropped, others kept": (
        "## Title ##\n# Hash# \n### C# ###\n",
        [(2, "Title", 1, 1), (1, "Hash#", 2, 3), (3, "Hash# > C#", 3, 3)],
    ),
    "tags, seven #s and four spaces are no headings": (
        "#tag\n####### seven\n    # indented code\n   # three spaces\n",
        [(1, "three spaces", 4, 4)],
    ),
    "an empty heading": (
        "#\n## #\n",
        [(1, "", 1, 2), (2, " > ", 2, 2)],
    ),
    "duplicate titles under one parent get stable names": (
        "# Notes\n# Notes\n# Notes\n",
        [(1, "Notes", 1, 1), (1, "Notes [2]", 2, 2), (1, "Notes [3]", 3, 3)],
    ),
    "the same title under different parents stays distinct by path": (
        "# A\n## Notes\n# B\n## Notes\n",
        [(1, "A", 1, 2), (2, "A > Notes", 2, 2), (1, "B", 3, 4), (2, "B > Notes", 4, 4)],
    ),
    "a skipped level nests under the last higher heading": (
        "# A\n### C\n## B\n",
        [(1, "A", 1, 3), (3, "A > C", 2, 2), (2, "A > B", 3, 3)],
    ),
    "a note with no headings": ("just text\nmore text\n", []),
    "unicode titles": (
        "# Заметки\n## 日記 📓\n",
        [(1, "Заметки", 1, 2), (2, "Заметки > 日記 📓", 2, 2)],
    ),
    "CRLF line endings": (
        "# A\r\ntext\r\n## B\r\nmore\r\n",
        [(1, "A", 1, 4), (2, "A > B", 3, 4)],
    ),
    "old Mac CR line endings": (
        "# A\rtext\r# B\r",
        [(1, "A", 1, 2), (1, "B", 3, 3)],
    ),
}


@pytest.mark.parametrize(("text", "expected"), list(CASES.values()), ids=list(CASES))
def test_outline(text: str, expected: list[tuple[int, str, int, int]]) -> None:
    assert outline(text) == expected


def test_a_section_is_its_heading_line_down_to_the_next_heading_of_the_same_or_higher_level() -> None:
    text = "intro\n# A\na1\n## A.1\nx\n### deep\ny\n## A.2\nz\n# B\nb\n"
    assert section(text, "A") == "# A\na1\n## A.1\nx\n### deep\ny\n## A.2\nz\n"
    assert section(text, "A", "A.1") == "## A.1\nx\n### deep\ny\n"
    assert section(text, "B") == "# B\nb\n"


def test_a_section_keeps_the_notes_own_line_endings() -> None:
    text = "# A\r\none\r\n# B\r\ntwo"
    assert section(text, "A") == "# A\r\none\r\n"
    assert section(text, "B") == "# B\r\ntwo"


def test_a_setext_section_starts_at_its_title() -> None:
    text = "para\n\nTitle\n=====\nbody\n"
    assert section(text, "Title") == "Title\n=====\nbody\n"


def test_chars_is_the_size_of_the_section() -> None:
    text = "# A\nabc\n# B\n"
    document = parse(text)
    assert [heading.chars for heading in document.headings] == [len("# A\nabc\n"), len("# B\n")]


def test_the_preamble_is_everything_before_the_first_heading() -> None:
    assert parse("---\na: 1\n---\nintro\n# H\n").preamble_end == 4
    assert parse("# H\n").preamble_end == 0
    assert parse("no headings\nat all\n").preamble_end == 2


def test_lines_split_on_lf_crlf_and_cr_and_keep_their_endings() -> None:
    assert split_lines("a\nb\r\nc\rd") == ["a\n", "b\r\n", "c\r", "d"]
    assert split_lines("") == []
    assert split_lines("a\u2028b\n") == ["a\u2028b\n"]  # not a markdown line break


def test_a_name_may_be_given_in_another_case_or_spacing_when_unambiguous() -> None:
    document = parse("# Big  Picture\n## Open Questions\n")
    assert find_section(document, ["big picture", "OPEN questions"]).title == "Open Questions"


def test_an_ambiguous_loose_name_is_not_guessed() -> None:
    document = parse("# Notes\n# NOTES\n")
    assert find_section(document, ["NOTES"]).start_line == 2  # the exact name wins
    with pytest.raises(MissingHeading):
        find_section(document, ["notes "])


def test_a_missing_section_names_what_exists_at_its_level() -> None:
    document = parse("# A\n## A1\n## A2\n# B\n")
    with pytest.raises(MissingHeading) as caught:
        find_section(document, ["A", "A3"])
    assert (caught.value.found, caught.value.missing, caught.value.available) == (("A",), "A3", ["A1", "A2"])
    with pytest.raises(MissingHeading) as caught:
        find_section(document, ["C"])
    assert caught.value.available == ["A", "B"]


def test_a_big_note_is_parsed_in_one_pass() -> None:
    text = "".join(f"# Part {n}\n" + "".join(f"## Item {n}.{m}\ntext\n" for m in range(9)) for n in range(200))
    document: Document = parse(text)
    assert len(document.headings) == 200
    assert document.headings[-1].children[-1].end_line == document.line_count


def test_a_long_text_is_split_piece_by_piece_into_the_same_lines() -> None:
    rng = random.Random(3)
    for _ in range(300):
        text = "".join(rng.choice(["a", "bc", "\n", "\r\n", "\r", " "]) for _ in range(rng.randint(1, 60)))
        assert split_lines(text, piece_chars=4) == split_lines(text), repr(text)  # a \r\n is never cut in two
    only_cr = "line\r" * 50  # no \n at all: the pieces end after a \r
    assert split_lines(only_cr, piece_chars=7) == ["line\r"] * 50


def test_an_outline_stops_before_the_heading_past_the_cap_and_says_where() -> None:
    text = "intro\n" + "".join(f"# H{n}\ntext\n" for n in range(30))
    document = parse(text, max_headings=10)
    assert [heading.title for heading in document.headings] == [f"H{n}" for n in range(10)]
    assert document.outlined_lines == 21  # up to the line before "# H10"
    assert document.headings[-1].end_line == 21  # the last section ends there too, not at the note's end
    assert document.headings[-1].chars == len("# H9\ntext\n")
    assert document.line_count == 61
    assert parse(text).outlined_lines == 61  # under the cap: every line
