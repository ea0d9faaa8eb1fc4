"""The part of a note a read asks for: a section or a range of lines, cut at ``maxChars`` with a notice. Pure.

A cut says so in the text itself, with the exact ``read_note`` call that reads on (when read_note is
registered: ``read_on``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from teamvault_mcp.errors import SectionNotFoundError, ToolInputError, printable
from teamvault_mcp.text.markdown import (
    AmbiguousBreadcrumb,
    Document,
    Heading,
    MissingHeading,
    find_breadcrumb,
    find_section,
    parse,
    split_lines,
)

#: Longest excerpt a section or line read returns unless ``maxChars`` says otherwise.
DEFAULT_EXCERPT_CHARS = 100_000

#: Names listed in a "section not found" error (a level can have thousands).
LISTED_NAMES = 50


@dataclass(frozen=True)
class Excerpt:
    """Lines ``start_line``..``end_line`` of a note (maybe fewer: cut at ``max_chars``)."""

    path: str
    text: str
    start_line: int
    end_line: int  # the last line shown
    wanted_end: int  # the last line asked for
    total_lines: int
    max_chars: int
    section: tuple[str, ...] = ()
    partial_line: bool = False  # one line longer than max_chars: only its start is shown
    #: What the limit is called in the notice: ``maxChars=1,000``, or the server's own limit of a plain read.
    limit_name: str = ""
    #: Said at the end of the notice: another way to read on (``note_outline`` for a whole note).
    also: str = ""
    #: The last line of the call that reads on: as far after ``end_line`` as that call may return (0: not
    #: computed, the rest asked for).
    read_on_end: int = 0
    #: Whether a larger maxChars shows more (not when the limit is the server's, which caps maxChars).
    raisable: bool = True
    #: Whether read_note is registered to read on with (a TEAM_VAULT_TOOLS may offer read_notes alone).
    read_on: bool = True

    @property
    def truncated(self) -> bool:
        return self.partial_line or self.end_line < self.wanted_end

    def notice(self) -> str:
        limit = self.limit_name or f"maxChars={self.max_chars:,}"
        also = f" {self.also}" if self.also else ""
        if not self.read_on and also.startswith(" or "):  # no call before it to be the other way
            also = f" {also[4:5].upper()}{also[5:]}"
        if self.partial_line and self.raisable:
            again = "Call read_note again" if self.read_on else "Call again"
            return (
                f"[Cut: line {self.start_line} alone is longer than {limit}; only its first "
                f"{self.max_chars:,} characters are shown. {again} with a larger maxChars.{also}]"
            )
        if self.partial_line:
            more = self.end_line < self.wanted_end and self.read_on
            after = f" Read on after it with: {self.read_on_call()}." if more else ""
            return (
                f"[Cut: line {self.start_line} alone is longer than {limit}; only its first "
                f"{self.max_chars:,} characters are shown, and no read shows more of it.{after}{also}]"
            )
        read_on = f" Read on with: {self.read_on_call()}" if self.read_on else ""
        return (
            f"[Cut at {limit}: this is lines {self.start_line}–{self.end_line} of the "
            f"{self.start_line}–{self.wanted_end} asked for.{read_on}{also}]"
        )

    @property
    def next_end(self) -> int:
        """The last line of the call that reads on."""
        return self.read_on_end or self.wanted_end

    def read_on_call(self) -> str:
        """The call that reads the next part that fits in one read, and where the part asked for ends when that
        is further on."""
        call = f"read_note(path={json.dumps(self.path)}, startLine={self.end_line + 1}, endLine={self.next_end})"
        if self.next_end < self.wanted_end:
            call += f" (as much as one read returns; the part asked for goes on to line {self.wanted_end})"
        return call

    def text_with_notice(self) -> str:
        if not self.truncated:
            return self.text
        separator = "" if self.text.endswith("\n") or not self.text else "\n"
        return f"{self.text}{separator}\n{self.notice()}"

    def as_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "totalLines": self.total_lines,
            "chars": len(self.text),
            "truncated": self.truncated,
        }
        if self.section:
            result["section"] = list(self.section)
        if self.truncated:
            result["notice"] = self.notice()
        if self.truncated and self.end_line < self.wanted_end and not (self.partial_line and self.raisable):
            result["next"] = {"startLine": self.end_line + 1, "endLine": self.next_end}
        return result


def excerpt_of(path: str, text: str, args: Mapping[str, Any], *, default_chars: int = DEFAULT_EXCERPT_CHARS) -> Excerpt:
    """The part of ``text`` that ``section``, ``startLine``/``endLine`` and ``maxChars`` select (at most
    ``default_chars`` characters without ``maxChars``). A cut's call that reads on has no maxChars: the lines
    it names fit in ``default_chars``."""
    section = args.get("section")
    has_lines = "startLine" in args or "endLine" in args
    if section is not None and has_lines:
        raise ToolInputError("Give either section or startLine/endLine, not both.")
    max_chars = args.get("maxChars", default_chars)
    if section is not None:
        document = parse(text)
        if not section or (isinstance(section, str) and not section.strip()):
            raise ToolInputError("Argument 'section' must name at least one heading, e.g. [\"Chapter 1\"].")
        heading = section_of(path, document, section)
        return _cut(
            path, document.lines, heading.start_line, heading.end_line, (max_chars, default_chars), heading.path
        )
    lines = split_lines(text)
    first = args.get("startLine", 1)
    last = args.get("endLine", max(len(lines), first))
    if last < first:
        raise ToolInputError(f"endLine ({last}) is before startLine ({first}).")
    if first > len(lines) and lines:
        raise ToolInputError(f"startLine {first} is past the end: {path} has {len(lines)} lines.")
    return _cut(path, lines, first, min(last, len(lines)), (max_chars, default_chars), ())


def section_of(path: str, document: Document, toc_path: list[str] | str) -> Heading:
    """The heading at ``toc_path``: a list of names, or one breadcrumb string (``Runbook > Failover``)."""
    try:
        if isinstance(toc_path, str):
            return find_breadcrumb(document, toc_path)
        return find_section(document, toc_path)
    except AmbiguousBreadcrumb as ambiguous:
        forms = " and ".join(json.dumps(list(found), ensure_ascii=False) for found in ambiguous.paths[:5])
        raise ToolInputError(
            f"{json.dumps(printable(ambiguous.text), ensure_ascii=False)} names more than one section of "
            f"{printable(path)}: {forms}. Pass the one you mean as a list of names."
        ) from None
    except MissingHeading as missing:
        top_level = _listed([heading.name for heading in document.headings])
        available = _listed(missing.available)
        raise SectionNotFoundError(
            path, missing.found, missing.missing, available, top_level, missing.closest
        ) from None


def _listed(names: list[str]) -> list[str]:
    """At most LISTED_NAMES names, the last one saying how many more there are."""
    if len(names) <= LISTED_NAMES:
        return names
    return [*names[: LISTED_NAMES - 1], f"… {len(names) - LISTED_NAMES + 1:,} more"]


def _cut(
    path: str, lines: list[str], first: int, last: int, limits: tuple[int, int], section: tuple[str, ...]
) -> Excerpt:
    """Lines ``first``..``last``, as many as fit in the first limit; the call that reads on gets the second."""
    max_chars, read_on_chars = limits
    if first <= last and len(lines[first - 1]) > max_chars:  # the first line alone is too long: show its start
        read_on = _read_on_end(lines, first, last, read_on_chars)
        start = lines[first - 1][:max_chars]
        return Excerpt(path, start, first, first, last, len(lines), max_chars, section, True, read_on_end=read_on)
    end = _fitting_end(lines, first, last, max_chars)
    text = "".join(lines[first - 1 : end])
    read_on = _read_on_end(lines, end, last, read_on_chars)
    return Excerpt(path, text, first, end, last, len(lines), max_chars, section, read_on_end=read_on)


def _read_on_end(lines: list[str], shown_end: int, last: int, max_chars: int) -> int:
    """The last line of the call that reads on after ``shown_end``: its text fits in ``max_chars`` (a single line
    that does not is shown in part, and says so)."""
    return min(last, max(shown_end + 1, _fitting_end(lines, shown_end + 1, last, max_chars)))


def _fitting_end(lines: list[str], first: int, last: int, max_chars: int) -> int:
    """The last line from ``first`` on (at most ``last``) whose lines together fit in ``max_chars``; ``first - 1``
    when even line ``first`` does not, and ``last`` when ``first`` is past it."""
    used = 0
    for number in range(first, last + 1):
        used += len(lines[number - 1])
        if used > max_chars:
            return number - 1
    return last
