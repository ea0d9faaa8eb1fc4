"""A seeded differential fuzz of update_frontmatter's text change: random notes × random set/remove.

The notes are built from the shapes real front matter takes (block and flow values, lists at column 0 or
indented, literal blocks, comments between keys, quoted keys, anchors and aliases, merge keys at the top
and nested, empty and comment-only blocks, CRLF, a byte-order mark) and some that are invalid. For every
case: no exception but FrontMatterError, and that only where the generator says a refusal is right; after
a change, the front matter reads as exactly the fields expected (the old ones, minus the removed, plus the
set); the body is unchanged byte for byte; and where the layout allows it (a block mapping whose changed
keys no alias depends on) every untouched entry and every comment line is still there, byte for byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from teamvault_mcp.text import frontmatter
from teamvault_mcp.text.frontmatter import FrontMatterError

SEED = 20261213
CASES = 400

SCALARS = ["Borscht", "two words", "'quoted: text'", '"double"', "42", "3.5", "true", "NO", "yes", "~", "2024-01-05"]
VALUES: list[Any] = [
    "text",
    "",
    "yes",
    "NO",
    "on",
    "1_000",
    "12:30",
    "0x1F",
    "1e3",
    "2026-12-01",
    "2024-13-45",
    "a: b",
    "# hash",
    "two\nlines\n",
    "ünïcödé ✓",
    "<<",
    0,
    -7,
    3.5,
    1e20,
    True,
    False,
    None,
    [],
    {},
    ["a", 1, None, "off"],
    {"nested": {"deeper": ["x", {"y": "z"}]}},
]
BODIES = ["", "Body.\n", "# Title\n\n---\n\nAfter a rule.\n", "no newline at the end", "\n\n  indented\n"]


@dataclass
class Entry:
    key: str  # the field name as JSON has it ("<<" for a merge entry)
    text: str  # its lines, exactly as written
    anchor: str | None = None  # the anchor it defines
    uses: tuple[str, ...] = ()  # the anchors it refers to
    gives: tuple[str, ...] = ()  # for a merge entry: the fields it brings in


@dataclass
class Case:
    yaml: str
    entries: list[Entry] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    flow: bool = False
    invalid: bool = False


def entry(chooser: random.Random, name: str, anchors: list[str]) -> Entry:
    """One ``key: value`` entry of a random shape; it may define an anchor or use one defined earlier."""
    shape = chooser.randrange(12)
    scalar = chooser.choice(SCALARS)
    key = chooser.choice([name, name, f'"{name}"', f"'{name}'"])
    if shape == 0:
        return Entry(name, f"{key}: {scalar}\n")
    if shape == 1:
        return Entry(name, f"{key}: {scalar}   # a comment\n")
    if shape == 2:
        return Entry(name, f"{key}:\n  - {scalar}\n  - b\n")
    if shape == 3:
        return Entry(name, f"{key}:\n- a\n- {scalar}\n")
    if shape == 4:
        return Entry(name, f"{key}: [a, {scalar}]\n")
    if shape == 5:
        return Entry(name, f"{key}:\n  x: {scalar}\n  y: [1, 2]\n")
    if shape == 6:
        return Entry(name, f"{key}: |\n  line one\n  line two\n")
    if shape == 7:
        return Entry(name, f"{key}: >-\n  folded\n  text\n")
    if shape == 8:
        return Entry(name, f"{key}:\n")
    if shape == 9:
        return Entry(name, f"{key}: &{name} {{x: 1, y: {scalar}}}\n", anchor=name)
    if shape == 10 and anchors:
        target = chooser.choice(anchors)
        return Entry(name, f"{key}: *{target}\n", uses=(target,))
    if shape == 11 and anchors:
        target = chooser.choice(anchors)
        return Entry(name, f"{key}:\n  <<: *{target}\n  z: 3\n", uses=(target,))
    return Entry(name, f"{key}: {scalar}\n")


def merge_entry(chooser: random.Random, anchors: list[str]) -> Entry:
    if anchors and chooser.random() < 0.7:
        targets = chooser.sample(anchors, k=min(len(anchors), chooser.randint(1, 2)))
        text = f"<<: *{targets[0]}\n" if len(targets) == 1 else f"<<: [{', '.join(f'*{t}' for t in targets)}]\n"
        return Entry("<<", text, uses=tuple(targets), gives=("x", "y"))  # what every anchored mapping holds
    name = f"m{chooser.randrange(3)}"
    return Entry("<<", f"<<: {{{name}: merged, x: from-merge}}\n", gives=(name, "x"))


def block(chooser: random.Random) -> Case:
    kind = chooser.random()
    if kind < 0.05:
        return Case("")
    if kind < 0.10:
        return Case("# only a comment\n", comments=["# only a comment\n"])
    if kind < 0.15:
        return Case("\n\n")
    if kind < 0.20:
        return Case("{a: 1, b: [x, y], c: yes}\n", flow=True)
    if kind < 0.25:
        return Case(chooser.choice(["a: [1\n", "a: b: c\n", "- a\n- b\n", "just text\n", "a: 1\na: 2\n"]), invalid=True)
    entries: list[Entry] = []
    comments: list[str] = []
    anchors: list[str] = []
    merged = False
    text = ""
    for index in range(chooser.randint(1, 7)):
        if not merged and chooser.random() < 0.2:
            item = merge_entry(chooser, anchors)
            merged = True  # one merge entry per mapping: two are a duplicate key
        else:  # now and then a field that a merge entry gives too: the note's own line takes precedence
            name = "x" if chooser.random() < 0.15 and "x" not in [item.key for item in entries] else f"k{index}"
            item = entry(chooser, name, anchors)
        if item.anchor:
            anchors.append(item.anchor)
        entries.append(item)
        text += item.text
        if chooser.random() < 0.25:
            comment = chooser.choice(["# between keys\n", "\n", "#\n"])
            text += comment
            if comment.startswith("#"):
                comments.append(comment)
    return Case(text, entries, comments)


def expected_after(before: dict[str, Any], changes: dict[str, Any], remove: list[str]) -> dict[str, Any]:
    result = {name: value for name, value in before.items() if name not in remove}
    result.update(changes)
    return result


def refusal_is_right(case: Case, remove: list[str]) -> bool:
    """Removing a field that a merge entry gives (as well as, or instead of, a line of its own) cannot work:
    it would still be there."""
    merged = {name for item in case.entries for name in item.gives}
    return case.invalid or any(name in merged for name in remove)


def layout_allows_keeping(case: Case, touched: set[str]) -> bool:
    """A block mapping, and no changed or removed key defines an anchor another entry uses."""
    used = {anchor for item in case.entries for anchor in item.uses}
    return not case.flow and not any(item.anchor in used for item in case.entries if item.key in touched)


def test_random_updates_read_back_as_expected_keep_the_body_and_untouched_lines() -> None:
    chooser = random.Random(SEED)
    outcomes = {"changed": 0, "refused": 0, "kept lines checked": 0}
    for number in range(CASES):
        case = block(chooser)
        newline = "\r\n" if chooser.random() < 0.15 else "\n"
        head = "\ufeff" if chooser.random() < 0.1 else ""
        body = chooser.choice(BODIES).replace("\n", newline)
        note = f"{head}---{newline}{case.yaml.replace(chr(10), newline)}---{newline}{body}"
        try:
            before = frontmatter.read(note, "n.md")[0]
        except FrontMatterError:
            assert case.invalid, (number, note)
            before = None
        names = list(before or {}) + [f"new{index}" for index in range(3)]
        changes = {name: chooser.choice(VALUES) for name in chooser.sample(names, k=chooser.randint(0, 3))}
        remove = [name for name in chooser.sample(names, k=chooser.randint(0, 2)) if name not in changes]
        if not changes and not remove:
            changes = {"added": chooser.choice(VALUES)}
        where = f"case {number}: set={changes!r} remove={remove!r} in\n{note}"
        try:
            changed = frontmatter.update(note, changes, remove, "n.md")
        except FrontMatterError as error:
            assert before is None or refusal_is_right(case, remove), f"{where}\nrefused: {error}"
            outcomes["refused"] += 1
            continue
        assert before is not None, f"{where}\nan invalid note was changed"
        outcomes["changed"] += 1
        assert frontmatter.read(changed, "n.md")[0] == expected_after(before, changes, remove), where
        assert frontmatter.split(changed).body == body, where
        assert changed.startswith(head + "---"), where
        touched = set(changes) | set(remove)
        if layout_allows_keeping(case, touched):
            outcomes["kept lines checked"] += 1
            new_yaml = frontmatter.split(changed).yaml
            for item in case.entries:
                if item.key not in touched:
                    assert item.text.replace("\n", newline) in new_yaml, f"{where}\nlost {item.text!r}"
            for comment in case.comments:
                assert comment.replace("\n", newline) in new_yaml, f"{where}\nlost the comment {comment!r}"
    # The generator reaches every outcome, and mostly changes notes.
    assert outcomes["changed"] > CASES * 0.7 and outcomes["refused"] > 0 and outcomes["kept lines checked"] > CASES / 2
