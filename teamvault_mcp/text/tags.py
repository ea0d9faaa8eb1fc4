"""Tags: inline ``#tags`` and front matter ``tags``, by Obsidian's rules, and their counts. Pure.

Inline (:func:`note_tags`): ``#`` at the start of a line or after white space, in prose
(``prose.py``: not in code, inline code or HTML comments; not inside a link), followed by
tag characters. A tag character is anything but white space, the punctuation ``!"#$%&'()*+,.:;<=>?@[\\]^`{|}~``
and the General and Supplemental Punctuation blocks (U+2000–U+206F, U+2E00–U+2E7F):
so letters of any script, digits, ``_``, ``-``, ``/`` (nesting) and most emoji are in, and a
tag ends at the first other character (``#done.`` is ``done``). A tag needs one character that
is not a digit: ``#1984`` is no tag, ``#y1984`` and ``#1984s`` are. ``# Title`` is a heading
(a space follows), ``foo#bar`` and ``(#bar)`` are no tags; tags in a heading's text count.

Front matter: the properties ``tags`` and ``tag`` (any case): a list, each item one tag, or a
string of tags separated by commas and/or spaces; a leading ``#`` is dropped. A value that is
no valid tag (``my tag`` as one list item, ``2024``) is not a tag: it is listed in ``rejected``.

Nested tags (``a/b/c``) count at each level: ``a``, ``a/b``, ``a/b/c``. Tags compare ignoring
case (``#Work`` and ``#work`` are one tag); the form shown is the spelling most notes use
(on a tie, the one that sorts first).

A note's first :data:`MAX_TAGS_PER_NOTE` tags are kept, and none inline of a note too large for
facts (``prose.py``); links past the first :data:`~teamvault_mcp.text.links.MAX_LINKS_PER_NOTE`
of a note are not blanked out, so a ``#`` after a space inside one of those counts as a tag.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from teamvault_mcp.text.links import parse_links
from teamvault_mcp.text.prose import NoteText, as_note, blank

_TAG_CHARACTER = r"[^\s\u2000-\u206F\u2E00-\u2E7F!\"#$%&'()*+,.:;<=>?@\[\]\\^`{|}~]"
#: A ``#`` and tag characters; that white space or the line's start comes before is checked apart (a pattern
#: that starts with a literal is found many times faster).
_INLINE_TAG = re.compile(rf"#({_TAG_CHARACTER}+)")
_TAG = re.compile(rf"{_TAG_CHARACTER}+")
_SEPARATORS = re.compile(r"[\s,]+")
_DIGITS = re.compile(r"[0-9]+")
FRONT_MATTER_KEYS = ("tags", "tag")
#: The tags of one note the index keeps (:func:`note_tags`): the first 10,000, front matter first. A note of
#: 100,000 tags took 1.3 s to read and 0.4 s a call to count.
MAX_TAGS_PER_NOTE = 10_000


@dataclass(frozen=True, slots=True)
class Tag:
    """One tag in a note, as written (without ``#``); ``line``/``column`` are 1-based, 0 for front matter."""

    name: str
    source: str  # "inline" or "frontmatter"
    line: int = 0
    column: int = 0

    @property
    def key(self) -> str:
        return tag_key(self.name)


@dataclass(frozen=True)
class NoteTags:
    """A note's tags in order of appearance (front matter first), and front matter values that are no tags."""

    tags: tuple[Tag, ...]
    rejected: tuple[str, ...] = ()

    def levels(self) -> set[str]:
        """Every tag of the note, case folded, each nested tag at each level."""
        return set(self.spellings)

    @cached_property
    def spellings(self) -> dict[str, str]:
        """Each tag of the note at each level, case folded → its first spelling in the note (worked out once:
        an index keeps a note's tags, and counts them on every call)."""
        seen: dict[str, str] = {}
        for tag in self.tags:
            for level in tag_levels(tag.name):
                seen.setdefault(tag_key(level), level)
        return seen


@dataclass(frozen=True)
class TagCount:
    """A tag (at one level), the form shown, and how many notes carry it (or a tag nested under it)."""

    key: str
    name: str
    notes: int


def tag_key(name: str) -> str:
    return name.casefold()


def is_tag(name: str) -> bool:
    """Whether ``name`` (without ``#``) is a valid tag."""
    return bool(_TAG.fullmatch(name)) and not _DIGITS.fullmatch(name)


def tag_levels(name: str) -> list[str]:
    """``a/b/c`` → ``["a", "a/b", "a/b/c"]``; empty levels (``a//b``, a trailing ``/``) are skipped."""
    levels: list[str] = []
    for index, char in enumerate(name):
        if char == "/" and index and name[index - 1] != "/":
            levels.append(name[:index])
    if not name.endswith("/"):
        levels.append(name)
    return levels or [name]


def note_tags(note: str | NoteText, path: str = "", *, limit: int = MAX_TAGS_PER_NOTE) -> NoteTags:
    """The tags of one note: its front matter's, then the inline ones in order; the first ``limit`` of them (a note
    too large for facts, ``prose.py``: its front matter's only)."""
    note = as_note(note, path)
    found, rejected = front_matter_tags(note.fields)
    if len(found) >= limit or note.oversized:
        return NoteTags(tuple(found[:limit]), tuple(rejected))
    text = note.prose
    if "#" not in text:
        return NoteTags(tuple(found), tuple(rejected))
    links = [(link.start, link.end) for link in parse_links(note) if not link.in_front_matter]
    text = blank(text, links)
    for match in _INLINE_TAG.finditer(text, note.body_start):
        name = match.group(1)
        before = text[match.start() - 1] if match.start() else "\n"
        if before.isspace() and not _DIGITS.fullmatch(name):
            line, column = note.position(match.start())
            found.append(Tag(name, "inline", line, column))
            if len(found) >= limit:
                break
    return NoteTags(tuple(found), tuple(rejected))


def front_matter_tags(fields: Mapping[str, Any]) -> tuple[list[Tag], list[str]]:
    """The tags of front matter ``fields``, and the values under ``tags``/``tag`` that are no tags."""
    found: list[Tag] = []
    rejected: list[str] = []
    for key, value in fields.items():
        if key.casefold() not in FRONT_MATTER_KEYS or value is None:
            continue
        if isinstance(value, str):
            items = [item for item in _SEPARATORS.split(value) if item]
        elif isinstance(value, list):
            items = [_scalar_text(item) for item in value if item is not None]
        else:
            items = [_scalar_text(value)]
        for item in items:
            name = item.strip()
            name = name[1:] if name.startswith("#") else name
            if is_tag(name):
                found.append(Tag(name, "frontmatter"))
            elif item.strip():
                rejected.append(item)
    return found, rejected


def count_tags(notes: Iterable[NoteTags]) -> list[TagCount]:
    """Each tag, at each level of nesting, with the number of notes that carry it; most notes first."""
    pairs: Counter[tuple[str, str]] = Counter()
    for tags in notes:
        pairs.update(tags.spellings.items())
    return counted_tags(pairs)


def counted_tags(pairs: Counter[tuple[str, str]]) -> list[TagCount]:
    """:func:`count_tags` from how many notes spell each tag (case folded) each way: shown as most of them spell
    it (the first such spelling in code point order on a tie)."""
    counts: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for (key, spelling), notes in pairs.items():
        counts[key] += notes
        spellings.setdefault(key, Counter())[spelling] += notes
    shown = {key: min(spelling.items(), key=lambda item: (-item[1], item[0]))[0] for key, spelling in spellings.items()}
    return [
        TagCount(key, shown[key], count) for key, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def carries(tags: NoteTags, tag: str) -> bool:
    """Whether the note carries ``tag`` (``#`` optional, any case) or a tag nested under it."""
    wanted = tag_key(tag.strip().removeprefix("#"))
    return wanted in tags.spellings


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
