"""The tools that identify and change notes: whoami, list_projects, write_note, edit_note, move_note, delete_note.

Reading is ``reading.py``, version history ``history.py``; every write follows the write
rules (``writes.py``: preconditions, settled outcomes) and a content write loses no
colleague's change (``no_lost_updates.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import (
    CallCancelledError,
    ChangedMeanwhileError,
    HTTPStatusError,
    NoteNotFoundError,
    NotTextError,
    PreconditionFailedError,
    TeamVaultError,
    ToolInputError,
)
from teamvault_mcp.text.edits import Edit, apply_edits, edits_from_patch
from teamvault_mcp.text.paths import stored_path_of
from teamvault_mcp.tools.context import ToolContext, ToolOutput, json_output, sha256_hex
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.no_lost_updates import Mode, rewrite, rewritten_schema, write_content, written_result
from teamvault_mcp.tools.spec import EXPECTED_HASH, NOTE_PATH, NULLABLE_STRING, STRING, Tool, list_schema, object_schema
from teamvault_mcp.tools.versions import describe
from teamvault_mcp.tools.writes import expect, mime_type_for, result_with, settle, settle_content
from teamvault_mcp.vault.retry import outcome

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import VaultFile


def whoami(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    user = ctx.client.whoami()
    return json_output({"id": user.get("id"), "email": user.get("email"), "name": user.get("name")})


def list_projects(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    projects = [{"id": p.get("id"), "slug": p.get("slug"), "name": p.get("name")} for p in ctx.client.list_projects()]
    return json_output(projects, key="projects")


# -- write_note -------------------------------------------------------------------------------------


def write_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    path = stored_path_of(args["path"])
    data = args["content"].encode("utf-8")
    new_hash = sha256_hex(data)
    expected = args.get("expectedHash")
    if args.get("mode") == "create" and expected is None:
        # One request: the POST itself refuses a live note at the path (409 path_exists).
        return _create_note(ctx, project_id, args, path, data)
    existing = ctx.client.find_file(project_id, path)
    expect(ctx, project_id, path, existing, expected)
    if existing is None:
        return _create_note(ctx, project_id, args, path, data)
    if args.get("mode") == "create":
        raise _already_exists(path)
    if existing.file_type != "TEXT":
        raise NotTextError(path, existing.mime_type or existing.file_type)
    ctx.facts.update(hashBefore=existing.content_hash, hashAfter=new_hash)
    mode: Mode = "strict" if expected is not None else "replace"
    written = write_content(ctx, project_id, path, existing, data, mode=mode, expected=expected)
    size = written.file.size if written.file.size is not None else len(data)
    return written_result(
        ctx, {"path": written.file.path, "action": "updated", "size": size, "contentHash": new_hash}, written
    )


def _create_note(ctx: ToolContext, project_id: str, args: Mapping[str, Any], path: str, data: bytes) -> ToolOutput:
    if args.get("mode") == "update":
        missing = NoteNotFoundError(path)
        missing.extend("(mode=update only changes an existing note; use mode=create or upsert to make one.)")
        raise missing
    stored_path_of(args["path"], incoming=True)  # the server's gate for new paths, before the POST
    new_hash = sha256_hex(data)
    ctx.facts.update(hashBefore=None, hashAfter=new_hash)
    try:
        written, verified = settle_content(
            ctx,
            project_id,
            path,
            lambda: ctx.client.create_file(project_id, path, data, mime_type_for(path)),
            before=None,
            data=data,
        )
    except HTTPStatusError as error:
        if error.status == 409 and error.code == "path_exists" and not outcome(error).uncertain:
            ctx.facts.clear()  # nothing is known of the note that is there
            raise _already_exists(path) from None
        raise
    size = written.size if written.size is not None else len(data)
    return result_with({"path": written.path, "action": "created", "size": size, "contentHash": new_hash}, verified)


def _already_exists(path: str) -> TeamVaultError:
    return TeamVaultError(
        f"Note already exists: {path}. mode=create never overwrites; use mode=update (or upsert) "
        "to replace it, or choose another path."
    )


# -- edit_note --------------------------------------------------------------------------------------


def edit_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    if ("edits" in args) == ("patch" in args):
        raise ToolInputError("Give either edits (a list of {oldText, newText}) or patch (a unified diff), not both.")
    if "edits" in args:
        edits = [Edit(e["oldText"], e["newText"], bool(e.get("replaceAll", False))) for e in args["edits"]]
    else:
        edits = edits_from_patch(args["patch"])
    note = ctx.note(project_id, args["path"])
    expected = args.get("expectedHash")
    expect(ctx, project_id, note.path, note.file, expected, current=(note.content_hash, note.text))
    changed = apply_edits(note.editable_text("its text"), edits)
    return rewrite(
        ctx,
        project_id,
        note,
        changed,
        dry_run=bool(args.get("dryRun")),
        edits="the edits",
        done="Edited",
        change=lambda text: apply_edits(text, edits),
        expected=expected,
    )


# -- move_note, delete_note ----------------------------------------------------------------------------


def move_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    new_path = stored_path_of(args["newPath"], incoming=True)  # refused before any request, like path
    path, file = ctx.existing(project_id, args["path"])
    expected = args.get("expectedHash")
    expect(ctx, project_id, path, file, expected)
    ctx.facts.update(hashBefore=file.content_hash, hashAfter=file.content_hash)
    verified = False
    try:
        ctx.client.move_file(project_id, file.id, new_path, if_match=expected)
    except PreconditionFailedError:  # changed since the check above: the server refused, nothing moved
        expect(ctx, project_id, path, ctx.client.find_file(project_id, path), expected)
        raise
    except TeamVaultError as error:
        settle(
            error,
            lambda: (ctx.client.find_file(project_id, new_path), ctx.client.find_file(project_id, path)),
            applied=lambda found: found[0] is not None and found[0].id == file.id,
            untouched=lambda found: found[1] is not None and found[1].id == file.id,
            untouched_text=f"the note still at {path}",
        )
        verified = ctx.facts["verified"] = True
    if expected is not None and not ctx.client.conditional:
        _undo_move_if_changed(ctx, project_id, file, path, new_path, expected)
    return result_with({"id": file.id, "path": new_path}, verified)


def _undo_move_if_changed(
    ctx: ToolContext, project_id: str, file: VaultFile, path: str, new_path: str, expected: str
) -> None:
    """After a move with expectedHash on a server that cannot make it conditional: was the note changed meanwhile?

    A move changes no content, so the note at its new path must still have the expected
    hash. If a colleague's write slipped in between the check and the move, the move is
    undone (the agent asked for it only if nothing had changed) and the call fails.
    """
    after = ctx.client.find_file(project_id, new_path)
    if after is None or after.id != file.id or after.content_hash in (None, expected.lower()):
        return
    ctx.client.new_write()
    try:
        ctx.client.move_file(project_id, file.id, path)
        undone = f"the move was undone: the note is back at {path}"
    except CallCancelledError:
        raise
    except TeamVaultError as error:
        undone = f"undoing the move failed ({error}), so the note is at {new_path} now"
    raise ChangedMeanwhileError(
        f"Conflict: {path} was changed after you read it (you expected contentHash {expected}, it is now "
        f"{after.content_hash}) and while it was being moved; {undone}. Nothing was lost. Read the note again, "
        "then decide whether to move it."
    )


def delete_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    path, file = ctx.existing(project_id, args["path"])
    expected = args.get("expectedHash")
    expect(ctx, project_id, path, file, expected)
    ctx.facts.update(hashBefore=file.content_hash, hashAfter=None)
    verified = False
    try:
        ctx.client.delete_file(project_id, file.id, if_match=expected)
    except PreconditionFailedError:  # changed since the check above: the server refused, nothing deleted
        expect(ctx, project_id, path, ctx.client.find_file(project_id, path), expected)
        raise
    except TeamVaultError as error:
        settle(
            error,
            lambda: ctx.client.find_file(project_id, path),
            applied=lambda found: found is None or found.id != file.id,
            untouched=lambda found: found is not None and found.id == file.id,
            untouched_text=f"the note still at {path}",
        )
        verified = ctx.facts["verified"] = True
    result: dict[str, Any] = {"path": path, "action": "deleted"}
    if expected is not None and not ctx.client.conditional:
        unchecked = _undo_delete_if_changed(ctx, project_id, file, path, expected)
        if unchecked:
            result["unchecked"] = unchecked
    return result_with(result, verified)


def _undo_delete_if_changed(ctx: ToolContext, project_id: str, file: VaultFile, path: str, expected: str) -> str:
    """After a delete with expectedHash on a server that cannot make it conditional: was the note changed meanwhile?

    The history's newest version is what was deleted. If it is not the expected one, a
    colleague's write slipped in between the check and the delete: the note is brought
    back with their text (a create at a deleted path revives the same note) and the call
    fails. Returns why it could not check, or "".
    """
    try:
        versions = ctx.client.list_versions(project_id, file.id)
    except CallCancelledError:
        raise
    except TeamVaultError as error:
        return f"the note's version history could not be read ({error})"
    newest = max(versions, key=lambda v: v.get("versionNumber") or 0, default=None)
    newest_hash = str(newest.get("contentHash") or "").lower() if newest is not None else ""
    if newest is None or not newest_hash:
        return "the server keeps no version history of this note"
    if newest_hash == expected.lower():
        return ""
    ctx.client.new_write()
    try:
        data = ctx.client.download_version(project_id, file.id, str(newest["id"]))
        ctx.client.create_file(project_id, path, data, file.mime_type or mime_type_for(path))
        undone = f"the delete was undone: their text is back at {path}, with its history"
    except CallCancelledError:
        raise
    except TeamVaultError as error:
        undone = f"bringing it back failed ({error}); write_note at {path} and restore_note_version bring it back"
    raise ChangedMeanwhileError(
        f"Conflict: {path} was changed by {describe(newest)} after you read it (you expected contentHash "
        f"{expected}) and while it was being deleted; {undone}. Nothing was lost. Read the note again, then "
        "decide whether to delete it."
    )


# -- the tools ----------------------------------------------------------------------------------------

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="whoami",
        title="Who am I",
        description=(
            "Return the Team Vault user that the configured API key belongs to: id, email and name. "
            "Use it to check that the connection works or to know whose name your edits appear under."
        ),
        params=(),
        handler=whoami,
        takes_project=False,
        output_schema=object_schema({"id": STRING, "email": NULLABLE_STRING, "name": NULLABLE_STRING}, ["id"]),
    ),
    Tool(
        name="list_projects",
        title="List projects",
        description=(
            "List the Team Vault projects (shared vaults) the API key can access, as id, slug and name. "
            "Pass a project's id as projectId to the other tools when no default project is configured "
            "or to work in another vault."
        ),
        params=(),
        handler=list_projects,
        takes_project=False,
        output_schema=list_schema(
            "projects",
            object_schema({"id": STRING, "slug": NULLABLE_STRING, "name": NULLABLE_STRING}, ["id"]),
        ),
    ),
    Tool(
        name="write_note",
        title="Write note",
        description=(
            "Create a text note at a vault path, or replace the whole content of the note already there. "
            "Returns the stored path, whether the note was 'created' or 'updated', its size in bytes and its new "
            "contentHash. Other people edit these notes too: to change part of a note use edit_note; to replace "
            "one, pass the contentHash you read as expectedHash so a colleague's edit is never overwritten. "
            "mode=create refuses to overwrite, mode=update refuses to create. Missing folders are created "
            "implicitly. A retried call never writes twice."
        ),
        params=(
            Param("path", "Vault-relative path of the note to write, e.g. 'meetings/2026-11-30.md'."),
            Param(
                "content",
                "The complete new text of the note (UTF-8). Replaces everything that was there.",
                kind="content",
            ),
            Param(
                "mode",
                "upsert (default): create or replace; create: fail if the note exists; update: fail if it does not.",
                kind="choice",
                required=False,
                choices=("upsert", "create", "update"),
            ),
            EXPECTED_HASH,
        ),
        handler=write_note,
        writes=True,
        path_params=("path",),
        destructive=True,  # replaces the previous content (the server keeps it as a version)
        idempotent=True,  # the same content written twice leaves the same note
        output_schema=object_schema(
            {
                "path": STRING,
                "action": {"type": "string", "enum": ["created", "updated"]},
                "size": {"type": "integer"},
                "contentHash": STRING,
                "verified": {"type": "boolean"},
            },
            ["path", "action", "size"],
        ),
    ),
    Tool(
        name="edit_note",
        title="Edit note",
        description=(
            "Change part of a note without rewriting it: edits is an ordered list of {oldText, newText} "
            "replacements (each oldText must occur exactly once, or set replaceAll); or give patch, a unified "
            "diff with @@ hunks of ' ', '-' and '+' lines (line numbers optional). Line endings may differ from "
            "the note's; the note keeps its own. All edits apply or none; a failed one shows the closest lines "
            "or every match's line number. Returns the unified diff and the new contentHash. dryRun shows the "
            "diff and writes nothing. Pass the contentHash you read as expectedHash to be safe from "
            "concurrent edits."
        ),
        params=(
            NOTE_PATH,
            Param(
                "edits",
                'Replacements, applied in order, e.g. [{"oldText": "- [ ] call Kuzma", '
                '"newText": "- [x] call Kuzma"}].',
                kind="edits",
                required=False,
            ),
            Param("patch", "Instead of edits: a unified diff of the note (@@ hunks).", kind="content", required=False),
            Param("dryRun", "true: show the diff, write nothing.", kind="flag", required=False),
            EXPECTED_HASH,
        ),
        handler=edit_note,
        writes=True,
        path_params=("path",),
        destructive=True,  # changes content (the server keeps the old content as a version)
        idempotent=False,  # a repeated replaceAll, or an edit whose oldText is in its newText, changes again
        output_schema=rewritten_schema(),
    ),
    Tool(
        name="move_note",
        title="Move or rename note",
        description=(
            "Move or rename a note within the project; it keeps its id and version history. Fails if a "
            "note already exists at newPath. Links in other notes are not rewritten."
        ),
        params=(
            Param("path", "Current vault path of the note, e.g. 'inbox/idea.md'."),
            Param("newPath", "New vault path, e.g. 'projects/idea.md'. Missing folders are created implicitly."),
            EXPECTED_HASH,
        ),
        handler=move_note,
        writes=True,
        path_params=("path", "newPath"),
        destructive=False,  # nothing is lost; moving back restores the old state
        idempotent=False,  # a repeat could move another note that has appeared at the old path
        output_schema=object_schema({"id": STRING, "path": STRING}, ["id", "path"]),
    ),
    Tool(
        name="delete_note",
        title="Delete note",
        description=(
            "Delete a note by its vault path. The delete is soft: the server keeps a tombstone and the "
            "version history, so an administrator can recover it, and writing a note at the same path "
            "later revives it."
        ),
        params=(NOTE_PATH, EXPECTED_HASH),
        handler=delete_note,
        writes=True,
        path_params=("path",),
        destructive=True,
        idempotent=True,
        output_schema=object_schema(
            {"path": STRING, "action": {"type": "string", "enum": ["deleted"]}}, ["path", "action"]
        ),
    ),
)
