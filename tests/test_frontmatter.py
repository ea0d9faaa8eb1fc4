"""Front matter as data (``frontmatter.py``), and read_frontmatter / update_frontmatter through an MCP client."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.sessions import Session, open_session

from teamvault_mcp.localvault import Fault
from teamvault_mcp.text import frontmatter
from teamvault_mcp.text.frontmatter import FrontMatterError

NOTE = """---
title: Borscht   # the family recipe
tags:
  - soup
  - beet

# where it comes from
origin: Kyiv
country: NO
date: 2024-01-05
---
# Borscht

---

A horizontal rule above; not front matter.
"""


def read(text: str) -> dict[str, Any]:
    return frontmatter.read(text, "n.md")[0]


def update(text: str, changes: dict[str, Any] | None = None, remove: list[str] | None = None) -> str:
    return frontmatter.update(text, changes or {}, remove or [], "n.md")


def body_of(text: str) -> str:
    return frontmatter.split(text).body


# -- reading -----------------------------------------------------------------------------------------------


def test_fields_come_as_json_in_order_read_as_yaml_1_2() -> None:
    fields = read(NOTE)
    assert list(fields) == ["title", "tags", "origin", "country", "date"]
    assert fields == {
        "title": "Borscht",
        "tags": ["soup", "beet"],
        "origin": "Kyiv",
        "country": "NO",  # YAML 1.2, as Obsidian: not false
        "date": "2024-01-05",
    }


@pytest.mark.parametrize(
    "text",
    [
        "# No front matter\n",
        "",
        "text\n---\na: 1\n---\n",  # a --- later in the note is a rule, not front matter
        "---\na: 1\n",  # never closed
        "---",
    ],
)
def test_no_front_matter_is_an_empty_object(text: str) -> None:
    assert read(text) == {}
    assert frontmatter.split(text).body == text


@pytest.mark.parametrize("block", ["---\n---\n", "---\n\n---\n", "---\n# only a comment\n---\n"])
def test_an_empty_block_is_an_empty_object(block: str) -> None:
    parts = frontmatter.split(block + "body\n")
    assert parts.present and read(block + "body\n") == {} and parts.body == "body\n"


def test_unicode_keys_and_values_lists_and_nesting() -> None:
    text = "---\nназва: Борщ 🍲\n'ключ з пробілом': так\nsteps: [a, b]\nmeta:\n  servings: 4\n  spicy: false\n---\n"
    assert read(text) == {
        "назва": "Борщ 🍲",
        "ключ з пробілом": "так",
        "steps": ["a", "b"],
        "meta": {"servings": 4, "spicy": False},
    }


def test_crlf_and_a_byte_order_mark() -> None:
    text = "\ufeff---\r\ntitle: x\r\n---\r\nbody\r\n"
    assert read(text) == {"title": "x"}
    assert body_of(text) == "body\r\n"


def test_odd_scalars_become_text_json_can_carry() -> None:
    text = "---\nwhen: 2024-01-05 10:30:00\ninf: .inf\nnan: .nan\nnothing:\nbig: 12345678901234567890\n---\n"
    assert read(text) == {
        "when": "2024-01-05T10:30:00",
        "inf": ".inf",
        "nan": ".nan",
        "nothing": None,
        "big": 12345678901234567890,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\ntitle: x\ntags: [a, b\nnext: 1\n---\n", "Invalid front matter in n.md, line 4: "),
        ("---\na: 1\na: 2\n---\n", 'Invalid front matter in n.md, line 3: found duplicate key "a"'),
        ("---\na: b: c\n---\n", "Invalid front matter in n.md, line 2: mapping values are not allowed here"),
        ("---\n- a\n- b\n---\n", "The front matter of n.md is a list, not key: value pairs"),
        ("---\njust text\n---\n", "The front matter of n.md is a single value, not key: value pairs"),
    ],
)
def test_bad_yaml_is_an_error_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(FrontMatterError) as caught:
        read(text)
    assert str(caught.value).startswith(message)


# -- changing -----------------------------------------------------------------------------------------------


def test_setting_a_field_leaves_every_other_line_as_it_was() -> None:
    changed = update(NOTE, {"origin": "Poltava"})
    assert changed == NOTE.replace("origin: Kyiv\n", "origin: Poltava\n")


def test_new_fields_are_appended_and_removed_ones_go_comments_stay() -> None:
    changed = update(NOTE, {"servings": 6}, ["country"])
    assert changed == NOTE.replace("country: NO\n", "").replace("date: 2024-01-05\n", "date: 2024-01-05\nservings: 6\n")
    assert "# where it comes from" in changed
    assert read(changed)["servings"] == 6


def test_values_are_written_the_way_obsidian_writes_them() -> None:
    changed = update(
        "---\ntitle: x\n---\n",
        {
            "tags": ["a", "b"],
            "due": "2026-12-01",
            "notes": "line one\nline two\n",
            "flag": "yes",
            "count": "10",
            "empty": None,
            "meta": {"k": [1, 2]},
        },
    )
    assert changed == (
        "---\ntitle: x\ntags:\n  - a\n  - b\ndue: 2026-12-01\nnotes: |\n  line one\n  line two\n"
        "flag: 'yes'\ncount: '10'\nempty:\nmeta:\n  k:\n    - 1\n    - 2\n---\n"
    )
    assert read(changed) == {
        "title": "x",
        "tags": ["a", "b"],
        "due": "2026-12-01",
        "notes": "line one\nline two\n",
        "flag": "yes",
        "count": "10",
        "empty": None,
        "meta": {"k": [1, 2]},
    }


def test_lists_follow_the_style_already_in_the_block() -> None:
    changed = update("---\ntags:\n- a\n---\n", {"more": ["x"]})
    assert changed == "---\ntags:\n- a\nmore:\n- x\n---\n"


def test_a_nested_value_is_replaced_whole() -> None:
    changed = update("---\nmeta:\n  a: 1\n  b: 2\n---\n", {"meta": {"c": 3}})
    assert read(changed) == {"meta": {"c": 3}}


def test_a_note_without_front_matter_gets_a_block_and_keeps_its_body() -> None:
    text = "# Title\r\n\r\n---\r\nbody\r\n"
    changed = update(text, {"status": "draft"})
    assert changed == "---\r\nstatus: draft\r\n---\r\n" + text
    assert read(changed) == {"status": "draft"}
    assert update(text, {}, ["status"]) == text  # nothing to remove, nothing to add


def test_crlf_notes_stay_crlf_and_the_bom_stays_first() -> None:
    text = "\ufeff---\r\na: 1\r\nb: 2\r\n---\r\nbody\r\n"
    assert update(text, {"a": [1, 2]}, ["b"]) == "\ufeff---\r\na:\r\n  - 1\r\n  - 2\r\n---\r\nbody\r\n"
    assert update("\ufeffbody\n", {"a": 1}) == "\ufeff---\na: 1\n---\nbody\n"


def test_the_body_is_kept_byte_for_byte() -> None:
    body = "# H\n\ntrailing spaces   \n\ttab\n---\n...\n\nno newline at end"
    text = "---\na: 1\n---\n" + body
    assert body_of(update(text, {"a": 2, "b": "x"}, [])) == body


def test_unicode_fields_round_trip() -> None:
    changed = update(NOTE, {"назва": "Борщ", "emoji": "🍲"})
    assert read(changed)["назва"] == "Борщ" and read(changed)["emoji"] == "🍲"
    assert "назва: Борщ\n" in changed


def test_removing_every_field_leaves_an_empty_block() -> None:
    assert update("---\na: 1\n---\nbody\n", {}, ["a"]) == "---\n---\nbody\n"


def test_an_alias_into_a_removed_field_is_rewritten_not_broken() -> None:
    changed = update("---\nbase: &b 1\nother: *b\n---\n", {}, ["base"])
    assert read(changed) == {"other": 1}


def test_a_flow_style_block_is_rewritten_whole() -> None:
    changed = update("---\n{a: 1, b: 2}\n---\nbody\n", {"c": 3})
    assert read(changed) == {"a": 1, "b": 2, "c": 3} and body_of(changed) == "body\n"


def test_an_unclosed_block_is_not_guessed_at() -> None:
    with pytest.raises(FrontMatterError, match="starts with a --- line that no later --- line closes"):
        update("---\na: 1\nbody\n", {"b": 2})


def test_invalid_yaml_is_not_changed() -> None:
    with pytest.raises(FrontMatterError, match="line 3"):  # where the list should have been closed
        update("---\na: [1\n---\n", {"b": 2})


# -- blocks that crashed update_frontmatter, and merge keys -------------------------------------------------


@pytest.mark.parametrize("block", ["", "\n", "# only a comment\n", "\n# a comment\n\n", "&anchor\n"])
def test_an_empty_or_comment_only_block_gets_the_new_fields_and_keeps_its_lines(block: str) -> None:
    text = f"---\n{block}---\nbody\n"
    changed = update(text, {"status": "done"})
    assert changed == f"---\n{block}status: done\n---\nbody\n"
    assert read(changed) == {"status": "done"}
    assert update(text, {}, ["missing"]) == text


MERGED = "---\nbase: &base\n  a: 1\n  b: 2\n<<: *base\nc: 3   # own\n---\nbody\n"


def test_merge_keys_read_as_the_fields_they_bring_in() -> None:
    assert read(MERGED) == {"base": {"a": 1, "b": 2}, "c": 3, "a": 1, "b": 2}
    nested = "---\ndefaults: &d {size: M, color: red}\nitem:\n  <<: *d\n  color: blue\n---\n"
    assert read(nested)["item"] == {"color": "blue", "size": "M"}  # the mapping's own key wins


def test_fields_around_a_merge_entry_change_line_by_line_and_the_merge_line_stays() -> None:
    text = "---\np: 1\n<<: {a: 1}\nq: 2\n---\n"
    assert update(text, {"p": 5, "q": 6}) == "---\np: 5\n<<: {a: 1}\nq: 6\n---\n"
    assert update(MERGED, {"c": 4, "new": True}) == MERGED.replace("c: 3   # own\n", "c: 4\nnew: true\n")


def test_setting_a_merged_field_writes_an_own_line_and_leaves_the_merged_mapping() -> None:
    changed = update(MERGED, {"a": 10})
    assert changed == MERGED.replace("c: 3   # own\n", "c: 3   # own\na: 10\n")
    assert read(changed) == {"base": {"a": 1, "b": 2}, "c": 3, "a": 10, "b": 2}


def test_removing_a_merged_field_is_refused_because_it_would_still_be_there() -> None:
    with pytest.raises(FrontMatterError) as caught:
        update(MERGED, {}, ["a"])
    assert str(caught.value) == (
        "Cannot remove a from the front matter of n.md: it comes from a merge key (<<: …), not from a line of its "
        "own, so removing would change nothing. Set it to null instead, or change the << entry with edit_note. "
        "Nothing was written."
    )
    for block in ["<<: {a: 1, b: 1}\na: 2\n", "<<: {a: 1}\na: 2\n"]:  # its own line goes, the merged a comes back
        with pytest.raises(FrontMatterError) as caught:
            update(f"---\n{block}---\n", {}, ["a"])
        assert str(caught.value) == (
            "Cannot remove a from the front matter of n.md: a merge key (<<: …) gives it too, so without its own "
            "line it would still be there, with the merged value. Set it to null instead, or change the << entry "
            "with edit_note. Nothing was written."
        )
    assert read(update(MERGED, {"a": None}))["a"] is None


def test_changing_the_mapping_a_merge_refers_to_never_changes_the_merged_fields() -> None:
    for changes, remove in [({"base": {"a": 5}}, []), ({}, ["base"])]:
        changed = update(MERGED, changes, remove)
        fields = read(changed)
        assert (fields["a"], fields["b"], fields["c"]) == (1, 2, 3), changed
        assert fields.get("base") == changes.get("base")
    nested = "---\ndefaults: &d {size: M, color: red}\nitem:\n  <<: *d\n  color: blue\n---\n"
    assert read(update(nested, {"defaults": {"size": "L"}}))["item"] == {"color": "blue", "size": "M"}


# -- the tools ----------------------------------------------------------------------------------------------


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, structured_content=True) as running:
        yield running


@pytest.mark.anyio
async def test_read_then_update_by_field(session: Session) -> None:
    await session.ok("write_note", path="recipes/borscht.md", content=NOTE)
    read_result = await session.ok("read_frontmatter", path="recipes/borscht.md")
    assert read_result["frontmatter"]["country"] == "NO" and read_result["hasFrontmatter"] is True
    assert read_result["contentHash"] == hashlib.sha256(NOTE.encode()).hexdigest()

    updated = await session.ok(
        "update_frontmatter",
        path="recipes/borscht.md",
        set={"servings": 6, "tags": ["soup"]},
        remove=["country", "missing"],
        expectedHash=read_result["contentHash"],
    )
    stored = session.content("recipes/borscht.md").decode()
    assert updated["contentHash"] == hashlib.sha256(stored.encode()).hexdigest()
    assert updated["frontmatter"] == read(stored)
    assert updated["absent"] == ["missing"]
    assert "+servings: 6" in updated["diff"] and "-country: NO" in updated["diff"]
    assert body_of(stored) == body_of(NOTE)


@pytest.mark.anyio
async def test_a_dry_run_and_a_repeat_write_nothing(session: Session) -> None:
    await session.ok("write_note", path="n.md", content="body\n")
    dry = await session.ok("update_frontmatter", path="n.md", set={"a": 1}, dryRun=True)
    assert dry["changed"] is True and session.content("n.md") == b"body\n"
    await session.ok("update_frontmatter", path="n.md", set={"a": 1})
    text, is_error, again = await session.call("update_frontmatter", path="n.md", set={"a": 1})
    assert not is_error and again["changed"] is False and text.startswith("No change:")
    assert session.operations() == ["CREATE", "UPDATE"]


@pytest.mark.anyio
async def test_a_stale_hash_is_a_conflict(session: Session) -> None:
    await session.ok("write_note", path="n.md", content="---\na: 1\n---\n")
    text, is_error, _ = await session.call("update_frontmatter", path="n.md", set={"a": 2}, expectedHash="0" * 64)
    assert is_error and text.startswith("Conflict: n.md has changed since you read it")


@pytest.mark.anyio
async def test_a_lost_answer_is_replayed_not_applied_twice(session: Session) -> None:
    await session.ok("write_note", path="n.md", content="---\na: 1\n---\n")
    session.vault.faults.add("PUT", "/api/projects/*/files/*", Fault.apply_then_close())
    await session.ok("update_frontmatter", path="n.md", set={"a": 2})
    assert session.operations() == ["CREATE", "UPDATE"]
    assert read(session.content("n.md").decode()) == {"a": 2}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "Give set (fields to write), remove (field names to drop), or both."),
        ({"set": {"a": 1}, "remove": ["a"]}, "A field cannot be both set and removed: a."),
        ({"set": ["a"]}, "Argument 'set' must be an object of names and values, got array."),
        ({"set": {"": 1}}, "Argument 'set' holds an empty name."),
        ({"remove": "a"}, "Argument 'remove' must be an array of strings, got str."),
        ({"remove": []}, "Argument 'remove' must hold 1 to 100 names, not 0."),
    ],
)
async def test_bad_arguments_write_nothing(session: Session, arguments: dict[str, Any], message: str) -> None:
    await session.ok("write_note", path="n.md", content="---\na: 1\n---\n")
    text, is_error, _ = await session.call("update_frontmatter", path="n.md", **arguments)
    assert is_error and text.startswith(message), text
    assert session.operations() == ["CREATE"]


@pytest.mark.anyio
async def test_invalid_yaml_in_the_vault_is_named_and_left_alone(session: Session) -> None:
    await session.ok("write_note", path="n.md", content="---\ntitle: x\ntags: [a\n---\nbody\n")
    text, is_error, _ = await session.call("read_frontmatter", path="n.md")
    assert is_error and text.startswith("Invalid front matter in n.md, line 4:")
    text, is_error, _ = await session.call("update_frontmatter", path="n.md", set={"a": 1})
    assert is_error and "Invalid front matter in n.md" in text
    assert session.operations() == ["CREATE"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("", {"status": "done"}),
        ("# only a comment\n", {"status": "done"}),
        ("base: &base {a: 1}\n<<: *base\nb: 2\n", {"base": {"a": 1}, "b": 2, "a": 1, "status": "done"}),
    ],
)
async def test_blocks_that_crashed_the_tool_are_updated(session: Session, block: str, expected: dict[str, Any]) -> None:
    await session.ok("write_note", path="n.md", content=f"---\n{block}---\nbody\n")
    updated = await session.ok("update_frontmatter", path="n.md", set={"status": "done"})
    assert updated["frontmatter"] == expected
    stored = session.content("n.md").decode()
    assert stored == f"---\n{block}status: done\n---\nbody\n" and read(stored) == expected


# -- many values, checked by reading back -----------------------------------------------------------------

AWKWARD_TEXTS = [
    "",
    " leading space",
    "trailing space ",
    "a: b",
    "# not a comment",
    "- not a list",
    "'quoted'",
    '"double"',
    "null",
    "~",
    "yes",
    "NO",
    "1e3",
    "0x10",
    "2024-01-05",
    "2024-13-45",
    "12:30",
    "@at",
    "`tick`",
    "{curly}",
    "[square]",
    "ünïcödé ✓",
    "tab\tinside",
    "two\nlines",
    "ends with newline\n",
    "\nstarts with newline",
    "  indented\n  block\n",
    "*star",
    "&amp",
    "!bang",
    "%percent",
    "| pipe",
    "> fold",
]
AWKWARD_VALUES: list[Any] = [
    *AWKWARD_TEXTS,
    0,
    -7,
    3.5,
    True,
    False,
    None,
    [],
    {},
    ["a", 1, None],
    {"nested": {"deeper": ["x", {"y": "z"}]}},
    [[1, 2], [3]],
]


def test_any_json_value_reads_back_as_written_and_other_lines_stay() -> None:
    import random

    chooser = random.Random(20261130)
    base = "---\nkeep: this line stays   # with its comment\nother: [1, 2]\n---\nbody\n"
    for _ in range(400):
        changes = {f"k{index}": chooser.choice(AWKWARD_VALUES) for index in range(chooser.randint(1, 4))}
        if chooser.random() < 0.3:
            changes["other"] = chooser.choice(AWKWARD_VALUES)
        changed = update(base, changes)
        expected = {"keep": "this line stays", "other": [1, 2], **changes}
        assert read(changed) == expected, (changes, changed)
        assert "keep: this line stays   # with its comment\n" in changed
        assert body_of(changed) == "body\n"
        fresh = update("body\n", changes)
        assert read(fresh) == changes, (changes, fresh)


@pytest.mark.anyio
async def test_a_note_that_is_not_utf8_is_refused_whole(session: Session) -> None:
    from teamvault_mcp.localvault.store import Change

    store, project = session.vault.store, session.vault.project_id
    with store.write() as db:
        store.create(Change(db, project, store.owner_of(project)), "latin1.md", b"---\na: caf\xe9\n---\n", None)
    for tool, arguments in [
        ("update_frontmatter", {"set": {"b": 1}}),
        ("edit_note", {"edits": [{"oldText": "a", "newText": "b"}]}),
    ]:
        text, is_error, _ = await session.call(tool, path="latin1.md", **arguments)
        assert is_error and "latin1.md is not valid UTF-8 text;" in text and "cannot be changed safely" in text
    assert session.operations() == ["CREATE"]
