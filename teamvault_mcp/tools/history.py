"""The version-history tools: list, read, diff and restore versions of a note.

The server keeps a version per distinct content of every note (docs/teamvault-api.md §4).
A version is named by its number (``3``) or its id. Restoring writes that version's
bytes as a new version, through the same idempotent and settled write as any edit:
nothing is ever lost.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import NotTextError, TeamVaultError, ToolInputError, printable, short_hash
from teamvault_mcp.text.diff import unified_diff
from teamvault_mcp.text.moments import parse_moment, shown, since_moment
from teamvault_mcp.tools.answer import Answer
from teamvault_mcp.tools.context import ToolContext, ToolOutput, sha256_hex
from teamvault_mcp.tools.kinds import Param, hash_header
from teamvault_mcp.tools.spec import (
    EXPECTED_HASH,
    NOTE_PATH,
    NULLABLE_STRING,
    STRING,
    Tool,
    answer_schema,
    object_schema,
    rows,
)
from teamvault_mcp.tools.versions import version_author
from teamvault_mcp.tools.writing.content import Mode, write_content
from teamvault_mcp.tools.writing.rules import expect
from teamvault_mcp.tools.writing.story import STORY, add_story

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile, VaultVersion


def list_note_versions(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    """One line per version, newest first: ``v2 · 2026-12-01 07:17 · Ada · 481ccb07``."""
    project_id = ctx.project(args)
    path, file = ctx.existing(project_id, args["path"])
    versions = _versions(ctx, project_id, file.id)
    head = f"{path}: {len(versions)} version{'s' if len(versions) != 1 else ''}, newest first"
    answer = Answer(path=path, versions=[])
    if not versions:
        answer.summary(f"{head}: the server keeps no version history of it.")
        return answer.output()
    answer.summary(f"{head} (number · time UTC · author · contentHash start):")
    for version in versions:
        answer.row("versions", version_line(version), {**version, "by": version_author(version)})
    return answer.output()


def version_line(version: VaultVersion) -> str:
    """``v2 · 2026-12-01 07:17 · Ada · 481ccb07``, and `` · "message"`` when it has one."""
    number = version.number
    parts = [f"v{number}" if number is not None else f"id {version.id}", _minute(version.created_at)]
    parts.append(version_author(version) or "unknown author")
    parts.append((version.content_hash or "no hash")[:8])
    if version.message:
        parts.append(json.dumps(version.message, ensure_ascii=False))
    return " · ".join(printable(str(part)) for part in parts)


def _minute(iso: str | None) -> str:
    text = iso or ""
    return f"{text[:10]} {text[11:16]}" if len(text) >= 16 and text[10] == "T" else (text or "time unknown")


def read_note_version(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    path, file = ctx.existing(project_id, args["path"])
    version = _version(_versions(ctx, project_id, file.id), args["version"], path)
    data = _version_data(ctx, project_id, file, version, path)
    text = data.decode("utf-8", errors="replace")
    content_hash = sha256_hex(data)  # of exactly the bytes read, as read_note's: restoring it gives this hash
    result = {"path": path, "version": _summary(version), "contentHash": content_hash, "text": text}
    return ToolOutput(hash_header(content_hash) + text, result)


def diff_note_versions(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    moment = _diff_since(ctx, args)  # a bad time is refused before any request
    path, file = ctx.existing(project_id, args["path"])
    versions = _versions(ctx, project_id, file.id)
    old, from_label = _diff_start(versions, args, moment, path)
    old_text = _version_text(ctx, project_id, file, old, path)
    if "to" in args:
        new = _version(versions, args["to"], path)
        new_text = _version_text(ctx, project_id, file, new, path)
        to_label, to_json = f"version {new.number}", _summary(new)
    else:
        data = ctx.client.download(project_id, file.id)
        new_text = data.decode("utf-8", errors="replace")
        to_label, to_json = "the current content", {"current": True, "contentHash": sha256_hex(data)}
    diff = unified_diff(old_text, new_text, before=f"{path} ({from_label})", after=f"{path} ({to_label})")
    headline = f"{path}: from {from_label} to {to_label}" + ("" if diff else ": no differences.")
    result = {
        "path": path,
        "from": _summary(old),
        "to": to_json,
        "changed": bool(diff),
        "diff": diff,
        "summary": headline,
    }
    return ToolOutput(f"{headline}\n{diff}" if diff else headline, result)


def _diff_since(ctx: ToolContext, args: Mapping[str, Any]) -> datetime.datetime | None:
    """The moment ``since`` names; None when the diff starts from ``from``. Refuses both or neither."""
    if "from" in args and "since" in args:
        raise ToolInputError(
            "Give from (a version) or since (a time), not both: since picks the version the diff starts from."
        )
    if "from" in args:
        return None
    if "since" not in args:
        raise ToolInputError(
            "diff_note_versions needs from (a version number or id) or since (a date, a date-time or a span "
            'back from now, e.g. since="24h").'
        )
    return since_moment(args["since"], ctx.client.wall())


def _diff_start(
    versions: list[VaultVersion], args: Mapping[str, Any], moment: datetime.datetime | None, path: str
) -> tuple[VaultVersion, str]:
    """The version a diff starts from, and how its headline names it: ``from``, or the one current at ``moment``."""
    if moment is None:
        old = _version(versions, args["from"], path)
        return old, f"version {old.number}"
    if not versions:
        raise TeamVaultError(f"{path} has no saved versions to diff from: the server keeps no history of it.")
    before: list[tuple[datetime.datetime, VaultVersion]] = []
    for version in versions:
        when = parse_moment(version.created_at)
        if when is not None and when <= moment:
            before.append((when, version))
    if before:
        old = max(before, key=lambda pair: pair[0])[1]
        return old, f"version {old.number} (the newest at {shown(moment)})"
    old = versions[-1]  # newest first: the last is the first version
    return old, f"version {old.number} (the first: the note was made after {shown(moment)})"


def restore_note_version(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    note = ctx.note(project_id, args["path"])
    expected = expect(
        ctx, project_id, note.path, note.file, args.get("expectedHash"), current=(note.content_hash, note.text)
    )
    version = _version(_versions(ctx, project_id, note.file.id), args["version"], note.path)
    data = ctx.client.download_version(project_id, note.file.id, version.id)
    restored_hash = sha256_hex(data)
    text = data.decode("utf-8", errors="replace")
    diff = unified_diff(note.text, text, before=f"{note.path} (now)", after=f"{note.path} (version {version.number})")
    result: dict[str, Any] = {
        "path": note.path,
        "restoredVersion": _summary(version),
        "previousHash": note.content_hash,
        "contentHash": restored_hash,
    }
    ctx.report.facts.saw(note.content_hash, restored_hash)
    if restored_hash == note.content_hash:
        ctx.report.noop = True
        result["action"] = "unchanged"
        result["summary"] = (
            f"{note.path} already has the content of version {version.number} (contentHash "
            f"{short_hash(note.content_hash)}): nothing was written."
        )
        return ToolOutput(result["summary"], result)
    mode: Mode = "strict" if expected is not None else "replace"
    written = write_content(ctx, project_id, note.path, note.file, data, mode=mode, read=note.data, expected=expected)
    result["action"] = "restored"
    add_story(ctx, result, written)
    headline = (
        f"Restored {note.path} to the content of version {version.number} as a new version "
        f"(contentHash {short_hash(restored_hash)}); the content it replaces stays in the history."
    )
    result["summary"] = "".join([headline, *(f" {sentence}" for sentence in written.notes())])
    result["diff"] = diff
    return ToolOutput(f"{result['summary']}\n{diff}", result)


def _versions(ctx: ToolContext, project_id: str, file_id: str) -> list[VaultVersion]:
    versions = ctx.client.list_versions(project_id, file_id)
    if all(v.number is not None for v in versions):
        versions.sort(key=lambda v: v.number or 0, reverse=True)  # newest first, whatever the server did
    return versions


def _version(versions: list[VaultVersion], wanted: int | str, path: str) -> VaultVersion:
    """The version ``wanted`` names: a number, or an id (a string of digits is tried as both)."""
    for version in versions:
        if version.id == wanted or version.number == wanted:
            return version
    if isinstance(wanted, str) and wanted.isdigit():
        return _version(versions, int(wanted), path)
    numbers = sorted((v.number for v in versions if v.number is not None), reverse=True)
    known = f"it has versions {', '.join(map(str, numbers[:30]))}" if numbers else "it has no versions"
    raise TeamVaultError(f"Version {wanted} of {path} not found: {known}. Call list_note_versions to see them.")


def _version_text(ctx: ToolContext, project_id: str, file: VaultFile, version: VaultVersion, path: str) -> str:
    return _version_data(ctx, project_id, file, version, path).decode("utf-8", errors="replace")


def _version_data(ctx: ToolContext, project_id: str, file: VaultFile, version: VaultVersion, path: str) -> bytes:
    if file.file_type != "TEXT":
        raise NotTextError(path, file.mime_type or file.file_type)
    return ctx.client.download_version(project_id, file.id, version.id)


def _summary(version: VaultVersion) -> dict[str, Any]:
    return {
        "id": version.id,
        "versionNumber": version.number,
        "contentHash": version.content_hash,
        "createdAt": version.created_at,
    }


# -- the tools ----------------------------------------------------------------------------------------

VERSION_HELP = "A version number (1 is the first) or id."

#: A version as the server lists it (docs/teamvault-api.md §4.1: its fields as the server gives them, checked no
#: further, since a schema stricter than the server would make a client refuse a good answer), and ``by``: who its
#: line names (null: no one).
VERSION = object_schema({"by": NULLABLE_STRING}, ["by"])

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="list_note_versions",
        title="List note versions",
        description=(
            "A note's saved versions, newest first, one line each: number, time, author and the start of its "
            "contentHash. The server saves one for every change of content."
        ),
        params=(NOTE_PATH,),
        handler=list_note_versions,
        output_schema=answer_schema({"path": STRING, "versions": rows(VERSION)}, ["path", "versions"]),
    ),
    Tool(
        name="read_note_version",
        title="Read note version",
        description="One saved version of a note: the line [contentHash: …], then its text exactly as it was.",
        params=(NOTE_PATH, Param("version", VERSION_HELP, kind="version")),
        handler=read_note_version,
        output_schema=object_schema(
            {"path": STRING, "version": {"type": "object"}, "contentHash": STRING, "text": STRING},
            ["path", "version", "contentHash", "text"],
        ),
    ),
    Tool(
        name="diff_note_versions",
        title="Diff note versions",
        description="A unified diff of a note from a saved version, or a time, to another or its current text.",
        params=(
            NOTE_PATH,
            Param("from", "The older version (number or id).", kind="version", required=False),
            Param("since", "Or a time (24h).", kind="when", required=False),
            Param("to", "Default: the current text.", kind="version", required=False),
        ),
        handler=diff_note_versions,
        output_schema=answer_schema(
            {
                "path": STRING,
                "from": {"type": "object"},
                "to": {"type": "object"},
                "changed": {"type": "boolean"},
                "diff": STRING,
            },
            ["path", "from", "to", "changed", "diff", "summary"],
        ),
    ),
    Tool(
        name="restore_note_version",
        title="Restore note version",
        description=(
            "Bring back a saved version's text as a new version; the text it replaces stays in the history. "
            "Returns the diff and the new contentHash."
        ),
        params=(NOTE_PATH, Param("version", VERSION_HELP, kind="version"), EXPECTED_HASH),
        handler=restore_note_version,
        writes=True,
        path_params=("path",),
        destructive=False,  # the replaced content stays in the history
        idempotent=True,  # restoring the same version again changes nothing
        output_schema=answer_schema(
            {
                "path": STRING,
                "action": {"type": "string", "enum": ["restored", "unchanged"]},
                "restoredVersion": {"type": "object"},
                "previousHash": STRING,
                "contentHash": STRING,
                "diff": STRING,
                **STORY,  # what add_story may add: the sentences the summary says besides the restore itself
            },
            ["path", "action", "restoredVersion", "previousHash", "contentHash", "summary"],
        ),
    ),
)
