"""A note's prose: its text with code, HTML comments and front matter blanked out. Pure.

Links, tags and tasks live in prose only. :class:`NoteText` wraps a note's text once and
gives, lazily and cached, what ``links.py``, ``tags.py`` and ``tasks.py`` share:

- ``prose``: the text with every character that is not prose replaced by a space (line
  breaks kept), so that a pattern found in it has the same offset, line and column in the
  note itself;
- the front matter (the rule of ``frontmatter.py``) read once as fields, and where its YAML
  starts; a block that cannot be read gives no fields and a ``front_matter_problem``;
- offsets to 1-based lines and columns.

Not prose, as CommonMark has it (simplified where noted):

- the front matter block;
- fenced code blocks (````` ``` ````` or ``~~~``, at most three spaces in, or inside a list
  item or a ``>`` quote), to their closing fence or the end of the note;
- indented code: lines four spaces (or a tab) in after a blank line, outside a list (a line
  that far in under a paragraph or a list item continues it, and stays prose);
- code spans: a run of backticks up to the next run of the same length in the same
  paragraph (an unmatched run is plain text; a backslash-escaped backtick opens nothing);
- HTML comments, ``<!--`` to the next ``-->``, across lines.

Obsidian's own ``%%comments%%`` stay prose: a link hidden in one is still a link, to keep
right when its note moves.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from teamvault_mcp.text import frontmatter

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_NOT_LINE_BREAK = re.compile(r"[^\r\n]")
#: How a line starts: quote markers, indentation, a list marker, then a fence, or a mark that starts a block.
_SHAPE = re.compile(
    r"(?P<quote>(?: {0,3}>[ \t]?)*)(?P<indent>[ \t]*)"
    r"(?P<item>(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|(?=[\r\n])|$))?[ \t]*"
    r"(?:(?P<fence>`{3,}|~{3,})|(?P<block>#{1,6}(?:[ \t]|$)|\|))?"
)
_QUOTE_MARKERS = re.compile(r"(?: {0,3}>[ \t]?)+")
#: What opens something in a paragraph: an escaped character, a run of backticks, a comment.
_INLINE = re.compile(r"\\[\s\S]|`+|<!--")
_BACKTICKS = re.compile(r"`+")

#: A note larger than this (UTF-8 bytes) is read for no links, tags or tasks: its prose alone takes about a second
#: to find at 10 MB, and no write of this server makes a note this large (its front matter is still read).
MAX_FACTS_BYTES = 5 * 1024 * 1024


class NoteText:
    """One note's text, and what the models find in it: computed once, on first use."""

    def __init__(
        self, text: str, path: str = "", *, front_matter: tuple[dict[str, Any], str | None] | None = None
    ) -> None:
        """``front_matter``: what an earlier read of the same text gave (:attr:`front_matter_read`), not read again."""
        self.text = text
        self.path = path
        #: What the models found, by model (``links.py`` keeps its links here): each parses once.
        self.found: dict[str, Any] = {}
        if front_matter is not None:
            self.__dict__["_read_fields"] = front_matter  # the cached property's own slot

    @cached_property
    def split(self) -> frontmatter.Split:
        return frontmatter.split(self.text)

    @cached_property
    def yaml_start(self) -> int:
        """Offset of the front matter's YAML (the line after the opening ``---``); -1 without front matter."""
        parts = self.split
        return len(parts.head) + len(parts.opening) if parts.present else -1

    @cached_property
    def body_start(self) -> int:
        """Offset of the first character after the front matter (0 without one)."""
        parts = self.split
        return len(self.text) - len(parts.body) if parts.present else 0

    @cached_property
    def _read_fields(self) -> tuple[dict[str, Any], str | None]:
        if not self.split.present:
            return {}, None
        try:
            fields, _ = frontmatter.read(self.text, self.path or "the note")
        except frontmatter.FrontMatterError as error:  # bad YAML, or past a limit: the body still counts
            return {}, str(error)
        return fields, None

    @property
    def fields(self) -> dict[str, Any]:
        """The front matter as JSON fields; {} when there is none or it cannot be read."""
        return self._read_fields[0]

    @property
    def front_matter_problem(self) -> str | None:
        """Why the front matter gives no fields, when it is there but cannot be read."""
        return self._read_fields[1]

    @property
    def front_matter_read(self) -> tuple[dict[str, Any], str | None] | None:
        """(fields, problem) if the front matter has been read by now, else None: to hand on to a later NoteText."""
        read: tuple[dict[str, Any], str | None] | None = self.__dict__.get("_read_fields")
        return read

    @cached_property
    def line_starts(self) -> list[int]:
        if "\r" in self.text:
            return [0, *(match.end() for match in _LINE_BREAK.finditer(self.text))]
        # Each line's start is the last one's plus its length and the \n: summed in C, not in a Python loop.
        lengths = map((1).__add__, map(len, self.text.split("\n")))
        return [0, *itertools.accumulate(lengths)][:-1]

    def position(self, offset: int) -> tuple[int, int]:
        """The 1-based line and column of ``offset``."""
        index = bisect.bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based) without its line ending."""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    @cached_property
    def oversized(self) -> bool:
        """Whether the note is larger than :data:`MAX_FACTS_BYTES`: too large to be read for facts."""
        return too_large_for_facts(self.text)

    @cached_property
    def prose(self) -> str:
        return blank(self.text, not_prose(self.text, self.body_start))


def too_large_for_facts(text: str) -> bool:
    """Whether ``text`` is more than :data:`MAX_FACTS_BYTES` of UTF-8 (encoded only when it could be)."""
    if len(text) > MAX_FACTS_BYTES:
        return True
    return len(text) * 4 > MAX_FACTS_BYTES and len(text.encode("utf-8", "surrogatepass")) > MAX_FACTS_BYTES


def unindexed_notice(notes: Iterable[tuple[str, int, int]], what: str, cap: int) -> str | None:
    """The notice for the notes (path, size in bytes, how many ``what`` the index kept of it) whose ``what`` the
    index keeps only in part: up to the per-note ``cap``, or none in the body of a note over
    :data:`MAX_FACTS_BYTES`; None when there are none."""
    capped, oversized = [], []
    for path, size, kept in notes:
        if size > MAX_FACTS_BYTES:
            oversized.append(path)
        elif kept >= cap:
            capped.append(path)
    said = []
    if capped:
        said.append(f"the {what} after the first {cap:,} of {_notes(capped)}")
    if oversized:
        said.append(f"the {what} in the body of {_notes(oversized, f'over {MAX_FACTS_BYTES // (1024 * 1024)} MiB')}")
    return f"[Not indexed: {'; '.join(said)}. read_note(path) reads them.]" if said else None


def _notes(paths: list[str], which: str = "") -> str:
    if len(paths) == 1:
        return f"{paths[0]} ({which})" if which else paths[0]
    return f"{len(paths):,} notes{' ' + which if which else ''} (e.g. {paths[0]})"


def as_note(note: str | NoteText, path: str = "") -> NoteText:
    return note if isinstance(note, NoteText) else NoteText(note, path)


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span's characters replaced by spaces, line breaks kept."""
    if not spans:
        return text
    pieces: list[str] = []
    done = 0
    for start, end in spans:
        pieces.append(text[done:start])
        piece = text[start:end]
        if "\n" in piece or "\r" in piece:
            pieces.append(_NOT_LINE_BREAK.sub(" ", piece))
        else:
            pieces.append(" " * len(piece))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def not_prose(text: str, body_start: int) -> list[tuple[int, int]]:
    """The spans of ``text`` that are not prose, in order and not overlapping (see the module docstring)."""
    spans: list[tuple[int, int]] = [(0, body_start)] if body_start else []
    fence: tuple[str, int] | None = None
    after_blank = True  # the start of the body counts as after a blank line
    in_list = False
    in_indented_code = False
    paragraph = [-1, -1]  # start and end of the paragraph in progress; -1: none
    resume = -1  # an HTML comment runs up to here: what comes before is done

    for start, line in _lines(text, body_start):
        while True:  # once more only when a comment that a flush found swallows this line, or part of it
            if resume > start:
                if resume >= start + len(line):
                    break
                line, start = line[resume - start :], resume
            end = start + len(line)
            if fence is not None:
                spans.append((start, end))
                if fence[0] in line and _closes(line, fence, in_list):
                    fence = None
                break
            if line[:1].isalpha():  # most lines: a paragraph's text, at the left margin
                in_indented_code = False
                if after_blank:
                    in_list = False  # after a blank line, text at the margin ends a list
                if paragraph[0] < 0:
                    paragraph[0] = start
                paragraph[1] = end
                after_blank = False
                break
            if not line or line.isspace():
                resume = _flush(text, paragraph, spans)
                if resume > start:
                    continue
                after_blank = True
                break
            shape = _SHAPE.match(line)
            assert shape is not None  # every group is optional
            indent = len(shape.group("indent").expandtabs(4))
            quoted = bool(shape.group("quote"))
            if in_indented_code and indent >= 4 and not quoted:
                spans.append((start, end))
                break
            in_indented_code = False
            if indent >= 4 and after_blank and not in_list and not quoted:
                in_indented_code = True  # after a blank line: no paragraph is in progress
                spans.append((start, end))
                break
            marker = shape.group("fence")
            if marker and (indent < 4 or in_list) and not (marker[0] == "`" and "`" in line[shape.end() :]):
                resume = _flush(text, paragraph, spans)
                if resume > start:
                    continue
                fence = (marker[0], len(marker))
                spans.append((start, end))
                break
            if shape.group("item") or shape.group("block"):
                # A list item, heading, quote or table row starts a block of its own.
                resume = _flush(text, paragraph, spans)
                if resume > start:
                    continue
            if shape.group("item"):
                in_list = True
            elif indent == 0 and after_blank and not quoted:
                in_list = False
            if paragraph[0] < 0:
                paragraph[0] = start
            paragraph[1] = end
            after_blank = False
            if shape.group("block"):
                # A heading or a table row is one line: no code span runs on from it.
                resume = _flush(text, paragraph, spans)
            break
    _flush(text, paragraph, spans)
    return spans


def _flush(text: str, paragraph: list[int], spans: list[tuple[int, int]]) -> int:
    """Find the paragraph's code spans and comments (then no paragraph is in progress); the offset a comment
    running past the paragraph ends at, or -1."""
    if paragraph[0] < 0:
        return -1
    reached = _inline_spans(text, paragraph[0], paragraph[1], spans)
    paragraph[0] = -1
    return reached


def _lines(text: str, start: int) -> list[tuple[int, str]]:
    """Each line from ``start`` on: where it starts, and its text without the line break."""
    found: list[tuple[int, str]] = []
    if "\r" in text:
        position = start
        for match in _LINE_BREAK.finditer(text, start):
            found.append((position, text[position : match.start()]))
            position = match.end()
        if position < len(text):
            found.append((position, text[position:]))
        return found
    position = start
    for line in text[start:].split("\n"):
        found.append((position, line))
        position += len(line) + 1
    if found and not found[-1][1]:
        found.pop()  # the text ends with a line break
    return found


def _indent(line: str) -> int:
    """The width of the line's leading spaces and tabs (a tab goes to the next multiple of 4)."""
    width = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def _unquoted(line: str) -> str:
    """The line without its block quote markers (``> > ``); the line itself when it has none."""
    match = _QUOTE_MARKERS.match(line)
    return line[match.end() :] if match else line


def _closes(line: str, fence: tuple[str, int], in_list: bool) -> bool:
    line = _unquoted(line)
    if _indent(line) >= 4 and not in_list:
        return False
    marker = line.strip(" \t")
    return len(marker) >= fence[1] and marker == fence[0] * len(marker)


def _inline_spans(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> int:
    """Add the code spans and comments of the paragraph ``text[start:end]``.

    A comment left open runs to the next ``-->`` wherever it is (or to the end of the note): the offset
    after it is returned, when it is past the paragraph; -1 otherwise.
    """
    if text.find("`", start, end) < 0 and text.find("<!--", start, end) < 0:
        return -1
    runs: dict[int, list[int]] | None = None  # backtick runs by length → where they start: found once
    position = start
    while True:
        match = _INLINE.search(text, position, end)
        if match is None:
            return -1
        token = match.group()
        if token[0] == "\\":
            position = match.end()
        elif token == "<!--":
            close = text.find("-->", match.end())
            stop = len(text) if close < 0 else close + 3
            spans.append((match.start(), stop))
            if stop > end:
                return stop
            position = stop
        else:
            if runs is None:
                runs = {}
                for run in _BACKTICKS.finditer(text, start, end):
                    runs.setdefault(len(run.group()), []).append(run.start())
            starts = runs.get(len(token), [])
            later = bisect.bisect_right(starts, match.start())
            if later == len(starts):
                position = match.end()  # no later run of the same length: the backticks are text
            else:
                position = starts[later] + len(token)
                spans.append((match.start(), position))
