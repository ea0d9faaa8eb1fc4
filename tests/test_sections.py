"""Edits aimed at a section (text/sections.py): where content goes, and the blank lines around it, table-driven."""

from __future__ import annotations

import random

import pytest

from teamvault_mcp.errors import EditFailedError, ToolInputError
from teamvault_mcp.text.markdown import MissingHeading, find_section, parse
from teamvault_mcp.text.sections import content_lines, create_note_with, edit_section, place

MEETING = (
    "---\ndate: 2024-05-02\n---\n# Weekly sync\n\n## Attendees\n- Ann\n- Bob\n\n"
    "## Action items\n- [ ] Ann: budget\n- [ ] Bob: slides\n\n## Notes\nWe met.\n"
)

# (note, section, content, expected): one rule each; the id says which.
APPEND = {
    "a list item goes right under a tight list": (
        MEETING,
        ["Weekly sync", "Action items"],
        "- [ ] Cy: room",
        MEETING.replace("Bob: slides\n", "Bob: slides\n- [ ] Cy: room\n"),
    ),
    "a list item after a loose list keeps the list loose": (
        "## A\n\n- one\n\n- two\n\n## B\n",
        ["A"],
        "- three",
        "## A\n\n- one\n\n- two\n\n- three\n\n## B\n",
    ),
    "a list item under a nested item joins the list": (
        "## A\n- one\n  - one.a\n## B\n",
        ["A"],
        "- two",
        "## A\n- one\n  - one.a\n- two\n## B\n",
    ),
    "a list item under an item's continuation line joins the list": (
        "## A\n- one\n  more of one\n",
        ["A"],
        "- two",
        "## A\n- one\n  more of one\n- two\n",
    ),
    "a paragraph after a list is its own block": (
        "## A\n- one\n\n## B\n",
        ["A"],
        "Text.",
        "## A\n- one\n\nText.\n\n## B\n",
    ),
    "a list after a paragraph is its own block": (
        "## A\nIntro.\n",
        ["A"],
        "- one",
        "## A\nIntro.\n\n- one\n",
    ),
    "a paragraph after a paragraph: one blank line": (
        "## A\nFirst.\n\n## B\n",
        ["A"],
        "Second.",
        "## A\nFirst.\n\nSecond.\n\n## B\n",
    ),
    "a line under a log of lines joins the log": (
        "## Log\n09:00 standup\n10:30 review\n\n## Other\n",
        ["Log"],
        "11:00 lunch",
        "## Log\n09:00 standup\n10:30 review\n11:00 lunch\n\n## Other\n",
    ),
    "a log made of blocks stays blocks": (
        "## Log\n09:00 standup\n\n10:30 review\n",
        ["Log"],
        "11:00 lunch",
        "## Log\n09:00 standup\n\n10:30 review\n\n11:00 lunch\n",
    ),
    "a table row goes under the table": (
        "## T\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        ["T"],
        "| 3 | 4 |",
        "## T\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n",
    ),
    "a quote line goes under the quote": (
        "## Q\n> [!note]\n> first\n",
        ["Q"],
        "> second",
        "## Q\n> [!note]\n> first\n> second\n",
    ),
    "=== under a line would make it a heading: set apart": (
        "## Log\nl1\nl2\n",
        ["Log"],
        "===",
        "## Log\nl1\nl2\n\n===\n",
    ),
    "the end of a section includes its subsections": (
        "# A\na\n## A.1\nsub\n\n# B\nb\n",
        ["A"],
        "new",
        "# A\na\n## A.1\nsub\n\nnew\n\n# B\nb\n",
    ),
    "nested levels: the deepest section only": (
        "# A\n## B\n### C\nc\n### D\nd\n## E\n",
        ["A", "B", "C"],
        "more",
        "# A\n## B\n### C\nc\n\nmore\n### D\nd\n## E\n",
    ),
    "an empty last subsection takes the content under its heading": (
        "# A\na\n\n## A.1\n\n# B\n",
        ["A"],
        "new",
        "# A\na\n\n## A.1\n\nnew\n\n# B\n",
    ),
    "an empty section between headings, in a note with blank lines around headings": (
        "# T\n\n## A\n\n## B\n\nb\n",
        ["T", "A"],
        "new",
        "# T\n\n## A\n\nnew\n\n## B\n\nb\n",
    ),
    "an empty section, in a note that writes headings tight": (
        "# T\n## A\na\n## B\n## C\nc\n",
        ["T", "B"],
        "new",
        "# T\n## A\na\n## B\nnew\n## C\nc\n",
    ),
    "an empty section with no line between its heading and the next: the note's habit decides": (
        "# T\n\ntext\n\n## A\n## B\n\nb\n",
        ["T", "A"],
        "new",
        "# T\n\ntext\n\n## A\n\nnew\n\n## B\n\nb\n",
    ),
    "the last section of the note": (
        "# A\na\n\n# B\nb\n",
        ["B"],
        "c",
        "# A\na\n\n# B\nb\n\nc\n",
    ),
    "the last section, empty": (
        "# A\n\na\n\n# B\n",
        ["B"],
        "b",
        "# A\n\na\n\n# B\n\nb\n",
    ),
    "the last section, empty, in a note that writes its text right under its headings": (
        "# A\na\n\n# B\n",
        ["B"],
        "b",
        "# A\na\n\n# B\nb\n",
    ),
    "a note without a final line break keeps it so": (
        "# A\n- one",
        ["A"],
        "- two\n",
        "# A\n- one\n- two",
    ),
    "content without a final line break gets the note's": (
        "# A\n- one\n",
        ["A"],
        "- two",
        "# A\n- one\n- two\n",
    ),
    "blank lines at the content's edges are the note's to decide": (
        "# A\n- one\n",
        ["A"],
        "\n\n- two\n\n\n",
        "# A\n- one\n- two\n",
    ),
    "a section that ends in a code block": (
        "## A\n```\ncode\n```\n\n## B\n",
        ["A"],
        "After.",
        "## A\n```\ncode\n```\n\nAfter.\n\n## B\n",
    ),
    "# lines in a code block are not headings": (
        "## A\n```sh\n# install\nmake\n```\n## B\n",
        ["A"],
        "Done.",
        "## A\n```sh\n# install\nmake\n```\n\nDone.\n## B\n",
    ),
    "a setext heading right after the section always gets a blank line": (
        "# A\n```\nx\n```\nNext\n====\n",
        ["A"],
        "new",
        "# A\n```\nx\n```\n\nnew\n\nNext\n====\n",
    ),
    "setext headings": (
        "Title\n=====\ntext\n\nOther\n=====\nmore\n",
        ["Title"],
        "new",
        "Title\n=====\ntext\n\nnew\n\nOther\n=====\nmore\n",
    ),
    "duplicate titles: the second by its name": (
        "# Notes\none\n\n# Notes\ntwo\n\n# End\n",
        ["Notes [2]"],
        "three",
        "# Notes\none\n\n# Notes\ntwo\n\nthree\n\n# End\n",
    ),
    "a breadcrumb names a section as a search hit shows it": (
        "# A\n## B\nb\n",
        "A > B",
        "c",
        "# A\n## B\nb\n\nc\n",
    ),
    "CRLF notes get CRLF lines": (
        "## A\r\n- one\r\n\r\n## B\r\n",
        ["A"],
        "- two\n- three",
        "## A\r\n- one\r\n- two\r\n- three\r\n\r\n## B\r\n",
    ),
    "CR notes get CR lines": (
        "## A\r- one\r",
        ["A"],
        "- two\r\n",
        "## A\r- one\r- two\r",
    ),
    "a mixed note: untouched lines keep their endings, new ones take the most common": (
        "# A\r\none\r\n\ntwo\r\n",
        ["A"],
        "three",
        "# A\r\none\r\n\ntwo\r\n\r\nthree\r\n",
    ),
    "the whole note: at its end": (
        "# T\ntext\n",
        [],
        "end",
        "# T\ntext\n\nend\n",
    ),
    "the whole note without headings": (
        "line one\nline two\n",
        "",
        "line three",
        "line one\nline two\nline three\n",
    ),
    "an empty note takes the content's final line break": ("", [], "x", "x"),
    "an empty note, content with a line break": ("", [], "x\n", "x\n"),
    "a note of front matter only": ("---\na: 1\n---\n", [], "Body.", "---\na: 1\n---\nBody.\n"),
}

PREPEND = {
    "after the heading and its blank line": (
        "## A\n\ntext\n\n## B\n",
        ["A"],
        "new",
        "## A\n\nnew\n\ntext\n\n## B\n",
    ),
    "right under the heading when the note writes it so": (
        "## A\ntext\n",
        ["A"],
        "new",
        "## A\nnew\n\ntext\n",
    ),
    "a list item above a tight list joins it": (
        "## A\n- x\n- y\n",
        ["A"],
        "- w",
        "## A\n- w\n- x\n- y\n",
    ),
    "a list item above a loose list keeps it loose": (
        "## A\n\n- x\n\n- y\n",
        ["A"],
        "- w",
        "## A\n\n- w\n\n- x\n\n- y\n",
    ),
    "a paragraph above a list is its own block": (
        "## A\n- x\n",
        ["A"],
        "Intro.",
        "## A\nIntro.\n\n- x\n",
    ),
    "a line above a log joins it": (
        "## Log\n10:00 b\n11:00 c\n",
        ["Log"],
        "09:00 a",
        "## Log\n09:00 a\n10:00 b\n11:00 c\n",
    ),
    "a line above a thematic break stays apart (it would become a heading)": (
        "## A\n---\nmore\n",
        ["A"],
        "text",
        "## A\ntext\n\n---\nmore\n",
    ),
    "a section with subsections only: before the first of them": (
        "# A\n\n## B\nb\n",
        ["A"],
        "Intro.",
        "# A\n\nIntro.\n\n## B\nb\n",
    ),
    "an empty section": (
        "# T\n\n## A\n\n## B\n",
        ["T", "A"],
        "new",
        "# T\n\n## A\n\nnew\n\n## B\n",
    ),
    "setext heading: after its underline": (
        "Title\n=====\ntext\n",
        ["Title"],
        "first",
        "Title\n=====\nfirst\n\ntext\n",
    ),
    "the whole note: after the front matter": (
        "---\ntags: [a]\n---\n# T\ntext\n",
        [],
        "Summary.",
        "---\ntags: [a]\n---\nSummary.\n\n# T\ntext\n",
    ),
    "the whole note: at the top, without front matter": ("# T\ntext\n", [], "Summary.", "Summary.\n\n# T\ntext\n"),
    "the whole note: a byte-order mark stays first": ("\ufeffintro\n", [], "top", "\ufefftop\n\nintro\n"),
    "the whole note: a heading at the top, under a byte-order mark": (
        "\ufeffintro\n",
        [],
        "# Top",
        "\ufeff# Top\n\nintro\n",
    ),
    "a note of a byte-order mark only": ("\ufeff", [], "x", "\ufeffx"),
    "the whole note: after front matter under a byte-order mark": (
        "\ufeff---\na: 1\n---\ntext\n",
        [],
        "top",
        "\ufeff---\na: 1\n---\ntop\n\ntext\n",
    ),
    "CRLF": ("## A\r\n- x\r\n", ["A"], "- w", "## A\r\n- w\r\n- x\r\n"),
    "the last line of a note without a final line break": ("## A\nold", ["A"], "new", "## A\nnew\n\nold"),
}

REPLACE = {
    "the body, subsections included; the heading and the blank lines around stay": (
        "## A\n\nold\n### A.1\nsub\n\n## B\n",
        ["A"],
        "new",
        "## A\n\nnew\n\n## B\n",
    ),
    "a body written tight stays tight": ("## A\nold\n## B\n", ["A"], "new", "## A\nnew\n## B\n"),
    "emptied: one run of blank lines stays": ("## A\n\nold\n\n## B\n", ["A"], "", "## A\n\n## B\n"),
    "emptied, tight": ("## A\nold\n## B\n", ["A"], "", "## A\n## B\n"),
    "an empty section gets a body": ("# T\n\n## A\n\n## B\n", ["T", "A"], "new", "# T\n\n## A\n\nnew\n\n## B\n"),
    "the last section without a final line break": ("# A\nx\n# B\nold", ["B"], "new\n", "# A\nx\n# B\nnew"),
    "the last section emptied without a final line break": ("# A\nold", ["A"], "", "# A"),
    "the whole note: the body after the front matter": (
        "---\na: 1\n---\n# T\nbody\n",
        [],
        "Fresh.",
        "---\na: 1\n---\nFresh.\n",
    ),
    "the whole note without front matter": ("# T\nbody\n", [], "Fresh.", "Fresh.\n"),
    "the whole note under a byte-order mark": ("\ufeff# T\nbody\n", [], "Fresh.", "\ufeffFresh.\n"),
    "CRLF": ("## A\r\nold\r\n\r\n## B\r\n", ["A"], "x\ny", "## A\r\nx\r\ny\r\n\r\n## B\r\n"),
    "the second of two same titles": (
        "# Notes\none\n# Notes\ntwo\n",
        ["Notes [2]"],
        "2",
        "# Notes\none\n# Notes\n2\n",
    ),
}


def cases(table: dict[str, tuple[str, list[str] | str, str, str]]) -> object:
    return pytest.mark.parametrize(("note", "section", "content", "expected"), list(table.values()), ids=list(table))


@cases(APPEND)
def test_append(note: str, section: list[str], content: str, expected: str) -> None:
    assert edit_section(note, section, content, "append") == expected


@cases(PREPEND)
def test_prepend(note: str, section: list[str], content: str, expected: str) -> None:
    assert edit_section(note, section, content, "prepend") == expected


@cases(REPLACE)
def test_replace(note: str, section: list[str], content: str, expected: str) -> None:
    assert edit_section(note, section, content, "replace") == expected


def test_append_is_the_default_mode() -> None:
    assert edit_section("# A\n- x\n", ["A"], "- y") == "# A\n- x\n- y\n"


def test_a_prepend_and_an_append_to_an_empty_section_are_alike() -> None:
    note = "# T\n\n## A\n\n## B\n"
    assert edit_section(note, ["T", "A"], "x", "prepend") == edit_section(note, ["T", "A"], "x", "append")


def test_a_missing_section_raises_what_section_reads_raise_with_the_headings_at_that_level() -> None:
    with pytest.raises(MissingHeading) as caught:
        edit_section(MEETING, ["Weekly sync", "Actions"], "- x")
    assert (caught.value.found, caught.value.missing) == (("Weekly sync",), "Actions")
    assert caught.value.available == ["Attendees", "Action items", "Notes"]
    with pytest.raises(MissingHeading) as caught:
        edit_section("no headings\n", ["A"], "x")
    assert caught.value.available == []


def test_a_name_may_differ_in_case_and_spacing_as_in_section_reads() -> None:
    assert "- [ ] Cy" in edit_section(MEETING, ["weekly sync", "action  ITEMS"], "- [ ] Cy")


def test_an_ambiguous_breadcrumb_is_refused_with_the_tocpaths_to_use() -> None:
    with pytest.raises(ToolInputError) as caught:
        edit_section("# A\n## Notes\n1\n## Notes\n2\n", "A > Notes", "x")
    assert '"A > Notes" is ambiguous' in str(caught.value)
    assert '["A", "Notes"] or ["A", "Notes [2]"]' in str(caught.value)


def test_a_missing_breadcrumb_names_what_exists() -> None:
    with pytest.raises(MissingHeading) as caught:
        edit_section("# A\n## B\n", "A > C", "x")
    assert (caught.value.found, caught.value.missing, caught.value.available) == (("A",), "C", ["B"])


@pytest.mark.parametrize("mode", ["Append", "insert", ""])
def test_an_unknown_mode_is_refused(mode: str) -> None:
    with pytest.raises(ToolInputError, match="mode must be one of append, append_body, prepend, replace"):
        edit_section("# A\n", ["A"], "x", mode)


@pytest.mark.parametrize("mode", ["append", "prepend"])
def test_nothing_to_add_is_refused(mode: str) -> None:
    with pytest.raises(ToolInputError, match="content is empty"):
        edit_section("# A\n", ["A"], " \n\n", mode)


def test_appending_after_an_unclosed_code_fence_is_refused() -> None:
    with pytest.raises(EditFailedError, match=r"never closed \(the ``` at line 2\)"):
        edit_section("# A\n```\ncode\n", ["A"], "text")


def test_content_that_opens_a_code_block_and_does_not_close_it_is_refused() -> None:
    for mode in ("append", "prepend", "replace"):
        with pytest.raises(EditFailedError, match="opens a code block"):
            edit_section("# A\ntext\n# B\n", ["A"], "see:\n~~~\ncode", mode)


def test_content_that_would_turn_text_into_a_heading_is_refused() -> None:
    # Alone, a "---" block at the top is front matter; in the middle of a note its second --- underlines "title: x".
    with pytest.raises(EditFailedError, match=r"adds headings.*Nothing was changed"):
        edit_section("# A\ntext\n", ["A"], "---\ntitle: x\n---")


def test_sections_are_named_as_section_reads_name_them_under_a_byte_order_mark() -> None:
    note = "\ufeff# A\n## B\nb\n"  # markdown.py reads no heading on a first line after a byte-order mark
    assert find_section(parse(note), ["B"]).start_line == 2
    assert edit_section(note, ["B"], "c") == "\ufeff# A\n## B\nb\n\nc\n"


def test_a_heading_in_the_content_is_allowed() -> None:
    assert edit_section("# A\ntext\n", ["A"], "## A.1\nmore") == "# A\ntext\n\n## A.1\nmore\n"


CREATED = {
    "the whole note": ([], "- x", "- x\n"),
    "one heading": (["Log"], "- x\n", "# Log\n\n- x\n"),
    "nested headings, one level per name": (["2024", "May", "Log"], "x", "# 2024\n\n## May\n\n### Log\n\nx\n"),
    "a breadcrumb": ("2024 > Log", "x", "# 2024\n\n## Log\n\nx\n"),
    "headings only": (["Log"], "", "# Log\n"),
    "content line endings become LF": ([], "a\r\nb\r", "a\nb\n"),
}


@pytest.mark.parametrize(("section", "content", "expected"), list(CREATED.values()), ids=list(CREATED))
def test_create_note_with(section: list[str], content: str, expected: str) -> None:
    assert create_note_with(section, content) == expected
    if section and content:  # the new note holds the content where edit_section would have put it
        assert content_lines(content)[0] in edit_section(expected, section, content, "replace")


def test_creating_a_second_same_title_in_a_new_note_is_refused() -> None:
    with pytest.raises(ToolInputError, match=r'names "Notes \[2\]", a repeated title'):
        create_note_with(["Notes [2]"], "x")
    with pytest.raises(ToolInputError, match="one non-empty line"):
        create_note_with(["A", " "], "x")
    with pytest.raises(ToolInputError, match="six heading levels"):
        create_note_with(list("abcdefg"), "x")


# -- the rules hold on any note: generated notes, every section, every mode ----------------------------------

BLOCKS = [
    "- item\n- item two\n",
    "Paragraph text.\n",
    "l1\nl2\n",
    "```\n# code\n```\n",
    "| a |\n|---|\n| 1 |\n",
    "> quote\n",
    "Setext title\n------\n",
    "1. one\n2. two\n",
    "",
]


def generated_note(rng: random.Random) -> str:
    parts = ["---\nk: v\n---\n"] if rng.random() < 0.3 else []
    for _ in range(rng.randint(0, 6)):
        if rng.random() < 0.6:
            parts.append(f"{'#' * rng.randint(1, 3)} H{rng.randint(1, 3)}\n")
        parts.append(rng.choice(BLOCKS))
        if rng.random() < 0.6:
            parts.append("\n")
    text = "".join(parts)
    if rng.random() < 0.2:
        text = text.replace("\n", "\r\n")
    if rng.random() < 0.1 and not text.startswith("```"):  # markdown.py reads no fence after a byte-order mark
        text = "\ufeff" + text
    return text.rstrip("\r\n") if rng.random() < 0.2 else text


def sections_of(text: str) -> list[list[str]]:
    found: list[list[str]] = [[]]
    stack = list(parse(text).headings)
    while stack:
        heading = stack.pop()
        found.append(list(heading.path))
        stack.extend(heading.children)
    return found


def body_lines(text: str, section: list[str]) -> tuple[list[str], int, int]:
    """The section's lines without their endings (its heading line dropped), and where it starts and ends."""
    document = parse(text)
    if not section:
        lines = [line.rstrip("\r\n") for line in document.lines]
        return [lines[0].removeprefix("\ufeff"), *lines[1:]] if lines else [], 0, len(lines)
    heading = find_section(document, section)
    lines = [line.rstrip("\r\n") for line in document.lines[heading.start_line - 1 : heading.end_line]]
    title_lines = (
        1 if lines[0].startswith("#") else next(i for i, x in enumerate(lines) if set(x) in ({"-"}, {"="})) + 1
    )
    return lines[title_lines:], heading.start_line - 1, heading.end_line


def trimmed(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return lines


def longest_blank_run(text: str) -> int:
    longest = run = 0
    for line in text.splitlines():
        run = run + 1 if not line.strip() else 0
        longest = max(longest, run)
    return longest


@pytest.mark.parametrize("content", ["- new one\n- new two\n", "new one\nnew two", "| new one |\n| new two |"])
def test_on_generated_notes_content_lands_where_the_mode_says_and_nothing_else_moves(content: str) -> None:
    rng = random.Random(18)
    one, two = content_lines(content)
    checked = 0
    for _ in range(400):
        note = generated_note(rng)
        for section in sections_of(note):
            for mode in ("append", "prepend", "replace"):
                result = edit_section(note, section, content, mode)
                checked += 1
                label = f"{mode} {section} in {note!r} gave {result!r}"
                _, start, end = body_lines(note, section)
                after, new_start, new_end = body_lines(result, section)
                old_lines, new_lines = note.splitlines(keepends=True), result.splitlines(keepends=True)
                assert new_start == start and old_lines[:start] == new_lines[:start], label  # nothing above moves
                assert [x.rstrip("\r\n") for x in old_lines[end:]] == [x.rstrip("\r\n") for x in new_lines[new_end:]]
                if mode == "append":
                    assert trimmed(after)[-2:] == [one, two], label
                elif mode == "replace" and section:
                    assert trimmed(after) == [one, two], label
                elif mode == "prepend" and section:
                    assert trimmed(after)[:2] == [one, two], label
                assert longest_blank_run(result) <= max(1, longest_blank_run(note)), label  # no doubled blank line
                newline = "\r\n" if "\r\n" in note else "\n"
                assert f"{one}{newline}{two}" in result, label
                ends_with_break = note.endswith(("\n", "\r")) if note.strip("\ufeff") else content.endswith("\n")
                assert result.endswith(("\n", "\r")) == ends_with_break, label
    assert checked > 1000


@pytest.mark.parametrize(
    ("text", "section", "expected", "before"),
    [
        ("# A\n\nown\n\n## B\n\nx\n", ["A"], "# A\n\nown\n\n- new\n\n## B\n\nx\n", "## B"),
        ("# A\n\n## B\n\nx\n", ["A"], "# A\n\n- new\n\n## B\n\nx\n", "## B"),  # no text of its own
        ("# A\n\n- one\n", ["A"], "# A\n\n- one\n- new\n", ""),  # no subheading: as append
        ("---\nk: v\n---\n# A\n", [], "---\nk: v\n---\n- new\n\n# A\n", "# A"),  # the whole note: before its first
    ],
    ids=["own text", "only subsections", "no subheading", "whole note"],
)
def test_append_body_writes_at_the_end_of_the_sections_own_text(
    text: str, section: list[str], expected: str, before: str
) -> None:
    placed = place(text, section, "- new", "append_body")
    assert (placed.text, placed.before, placed.after) == (expected, before, "")


def test_append_says_which_subsection_it_ended_and_append_body_never_lands_in_one() -> None:
    text = "# A\n\nown\n\n## B\n\nx\n\n### C\n\ny\n"
    assert place(text, ["A"], "z").after == "### C"
    assert place(text, ["A", "B", "C"], "z").after == ""  # the end of C's own text
    assert place("# A\n\nown\n", ["A"], "z").after == ""
