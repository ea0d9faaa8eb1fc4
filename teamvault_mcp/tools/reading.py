"""The reading tools, built to spend few tokens: list_notes, note_outline, read_note, read_notes.

An agent walks down a vault and a note instead of loading it whole: ``list_notes``
with ``depth`` and pages, ``note_outline`` one heading level at a time, then
``read_note`` of one section or a range of lines (``text/excerpts.py`` cuts them).
Whatever is cut or summarised says so in the text itself, with the exact call that
gets the rest.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from teamvault_mcp.errors import CallCancelledError, TeamVaultError, ToolInputError
from teamvault_mcp.text.excerpts import DEFAULT_EXCERPT_CHARS, excerpt_of, section_of
from teamvault_mcp.text.markdown import MAX_HEADINGS, Heading, parse
from teamvault_mcp.text.paths import folder_prefix, stored_path_of
from teamvault_mcp.tools.context import ToolContext, ToolOutput, json_output
from teamvault_mcp.tools.kinds import MAX_BATCH, Param
from teamvault_mcp.tools.spec import NOTE_PATH, NULLABLE_INT, STRING, Tool, list_schema, object_schema

DEFAULT_LIST_LIMIT = 500

#: Headings per note_outline answer. An outline is for choosing what to read: 200 entries are about
#: 30,000 characters (~8,000 tokens), more than any hand-written level has; a longer level is paged.
OUTLINE_HEADINGS = 200

#: ... and at most this many characters of them (long titles); at least one heading is always shown.
OUTLINE_CHARS = 60_000

#: Notes of a batch read fetched at the same time.
PARALLEL_READS = 8


# -- read_note -------------------------------------------------------------------------------------


def read_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    note = ctx.note(project_id, args["path"])
    if not any(name in args for name in ("section", "startLine", "endLine", "maxChars")):
        # The whole note, exactly as stored: what read_note always returned; the hash rides alongside.
        return ToolOutput(note.text, {"path": note.path, "contentHash": note.content_hash})
    excerpt = excerpt_of(note.path, note.text, args)
    return ToolOutput(excerpt.text_with_notice(), {**excerpt.as_json(), "contentHash": note.content_hash})


# -- note_outline ---------------------------------------------------------------------------------


def note_outline(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    note = ctx.note(project_id, args["path"])
    path, text = note.path, note.text
    document = parse(text)
    toc_path: tuple[str, ...] = ()
    headings = document.headings
    if args.get("tocPath"):
        parent = section_of(path, document, args["tocPath"])
        toc_path, headings = parent.path, parent.children
    offset: int = args.get("offset", 0)
    if offset and offset >= len(headings):
        raise ToolInputError(
            f"offset {offset:,} is past the end: this level of {path} has {len(headings):,} heading"
            f"{'s' if len(headings) != 1 else ''}. Call note_outline without offset to start over."
        )
    shown = _page(headings, offset)
    result: dict[str, Any] = {
        "path": path,
        "contentHash": note.content_hash,
        "tocPath": list(toc_path),
        "totalLines": document.line_count,
        "totalChars": len(text),
        "headings": shown,
        "totalHeadings": len(headings),
    }
    if offset:
        result["offset"] = offset
    if not toc_path and document.preamble_end:
        preamble = document.text(1, document.preamble_end)
        result["preamble"] = {"startLine": 1, "endLine": document.preamble_end, "chars": len(preamble)}
    notes = []
    if not headings:
        notes.append(
            "This section has no subheadings; read it with read_note(section=tocPath)."
            if toc_path
            else "This note has no headings; read it by lines with read_note(startLine=…, endLine=…)."
        )
    rest = len(headings) - offset - len(shown)
    if rest:
        result["next"] = {"offset": offset + len(shown)}
        again = f"path={json.dumps(path, ensure_ascii=False)}"
        if toc_path:
            again += f", tocPath={json.dumps(list(toc_path), ensure_ascii=False)}"
        notes.append(
            f"[Cut: headings {offset + 1:,}–{offset + len(shown):,} of the {len(headings):,} at this level are "
            f"shown. Read on with: note_outline({again}, offset={offset + len(shown)})]"
        )
    if document.outlined_lines < document.line_count:
        result["outlinedLines"] = document.outlined_lines
        notes.append(
            f"[This note has more than {MAX_HEADINGS:,} headings: the outline covers lines 1–"
            f"{document.outlined_lines:,} of {document.line_count:,}. Read the rest with "
            f"read_note(path={json.dumps(path, ensure_ascii=False)}, startLine={document.outlined_lines + 1})]"
        )
    if notes:
        result["note"] = " ".join(notes)
    return json_output(result, compact=True)


def _page(headings: list[Heading], offset: int) -> list[dict[str, object]]:
    """The headings from ``offset`` on, at most OUTLINE_HEADINGS and OUTLINE_CHARS of JSON (at least one)."""
    shown: list[dict[str, object]] = []
    used = 0
    for heading in headings[offset : offset + OUTLINE_HEADINGS]:
        entry = heading.as_json()
        used += len(json.dumps(entry, ensure_ascii=False)) + 1
        if shown and used > OUTLINE_CHARS:
            break
        shown.append(entry)
    return shown


# -- read_notes -----------------------------------------------------------------------------------


def read_notes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    """Up to 20 notes, fetched concurrently under the call's one budget; a failure stays with its note."""
    project_id = ctx.project(args)
    wanted: list[str] = list(dict.fromkeys(args["paths"]))  # each path once, in the order given

    def read_one(raw: str) -> dict[str, Any]:
        client = ctx.client.fork()  # a client per thread: same budget, cancel token and pool; its own answer flags
        try:
            note = dataclasses.replace(ctx, client=client).note(project_id, raw)
        except CallCancelledError:
            raise
        except TeamVaultError as error:
            return {"path": _shown_path(raw), "error": str(error)}
        finally:
            client.close()
        if "maxChars" not in args:
            return {"path": note.path, "content": note.text, "contentHash": note.content_hash}
        excerpt = excerpt_of(note.path, note.text, {"maxChars": args["maxChars"]})
        return {
            "path": note.path,
            "content": excerpt.text_with_notice(),
            "contentHash": note.content_hash,
            "truncated": excerpt.truncated,
        }

    with ThreadPoolExecutor(max_workers=min(PARALLEL_READS, len(wanted)), thread_name_prefix="read_notes") as pool:
        futures = {raw: pool.submit(read_one, raw) for raw in wanted}
    by_path = {raw: future.result() for raw, future in futures.items()}  # a cancel re-raises here
    notes = [by_path[raw] for raw in args["paths"]]
    failed = sum(1 for note in notes if "error" in note)
    summary = f"Read {len(notes) - failed} of {len(notes)} notes" + (f"; {failed} failed." if failed else ".")
    blocks = [summary]
    for note in notes:
        if "error" in note:
            blocks.append(f"===== {note['path']} — error =====\n{note['error']}")
        else:
            blocks.append(f"===== {note['path']} =====\n{note['content']}")
    return ToolOutput("\n\n".join(blocks), {"notes": notes}, is_error=failed == len(notes))


def _shown_path(raw: str) -> str:
    try:
        return stored_path_of(raw)
    except TeamVaultError:
        return raw


# -- list_notes -------------------------------------------------------------------------------------


def list_notes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    prefix = folder_prefix(args.get("prefix"))
    depth: int | None = args.get("depth")
    limit: int = args.get("limit", DEFAULT_LIST_LIMIT)
    cursor: str | None = args.get("cursor")
    after = _read_cursor(cursor, prefix, depth) if cursor is not None else None
    files = sorted(ctx.client.list_files(project_id, prefix=prefix), key=lambda file: file.path)
    entries = _entries(files, prefix, depth)
    if after is not None:
        entries = [(key, entry) for key, entry in entries if key > after]
    page, rest = entries[:limit], entries[limit:]
    shown = [entry for _, entry in page]
    notices = []
    if any("folder" in entry for entry in shown):
        notices.append(
            f"[Folders deeper than depth={depth} are summarised as {{folder, notes}} counts. "
            'List one with list_notes(prefix="<folder>").]'
        )
    structured: dict[str, Any] = {"notes": shown}
    if rest:
        next_cursor = _write_cursor(prefix, depth, page[-1][0])
        notices.append(
            f"[Cut: {len(shown):,} entries shown, {len(rest):,} more. Continue with "
            f"list_notes(cursor={json.dumps(next_cursor)}) and the same prefix and depth.]"
        )
        structured.update(nextCursor=next_cursor, remaining=len(rest))
    elif cursor is not None:
        notices.append("[Last page: the listing is complete.]")
    text = json.dumps(shown, ensure_ascii=False, indent=2)
    return ToolOutput("\n".join([*notices, text]), structured)


def _entries(files: list[Any], prefix: str | None, depth: int | None) -> list[tuple[str, dict[str, Any]]]:
    """Sort keys and entries: notes, and below ``depth`` one ``{folder, notes}`` count per folder."""
    base = prefix[: prefix.rfind("/") + 1] if prefix else ""
    entries: list[tuple[str, dict[str, Any]]] = []
    folders: Counter[str] = Counter()
    for file in files:
        parts = file.path[len(base) :].split("/")
        if depth is None or len(parts) <= depth:
            entries.append((file.path, {"path": file.path, "type": file.file_type, "size": file.size}))
        else:
            folders[base + "/".join(parts[:depth]) + "/"] += 1
    entries += [(folder, {"folder": folder, "notes": count}) for folder, count in folders.items()]
    return sorted(entries, key=lambda pair: pair[0])


def _write_cursor(prefix: str | None, depth: int | None, after: str) -> str:
    raw = json.dumps([prefix, depth, after], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_cursor(cursor: str, prefix: str | None, depth: int | None) -> str:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        cursor_prefix, cursor_depth, after = decoded
    except (ValueError, TypeError, binascii.Error):
        raise ToolInputError(
            "This cursor is not one list_notes gave out; call list_notes without a cursor to start over."
        ) from None
    if (cursor_prefix, cursor_depth) != (prefix, depth) or not isinstance(after, str):
        raise ToolInputError(
            f"This cursor continues a listing with prefix={json.dumps(cursor_prefix)} and depth={cursor_depth}; "
            "pass the same prefix and depth, or start over without a cursor."
        )
    return after


# -- the tools ----------------------------------------------------------------------------------------

MAX_CHARS = Param(
    "maxChars",
    f"Longest text to return, in characters (default {DEFAULT_EXCERPT_CHARS:,} for a section or line range, "
    "no limit for a plain read). Longer text is cut at a line boundary and says how to read the rest.",
    kind="count",
    required=False,
)

HEADING = object_schema(
    {
        "title": STRING,
        "level": {"type": "integer"},
        "path": {"type": "array", "items": STRING},
        "hasChildren": {"type": "boolean"},
        "startLine": {"type": "integer"},
        "endLine": {"type": "integer"},
        "chars": {"type": "integer"},
    },
    ["title", "level", "path", "hasChildren", "startLine", "endLine", "chars"],
)

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="list_notes",
        title="List notes",
        description=(
            "List the files of a project as path, type (TEXT or BINARY) and size in bytes, sorted by path. "
            "Use prefix to list one folder and everything below it, e.g. 'people/'; a prefix without a "
            "trailing slash also matches names that merely start with it ('people' matches 'people-old.md'). "
            "On a big vault use depth to see the shape first: with depth=1 the notes directly in the folder are "
            "listed and each subfolder is one {folder, notes} count. At most limit entries (default "
            f"{DEFAULT_LIST_LIMIT}) come back; a cut listing says so and gives the cursor to continue with."
        ),
        params=(
            Param(
                "prefix",
                "Only list paths starting with this, e.g. 'people/' for one folder. Omit for the whole vault.",
                kind="prefix",
                required=False,
            ),
            Param(
                "depth",
                "Show notes at most this many folder levels below the prefix (1 = only the folder's own notes); "
                "deeper folders are summarised as {folder, notes} counts. Omit to list everything.",
                kind="count",
                required=False,
            ),
            Param(
                "limit",
                f"Most entries to return (default {DEFAULT_LIST_LIMIT}, at most 5,000).",
                kind="count",
                required=False,
                maximum=5000,
            ),
            Param(
                "cursor",
                "Continue a cut listing: the cursor it gave. Pass the same prefix and depth.",
                kind="cursor",
                required=False,
            ),
        ),
        handler=list_notes,
        output_schema=list_schema(
            "notes",
            {
                "anyOf": [
                    object_schema({"path": STRING, "type": STRING, "size": NULLABLE_INT}, ["path", "type"]),
                    object_schema({"folder": STRING, "notes": {"type": "integer"}}, ["folder", "notes"]),
                ]
            },
            nextCursor=STRING,
            remaining={"type": "integer"},
        ),
    ),
    Tool(
        name="note_outline",
        title="Note outline",
        description=(
            "Show the headings of a markdown note one level at a time, without its text: each with title, "
            "level, path (the tocPath to pass back), hasChildren, startLine, endLine and chars (the size of its "
            "section). Without tocPath: the top-level headings (and the lines before the first one, as "
            "preamble); with tocPath: that heading's subheadings. Then read just the part you need with "
            "read_note(path, section=<path>). A title that repeats under the same parent is named 'Title [2]', "
            "'Title [3]' from its second occurrence on; pass that name back as it is."
        ),
        params=(
            NOTE_PATH,
            Param(
                "tocPath",
                'Heading names from the top down, as the outline gives them in "path", e.g. ["Chapter 1", "Intro"]. '
                "Omit for the top level.",
                kind="toc",
                required=False,
            ),
            Param(
                "offset",
                f"Headings of this level to skip: a level of more than {OUTLINE_HEADINGS} headings is shown "
                "in pages, and a cut answer gives the offset of the next one (default 0).",
                kind="count",
                required=False,
                minimum=0,
            ),
        ),
        handler=note_outline,
        output_schema=object_schema(
            {
                "path": STRING,
                "tocPath": {"type": "array", "items": STRING},
                "totalLines": {"type": "integer"},
                "totalChars": {"type": "integer"},
                "headings": {"type": "array", "items": HEADING},
                "totalHeadings": {"type": "integer"},
                "offset": {"type": "integer"},
                "next": object_schema({"offset": {"type": "integer"}}, ["offset"]),
                "outlinedLines": {"type": "integer"},
            },
            ["path", "tocPath", "totalLines", "totalChars", "headings"],
        ),
    ),
    Tool(
        name="read_note",
        title="Read note",
        description=(
            "Return the text of a text note (markdown, txt, json, yaml, csv) by its vault path, exactly as "
            "stored; binary files such as images are not returned. Paths are case-sensitive. To spend fewer "
            "tokens on a long note, read one part: section (a heading's tocPath from note_outline; the heading "
            "line and everything down to the next heading of the same or a higher level) or startLine/endLine "
            "(1-based, inclusive). maxChars caps the text; a cut result ends with a note giving the call that "
            "reads on."
        ),
        params=(
            NOTE_PATH,
            Param(
                "section",
                'The heading to read, as a tocPath from note_outline, e.g. ["Chapter 1", "Intro"].',
                kind="toc",
                required=False,
            ),
            Param("startLine", "First line to read (1-based).", kind="count", required=False),
            Param(
                "endLine", "Last line to read (inclusive; default: the end of the note).", kind="count", required=False
            ),
            MAX_CHARS,
        ),
        handler=read_note,
    ),
    Tool(
        name="read_notes",
        title="Read several notes",
        description=(
            f"Read up to {MAX_BATCH} notes in one call, fetched at the same time. Each note comes back under its "
            "own path with its text, or with the error that note met (a missing note does not fail the others). "
            "maxChars caps each note's text, cut as in read_note."
        ),
        params=(
            Param(
                "paths",
                f"Vault paths of the notes, 1 to {MAX_BATCH}, e.g. ['people/a.md', 'people/b.md'].",
                kind="paths",
            ),
            MAX_CHARS,
        ),
        handler=read_notes,
        output_schema=list_schema(
            "notes",
            object_schema(
                {"path": STRING, "content": STRING, "error": STRING, "truncated": {"type": "boolean"}}, ["path"]
            ),
        ),
    ),
)
