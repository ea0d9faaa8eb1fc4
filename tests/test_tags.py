"""Tags by Obsidian's rules (text/tags.py): inline and front matter, nesting, counting, table-driven."""

from __future__ import annotations

import pytest

from teamvault_mcp.text.tags import NoteTags, TagCount, carries, count_tags, front_matter_tags, note_tags, tag_levels


def inline(text: str) -> list[str]:
    return [tag.name for tag in note_tags(text).tags if tag.source == "inline"]


INLINE = {
    "at the start of a line": ("#todo", ["todo"]),
    "after a space": ("a #todo b", ["todo"]),
    "after a tab": ("a\t#todo", ["todo"]),
    "nested": ("#project/alpha/api", ["project/alpha/api"]),
    "hyphen and underscore": ("#to-do #to_do #- #_", ["to-do", "to_do", "-", "_"]),
    "letters of any script": ("#проект #日本語 #café #ελληνικά", ["проект", "日本語", "café", "ελληνικά"]),
    "emoji": ("#🚀 #🚀launch #done✅", ["🚀", "🚀launch", "done✅"]),
    "digits with a letter": ("#y1984 #1984s #3d", ["y1984", "1984s", "3d"]),
    "only digits: no tag": ("#1984 #2024/05", ["2024/05"]),
    "punctuation ends a tag": (
        "#done. #a,b #c:d #e!f #g?h #i)j #k'l #m\"n",
        ["done", "a", "c", "e", "g", "i", "k", "m"],
    ),
    "general punctuation ends a tag": ("#a‼b #c\u2014d #e\u201cf", ["a", "c", "e"]),
    "a heading is no tag": ("# Title\n## Sub #tag", ["tag"]),
    "a tag in a heading's text counts": ("## Plan #q3", ["q3"]),
    "inside a word: no tag": ("foo#bar C#", []),
    "after punctuation: no tag": ("(#x) [#y] '#z' /#w", []),
    "a lone #": ("# and ## and #", []),
    "in inline code": ("`#code` #real", ["real"]),
    "in a fenced block": ("```\n#code\n```\n#real", ["real"]),
    "in indented code": ("text\n\n    #code\n\n#real", ["real"]),
    "in an HTML comment": ("<!-- #hidden --> #real", ["real"]),
    "in a wikilink's heading or alias": ("[[Note#Heading]] [[Note| #alias]] #real", ["real"]),
    "in a Markdown link": ("[see #this](#frag) [x](<a #b.md>) #real", ["real"]),
    "an anchor in a URL": ("https://example.com/#anchor #real", ["real"]),
    "case is kept as written": ("#Work #work", ["Work", "work"]),
    "in a list item and a quote": ("- #a\n> #b\n- [ ] #c", ["a", "b", "c"]),
    "front matter is not inline": ("---\nx: '#no'\n---\n#yes", ["yes"]),
}


@pytest.mark.parametrize("text, expected", INLINE.values(), ids=INLINE.keys())
def test_inline_tags(text: str, expected: list[str]) -> None:
    assert inline(text) == expected


def test_inline_tags_have_lines_and_columns() -> None:
    tags = note_tags("---\ntags: [a]\n---\nx #b\r\n  #c\n").tags
    assert [(tag.name, tag.source, tag.line, tag.column) for tag in tags] == [
        ("a", "frontmatter", 0, 0),
        ("b", "inline", 4, 3),
        ("c", "inline", 5, 3),
    ]


FRONT_MATTER = {
    "a list": ({"tags": ["a", "b/c"]}, ["a", "b/c"], []),
    "with #": ({"tags": ["#a", "#b"]}, ["a", "b"], []),
    "a string, commas": ({"tags": "a, b,c"}, ["a", "b", "c"], []),
    "a string, spaces": ({"tags": "#a b  #c"}, ["a", "b", "c"], []),
    "tag, singular": ({"tag": "solo"}, ["solo"], []),
    "any case of the key": ({"Tags": ["x"], "TAG": "y"}, ["x", "y"], []),
    "a number is no tag": ({"tags": [2024, "y2024"]}, ["y2024"], ["2024"]),
    "a list item with a space is no tag": ({"tags": ["my tag", "ok"]}, ["ok"], ["my tag"]),
    "punctuation is no tag": ({"tags": ["a.b"]}, [], ["a.b"]),
    "null and empty": ({"tags": None, "tag": ""}, [], []),
    "null items": ({"tags": [None, "a"]}, ["a"], []),
    "other fields are not tags": ({"keywords": ["a"], "tagline": "b"}, [], []),
}


@pytest.mark.parametrize("fields, expected, rejected", FRONT_MATTER.values(), ids=FRONT_MATTER.keys())
def test_front_matter_tags(fields: dict[str, object], expected: list[str], rejected: list[str]) -> None:
    found, refused = front_matter_tags(fields)
    assert ([tag.name for tag in found], refused) == (expected, rejected)


def test_a_note_s_front_matter_and_inline_tags_together() -> None:
    tags = note_tags("---\ntags:\n  - project/alpha\n  - '#meeting'\n---\n# Notes\nDiscussed #risk.\n")
    assert [(tag.name, tag.source) for tag in tags.tags] == [
        ("project/alpha", "frontmatter"),
        ("meeting", "frontmatter"),
        ("risk", "inline"),
    ]
    assert tags.levels() == {"project", "project/alpha", "meeting", "risk"}


def test_a_note_whose_front_matter_does_not_read_still_has_its_inline_tags() -> None:
    tags = note_tags("---\ntags: [a\n---\n#b\n", "x.md")
    assert [tag.name for tag in tags.tags] == ["b"]


LEVELS = {
    "one level": ("a", ["a"]),
    "three levels": ("a/b/c", ["a", "a/b", "a/b/c"]),
    "a trailing slash": ("a/b/", ["a", "a/b"]),
    "an empty level": ("a//b", ["a", "a//b"]),
}


@pytest.mark.parametrize("name, expected", LEVELS.values(), ids=LEVELS.keys())
def test_tag_levels(name: str, expected: list[str]) -> None:
    assert tag_levels(name) == expected


def test_counts_are_notes_at_each_level_ignoring_case_with_the_most_used_spelling() -> None:
    notes = [
        note_tags("#Project/Alpha #project/alpha again #work"),
        note_tags("#project/beta #Work"),
        note_tags("---\ntags: [work]\n---\n#Project"),
        note_tags("no tags"),
    ]
    assert count_tags(notes) == [
        TagCount("project", "Project", 3),
        TagCount("work", "work", 3),
        TagCount("project/alpha", "Project/Alpha", 1),
        TagCount("project/beta", "project/beta", 1),
    ]


def test_a_spelling_tie_shows_the_one_that_sorts_first() -> None:
    assert count_tags([note_tags("#b"), note_tags("#B")]) == [TagCount("b", "B", 2)]


def test_a_note_carries_a_tag_and_the_tags_nested_under_it() -> None:
    tags = note_tags("#project/alpha/api")
    assert [
        carries(tags, wanted) for wanted in ("project", "#Project/Alpha", "project/alpha/api", "alpha", "proj")
    ] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert not carries(NoteTags(()), "x")
