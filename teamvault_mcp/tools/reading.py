"""Handlers of the reading tools, built to spend few tokens: read_note, read_notes, note_outline, list_notes.

An agent walks down a vault and a note instead of loading it whole: ``list_notes``
with ``depth`` and pages, ``note_outline`` one heading level at a time, then
``read_note`` of one section or a range of lines. Whatever is cut or summarised
says so in the text itself, with the exact call that gets the rest.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from teamvault_mcp.errors import CallCancelledError, SectionNotFoundError, TeamVaultError, ToolInputError
from teamvault_mcp.text.markdown import (
    MAX_HEADINGS,
    Document,
    Heading,
    SectionNotFound,
    find_section,
    parse,
    split_lines,
)
from teamvault_mcp.text.paths import stored_path_of
from teamvault_mcp.tools.context import ToolContext, ToolOutput, json_output

#: Longest excerpt a section or line read returns unless ``maxChars`` says otherwise.
DEFAULT_EXCERPT_CHARS = 100_000
DEFAULT_LIST_LIMIT = 500
#: Headings per note_outline answer. An outline is for choosing what to read: 200 entries are about
#: 30,000 characters (~8,000 tokens), more than any hand-written level has; a longer level is paged.
OUTLINE_HEADINGS = 200
#: ... and at most this many characters of them (long titles); at least one heading is always shown.
OUTLINE_CHARS = 60_000
#: Names listed in a "section not found" error (a level can have thousands).
LISTED_NAMES = 50
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

    @property
    def truncated(self) -> bool:
        return self.partial_line or self.end_line < self.wanted_end

    def notice(self) -> str:
        if self.partial_line:
            return (
                f"[Cut: line {self.start_line} alone is longer than maxChars={self.max_chars:,}; only its first "
                f"{self.max_chars:,} characters are shown. Call read_note again with a larger maxChars.]"
            )
        return (
            f"[Cut at maxChars={self.max_chars:,}: this is lines {self.start_line}–{self.end_line} of the "
            f"{self.start_line}–{self.wanted_end} asked for. Read on with: read_note(path={json.dumps(self.path)}, "
            f"startLine={self.end_line + 1}, endLine={self.wanted_end})]"
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
        if self.truncated and not self.partial_line:
            result["next"] = {"startLine": self.end_line + 1, "endLine": self.wanted_end}
        return result


def excerpt_of(path: str, text: str, args: Mapping[str, Any]) -> Excerpt:
    """The part of ``text`` that ``section``, ``startLine``/``endLine`` and ``maxChars`` select."""
    section = args.get("section")
    has_lines = "startLine" in args or "endLine" in args
    if section is not None and has_lines:
        raise ToolInputError("Give either section or startLine/endLine, not both.")
    max_chars = args.get("maxChars", DEFAULT_EXCERPT_CHARS)
    if section is not None:
        document = parse(text)
        if not section:
            raise ToolInputError("Argument 'section' must name at least one heading, e.g. [\"Chapter 1\"].")
        heading = _section(path, document, section)
        return _cut(path, document.lines, heading.start_line, heading.end_line, max_chars, heading.path)
    lines = split_lines(text)
    first = args.get("startLine", 1)
    last = args.get("endLine", max(len(lines), first))
    if last < first:
        raise ToolInputError(f"endLine ({last}) is before startLine ({first}).")
    if first > len(lines) and lines:
        raise ToolInputError(f"startLine {first} is past the end: {path} has {len(lines)} lines.")
    return _cut(path, lines, first, min(last, len(lines)), max_chars, ())


def _section(path: str, document: Document, toc_path: list[str]) -> Heading:
    try:
        return find_section(document, toc_path)
    except SectionNotFound as missing:
        top_level = _listed([heading.name for heading in document.headings])
        available = _listed(missing.available)
        raise SectionNotFoundError(path, missing.found, missing.missing, available, top_level) from None


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


# -- note_outline ---------------------------------------------------------------------------------


def note_outline(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    note = ctx.note(project_id, args["path"])
    path, text = note.path, note.text
    document = parse(text)
    toc_path: tuple[str, ...] = ()
    headings = document.headings
    if args.get("tocPath"):
        parent = _section(path, document, args["tocPath"])
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
        client = ctx.client.fork()  # a requests session serves one thread
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


def folder_prefix(raw: str | None) -> str | None:
    """The server-side prefix filter: the stored spelling of ``raw``, keeping a trailing ``/``."""
    if raw is None or raw in ("", ".", "./", ".\\", "/", "\\"):
        return None  # the whole vault
    folder = raw.endswith(("/", "\\"))
    stored = stored_path_of(raw)
    return stored + "/" if folder else stored


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
