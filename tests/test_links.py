"""Obsidian's link model (text/links.py, text/relink.py): parsing, resolution and rewrites, table-driven."""

from __future__ import annotations

import random
import time

import pytest

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.text.links import Link, parse_links
from teamvault_mcp.text.relink import rewrite_link, rewrite_note_links
from teamvault_mcp.text.resolution import VaultPaths, closest_note, resolve_links

# -- parsing --------------------------------------------------------------------------------------------------


def found(text: str) -> list[tuple[str, str, str, str | None, str | None, str | None]]:
    """(kind, raw, target, heading, block, alias) of every link."""
    return [(link.kind, link.raw, link.target, link.heading, link.block, link.alias) for link in parse_links(text)]


def raws(text: str) -> list[str]:
    return [link.raw for link in parse_links(text)]


SYNTAX = {
    "a bare wikilink": ("See [[Ada]].", [("wiki", "[[Ada]]", "Ada", None, None, None)]),
    "an alias": ("[[Ada|the countess]]", [("wiki", "[[Ada|the countess]]", "Ada", None, None, "the countess")]),
    "a heading": ("[[Ada#Early life]]", [("wiki", "[[Ada#Early life]]", "Ada", "Early life", None, None)]),
    "a nested heading keeps its #s": (
        "[[Ada#Life#Early]]",
        [("wiki", "[[Ada#Life#Early]]", "Ada", "Life#Early", None, None)],
    ),
    "a block": ("[[Ada#^f63f5a]]", [("wiki", "[[Ada#^f63f5a]]", "Ada", None, "f63f5a", None)]),
    "heading and alias": (
        "[[Ada#Work|her work]]",
        [("wiki", "[[Ada#Work|her work]]", "Ada", "Work", None, "her work")],
    ),
    "a heading of the same note": ("[[#Plan]]", [("wiki", "[[#Plan]]", "", "Plan", None, None)]),
    "a block of the same note": ("[[#^abc|here]]", [("wiki", "[[#^abc|here]]", "", None, "abc", "here")]),
    "a folder part": ("[[people/Ada]]", [("wiki", "[[people/Ada]]", "people/Ada", None, None, None)]),
    "an explicit extension": ("[[Ada.md]]", [("wiki", "[[Ada.md]]", "Ada.md", None, None, None)]),
    "spaces around the target": ("[[ Ada |x]]", [("wiki", "[[ Ada |x]]", "Ada", None, None, "x")]),
    "an escaped pipe in a table": (
        "| [[Ada\\|A]] | x |",
        [("wiki", "[[Ada\\|A]]", "Ada", None, None, "A")],
    ),
    "an embed": ("![[diagram.png]]", [("embed", "![[diagram.png]]", "diagram.png", None, None, None)]),
    "an embed with a size": (
        "![[diagram.png|100x145]]",
        [("embed", "![[diagram.png|100x145]]", "diagram.png", None, None, "100x145")],
    ),
    "an embedded section": ("![[Ada#Work]]", [("embed", "![[Ada#Work]]", "Ada", "Work", None, None)]),
    "an empty wikilink is none": ("[[]] and [[|x]] and [[ ]]", []),
    "a wikilink does not span lines": ("[[Ada\nLovelace]]", []),
    "two on a line": (
        "[[A]][[B]]",
        [("wiki", "[[A]]", "A", None, None, None), ("wiki", "[[B]]", "B", None, None, None)],
    ),
    "a Markdown link": ("[Ada](Ada.md)", [("markdown", "[Ada](Ada.md)", "Ada.md", None, None, "Ada")]),
    "percent-encoded": (
        "[x](people/Ada%20Lovelace.md)",
        [("markdown", "[x](people/Ada%20Lovelace.md)", "people/Ada Lovelace.md", None, None, "x")],
    ),
    "percent-encoded UTF-8": (
        "[x](%D0%90%D0%B4%D0%B0.md)",
        [("markdown", "[x](%D0%90%D0%B4%D0%B0.md)", "Ада.md", None, None, "x")],
    ),
    "an encoded # is part of the name": (
        "[x](C%23%20notes.md)",
        [("markdown", "[x](C%23%20notes.md)", "C# notes.md", None, None, "x")],
    ),
    "<…>-wrapped with spaces": (
        "[x](<people/Ada Lovelace.md>)",
        [("markdown", "[x](<people/Ada Lovelace.md>)", "people/Ada Lovelace.md", None, None, "x")],
    ),
    "a fragment": (
        "[x](Ada.md#Early%20life)",
        [("markdown", "[x](Ada.md#Early%20life)", "Ada.md", "Early life", None, "x")],
    ),
    "a block fragment": ("[x](Ada.md#^b1)", [("markdown", "[x](Ada.md#^b1)", "Ada.md", None, "b1", "x")]),
    "a heading of the same note, Markdown": ("[x](#Plan)", [("markdown", "[x](#Plan)", "", "Plan", None, "x")]),
    "a title": ('[x](Ada.md "Ada\'s page")', [("markdown", '[x](Ada.md "Ada\'s page")', "Ada.md", None, None, "x")]),
    "relative with ../": (
        "[x](../people/Ada.md)",
        [("markdown", "[x](../people/Ada.md)", "../people/Ada.md", None, None, "x")],
    ),
    "brackets in the text": ("[a [b] c](Ada.md)", [("markdown", "[a [b] c](Ada.md)", "Ada.md", None, None, "a [b] c")]),
    "parentheses in the path": ("[x](notes(1).md)", [("markdown", "[x](notes(1).md)", "notes(1).md", None, None, "x")]),
    "escaped parentheses": (
        "[x](notes\\(1\\).md)",
        [("markdown", "[x](notes\\(1\\).md)", "notes(1).md", None, None, "x")],
    ),
    "a Markdown embed": (
        "![chart](img/chart.png)",
        [("embed", "![chart](img/chart.png)", "img/chart.png", None, None, "chart")],
    ),
    "spaces without <…>: no link": ("[x](my note.md)", []),
    "an empty destination: no link": ("[x]() and [y](<>)", []),
    "external URLs are no vault links": (
        "[a](https://example.com/a.md) [b](mailto:ada@example.com) [c](obsidian://open?vault=x) [d](//host/x.md) "
        "[e](file:///x.md) ![f](http://x/y.png)",
        [],
    ),
    "a link in a heading": ("## About [[Ada]]\n", [("wiki", "[[Ada]]", "Ada", None, None, None)]),
    "a link in a list item and a quote": (
        "- [[A]]\n> [[B]]\n",
        [("wiki", "[[A]]", "A", None, None, None), ("wiki", "[[B]]", "B", None, None, None)],
    ),
    "an Obsidian %% comment is prose": ("%% see [[Ada]] %%", [("wiki", "[[Ada]]", "Ada", None, None, None)]),
}


@pytest.mark.parametrize("text, expected", SYNTAX.values(), ids=SYNTAX.keys())
def test_link_syntax(text: str, expected: list[tuple[str, ...]]) -> None:
    assert found(text) == expected


NOT_IN_CODE = {
    "a fenced block": ("```\n[[A]]\n```\n[[B]]", ["[[B]]"]),
    "a tilde fence and a longer closing fence": ("~~~~\n[[A]]\n~~~\n[[A2]]\n~~~~~\n[[B]]", ["[[B]]"]),
    "a fence with an info string": ("```python\nx = '[[A]]'\n```\n[[B]]", ["[[B]]"]),
    "an unclosed fence runs to the end": ("[[B]]\n```\n[[A]]\n", ["[[B]]"]),
    "backticks in a backtick fence's info string: no fence": ("``` a`b\n[[B]]\n", ["[[B]]"]),
    "a fence indented three spaces": ("   ```\n[[A]]\n   ```\n[[B]]", ["[[B]]"]),
    "a fence in a list item": ("- item\n    ```\n    [[A]]\n    ```\n- [[B]]", ["[[B]]"]),
    "a fence opened on a list item's line": ("- ```\n  [[A]]\n  ```\n[[B]]", ["[[B]]"]),
    "a fence in a quote": ("> ```\n> [[A]]\n> ```\n> [[B]]", ["[[B]]"]),
    "indented code after a blank line": ("text\n\n    [[A]]\n\n    [[A2]]\n[[B]]", ["[[B]]"]),
    "a tab-indented code line": ("\t[[A]]\n\n[[B]]", ["[[B]]"]),
    "indented code at the very start": ("    [[A]]\n\n[[B]]", ["[[B]]"]),
    "four spaces under a paragraph continue it": ("text\n    [[B]]", ["[[B]]"]),
    "four spaces under a list item are a nested item": ("- a\n\n    - [[B]]", ["[[B]]"]),
    "inline code": ("`[[A]]` [[B]]", ["[[B]]"]),
    "inline code of two backticks": ("``a ` [[A]]`` [[B]]", ["[[B]]"]),
    "inline code of three backticks": ("```a``[[A]]``` [[B]]", ["[[B]]"]),
    "a lone backtick is text": ("it`s [[B]]", ["[[B]]"]),
    "runs of different lengths do not close": ("`` [[B]] `", ["[[B]]"]),
    "an escaped backtick opens nothing": ("\\`[[B]]`", ["[[B]]"]),
    "a code span over two lines of a paragraph": ("a `code\n[[A]]` [[B]]", ["[[B]]"]),
    "no code span across a blank line": ("a `x\n\n[[B]]` y", ["[[B]]"]),
    "no code span from one list item into the next": ("- a `x\n- [[B]] `y", ["[[B]]"]),
    "no code span from a heading into the next line": ("## a `x\n[[B]] `y", ["[[B]]"]),
    "no code span from one table row into the next": ("| a `x |\n| [[B]] `y |", ["[[B]]"]),
    "an HTML comment": ("<!-- [[A]] --> [[B]]", ["[[B]]"]),
    "an HTML comment over lines and a blank line": ("<!--\n[[A]]\n\n[[A2]]\n--> [[B]]", ["[[B]]"]),
    "an HTML comment opened in a paragraph, closed in a list item": ("x <!-- [[A]]\n- y --> [[B]]", ["[[B]]"]),
    "an unclosed HTML comment runs to the end": ("[[B]] <!-- [[A]]\n\n[[A2]]", ["[[B]]"]),
    "a comment inside inline code is code": ("`<!--` [[B]] `-->`", ["[[B]]"]),
    "a fence inside a comment is comment": ("<!--\n```\n-->\n[[B]]", ["[[B]]"]),
    "Markdown links in code": ("`[x](a.md)` [y](b.md)\n```\n[z](c.md)\n```", ["[y](b.md)"]),
}


@pytest.mark.parametrize("text, expected", NOT_IN_CODE.values(), ids=NOT_IN_CODE.keys())
def test_no_links_in_code_or_comments(text: str, expected: list[str]) -> None:
    assert raws(text) == expected


FRONT_MATTER = {
    "a quoted value": ('---\nrelated: "[[Ada]]"\n---\n', [("related", "[[Ada]]", '"')]),
    "single quotes": ("---\nrelated: '[[Ada|A]]'\n---\n", [("related", "[[Ada|A]]", "'")]),
    "a block list": (
        '---\nrelated:\n  - "[[Ada]]"\n  - "[[Bob#Work]]"\n---\n',
        [("related", "[[Ada]]", '"'), ("related", "[[Bob#Work]]", '"')],
    ),
    "a flow list": ("---\nup: [\"[[A]]\", '[[B]]']\n---\n", [("up", "[[A]]", '"'), ("up", "[[B]]", "'")]),
    "each field its own": ('---\na: "[[A]]"\nb: "[[B]]"\n---\n', [("a", "[[A]]", '"'), ("b", "[[B]]", '"')]),
    "an embed": ('---\ncover: "![[cover.png]]"\n---\n', [("cover", "![[cover.png]]", '"')]),
    "a doubled single quote": ("---\nx: '[[Ada''s notes]]'\n---\n", [("x", "[[Ada's notes]]", "'")]),
    "unquoted [[…]] is a list of lists, no link": ("---\nrelated: [[Ada]]\n---\n", []),
    "a link inside longer text is no link": ('---\nnote: "met [[Ada]] today"\n---\n', []),
    "a comment line": ('---\n# old: "[[Ada]]"\nx: 1\n---\n', []),
    "a trailing comment": ('---\nx: 1 # "[[Ada]]"\n---\n', []),
    "front matter that does not read gives none": ('---\nrelated: "[[Ada]]\n  bad: [\n---\n', []),
    "an unclosed opening line is no front matter: its lines are prose": (
        '---\nrelated: "[[Ada]]"\n',
        [(None, "[[Ada]]", "")],
    ),
}


@pytest.mark.parametrize("text, expected", FRONT_MATTER.values(), ids=FRONT_MATTER.keys())
def test_front_matter_links(text: str, expected: list[tuple[str | None, str, str]]) -> None:
    assert [(link.field, link.raw, link.quote) for link in parse_links(text)] == expected


def test_front_matter_links_come_first_and_say_so() -> None:
    links = parse_links('---\nrelated: "[[Ada]]"\n---\nSee [[Bob]].\n')
    assert [(link.kind, link.in_front_matter, link.line) for link in links] == [
        ("frontmatter", True, 2),
        ("wiki", False, 4),
    ]
    assert links[0].target == "Ada"


def test_front_matter_is_not_body() -> None:
    assert raws("---\ntitle: '[[x]] y'\nnote: see [[Ada]]\n---\n[[Bob]]\n") == ["[[Bob]]"]


def test_lines_columns_and_offsets_are_the_note_s_own() -> None:
    text = '---\r\nup: "[[Top]]"\r\n---\r\n# Title\r\n\tAda → [[Ada|A]] and ![x](y.png)\r\n'
    links = parse_links(text)
    assert [(link.line, link.column, link.end_column) for link in links] == [(2, 6, 13), (5, 8, 17), (5, 22, 33)]
    for link in links:
        assert text[link.start : link.end] == link.raw
        assert link.raw[link.target_start : link.target_end] in ("Top", "Ada", "y.png")


def test_a_markdown_link_s_written_target_is_the_encoded_path() -> None:
    (link,) = parse_links("[x](<a b.md#H>) ")
    assert link.raw[link.target_start : link.target_end] == "a b.md"
    (link,) = parse_links("[x](a%20b.md#H)")
    assert link.raw[link.target_start : link.target_end] == "a%20b.md"


def test_a_wikilink_and_a_markdown_link_never_overlap() -> None:
    assert found("[[A]](b.md)") == [("wiki", "[[A]]", "A", None, None, None)]


# -- resolution -----------------------------------------------------------------------------------------------

VAULT = VaultPaths(
    [
        "Home.md",
        "people/Ada.md",
        "people/Bob.md",
        "team/people/Bob.md",
        "archive/Bob.md",
        "projects/Apollo/Plan.md",
        "projects/Gemini/Plan.md",
        "projects/Notes v1.2.md",
        "projects/report.pdf",
        "assets/diagram.png",
        "Cases/A.md",
        "Cases/a.md",
        "deep/er/Zed.md",
        "other/Zed.md",
        "Ä.md",
    ]
)

RESOLUTION = {
    "a bare name anywhere": ("Ada", "notes/x.md", False, "people/Ada.md"),
    "ignoring case": ("ada", "notes/x.md", False, "people/Ada.md"),
    "an explicit .md": ("Ada.md", "notes/x.md", False, "people/Ada.md"),
    "a dot in the name is no extension": ("Notes v1.2", "x.md", False, "projects/Notes v1.2.md"),
    "an attachment by name": ("diagram.png", "notes/x.md", False, "assets/diagram.png"),
    "an attachment, any case": ("Report.PDF", "x.md", False, "projects/report.pdf"),
    "no .md guessed onto an attachment": ("diagram", "x.md", False, None),
    "a folder part matches by path": ("Apollo/Plan", "x.md", False, "projects/Apollo/Plan.md"),
    "the whole path": ("projects/Gemini/Plan", "x.md", False, "projects/Gemini/Plan.md"),
    "a path from the root wins over a suffix": ("people/Bob", "x.md", False, "people/Bob.md"),
    "a suffix on whole segments only": ("ople/Bob", "x.md", False, None),
    "part of a name is not the name": ("da", "x.md", False, None),
    "the same folder wins": ("Bob", "team/people/x.md", False, "team/people/Bob.md"),
    "else the fewest folders deep": ("Bob", "notes/x.md", False, "archive/Bob.md"),
    "a tie in depth: alphabetical": ("Plan", "x.md", False, "projects/Apollo/Plan.md"),
    "the same folder, a tie broken": ("Plan", "projects/Gemini/x.md", False, "projects/Gemini/Plan.md"),
    "depth first, then the name": ("Zed", "x.md", False, "other/Zed.md"),
    "the exact spelling wins over another case": ("Cases/a", "x.md", False, "Cases/a.md"),
    "else the first spelling": ("cases/A", "x.md", False, "Cases/A.md"),
    "NFD and NFC are one name": ("A\u0308", "x.md", False, "Ä.md"),
    "a root note wins over the same folder": ("Home", "people/x.md", False, "Home.md"),
    "a heading of the same note": ("", "people/Ada.md", False, "people/Ada.md"),
    "a missing note": ("Carol", "x.md", False, None),
    "Markdown: relative to the note's folder": ("Bob.md", "team/people/x.md", True, "team/people/Bob.md"),
    "Markdown: ../": ("../Ada.md", "people/sub/x.md", True, "people/Ada.md"),
    "Markdown: ../ out of the vault": ("../../Ada.md", "people/x.md", True, None),
    "Markdown: from the root with /": ("/people/Bob.md", "team/people/x.md", True, "people/Bob.md"),
    "Markdown: a / path stops at the root": ("/Bob.md", "team/people/x.md", True, None),
    "Markdown: a path from the root when not relative": ("people/Ada.md", "notes/x.md", True, "people/Ada.md"),
    "Markdown: else by name": ("Ada.md", "notes/x.md", True, "people/Ada.md"),
    "Markdown: no extension means .md": ("../Ada", "people/sub/x.md", True, "people/Ada.md"),
    "wiki ./ is the note's folder": ("./Bob", "team/people/x.md", False, "team/people/Bob.md"),
    "wiki ../": ("../Ada", "people/sub/x.md", False, "people/Ada.md"),
    "wiki ./ that is not there stops there": ("./Ada", "notes/x.md", False, None),
}


@pytest.mark.parametrize("target, source, markdown, expected", RESOLUTION.values(), ids=RESOLUTION.keys())
def test_resolution(target: str, source: str, markdown: bool, expected: str | None) -> None:
    assert VAULT.resolve(target, source, markdown=markdown) == expected


def test_resolve_links_takes_any_collection_of_paths() -> None:
    links = parse_links("[[Ada]] [[Nobody]] [x](Ada.md)")
    assert [path for _, path in resolve_links(links, "people/x.md", ["people/Ada.md"])] == [
        "people/Ada.md",
        None,
        "people/Ada.md",
    ]


def test_two_notes_of_one_name_in_other_folders_resolve_by_the_documented_rule() -> None:
    vault = VaultPaths(["a/Ada.md", "b/Ada.md", "b/c/Ada.md"])
    assert vault.resolve("Ada", "b/x.md") == "b/Ada.md"  # the same folder
    assert vault.resolve("Ada", "b/c/x.md") == "b/c/Ada.md"
    assert vault.resolve("Ada", "z/x.md") == "a/Ada.md"  # as deep as b/Ada.md: alphabetical
    assert vault.resolve("c/Ada", "a/x.md") == "b/c/Ada.md"


def test_answers_do_not_depend_on_the_order_paths_come_in() -> None:
    paths = ["b/Ada.md", "a/Ada.md", "c/d/Ada.md"]
    assert {VaultPaths(order).resolve("Ada", "x.md") for order in (paths, paths[::-1])} == {"a/Ada.md"}


CLOSEST = {
    "another case": ("ada", "people/Ada.md"),
    "spaces and punctuation": ("notes-v1.2", "projects/Notes v1.2.md"),
    "a typo": ("Adda", "people/Ada.md"),
    "a folder that moved": ("old/place/Ada", "people/Ada.md"),
    "an attachment": ("diagramm.png", "assets/diagram.png"),
    "of several, the shallowest": ("Bobb", "archive/Bob.md"),
    "nothing close": ("Quarterly budget 2031", None),
    "an empty name": ("", None),
}


@pytest.mark.parametrize("name, expected", CLOSEST.values(), ids=CLOSEST.keys())
def test_closest_note(name: str, expected: str | None) -> None:
    assert closest_note(name, VAULT) == expected


# -- rewriting one link ---------------------------------------------------------------------------------------


def one_link(text: str) -> Link:
    (link,) = parse_links(text)
    return link


REWRITE = {
    "a bare name stays bare while unique": (
        "[[Ada]]",
        "notes/x.md",
        ["people/Ada King.md"],
        "people/Ada King.md",
        "[[Ada King]]",
    ),
    "a bare name gains the path when not unique": (
        "[[Ada]]",
        "notes/x.md",
        ["people/Ada.md", "archive/Ada.md"],
        "archive/Ada.md",
        "[[archive/Ada]]",
    ),
    "alias, heading and embed are kept": (
        "![[Ada#Work|her work]]",
        "notes/x.md",
        ["people/Ada King.md"],
        "people/Ada King.md",
        "![[Ada King#Work|her work]]",
    ),
    "a block is kept": ("[[Ada#^b1]]", "x.md", ["p/Ada2.md"], "p/Ada2.md", "[[Ada2#^b1]]"),
    "a folder part gets the full path": ("[[people/Ada]]", "x.md", ["team/Ada.md"], "team/Ada.md", "[[team/Ada]]"),
    "a written .md is kept": ("[[Ada.md|A]]", "x.md", ["p/Ada2.md"], "p/Ada2.md", "[[Ada2.md|A]]"),
    "a ./ link stays relative": (
        "[[./Ada]]",
        "people/x.md",
        ["people/sub/Ada.md"],
        "people/sub/Ada.md",
        "[[./sub/Ada]]",
    ),
    "a ../ link stays relative": (
        "[[../Ada]]",
        "people/sub/x.md",
        ["team/Ada.md"],
        "team/Ada.md",
        "[[../../team/Ada]]",
    ),
    "the escaped pipe of a table is kept": ("[[Ada\\|A]]", "x.md", ["p/Eve.md"], "p/Eve.md", "[[Eve\\|A]]"),
    "Markdown: relative and encoded": (
        '[Ada](../people/Ada.md#Work "title")',
        "notes/x.md",
        ["archive/2024/Ada Lovelace.md"],
        "archive/2024/Ada Lovelace.md",
        '[Ada](../archive/2024/Ada%20Lovelace.md#Work "title")',
    ),
    "Markdown: the same folder": ("[A](Ada.md)", "people/x.md", ["people/Eve.md"], "people/Eve.md", "[A](Eve.md)"),
    "Markdown: <…> stays, spaces and all": (
        "[A](<Ada.md>)",
        "x.md",
        ["p/Ada King.md"],
        "p/Ada King.md",
        "[A](<p/Ada King.md>)",
    ),
    "Markdown: no extension stays without": ("[A](../Ada)", "p/x.md", ["q/Eve.md"], "q/Eve.md", "[A](../q/Eve)"),
    "Markdown: a path from the root stays so": (
        "[A](/people/Ada.md)",
        "p/x.md",
        ["q/Eve.md"],
        "q/Eve.md",
        "[A](/q/Eve.md)",
    ),
    "Markdown: # % ( in a name are encoded": (
        "[A](Ada.md)",
        "x.md",
        ["C# 100% (draft).md"],
        "C# 100% (draft).md",
        "[A](C%23%20100%25%20%28draft%29.md)",
    ),
    "Markdown: letters of other scripts stay readable": ("[A](Ada.md)", "x.md", ["Ада.md"], "Ада.md", "[A](Ада.md)"),
    "Markdown: ... unless the link encoded them": (
        "[A](%C3%84da.md)",
        "x.md",
        ["Äda2.md"],
        "Äda2.md",
        "[A](%C3%84da2.md)",
    ),
    "a Markdown embed": ("![pic](img/a.png)", "x.md", ["media/a b.png"], "media/a b.png", "![pic](media/a%20b.png)"),
    "front matter, double quotes": ('---\nup: "[[Ada|A]]"\n---\n', "x.md", ["p/Eve.md"], "p/Eve.md", '"[[Eve|A]]"'),
    "front matter, single quotes and an apostrophe": (
        "---\nup: '[[Ada]]'\n---\n",
        "x.md",
        ["p/Ada's.md"],
        "p/Ada's.md",
        "'[[Ada''s]]'",
    ),
}


@pytest.mark.parametrize("text, source, vault, new_path, expected", REWRITE.values(), ids=REWRITE.keys())
def test_rewrite_link(text: str, source: str, vault: list[str], new_path: str, expected: str) -> None:
    assert rewrite_link(one_link(text), new_path, vault, source) == expected


def test_a_rewritten_link_resolves_to_the_new_path() -> None:
    vault = VaultPaths(["a/Ada.md", "b/Ada.md", "Ada.md", "a/x.md"])
    for text in ("[[Ada]]", "[[a/Ada#H|x]]", "[t](Ada.md)", "[t](/Ada.md)", "[[./Ada]]"):
        for target in sorted(vault.paths - {"a/x.md"}):
            written = one_link(rewrite_link(one_link(text), target, vault, "a/x.md"))
            assert vault.resolve_link(written, "a/x.md") == target, (text, target, written.raw)


@pytest.mark.parametrize("name", ["C# notes.md", "a|b.md", "x]]y.md"])
def test_a_name_a_wikilink_cannot_hold_is_refused(name: str) -> None:
    with pytest.raises(ToolInputError, match=r"cannot be named by a \[\[wikilink\]\].*line 1 of x\.md"):
        rewrite_link(one_link("[[Ada]]"), name, [name], "x.md")


def test_a_markdown_link_can_name_what_a_wikilink_cannot() -> None:
    assert rewrite_link(one_link("[t](Ada.md)"), "a|b#c.md", ["a|b#c.md"], "x.md") == "[t](a%7Cb%23c.md)"


# -- rewriting a note -----------------------------------------------------------------------------------------

BEFORE = [
    "people/Ada.md",
    "archive/Ada.md",
    "people/Bob.md",
    "notes/x.md",
    "notes/Bob.md",
    "img/ada.png",
]

LINKING_NOTE = """---
title: Meeting
related: "[[people/Ada]]"
others:
  - '[[Bob]]'
---
# Meeting with [[people/Ada|Ada]]

Ada ([[people/Ada#Work|her work]], ![[people/Ada#^bio]]) met [Bob](Bob.md).
The profile: [profile](../people/Ada.md#Early%20life "Ada's page") and [[archive/Ada]] (an older one).
`[[people/Ada]]` is how to write it; so is:

```
[[people/Ada]]
```

<!-- [[people/Ada]] -->
| who | link |
| --- | --- |
| Ada | [[people/Ada\\|A]] |
"""


def test_a_rename_rewrites_exactly_the_links_to_the_note_and_no_other_byte() -> None:
    result = rewrite_note_links(LINKING_NOTE, "notes/x.md", "people/Ada.md", "people/Ada Lovelace.md", BEFORE)
    expected = (
        LINKING_NOTE.replace('related: "[[people/Ada]]"', 'related: "[[people/Ada Lovelace]]"')
        .replace("# Meeting with [[people/Ada|Ada]]", "# Meeting with [[people/Ada Lovelace|Ada]]")
        .replace(
            "([[people/Ada#Work|her work]], ![[people/Ada#^bio]])",
            "([[people/Ada Lovelace#Work|her work]], ![[people/Ada Lovelace#^bio]])",
        )
        .replace("(../people/Ada.md#Early%20life", "(../people/Ada%20Lovelace.md#Early%20life")
        .replace("| [[people/Ada\\|A]] |", "| [[people/Ada Lovelace\\|A]] |")
    )
    assert result.text == expected
    assert [(change.line, change.new) for change in result.changes] == [
        (3, '"[[people/Ada Lovelace]]"'),
        (7, "[[people/Ada Lovelace|Ada]]"),
        (9, "[[people/Ada Lovelace#Work|her work]]"),
        (9, "![[people/Ada Lovelace#^bio]]"),
        (10, '[profile](../people/Ada%20Lovelace.md#Early%20life "Ada\'s page")'),
        (20, "[[people/Ada Lovelace\\|A]]"),
    ]
    assert result.captured == ()


def test_links_that_resolved_elsewhere_are_untouched() -> None:
    text = "[[Ada]] from notes/ is archive/Ada.md? No: [[people/Ada]] and [[archive/Ada]].\n"
    vault = ["people/Ada.md", "archive/Ada.md", "notes/x.md"]
    result = rewrite_note_links(text, "notes/x.md", "people/Ada.md", "people/Eve.md", vault)
    # [[Ada]] resolved to archive/Ada.md (as deep, alphabetical first): it stays
    assert result.text == "[[Ada]] from notes/ is archive/Ada.md? No: [[people/Eve]] and [[archive/Ada]].\n"


def test_a_bare_link_gains_the_path_when_the_new_name_is_taken() -> None:
    vault = ["people/Ada.md", "archive/Eve.md", "x.md"]
    result = rewrite_note_links("[[Ada]]", "x.md", "people/Ada.md", "people/Eve.md", vault)
    assert result.text == "[[people/Eve]]"


def test_a_note_that_moves_folder_keeps_its_bare_links() -> None:
    vault = ["people/Ada.md", "x.md"]
    result = rewrite_note_links("[[Ada]] and [x](people/Ada.md)", "x.md", "people/Ada.md", "archive/Ada.md", vault)
    assert result.text == "[[Ada]] and [x](archive/Ada.md)"
    assert [change.new for change in result.changes] == ["[x](archive/Ada.md)"]


def test_a_note_without_links_to_the_moved_note_comes_back_unchanged() -> None:
    result = rewrite_note_links("[[Bob]] `[[Ada]]`", "x.md", "Ada.md", "Eve.md", ["Ada.md", "Bob.md", "x.md"])
    assert (result.text, result.changes, result.captured) == ("[[Bob]] `[[Ada]]`", (), ())


def test_links_the_move_captures_are_reported_not_changed() -> None:
    # [[Ada]] from team/ resolved to people/Ada.md; once archive/Ada.md moves into team/, the same folder wins.
    vault = ["people/Ada.md", "archive/old/Ada.md", "team/x.md"]
    result = rewrite_note_links("[[Ada]] and [[Nobody]]", "team/x.md", "archive/old/Ada.md", "team/Ada.md", vault)
    assert result.text == "[[Ada]] and [[Nobody]]"
    assert [link.raw for link in result.captured] == ["[[Ada]]"]


def test_the_moved_note_keeps_its_own_links_right() -> None:
    text = "[[#Plan]] [[Ada#Plan]] [[Bob]] [b](Bob.md) [r](../root.md) [[Carol]] [[Nobody]]\n"
    vault = ["people/Ada.md", "people/Bob.md", "archive/Bob.md", "root.md", "Carol.md"]
    result = rewrite_note_links(text, "people/Ada.md", "people/Ada.md", "archive/deep/Ada.md", vault)
    assert result.text == (
        "[[#Plan]] [[Ada#Plan]] [[people/Bob]] [b](../../people/Bob.md) [r](../../root.md) [[Carol]] [[Nobody]]\n"
    )


def test_front_matter_links_are_rewritten_in_their_quotes_and_checked() -> None:
    text = "---\nup: '[[Ada]]'\nlist: [\"[[Ada|A]]\", 2]\n---\nbody\n"
    result = rewrite_note_links(text, "x.md", "Ada.md", 'p/Ada\'s "notes".md', ["Ada.md", "x.md"])
    assert result.text == '---\nup: \'[[Ada\'\'s "notes"]]\'\nlist: ["[[Ada\'s \\"notes\\"|A]]", 2]\n---\nbody\n'


def test_crlf_notes_keep_their_line_endings() -> None:
    text = "# A\r\n[[Ada]]\r\n\r\n`[[Ada]]`\r\n"
    result = rewrite_note_links(text, "x.md", "Ada.md", "Eve.md", ["Ada.md", "x.md"])
    assert result.text == "# A\r\n[[Eve]]\r\n\r\n`[[Ada]]`\r\n"


# -- the rename invariant, on generated notes ---------------------------------------------------------------

PIECES = [
    "[[Ada]]",
    "[[Ada|A]]",
    "[[people/Ada#Work]]",
    "![[Ada#^b1]]",
    "[[Bob]]",
    "[[archive/Ada]]",
    "[x](../people/Ada.md)",
    "[x](<../people/Ada.md#Work>)",
    "![p](../img/ada.png)",
    "[y](Bob.md)",
    "[[#Local]]",
    "`[[Ada]]`",
    "``[x](../people/Ada.md)``",
    "<!-- [[Ada]] -->",
    "#tag",
    "text",
    "https://example.com/Ada.md",
    "[[Nobody]]",
    "`",
]
BLOCKS = ["", "- ", "- [ ] ", "> ", "## ", "    ", "| "]


def generated_note(seed: int) -> str:
    rng = random.Random(seed)
    lines = ["---\nrelated: \"[[Ada]]\"\nother: '[[Bob]]'\n---"] if rng.random() < 0.5 else []
    for _ in range(rng.randint(5, 25)):
        if rng.random() < 0.1:
            lines.append("```\n" + " ".join(rng.choices(PIECES, k=3)) + "\n```")
        else:
            lines.append(rng.choice(BLOCKS) + " ".join(rng.choices(PIECES, k=rng.randint(1, 6))))
        if rng.random() < 0.2:
            lines.append("")
    return "\n".join(lines) + rng.choice(["\n", ""])


@pytest.mark.parametrize("seed", range(60))
def test_after_a_rename_every_link_to_the_note_resolves_to_it_and_nothing_else_changed(seed: int) -> None:
    before = VaultPaths(BEFORE)
    old, new = "people/Ada.md", ["people/Ada Lovelace.md", "archive/2024/Ada.md", "Ada.md", "notes/Ada.md"][seed % 4]
    after = before.moved(old, new)
    text = generated_note(seed)
    result = rewrite_note_links(text, "notes/x.md", old, new, before)
    old_links, new_links = parse_links(text), parse_links(result.text)
    assert len(old_links) == len(new_links)
    changed = 0
    for was, now in zip(old_links, new_links, strict=True):
        resolved = before.resolve_link(was, "notes/x.md")
        if resolved == old:
            assert after.resolve_link(now, "notes/x.md") == new, (was.raw, now.raw)
            assert (now.kind, now.heading, now.block, now.alias) == (was.kind, was.heading, was.block, was.alias)
            changed += now.raw != was.raw
        else:
            assert now.raw == was.raw
    assert changed == len(result.changes)
    # Outside the rewritten links, the text is the same, byte for byte.
    pieces, done = [], 0
    for change in sorted(result.changes, key=lambda change: change.link.start):
        start, end = change.link.start, change.link.end
        if change.link.in_front_matter:
            start, end = start - 1, end + 1
        pieces += [text[done:start], change.new]
        done = end
    assert result.text == "".join(pieces) + text[done:]


def test_many_unmatched_backtick_runs_cost_linear_time() -> None:
    # Runs of 1 to 1,999 backticks, none closed: each one searched the rest of its paragraph for a closer,
    # 2,000 times over 2 MB (about 30 s), before the runs were indexed once per paragraph (tens of ms).
    text = " x ".join("`" * length for length in range(1, 2000)) + " [[Ada]]\n"
    started = time.monotonic()
    assert raws(text) == ["[[Ada]]"]
    elapsed = time.monotonic() - started
    assert elapsed < 10, f"{elapsed:.1f} s for a 2 MB paragraph: quadratic again, or the machine is far too slow"
