"""The part of a note a read asks for: a section or a range of lines, cut at ``maxChars`` with a notice. Pure.

A cut says so in the text itself, with the exact ``read_note`` call that reads on.
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
    SectionNotFound,
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

    @property
    def truncated(self) -> bool:
        return self.partial_line or self.end_line < self.wanted_end

    def notice(self) -> str:
        limit = self.limit_name or f"maxChars={self.max_chars:,}"
        also = f" {self.also}" if self.also else ""
        if self.partial_line:
            return (
                f"[Cut: line {self.start_line} alone is longer than {limit}; only its first "
                f"{self.max_chars:,} characters are shown. Call read_note again with a larger maxChars.{also}]"
            )
        return (
            f"[Cut at {limit}: this is lines {self.start_line}–{self.end_line} of the "
            f"{self.start_line}–{self.wanted_end} asked for. Read on with: read_note(path={json.dumps(self.path)}, "
            f"startLine={self.end_line + 1}, endLine={self.wanted_end}){also}]"
        )

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
        if self.truncated and not self.partial_line:
            result["next"] = {"startLine": self.end_line + 1, "endLine": self.wanted_end}
        return result


def excerpt_of(path: str, text: str, args: Mapping[str, Any], *, default_chars: int = DEFAULT_EXCERPT_CHARS) -> Excerpt:
    """The part of ``text`` that ``section``, ``startLine``/``endLine`` and ``maxChars`` select (at most
    ``default_chars`` characters without ``maxChars``)."""
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
        return _cut(path, document.lines, heading.start_line, heading.end_line, max_chars, heading.path)
    lines = split_lines(text)
    first = args.get("startLine", 1)
    last = args.get("endLine", max(len(lines), first))
    if last < first:
        raise ToolInputError(f"endLine ({last}) is before startLine ({first}).")
    if first > len(lines) and lines:
        raise ToolInputError(f"startLine {first} is past the end: {path} has {len(lines)} lines.")
    return _cut(path, lines, first, min(last, len(lines)), max_chars, ())


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
    except SectionNotFound as missing:
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


def _cut(path: str, lines: list[str], first: int, last: int, max_chars: int, section: tuple[str, ...]) -> Excerpt:
    shown: list[str] = []
    used = 0
    for line in lines[first - 1 : last]:
        if used + len(line) > max_chars:
            break
        shown.append(line)
        used += len(line)
    if not shown and first <= last:  # the first line alone is too long: show its start
        return Excerpt(path, lines[first - 1][:max_chars], first, first, last, len(lines), max_chars, section, True)
    return Excerpt(path, "".join(shown), first, first + len(shown) - 1, last, len(lines), max_chars, section)
