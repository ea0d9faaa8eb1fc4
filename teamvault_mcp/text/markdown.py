"""The heading structure of a markdown note: outline, sections and line slices. Pure functions.

A note is split into lines (``\\n``, ``\\r\\n`` or ``\\r``; each line keeps its ending,
so a slice is the note's own bytes). Headings are ATX (``## Title``, closing ``#``s
dropped) and setext (a paragraph underlined with ``===`` or ``---``), as CommonMark
has them. Not headings: lines in the YAML front matter, in fenced code blocks
(````` `` ````` or ``~~~``), indented four spaces or more, or ``#tag`` lines.

A heading's *section* runs from its first line to the line before the next heading
of the same or a higher level. Among siblings, repeated titles get a stable name to
pass back: the first ``Notes`` is ``Notes``, the second ``Notes [2]``, and so on. A
section is named by its *tocPath*, the names from the top down, either as a list or as
one breadcrumb string, ``Runbook > Failover`` (:func:`find_breadcrumb`; a title that
itself holds `` > `` is found too, and a string that could mean two sections is refused).
A single name that no top-level heading has names the one heading of that name at any
depth (``Next steps`` for ``Planning > Next steps``); two such headings are refused with
both tocPaths, none with the closest ones.

A note of more than :data:`MAX_HEADINGS` headings is outlined up to the last line before
the first heading past that number (``Document.outlined_lines``): beyond it, its lines
are plain text to the outline. That bounds the time and memory a hostile note can cost.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_ATX = re.compile(r"(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_SETEXT = re.compile(r"(=+|-+)[ \t]*$")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)$")
_LIST_OR_QUOTE = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)|>")
_THEMATIC_BREAK = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")

#: Headings outlined per note: ten times what a 2 MB book has (2,000), and few enough that a parse
#: stays near 0.1 s and 10 MB whatever the note holds (searches keep the outlines of the notes they hit).
MAX_HEADINGS = 20_000
#: Longest piece of text ``split_lines`` gives the line pattern at once: a few milliseconds holding
#: the GIL, so that other threads (the event loop) get turns while a 5 MB note is split.
SPLIT_PIECE_CHARS = 256 * 1024


@dataclass(slots=True)
class Heading:
    """One heading and its section. Lines are 1-based and inclusive."""

    title: str
    level: int
    start_line: int
    end_line: int = 0
    chars: int = 0
    name: str = ""  # the title, made unique among its siblings
    path: tuple[str, ...] = ()
    children: list[Heading] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {
            "title": self.title,
            "level": self.level,
            "path": list(self.path),
            "hasChildren": bool(self.children),
            "startLine": self.start_line,
            "endLine": self.end_line,
            "chars": self.chars,
        }


@dataclass
class Document:
    """A parsed note: its lines (with their endings) and its heading tree."""

    lines: list[str]
    headings: list[Heading]  # the top level
    #: Lines before the first heading (front matter included); 0 when the note starts with a heading.
    preamble_end: int
    #: The last line the outline covers: all of them, unless the note has more than MAX_HEADINGS headings.
    outlined_lines: int = 0

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def text(self, start_line: int, end_line: int) -> str:
        """Lines ``start_line``..``end_line`` (1-based, inclusive), exactly as in the note."""
        return "".join(self.lines[start_line - 1 : end_line])


class MissingHeading(LookupError):
    """No heading at ``missing`` under ``found``; ``available`` are the names that exist there, ``closest`` the
    tocPaths of the headings anywhere in the note whose names come closest to ``missing``. A lookup in one
    parsed text, without a path: the tools answer it as ``errors.SectionNotFoundError``, which names the note."""

    def __init__(
        self,
        found: tuple[str, ...],
        missing: str,
        available: list[str],
        closest: list[tuple[str, ...]] | None = None,
    ) -> None:
        super().__init__(missing)
        self.found = found
        self.missing = missing
        self.available = available
        self.closest = closest or []


def split_lines(text: str, piece_chars: int = SPLIT_PIECE_CHARS) -> list[str]:
    """The lines of ``text``, each with its ending. A long text is split piece by piece, each
    piece ending right after a line break (so a ``\r\n`` is never cut in two)."""
    if len(text) <= piece_chars:
        return _LINE.findall(text)
    lines: list[str] = []
    start = 0
    while start < len(text):
        end = text.find("\n", start + piece_chars) + 1
        if end == 0:  # no \n after this point: a lone \r ends lines there, if anything does
            end = text.find("\r", start + piece_chars) + 1 or len(text)
        lines += _LINE.findall(text, start, end)
        start = end
    return lines


def parse(text: str, max_headings: int = MAX_HEADINGS) -> Document:
    lines = split_lines(text)
    flat = _headings([line.rstrip("\r\n") for line in lines], max_headings + 1)
    outlined = len(lines)
    if len(flat) > max_headings:  # the outline stops before the first heading it does not take
        outlined = flat.pop().start_line - 1
    ends = list(accumulate(len(line) for line in lines))  # ends[i]: characters up to the end of line i+1

    def close(heading: Heading, last_line: int) -> None:
        heading.end_line = last_line
        heading.chars = ends[last_line - 1] - (ends[heading.start_line - 2] if heading.start_line > 1 else 0)

    top: list[Heading] = []
    open_headings: list[Heading] = []  # the chain of sections the current line is in
    for heading in flat:
        while open_headings and open_headings[-1].level >= heading.level:
            close(open_headings.pop(), heading.start_line - 1)
        (open_headings[-1].children if open_headings else top).append(heading)
        open_headings.append(heading)
    for heading in open_headings:
        close(heading, outlined)
    _name(top, ())
    return Document(lines, top, flat[0].start_line - 1 if flat else len(lines), outlined)


def find_section(document: Document, toc_path: list[str]) -> Heading:
    """The heading at ``toc_path`` (names from the top, as the outline gives them); a single name no top-level
    heading has, the only heading of that name at any depth (:class:`AmbiguousBreadcrumb` when there are more)."""
    level = document.headings
    found: tuple[str, ...] = ()
    heading: Heading | None = None
    for wanted in toc_path:
        heading = _match(level, wanted)
        if heading is None and len(toc_path) == 1:
            heading = _anywhere(document, wanted)
        if heading is None:
            listed = {(*found, h.name) for h in level} | {(h.name,) for h in document.headings}
            closest = [path for path in closest_sections(document, wanted) if path not in listed]
            raise MissingHeading(found, wanted, [h.name for h in level], closest)
        found = heading.path
        level = heading.children
    if heading is None:
        raise MissingHeading((), "", [h.name for h in document.headings])
    return heading


#: Between the names of a breadcrumb string: ``Operations Runbook > Failover``.
BREADCRUMB = " > "


class AmbiguousBreadcrumb(LookupError):
    """A breadcrumb string that names more than one section; ``paths`` are their tocPaths."""

    def __init__(self, text: str, paths: list[tuple[str, ...]]) -> None:
        super().__init__(text)
        self.text = text
        self.paths = paths


def breadcrumb_of(toc_path: tuple[str, ...] | list[str]) -> str:
    """The string form of a tocPath: its names joined by `` > ``."""
    return BREADCRUMB.join(toc_path)


def toc_argument(toc_path: tuple[str, ...] | list[str]) -> str:
    """A tocPath written as a tool argument, in JSON: one breadcrumb string ``"Runbook > Failover"``, or the list
    of names when one of them holds `` > `` itself (a string would then be ambiguous to read back)."""
    if any(BREADCRUMB in name for name in toc_path):
        return json.dumps(list(toc_path), ensure_ascii=False)
    return json.dumps(breadcrumb_of(toc_path), ensure_ascii=False)


def find_breadcrumb(document: Document, text: str) -> Heading:
    """The heading a breadcrumb string names (``Runbook > Failover``), trying every split of the string at
    `` > `` so that a title holding `` > `` is found too: first by exact names, then ignoring case and spacing.

    :class:`AmbiguousBreadcrumb` when it names two sections; :class:`MissingHeading` (as for the list
    split at every `` > ``) when it names none.
    """
    for key in (str, _loose):
        found: list[Heading] = []
        _walk_breadcrumb(document.headings, key(text), key, found)
        if len(found) == 1:
            return found[0]
        if found:
            raise AmbiguousBreadcrumb(text, [heading.path for heading in found])
    return find_section(document, text.split(BREADCRUMB))


def _walk_breadcrumb(level: list[Heading], rest: str, key: Callable[[str], str], found: list[Heading]) -> None:
    for heading in level:
        name = key(heading.name)
        if rest == name:
            found.append(heading)
        elif rest.startswith(name + BREADCRUMB):
            _walk_breadcrumb(heading.children, rest[len(name) + len(BREADCRUMB) :], key, found)


def _match(siblings: list[Heading], wanted: str) -> Heading | None:
    """The sibling named ``wanted``; failing that, the only one whose name matches ignoring case and spacing."""
    for heading in siblings:
        if heading.name == wanted:
            return heading
    key = _loose(wanted)
    loose = [heading for heading in siblings if _loose(heading.name) == key]
    return loose[0] if len(loose) == 1 else None


def _anywhere(document: Document, wanted: str) -> Heading | None:
    """The one heading below the top level named ``wanted`` (by exact name, else ignoring case and spacing)."""
    every = [heading for heading in all_headings(document.headings) if len(heading.path) > 1]
    for key in (str, _loose):
        alike = [heading for heading in every if key(heading.name) == key(wanted)]
        if len(alike) == 1:
            return alike[0]
        if alike:
            raise AmbiguousBreadcrumb(wanted, [heading.path for heading in alike])
    return None


#: TocPaths suggested for a missing section.
CLOSEST_SECTIONS = 5


def closest_sections(document: Document, wanted: str) -> list[tuple[str, ...]]:
    """The tocPaths of the headings, at any depth, whose names are ``wanted`` or come closest to it (at most
    :data:`CLOSEST_SECTIONS`): the same
    name ignoring case and spacing, then names that hold it, then names spelled alike."""
    every = all_headings(document.headings)
    key = _loose(wanted)
    if not key:
        return []
    names = [_loose(heading.name) for heading in every]
    ranked = [h for h, name in zip(every, names, strict=True) if name == key]
    ranked += [h for h, name in zip(every, names, strict=True) if name != key and key in name]
    alike = set(difflib.get_close_matches(key, names, n=CLOSEST_SECTIONS, cutoff=0.6))
    ranked += [h for h, name in zip(every, names, strict=True) if name in alike]
    paths: list[tuple[str, ...]] = []
    for heading in ranked:
        if heading.path not in paths:
            paths.append(heading.path)
    return paths[:CLOSEST_SECTIONS]


def all_headings(headings: list[Heading]) -> list[Heading]:
    """``headings`` and all their subheadings, in the note's order."""
    found: list[Heading] = []
    for heading in headings:
        found.append(heading)
        found.extend(all_headings(heading.children))
    return found


def _loose(text: str) -> str:
    return " ".join(text.split()).casefold()


def _name(siblings: list[Heading], parent: tuple[str, ...]) -> None:
    seen: dict[str, int] = {}
    for heading in siblings:
        count = seen.get(heading.title, 0) + 1
        seen[heading.title] = count
        heading.name = heading.title if count == 1 else f"{heading.title} [{count}]"
        heading.path = (*parent, heading.name)
        _name(heading.children, heading.path)


def _headings(bare: list[str], at_most: int) -> list[Heading]:
    """The first ``at_most`` headings in document order, with their level, title and first line (1-based)."""
    found: list[Heading] = []
    start = _after_front_matter(bare)
    fence: tuple[str, int] | None = None
    paragraph: int | None = None  # index of the first line of the paragraph in progress
    in_block = False  # inside a list item or block quote: its lazy lines are no setext titles
    for index in range(start, len(bare)):
        line = bare[index]
        if fence is not None:
            if _closes(line, fence):
                fence = None
            continue
        content = line.lstrip(" ")
        if not content.strip():
            paragraph, in_block = None, False
            continue
        if len(line) - len(content) >= 4:
            continue  # indented code, or a paragraph's continuation: never a heading
        first = content[0]
        if first in "`~" and (opening := _FENCE.match(content)):
            marker = opening.group(1)
            if not (marker[0] == "`" and "`" in opening.group(2)):
                fence, paragraph = (marker[0], len(marker)), None
                continue
        if first == "#" and (atx := _ATX.match(content)):
            title = _ATX_CLOSING.sub("", atx.group(2) or "").strip()
            found.append(Heading(title, len(atx.group(1)), index + 1))
            if len(found) == at_most:
                break
            paragraph, in_block = None, False
            continue
        if first in "=-" and paragraph is not None and _SETEXT.match(content):
            title = " ".join(bare[i].strip() for i in range(paragraph, index))
            found.append(Heading(title, 1 if first == "=" else 2, paragraph + 1))
            if len(found) == at_most:
                break
            paragraph = None
            continue
        if _THEMATIC_BREAK.match(content):
            paragraph, in_block = None, False
            continue
        if _LIST_OR_QUOTE.match(content) or first in "|<":  # lists, quotes, tables, HTML
            paragraph, in_block = None, True
            continue
        if paragraph is None and not in_block:
            paragraph = index
    return found


def _after_front_matter(bare: list[str]) -> int:
    """Index of the first line after a YAML front matter block (``---`` … ``---``), or 0."""
    if not bare or bare[0].lstrip("\ufeff").rstrip() != "---":  # the rule of frontmatter.py
        return 0
    for index in range(1, len(bare)):
        if bare[index].rstrip() in ("---", "..."):
            return index + 1
    return 0  # never closed: not front matter


def _closes(line: str, fence: tuple[str, int]) -> bool:
    content = line.lstrip(" ")
    if len(line) - len(content) >= 4:
        return False
    marker = content.rstrip(" \t")
    return len(marker) >= fence[1] and marker == fence[0] * len(marker)
