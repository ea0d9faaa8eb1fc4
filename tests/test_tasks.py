"""Checkbox tasks (text/tasks.py): syntax, statuses, code, sections, table-driven."""

from __future__ import annotations

import pytest

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.text.tasks import note_tasks, select_tasks


def tasks(text: str) -> list[tuple[int, str, str]]:
    return [(task.line, task.status, task.text) for task in note_tasks(text)]


SYNTAX = {
    "open": ("- [ ] call Ada", [(1, " ", "call Ada")]),
    "done": ("- [x] called", [(1, "x", "called")]),
    "done, capital": ("+ [X] called", [(1, "X", "called")]),
    "a star": ("* [ ] a", [(1, " ", "a")]),
    "numbered": ("1. [ ] a\n2) [x] b", [(1, " ", "a"), (2, "x", "b")]),
    "other statuses": (
        "- [/] a\n- [-] b\n- [>] c\n- [<] d\n- [!] e\n- [?] f",
        [
            (1, "/", "a"),
            (2, "-", "b"),
            (3, ">", "c"),
            (4, "<", "d"),
            (5, "!", "e"),
            (6, "?", "f"),
        ],
    ),
    "indented under an item": ("- [ ] a\n  - [x] b\n\t- [ ] c", [(1, " ", "a"), (2, "x", "b"), (3, " ", "c")]),
    "nested four deep": ("- a\n    - [ ] b", [(2, " ", "b")]),
    "in a quote or callout": ("> [!todo]\n> - [ ] a\n>> - [x] b", [(2, " ", "a"), (3, "x", "b")]),
    "an empty task": ("- [ ]\n- [x] ", [(1, " ", ""), (2, "x", "")]),
    "the text keeps its markup": ("- [ ] see [[Ada]] `code` #tag", [(1, " ", "see [[Ada]] `code` #tag")]),
    "text right after the box: no task": ("- [x]done", []),
    "no list marker: no task": ("[ ] a\n-[ ] b", []),
    "no space after the marker: no task": ("-[ ] a", []),
    "two characters: no task": ("- [xx] a\n- [] b", []),
    "a link, not a box": ("- [x](x.md) a", []),
    "in a fenced block": ("```\n- [ ] no\n```\n- [ ] yes", [(4, " ", "yes")]),
    "in indented code": ("text\n\n    - [ ] no\n\n- [ ] yes", [(5, " ", "yes")]),
    "in an HTML comment": ("<!--\n- [ ] no\n-->\n- [ ] yes", [(4, " ", "yes")]),
    "in front matter": ("---\nx: |\n  - [ ] no\n---\n- [ ] yes", [(5, " ", "yes")]),
    "CRLF and CR line ends": ("- [ ] a\r\n- [x] b\r\n", [(1, " ", "a"), (2, "x", "b")]),
    "CR only": ("- [ ] a\r- [x] b", [(1, " ", "a"), (2, "x", "b")]),
}


@pytest.mark.parametrize("text, expected", SYNTAX.values(), ids=SYNTAX.keys())
def test_task_syntax(text: str, expected: list[tuple[int, str, str]]) -> None:
    assert tasks(text) == expected


STATES = {
    " ": "open",
    "x": "done",
    "X": "done",
    "-": "cancelled",
    "/": "open",
    ">": "open",
    "<": "open",
    "!": "open",
    "?": "open",
}


@pytest.mark.parametrize("status, state", STATES.items())
def test_status_characters_are_open_or_done_by_the_documented_rule(status: str, state: str) -> None:
    (task,) = note_tasks(f"- [{status}] a")
    assert (task.state, task.done) == (state, state != "open")


def test_select_by_status() -> None:
    found = note_tasks("- [ ] a\n- [x] b\n- [-] c\n- [/] d\n")
    assert [task.text for task in select_tasks(found, "open")] == ["a", "d"]
    assert [task.text for task in select_tasks(found, "done")] == ["b", "c"]
    assert [task.text for task in select_tasks(found, "all")] == ["a", "b", "c", "d"]


def test_an_unknown_status_is_refused() -> None:
    with pytest.raises(ToolInputError, match="status must be open, done or all; got 'closed'"):
        select_tasks([], "closed")


def test_each_task_has_its_section_breadcrumb() -> None:
    text = (
        "- [ ] before any heading\n"
        "# Project\n"
        "- [ ] top\n"
        "## Risks\n"
        "- [ ] risk one\n"
        "### Notes\n"
        "### Notes\n"
        "- [ ] under the second Notes\n"
        "## Done\n"
        "```\n"
        "# not a heading\n"
        "```\n"
        "- [x] shipped\n"
        "\n"
        "Setext\n"
        "======\n"
        "- [ ] under setext\n"
    )
    assert [(task.text, task.section) for task in note_tasks(text)] == [
        ("before any heading", ()),
        ("top", ("Project",)),
        ("risk one", ("Project", "Risks")),
        ("under the second Notes", ("Project", "Risks", "Notes [2]")),
        ("shipped", ("Project", "Done")),
        ("under setext", ("Setext",)),
    ]


def test_indent_tells_nesting() -> None:
    assert [task.indent for task in note_tasks("- [ ] a\n  - [ ] b\n\t- [ ] c\n> - [ ] d")] == [0, 2, 4, 2]


def test_a_note_without_tasks_has_none() -> None:
    assert note_tasks("") == [] and note_tasks("# Title\n[link](x.md)\n") == []
