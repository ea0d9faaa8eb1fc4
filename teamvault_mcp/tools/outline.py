"""The outline tool, note_outline: a note's headings one level at a time, to choose what to read.

The text shows one line per heading, ``## Failover  (lines 10–17, 107 chars, has
subheadings)``, under a line naming the level once (its tocPath), and ends with the exact
``read_note`` call that reads a heading; a note whose top level is a single heading (a
title) shows what is under it at once. The parse and the sections are ``text/markdown.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from teamvault_mcp.errors import ToolInputError, short_hash
from teamvault_mcp.text.excerpts import section_of
from teamvault_mcp.text.markdown import MAX_HEADINGS, Document, Heading, parse, toc_argument
from teamvault_mcp.tools.answer import Answer
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.spec import NOTE_PATH, STRING, See, Tool, answer_schema, object_schema, rows

#: Headings per note_outline answer. An outline is for choosing what to read: 200 entries are about
#: 12,000 characters (~3,000 tokens), more than any hand-written level has; a longer level is paged.
OUTLINE_HEADINGS = 200

#: ... and at most this many characters of them (long titles); at least one heading is always shown.
OUTLINE_CHARS = 60_000


def note_outline(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    note = ctx.note(project_id, args["path"])
    path, text = note.path, note.text
    document = parse(text)
    headings = document.headings
    section: Heading | None = None
    descended = False
    if args.get("tocPath"):
        section = section_of(path, document, args["tocPath"])
        headings = section.children
    else:
        while len(headings) == 1 and headings[0].children:  # a title over the note: what is under it is the outline
            section, headings, descended = headings[0], headings[0].children, True
    toc_path = section.path if section is not None else ()
    offset: int = args.get("offset", 0)
    if offset and offset >= len(headings):
        raise ToolInputError(
            f"offset {offset:,} is past the end: this level of {path} has {len(headings):,} heading"
            f"{'s' if len(headings) != 1 else ''}. Call note_outline without offset to start over."
        )
    shown = _page(headings, offset)
    answer = Answer(
        path=path,
        contentHash=note.content_hash,
        tocPath=list(toc_path),
        totalLines=document.line_count,
        totalChars=len(text),
        headings=[],
        totalHeadings=len(headings),
    )
    answer.summary(
        f"{path}: {document.line_count:,} lines, {len(text):,} chars, contentHash {short_hash(note.content_hash)}"
    )
    if offset:
        answer.data["offset"] = offset
    if (not args.get("tocPath")) and document.preamble_end:
        preamble = document.text(1, document.preamble_end)
        answer.data["preamble"] = {"startLine": 1, "endLine": document.preamble_end, "chars": len(preamble)}
        # Its facts are the data's preamble.
        answer.label(f"Lines 1–{document.preamble_end:,} come before the first heading ({len(preamble):,} chars).")
    if section is not None:
        answer.data["section"] = {key: value for key, value in _entry(section).items() if key != "hasChildren"}
        if descended:
            answer.data["descended"] = True
        whose = "the note's only top heading" if descended and len(section.path) == 1 else "its section"
        # Names the rows below: the section's facts are the data's section and tocPath.
        answer.label(
            f"{_heading_line(section)}, {whose}; under it:" if descended else f"Under {toc_argument(toc_path)}:"
        )
    for heading in shown:
        answer.row("headings", _heading_line(heading), _entry(heading))
    notes = _notes(answer, document, path, toc_path, headings, offset, len(shown))
    if notes:
        answer.data["note"] = " ".join(notes)
    for line in notes:
        answer.notice(line)
    if shown:
        how = _how_to_read(ctx, path, shown)
        if how:
            answer.notice(how)
        else:
            answer.label(how)  # nothing to say (no read_note, no subheadings): the text's last line stays empty
    return answer.output()


def _notes(
    answer: Answer,
    document: Document,
    path: str,
    toc_path: tuple[str, ...],
    headings: list[Heading],
    offset: int,
    shown: int,
) -> list[str]:
    """What follows the rows: a section without subheadings, the cut and the call that reads on, an outline cut
    short by MAX_HEADINGS (the data's ``next`` and ``outlinedLines`` set here too)."""
    notes = []
    if not headings:
        notes.append(
            "This section has no subheadings; read it with read_note(section=tocPath)."
            if toc_path
            else "This note has no headings; read it by lines with read_note(startLine=…, endLine=…)."
        )
    rest = len(headings) - offset - shown
    again = f"path={json.dumps(path, ensure_ascii=False)}"
    if toc_path:
        again += f", tocPath={toc_argument(toc_path)}"
    if rest:
        answer.data["next"] = {"offset": offset + shown}
        notes.append(
            f"[Cut: headings {offset + 1:,}–{offset + shown:,} of the {len(headings):,} at this level are "
            f"shown. Read on with: note_outline({again}, offset={offset + shown})]"
        )
    if document.outlined_lines < document.line_count:
        answer.data["outlinedLines"] = document.outlined_lines
        notes.append(
            f"[This note has more than {MAX_HEADINGS:,} headings: the outline covers lines 1–"
            f"{document.outlined_lines:,} of {document.line_count:,}. Read the rest with "
            f"read_note(path={json.dumps(path, ensure_ascii=False)}, startLine={document.outlined_lines + 1})]"
        )
    return notes


def _page(headings: list[Heading], offset: int) -> list[Heading]:
    """The headings from ``offset`` on, at most OUTLINE_HEADINGS and OUTLINE_CHARS of text (at least one)."""
    shown: list[Heading] = []
    used = 0
    for heading in headings[offset : offset + OUTLINE_HEADINGS]:
        used += len(_heading_line(heading)) + 1
        if shown and used > OUTLINE_CHARS:
            break
        shown.append(heading)
    return shown


def _entry(heading: Heading) -> dict[str, Any]:
    """A heading in the structured content: its tocPath is the level's plus its name, so it is not repeated."""
    entry: dict[str, Any] = {"title": heading.title}
    if heading.name != heading.title:  # "Notes [2]": the name to pass back
        entry["name"] = heading.name
    entry.update(
        level=heading.level,
        hasChildren=bool(heading.children),
        startLine=heading.start_line,
        endLine=heading.end_line,
        chars=heading.chars,
    )
    return entry


def _heading_line(heading: Heading) -> str:
    below = ", has subheadings" if heading.children else ""
    lines = (
        f"line {heading.start_line:,}"
        if heading.start_line == heading.end_line
        else (f"lines {heading.start_line:,}–{heading.end_line:,}")
    )
    return f"{'#' * heading.level} {heading.name}  ({lines}, {heading.chars:,} chars{below})"


#: The footer's example call is written out while its tocPath is this short (long titles are not repeated).
EXAMPLE_TOC_CHARS = 300


def _how_to_read(ctx: ToolContext, path: str, shown: list[Heading]) -> str:
    section = toc_argument(shown[0].path)
    if len(section) > EXAMPLE_TOC_CHARS:
        section = "<this level's tocPath and the heading's name>"
    call = f"read_note(path={json.dumps(path, ensure_ascii=False)}, section={section})"
    said = f"Read a heading with {call}" if ctx.tools.has("read_note") else ""
    if any(heading.children for heading in shown):
        down = "note_outline with its tocPath goes one level down"
        said = f"{said}; {down}" if said else down[0].upper() + down[1:]
    return f"{said}." if said else ""


# -- the tool -----------------------------------------------------------------------------------------

HEADING = object_schema(
    {
        "title": STRING,
        "name": STRING,
        "level": {"type": "integer"},
        "hasChildren": {"type": "boolean"},
        "startLine": {"type": "integer"},
        "endLine": {"type": "integer"},
        "chars": {"type": "integer"},
    },
    ["title", "level", "hasChildren", "startLine", "endLine", "chars"],
)
LINES = object_schema(
    {"startLine": {"type": "integer"}, "endLine": {"type": "integer"}, "chars": {"type": "integer"}},
    ["startLine", "endLine", "chars"],
)

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="note_outline",
        title="Note outline",
        description=(
            "A note's headings one level at a time, each with its lines and size; under a lone top heading at "
            "once. tocPath goes one level down. A title repeated at one level is named 'Title [2]'."
        ),
        see=(See(("read_note",), "read_note(path, section=...) reads just that heading."),),
        params=(
            NOTE_PATH,
            Param(
                "tocPath",
                'The heading to look under: ["Runbook", "Failover"] or "Runbook > Failover"; omit for the top.',
                kind="toc",
                required=False,
            ),
            Param(
                "offset",
                "Headings to skip (a cut level gives the next offset).",
                kind="count",
                required=False,
                minimum=0,
            ),
        ),
        handler=note_outline,
        output_schema=answer_schema(
            {
                "path": STRING,
                "contentHash": STRING,
                "tocPath": rows(STRING),
                "totalLines": {"type": "integer"},
                "totalChars": {"type": "integer"},
                "headings": rows(HEADING),
                "totalHeadings": {"type": "integer"},
                "offset": {"type": "integer"},
                "next": object_schema({"offset": {"type": "integer"}}, ["offset"]),
                "preamble": LINES,
                "section": object_schema({**HEADING["properties"]}, ["title", "level", "startLine", "endLine"]),
                "descended": {"type": "boolean"},
                "outlinedLines": {"type": "integer"},
                "note": STRING,
            },
            ["path", "contentHash", "tocPath", "totalLines", "totalChars", "headings", "totalHeadings"],
        ),
    ),
)
