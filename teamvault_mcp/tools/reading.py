"""The reading tools, built to spend few tokens: list_notes, read_note, read_notes.

An agent walks down a vault and a note instead of loading it whole: ``list_notes``
with ``depth`` and pages, ``note_outline`` (``outline.py``) one heading level at a
time, then ``read_note`` of one section or a range of lines (``text/excerpts.py`` cuts
them). Whatever is cut or summarised says so in the text itself, with the exact call
that gets the rest; no read returns more than the server's limit for one read
(TEAM_VAULT_MAX_READ_CHARS), which caps ``maxChars`` too.
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

from teamvault_mcp.errors import TeamVaultError, ToolInputError, short_hash
from teamvault_mcp.text.excerpts import DEFAULT_EXCERPT_CHARS, Excerpt, excerpt_of
from teamvault_mcp.text.paths import folder_prefix, stored_path_of
from teamvault_mcp.tools.answer import Answer
from teamvault_mcp.tools.context import Note, ToolContext, ToolOutput
from teamvault_mcp.tools.kinds import MAX_BATCH, Param, hash_header
from teamvault_mcp.tools.spec import (
    NOTE_PATH,
    NULLABLE_INT,
    STRING,
    See,
    Tool,
    answer_schema,
    list_schema,
    object_schema,
    rows,
)

DEFAULT_LIST_LIMIT = 500

#: Notes of a batch read fetched at the same time.
PARALLEL_READS = 8


# -- read_note -------------------------------------------------------------------------------------
def read_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    """One block: the line ``[contentHash: …]``, then the note's text exactly as stored (or the part asked for,
    with the cut notice as the last line when it is cut)."""
    project_id = ctx.project(args)
    note = ctx.note(project_id, args["path"])
    header = hash_header(note.content_hash)
    limit = ctx.tools.max_read_chars
    if not any(name in args for name in PART_ARGUMENTS):
        if not limit or len(note.text) <= limit:
            # The whole note, exactly as stored, under the line that names its hash.
            whole = {"path": note.path, "contentHash": note.content_hash, "text": note.text}
            return ToolOutput(header + note.text, whole)
        excerpt = _plain_cut(ctx, note.path, note.text, limit)
    else:
        excerpt = _part(note.path, note.text, args, limit)
    structured = {**excerpt.as_json(), "contentHash": note.content_hash, "text": excerpt.text}
    return ToolOutput(header + excerpt.text_with_notice(), structured)


#: The arguments that make read_note read a part of a note.
PART_ARGUMENTS = ("section", "startLine", "endLine", "maxChars")


def _plain_cut(ctx: ToolContext, path: str, text: str, limit: int) -> Excerpt:
    """A plain read cut at the server's limit, with the call that reads on (and the outline, to pick a part)."""
    excerpt = excerpt_of(path, text, {"maxChars": limit}, default_chars=ctx.tools.max_read_chars)
    outline = f"or pick a part with note_outline(path={json.dumps(path, ensure_ascii=False)})."
    return dataclasses.replace(
        excerpt,
        limit_name=_server_limit(limit),
        also=outline if ctx.tools.has("note_outline") else "",
        raisable=limit < ctx.tools.max_read_chars,  # a batch's share of the limit; read alone, a note gets it all
    )


def _part(path: str, text: str, args: Mapping[str, Any], limit: int) -> Excerpt:
    """The part of a note ``args`` asks for, at most the server's limit for one read (0: none): a larger
    ``maxChars`` is capped at it, and a cut says which limit it was."""
    asked = args.get("maxChars")
    if not limit:
        return excerpt_of(path, text, args, default_chars=DEFAULT_EXCERPT_CHARS)
    if asked is not None and asked <= limit:
        return excerpt_of(path, text, args, default_chars=limit)
    excerpt = excerpt_of(path, text, {**args, "maxChars": limit}, default_chars=limit)
    capped = f", which caps the maxChars={asked:,} asked for" if asked is not None else ""
    return dataclasses.replace(excerpt, limit_name=_server_limit(limit) + capped, raisable=False)


def _server_limit(limit: int) -> str:
    return f"{limit:,} characters, this server's limit for one read (TEAM_VAULT_MAX_READ_CHARS)"


# -- read_notes -----------------------------------------------------------------------------------


def read_notes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    """Up to 20 notes, fetched concurrently under the call's one budget; a failure stays with its note.

    Without maxChars the notes share the limit of one plain read (TEAM_VAULT_MAX_READ_CHARS): a short
    note leaves its share to the longer ones, and a cut note says how to read on.
    """
    project_id = ctx.project(args)
    wanted: list[str] = list(dict.fromkeys(args["paths"]))  # each path once, in the order given

    def read_one(raw: str) -> Note | str:
        client = ctx.client.fork()  # a client per thread: same budget, cancel token and pool; its own answer flags
        try:
            return dataclasses.replace(ctx, client=client).note(project_id, raw)
        except TeamVaultError as error:
            return str(error)
        finally:
            client.close()

    with ThreadPoolExecutor(max_workers=min(PARALLEL_READS, len(wanted)), thread_name_prefix="read_notes") as pool:
        futures = {raw: pool.submit(read_one, raw) for raw in wanted}
    read = {raw: future.result() for raw, future in futures.items()}  # a cancel re-raises here
    shares = _shares({raw: len(found.text) for raw, found in read.items() if not isinstance(found, str)}, ctx)
    notes: list[dict[str, Any]] = []
    blocks = []
    for raw in args["paths"]:
        found = read[raw]
        if isinstance(found, str):
            notes.append({"path": _shown_path(raw), "error": found})
            blocks.append(f"=== {_shown_path(raw)}: error ===\n{found}")
            continue
        entry: dict[str, Any] = {"path": found.path, "contentHash": found.content_hash, "chars": len(found.text)}
        entry["text"] = text = found.text
        if "maxChars" in args or raw in shares:
            if "maxChars" in args:
                excerpt = _part(found.path, found.text, {"maxChars": args["maxChars"]}, ctx.tools.max_read_chars)
            else:
                excerpt = _plain_cut(ctx, found.path, found.text, shares[raw])
            excerpt = dataclasses.replace(excerpt, read_on=ctx.tools.has("read_note"))
            entry["text"], text = excerpt.text, excerpt.text_with_notice()
            entry["truncated"] = excerpt.truncated
            if excerpt.truncated:
                entry.update(shownLines=[excerpt.start_line, excerpt.end_line], notice=excerpt.notice())
        notes.append(entry)
        blocks.append(f"=== {found.path} · {short_hash(found.content_hash)} ===\n{text}")  # path · contentHash
    failed = sum(1 for note in notes if "error" in note)
    result: dict[str, Any] = {"notes": notes}
    if failed:
        result["summary"] = f"Read {len(notes) - failed} of {len(notes)} notes; {failed} failed."
        blocks.insert(0, result["summary"])
    return ToolOutput("\n\n".join(blocks), result, is_error=failed == len(notes))


def _shares(lengths: dict[str, int], ctx: ToolContext) -> dict[str, int]:
    """The notes to cut, each with its share of the limit of one read; the notes that fit whole are left out.

    Shares are handed out shortest first: each note gets an equal part of what is left, and what a short
    note does not use goes to the longer ones after it.
    """
    left = ctx.tools.max_read_chars
    if not left or sum(lengths.values()) <= left:
        return {}
    cut: dict[str, int] = {}
    waiting = len(lengths)
    for raw, length in sorted(lengths.items(), key=lambda item: item[1]):
        share = left // waiting
        if length > share:
            cut[raw] = max(share, 1)
        left -= min(length, share)
        waiting -= 1
    return cut


def _shown_path(raw: str) -> str:
    try:
        return stored_path_of(raw)
    except TeamVaultError:
        return raw


# -- list_notes -------------------------------------------------------------------------------------


def list_notes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    """One line per entry: ``projects/aurora.md  1.3 KB``, and below ``depth`` ``projects/atlas/  (7 notes)``."""
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
    answer = Answer(notes=[])
    for _, entry in page:
        answer.row("notes", _entry_line(entry), entry)
    if not page:
        answer.summary(f"No files under {prefix}." if prefix else "The project holds no files.")
    if any("folder" in entry for _, entry in page):
        answer.notice('[list_notes(prefix="<folder>") lists a folder.]')
    if rest:
        next_cursor = _write_cursor(prefix, depth, page[-1][0])
        answer.data.update(nextCursor=next_cursor, remaining=len(rest))
        answer.notice(
            f"[Cut: {len(page):,} entries shown, {len(rest):,} more. Continue with "
            f"list_notes(cursor={json.dumps(next_cursor)}) and the same prefix and depth.]"
        )
    elif cursor is not None:
        answer.notice("[Last page: the listing is complete.]")
    return answer.output()


def _entry_line(entry: dict[str, Any]) -> str:
    if "folder" in entry:
        return f"{entry['folder']}  ({entry['notes']:,} note{'s' if entry['notes'] != 1 else ''})"
    kind = "" if entry["type"] == "TEXT" else f", {entry['type'].lower()}"
    return f"{entry['path']}  {size_text(entry['size'])}{kind}"


def size_text(size: int | None) -> str:
    """``512 B``, ``1.3 KB``, ``2.4 MB``: a size as people read it (binary units, as file managers show them)."""
    if size is None:
        return "size unknown"
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


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
    "Most characters to return; longer text is cut at a line.",
    kind="count",
    required=False,
)
TOC_PATH_HELP = 'A heading\'s tocPath: ["Runbook", "Failover"] or "Runbook > Failover".'

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="list_notes",
        title="List notes",
        description=(
            "List files by path, one line each with its size. prefix='people/' lists that folder (without the "
            "'/' also 'people-old.md'); depth=1 shows the folder's own notes and a count per subfolder. A cut "
            "listing gives a cursor to go on."
        ),
        params=(
            Param("prefix", "e.g. 'people/'; omit for all.", kind="prefix", required=False),
            Param("depth", "Folder levels to show (1: the folder's own).", kind="count", required=False),
            Param(
                "limit",
                f"Most entries (default {DEFAULT_LIST_LIMIT}, at most 5,000).",
                kind="count",
                required=False,
                maximum=5000,
            ),
            Param("cursor", "From a cut listing.", kind="cursor", required=False),
        ),
        handler=list_notes,
        output_schema=answer_schema(
            {
                "notes": rows(
                    {
                        "anyOf": [
                            object_schema({"path": STRING, "type": STRING, "size": NULLABLE_INT}, ["path", "type"]),
                            object_schema({"folder": STRING, "notes": {"type": "integer"}}, ["folder", "notes"]),
                        ]
                    }
                ),
                "nextCursor": STRING,
                "remaining": {"type": "integer"},
            },
            ["notes"],
        ),
    ),
    Tool(
        name="read_note",
        title="Read note",
        description=(
            "A text note: the line [contentHash: …], then its text exactly as stored. Over {max_read_chars} "
            "characters a read is cut at a line and says how to read on. Read a part with section (a heading and "
            "all below it) or startLine/endLine (inclusive)."
        ),
        see=(See(("note_outline",), "note_outline gives the tocPaths."),),
        params=(
            NOTE_PATH,
            Param("section", TOC_PATH_HELP, kind="toc", required=False),
            Param("startLine", "First line to read.", kind="count", required=False),
            Param("endLine", "Last line to read (default: the end).", kind="count", required=False),
            MAX_CHARS,
        ),
        handler=read_note,
        output_schema=object_schema(
            {
                "path": STRING,
                "contentHash": STRING,
                "text": STRING,
                "startLine": {"type": "integer"},
                "endLine": {"type": "integer"},
                "totalLines": {"type": "integer"},
                "chars": {"type": "integer"},
                "truncated": {"type": "boolean"},
                "section": {"type": "array", "items": STRING},
                "notice": STRING,
                "next": object_schema({"startLine": {"type": "integer"}, "endLine": {"type": "integer"}}, []),
            },
            ["path", "contentHash", "text"],
        ),
    ),
    Tool(
        name="read_notes",
        title="Read several notes",
        description=(
            f"Read up to {MAX_BATCH} notes at once: each under its path with its contentHash, or with the error it "
            "met (the others still come). Without maxChars they share the limit of one read, {max_read_chars} "
            "characters; a cut note says how to read on."
        ),
        params=(Param("paths", f"1 to {MAX_BATCH} note paths.", kind="paths"), MAX_CHARS),
        handler=read_notes,
        output_schema=list_schema(
            "notes",
            object_schema(
                {
                    "path": STRING,
                    "contentHash": STRING,
                    "chars": {"type": "integer"},
                    "text": STRING,
                    "truncated": {"type": "boolean"},
                    "shownLines": {"type": "array", "items": {"type": "integer"}},
                    "notice": STRING,
                    "error": STRING,
                },
                ["path"],
            ),
            summary=STRING,
        ),
    ),
)
