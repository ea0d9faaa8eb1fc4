"""Edits aimed at a section of a note: append, prepend or replace under a heading. Pure.

A section is named by its tocPath (the names note_outline gives: ``["Meeting", "Notes [2]"]``
for the second ``Notes``), by the breadcrumb a search hit shows (``"Meeting > Notes"``,
refused when two headings there share that title), or ``[]`` / ``""`` for the whole note.
A section runs from its heading down to the next heading of the same or a higher level, so
its subsections are part of it (as ``read_note(section=…)`` has it).

- ``append`` (the default): after the section's last non-blank line, subsections included,
  before the blank lines that lead to the next heading of the same or a higher level;
  for the whole note, at its end.
- ``append_body``: the same, but at the end of the section's own text, before its first
  subheading (for the whole note, before its first heading); without one, as ``append``.
- ``prepend``: right after the heading line (after the blank lines that follow it); for the
  whole note, after the front matter, if any, else at the top.
- ``replace``: everything under the heading, subsections included, replaced; the heading and
  the blank lines around the body stay. For the whole note: everything after the front matter.

Blank lines at the content's edges are dropped; the note decides them instead (``blocks.py``):

1. between existing text and the content: none when they join, else one. They join when a list
   item meets a tight list (a loose one, blank lines between its items, stays loose), a table
   row a table, a quote line a quote, or a plain line a log: text that is one run of two or
   more plain lines (since the last heading). A ``---`` or ``===`` line never joins a line above;
2. between a heading (or the front matter) and content in an empty section: one blank line if
   most headings of the note have one under them (none after front matter);
3. between the content and a heading that follows: the blank lines that were there; when there
   were none and the section was empty, one if most headings of the note have one above them;
4. never a second blank line where there is one already; a setext heading that follows always
   gets one (without it the content's last line would become part of its title).

Lines are written in the note's own line ending; the others keep theirs. The end of the note
keeps its final line break, or its lack of one (an empty note takes the content's). The result
is checked: if the content would change any heading around it (an unclosed code fence, an
underline for the line above it), nothing is returned but :class:`EditFailedError`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from teamvault_mcp.errors import EditFailedError, Suggest, ToolInputError
from teamvault_mcp.text.blocks import ATX, SETEXT_UNDERLINE, joins, open_fence
from teamvault_mcp.text.diff import newline_of
from teamvault_mcp.text.markdown import Document, Heading, find_section, parse

MODES = ("append", "append_body", "prepend", "replace")
BOM = "\ufeff"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_NAME_SUFFIX = re.compile(r" \[\d+\]$")


@dataclass(frozen=True)
class Placement:
    """An edit's result and where the content landed, for the answer to say."""

    text: str
    #: The tocPath of the section written to, as the note names it; () for the whole note.
    section: tuple[str, ...] = ()
    #: The subheading whose text the content follows (an append that ends the last subsection), as ``### Title``.
    after: str = ""
    #: The first subheading the content went before (append_body), as ``### Title``.
    before: str = ""


def edit_section(text: str, section: Sequence[str] | str, content: str, mode: str = "append") -> str:
    """``text`` with ``content`` put into ``section`` by ``mode`` (see the module docstring).

    Raises :class:`MissingHeading` (markdown.py's, as section reads do) for a missing section,
    :class:`AmbiguousBreadcrumb` for a single name that two headings below the top level have,
    :class:`ToolInputError` for a bad mode, empty content to add or an ambiguous breadcrumb,
    :class:`EditFailedError` when the content cannot go there without breaking the note.
    """
    return place(text, section, content, mode).text


def place(text: str, section: Sequence[str] | str, content: str, mode: str = "append") -> Placement:
    """:func:`edit_section`, and where the content landed."""
    if mode not in MODES:
        raise ToolInputError(f"mode must be one of {', '.join(MODES)}; got {mode!r}.")
    new = content_lines(content)
    _refuse_unclosed_content(new)
    if not new and mode != "replace":
        raise ToolInputError(
            f"content is empty: there is nothing to {mode}. To empty a section, use mode=replace with empty content."
        )
    if text == BOM:  # a byte-order mark and nothing else: an empty note
        empty = place("", section, content, mode)
        return Placement(BOM + empty.text, empty.section)
    note = _Note(parse(text))  # as section reads parse it, so that their tocPaths name the same sections
    heading = section_heading(note.document, section)
    if heading is None:
        start, end = note.front_matter_end, len(note.bare)
    else:
        start, end = note.heading_end[heading.start_line - 1] + 1, heading.end_line
    subheadings = sorted(index for index in note.heading_end if start <= index < end)
    after = before = ""
    if mode == "append":
        at, until, inserted = note.append(start, end, new)
        if above := [index for index in subheadings if index < at]:
            after = note.heading_line(above[-1])
    elif mode == "append_body":
        body_end = subheadings[0] if subheadings else end
        at, until, inserted = note.append(start, body_end, new)
        if subheadings:
            before = note.heading_line(body_end)
    elif mode == "prepend":
        at, until, inserted = note.prepend(start, end, new)
    else:
        at, until, inserted = note.replace(start, end, new)
    ends_with_break = text.endswith(("\n", "\r")) if text else content.endswith(("\n", "\r"))
    result = _splice(note.document.lines, at, until, inserted, newline_of(text), ends_with_break)
    _check_headings(note.document if not text.startswith(BOM) else parse(text[1:]), result, at, until, new)
    return Placement(result, heading.path if heading else (), after, before)


def create_note_with(section: Sequence[str] | str, content: str) -> str:
    """The text of a new note holding ``content`` in ``section``: its headings are created, one level per name.

    ``["Log"]`` gives ``# Log``, ``["2024", "Log"]`` gives ``# 2024`` and ``## Log``, with a blank line
    after each heading. A name with a ``[2]`` suffix is refused: there is no first one to follow.
    """
    names = _names_of(section)
    blocks: list[str] = []
    for depth, name in enumerate(names, start=1):
        if not name.strip() or _LINE_BREAK.search(name):
            raise ToolInputError(f"Heading {depth} of section is {name!r}: a heading name is one non-empty line.")
        if _NAME_SUFFIX.search(name):
            raise ToolInputError(
                f'section names "{name}", a repeated title, but the note does not exist yet, so there is no first '
                f'"{_NAME_SUFFIX.sub("", name)}". Drop the suffix, or create the note first.'
            )
        if depth > 6:
            raise ToolInputError(f"section is {len(names)} headings deep; markdown has six heading levels.")
        blocks.append(f"{'#' * depth} {name.strip()}")
    lines = content_lines(content)
    _refuse_unclosed_content(lines)
    if lines:
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n" if blocks else ""


def section_heading(document: Document, section: Sequence[str] | str) -> Heading | None:
    """The heading ``section`` names (a tocPath or a breadcrumb), or None for the whole note."""
    if isinstance(section, str):
        return _by_breadcrumb(document, section)
    return find_section(document, list(section)) if section else None


def content_lines(content: str) -> list[str]:
    """The lines of ``content`` without their endings, the blank lines at its start and end dropped."""
    lines = _LINE_BREAK.split(content)
    while lines and not lines[-1].strip():
        lines.pop()
    first = next((index for index, line in enumerate(lines) if line.strip()), len(lines))
    return lines[first:]


def _names_of(section: Sequence[str] | str) -> list[str]:
    if isinstance(section, str):
        return [part.strip() for part in section.split(" > ")] if section.strip() else []
    return list(section)


def _by_breadcrumb(document: Document, breadcrumb: str) -> Heading | None:
    """The heading a search breadcrumb (titles joined by `` > ``) names; a repeated title is refused."""
    names = _names_of(breadcrumb)
    level, heading = document.headings, None
    for depth, name in enumerate(names):
        alike = [sibling for sibling in level if sibling.title == name]
        if len(alike) > 1:
            where = f"under {' > '.join(names[:depth])}" if depth else "at the top level"
            choices = " or ".join(_json_list(sibling.path) for sibling in alike[:5])
            raise ToolInputError(
                f'The breadcrumb "{breadcrumb}" is ambiguous: {len(alike)} headings {where} are titled "{name}". '
                f"Pass section as a tocPath instead: {choices}",
                Suggest(
                    ("note_outline", "search_notes"),
                    " (note_outline and search hits give it)",
                    Suggest(
                        ("note_outline",),
                        " (note_outline gives it)",
                        Suggest(("search_notes",), " (search hits give it)"),
                    ),
                ),
                ".",
            )
        heading = find_section(document, names[: depth + 1])
        level = heading.children
    return heading


def _json_list(names: tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{name}"' for name in names) + "]"


@dataclass
class _Note:
    """A parsed note with what the blank-line rules need: heading lines, front matter, the note's habits.

    Positions are 0-based line indexes. Each edit returns ``(at, until, lines)``: replace the
    note's lines ``at``..``until`` (exclusive) by ``lines``, written without their endings.
    """

    document: Document

    def __post_init__(self) -> None:
        self.bare = [line.rstrip("\r\n") for line in self.document.lines]
        if self.bare:
            self.bare[0] = self.bare[0].removeprefix(BOM)
        self.front_matter_end = _after_front_matter(self.bare)
        #: For each heading's first line, its last line: the underline of a setext heading.
        self.headings = {h.start_line - 1: h for h in _flat(self.document.headings)}
        self.heading_end = {start: self._last_heading_line(h) for start, h in self.headings.items()}
        self.heading_lines = {i for start, end in self.heading_end.items() for i in range(start, end + 1)}

    def _last_heading_line(self, heading: Heading) -> int:
        start = heading.start_line - 1
        if ATX.match(self.bare[start].lstrip(" ")):
            return start
        for index in range(start + 1, heading.end_line):
            line = self.bare[index]
            if len(line) - len(line.lstrip(" ")) < 4 and SETEXT_UNDERLINE.match(line.lstrip(" ")):
                return index
        return start  # not reached: markdown.py found an underline

    def heading_line(self, index: int) -> str:
        """The heading starting at line ``index``, written as an ATX heading: ``### Title``."""
        heading = self.headings[index]
        return f"{'#' * heading.level} {heading.title}"

    @cached_property
    def blank_around_headings(self) -> tuple[bool, bool]:
        """Whether most headings have a blank line under them, and above them (yes, without evidence)."""
        under, above = [0, 0], [0, 0]  # [blank, not blank]
        for start, end in self.heading_end.items():
            if end + 1 < len(self.bare) and end + 1 not in self.heading_lines:
                under[bool(self.bare[end + 1].strip())] += 1
            if start > self.front_matter_end and start - 1 not in self.heading_lines:
                above[bool(self.bare[start - 1].strip())] += 1
        return under[0] >= under[1], above[0] >= above[1]

    def _atx_heading_at(self, index: int) -> bool:
        return self.heading_end.get(index) == index

    def _gap_before(self, at: int) -> list[str]:
        """Blank lines between what is above ``at`` (a heading, or the front matter) and content in an empty
        section (rule 2)."""
        if at == self.front_matter_end:
            return []
        return [""] if self.blank_around_headings[0] else []

    def _gap_after(self, end: int, *, section_was_empty: bool) -> list[str]:
        """Blank lines between content and the heading at ``end`` when nothing separated them (rules 3, 4)."""
        if end >= len(self.bare):
            return []
        if not self._atx_heading_at(end):
            return [""]  # a setext heading (or a heading past the outline): always set apart
        return [""] if section_was_empty and self.blank_around_headings[1] else []

    def _fill_empty(self, at: int, end: int, new: list[str]) -> tuple[int, int, list[str]]:
        """Content into an empty stretch ``at``..``end`` (blank lines only, maybe none) under a heading."""
        after = self._gap_after(end, section_was_empty=True) if at == end else []  # else the blanks there stay
        return at, at, self._gap_before(at) + new + after

    def _non_blank(self, start: int, end: int) -> list[int]:
        return [index for index in range(start, end) if self.bare[index].strip()]

    def append(self, start: int, end: int, new: list[str]) -> tuple[int, int, list[str]]:
        filled = self._non_blank(start, end)
        if not filled:
            return self._fill_empty(start, end, new)
        tail = filled[-1]
        if tail in self.heading_lines:  # the last subsection is empty: the content goes under its heading
            return self._fill_empty(tail + 1, end, new)
        region_start = max([start, *(index + 1 for index in self.heading_lines if index < tail)])
        region = self.bare[region_start : tail + 1]
        if (fence := open_fence(region)) is not None:
            raise EditFailedError(
                f"The section ends inside a code block that is never closed (the {fence[0]} at line "
                f"{region_start + fence[1] + 1}): appended text would be code too. Close the block first ",
                Suggest(("edit_note",), "(edit_note), then append", "and then append"),
                ". Nothing was changed.",
            )
        separator = [] if joins(region, new, existing_above=True) else [""]
        after = self._gap_after(end, section_was_empty=False) if tail + 1 == end else []
        return tail + 1, tail + 1, separator + new + after

    def prepend(self, start: int, end: int, new: list[str]) -> tuple[int, int, list[str]]:
        filled = self._non_blank(start, end)
        if not filled:
            return self._fill_empty(start, end, new)
        first = filled[0]
        if first in self.heading_lines:  # no text of its own, only subsections
            return self._fill_empty(start, first, new)
        region_end = next((index for index in range(first, end) if index in self.heading_lines), end)
        separator = [] if joins(new, self.bare[first:region_end], existing_above=False) else [""]
        return first, first, new + separator

    def replace(self, start: int, end: int, new: list[str]) -> tuple[int, int, list[str]]:
        filled = self._non_blank(start, end)
        if not filled:
            return (start, start, []) if not new else self._fill_empty(start, end, new)
        first, last = filled[0], filled[-1]
        if not new:  # one run of blank lines stays between the heading and the next: the lower one, if any
            return (start, last + 1, []) if last + 1 < end else (first, end, [])
        after = self._gap_after(end, section_was_empty=False) if last + 1 == end else []
        return first, last + 1, new + after


def _flat(headings: list[Heading]) -> list[Heading]:
    found: list[Heading] = []
    for heading in headings:
        found.append(heading)
        found.extend(_flat(heading.children))
    return found


def _after_front_matter(bare: list[str]) -> int:
    """Index of the first line after the front matter (0 without one): the rule of markdown.py and frontmatter.py."""
    if not bare or bare[0].rstrip() != "---":
        return 0
    for index in range(1, len(bare)):
        if bare[index].rstrip() in ("---", "..."):
            return index + 1
    return 0


def _refuse_unclosed_content(lines: list[str]) -> None:
    if (fence := open_fence(lines)) is not None:
        raise EditFailedError(
            f"The content opens a code block ({fence[0]} on its line {fence[1] + 1}) that it does not close: the "
            f"rest of the note would become code. Add the closing {fence[0]}. Nothing was changed."
        )


def _splice(lines: list[str], at: int, until: int, inserted: list[str], newline: str, ends_with_break: bool) -> str:
    """``lines`` with ``lines[at:until]`` replaced by ``inserted`` (bare lines, written with ``newline``).

    A byte-order mark stays first, whatever goes to the top.
    """
    bom = BOM if lines and lines[0].startswith(BOM) else ""
    if bom:
        lines = [lines[0][1:], *lines[1:]]
    head, tail = lines[:at], lines[until:]
    written = [line + newline for line in inserted]
    if written and head and not head[-1].endswith(("\n", "\r")):
        head[-1] += newline  # the note's last line had no line break: it gets one before the new lines
    if not tail:
        last = written or head
        if last and not ends_with_break:
            last[-1] = last[-1].rstrip("\r\n")
    return bom + "".join(head + written + tail)


def _check_headings(document: Document, result: str, at: int, until: int, new: list[str]) -> None:
    """Refuse a result whose headings are not the note's, minus those replaced, plus the content's own.

    ``document`` is the note read without its byte-order mark, if it has one, and so is the result:
    with one, markdown.py reads no heading on the first line, and content put at the top would seem
    to lose its heading.
    """
    result = result.removeprefix(BOM)
    old = [(h.level, h.title, h.start_line - 1) for h in _flat(document.headings)]
    expected = [(level, title) for level, title, line in old if line < at]
    expected += [(h.level, h.title) for h in _flat(parse("\n".join(new)).headings)]
    expected += [(level, title) for level, title, line in old if line >= until]
    complete = document.outlined_lines == document.line_count
    found = [(h.level, h.title) for h in _flat(parse(result, max_headings=len(expected) + 1).headings)]
    if found == expected or (not complete and found[: len(expected)] == expected):
        return
    index = next((i for i, pair in enumerate(zip(found, expected, strict=False)) if pair[0] != pair[1]), None)
    if index is None:
        change = "adds headings" if len(found) > len(expected) else "hides headings (after it)"
    else:
        change = f'turns the heading "{expected[index][1]}" into "{found[index][1]}"'
    raise EditFailedError(
        f"The content {change} of the note: an unclosed code fence (```), or a line of === or --- under "
        "text, changes what is a heading around it. Close the fence, or put a blank line before the ---. "
        "Nothing was changed."
    )
