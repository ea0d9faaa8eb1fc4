"""The kinds of markdown lines, when new lines join existing ones without a blank line, open fences. Pure.

Used by ``sections.py`` for its blank-line rule 1: a list item under a tight list, a table row
under a table, a quote line under a quote and a plain line under a log (one run of two or more
plain lines) go right against their neighbour; anything else is a block of its own, one blank
line away. Lines are read as ``markdown.py`` reads them: at most three spaces before a marker,
four or more make indented code. :func:`open_fence` finds a code fence a run of lines leaves open.
"""

from __future__ import annotations

import re

ATX = re.compile(r"#{1,6}(?:[ \t]|$)")
SETEXT_UNDERLINE = re.compile(r"(=+|-+)[ \t]*$")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)$")
_THEMATIC_BREAK = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")


def kind_of(line: str) -> str:
    """What a line is, for the blank-line rules: blank, heading, fence, break, item, row, quote, indented, plain."""
    content = line.lstrip(" ")
    if not content.strip():
        return "blank"
    if len(line) - len(content) >= 4 or content[0] == "\t":
        return "indented"
    if ATX.match(content):
        return "heading"
    if _FENCE.match(content):
        return "fence"
    if _THEMATIC_BREAK.match(content):
        return "break"
    if _LIST_ITEM.match(content):
        return "item"
    if content[0] == "|":
        return "row"
    if content[0] == ">":
        return "quote"
    return "indented" if line[0] in " \t" and len(line) - len(content) >= 2 else "plain"


def joins(upper: list[str], lower: list[str], existing_above: bool) -> bool:
    """Whether ``lower`` goes right under ``upper`` with no blank line (rule 1 of sections.py).

    ``upper`` ends and ``lower`` starts with a non-blank line; both are the lines of one section
    between headings. ``existing_above`` says which of them is the note's (whose layout decides).
    """
    last, first = upper[-1], lower[0]
    if SETEXT_UNDERLINE.match(first.lstrip(" ")) and kind_of(last) in ("plain", "indented"):
        return False  # "---" or "===" right under a line would make that line a heading
    above, below = kind_of(last), kind_of(first)
    if below == "item":
        in_list = above == "item" or (above == "indented" and "item" in map(kind_of, _blocks(upper)[-1]))
        return in_list and not _loose_list(upper if existing_above else lower, at_end=existing_above)
    if above == below and above in ("row", "quote"):
        return True
    existing = upper if existing_above else lower
    return above == below == "plain" and _is_log(existing)


def _blocks(lines: list[str]) -> list[list[str]]:
    """The runs of non-blank lines."""
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def _loose_list(lines: list[str], *, at_end: bool) -> bool:
    """Whether the list at the end (or the start) of ``lines`` has blank lines between its items."""
    blocks = _blocks(lines)
    if len(blocks) < 2:
        return False
    if at_end:  # the last block starts an item, and the block above it ends in the same list
        return kind_of(blocks[-1][0]) == "item" and kind_of(blocks[-2][-1]) in ("item", "indented")
    return kind_of(blocks[1][0]) == "item" and kind_of(blocks[0][-1]) in ("item", "indented")


def _is_log(lines: list[str]) -> bool:
    """Two or more plain lines and no blank line between them: one entry per line."""
    blocks = _blocks(lines)
    return len(blocks) == 1 and len(blocks[0]) >= 2 and all(kind_of(line) == "plain" for line in blocks[0])


def open_fence(lines: list[str]) -> tuple[str, int] | None:
    """The code fence left open at the end of ``lines`` (its marker and line index), as markdown.py reads fences."""
    fence: tuple[str, int, int] | None = None  # marker character, length, line index
    for index, line in enumerate(lines):
        content = line.lstrip(" ")
        if len(line) - len(content) >= 4:
            continue
        marker = content.rstrip(" \t")
        if fence is not None:
            if len(marker) >= fence[1] and marker == fence[0] * len(marker):
                fence = None
        elif opening := _FENCE.match(content):
            found = opening.group(1)
            if not (found[0] == "`" and "`" in opening.group(2)):
                fence = (found[0], len(found), index)
    return (fence[0] * 3, fence[2]) if fence is not None else None
