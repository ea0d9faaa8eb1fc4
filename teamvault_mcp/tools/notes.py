"""The tools that identify and change notes: whoami, list_projects, write_note, edit_note, move_note, delete_note.

Reading is ``reading.py``, version history ``history.py``; every write follows the write
rules (``writing/rules.py``: preconditions, settled outcomes) and a content write loses no
colleague's change (``writing/content.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import (
    ChangedMeanwhileError,
    HTTPStatusError,
    NotTextError,
    PreconditionFailedError,
    TeamVaultError,
    ToolInputError,
    printable,
    short_hash,
)
from teamvault_mcp.text.edits import Edit, apply_edits, edits_from_patch
from teamvault_mcp.text.note_paths import (
    NOTE_EXTENSION,
    extension_of,
    has_extension,
    move_target,
    name_of,
    names_folder,
)
from teamvault_mcp.text.paths import stored_path_of
from teamvault_mcp.text.sizes import byte_count
from teamvault_mcp.tools.answer import Answer
from teamvault_mcp.tools.context import ToolContext, ToolOutput, sha256_hex
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.missing import when_text
from teamvault_mcp.tools.relinking import LINKS_SCHEMA, dry_run, update_links
from teamvault_mcp.tools.spec import (
    DRY_RUN,
    EXPECTED_HASH,
    NOTE_PATH,
    NULLABLE_STRING,
    STRING,
    See,
    Tool,
    answer_schema,
    object_schema,
    rows,
)
from teamvault_mcp.tools.versions import describe
from teamvault_mcp.tools.writing.content import Mode, write_content
from teamvault_mcp.tools.writing.rewrite import rewrite, rewritten_schema
from teamvault_mcp.tools.writing.rules import create_content, expect, mime_type_for, result_limit, result_with, settle
from teamvault_mcp.tools.writing.story import STORY, written_result
from teamvault_mcp.vault.retry import outcome

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile


def whoami(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    user = ctx.client.whoami()
    result = {"id": user.id, "email": user.email, "name": user.name}
    email = f" <{result['email']}>" if result["email"] else ""
    answer = Answer(**result)
    answer.summary(f"{result['name'] or 'A user without a name'}{email}, user id {result['id']}.")
    return answer.output()


def list_projects(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    projects = [{"id": p.id, "slug": p.slug, "name": p.name} for p in ctx.client.list_projects()]
    default = f" Without projectId the tools use {ctx.default_project_id}." if ctx.default_project_id else ""
    answer = Answer(projects=[], defaultProject=ctx.default_project_id)
    answer.summary(
        f"{len(projects)} project{'s' if len(projects) != 1 else ''} this key can use (id, name, slug):{default}"
    )
    for project in projects:
        answer.row("projects", _project_line(project), project)
    return answer.output()


def _project_line(project: dict[str, Any]) -> str:
    slug = f" ({project['slug']})" if project["slug"] else ""
    return f"{project['id']}  {project['name'] or ''}{slug}".rstrip()


# -- write_note -------------------------------------------------------------------------------------


def write_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    if names_folder(args["path"]):
        folder = printable(args["path"].rstrip("/\\"))
        raise ToolInputError(
            f"write_note needs a note's path, and {printable(args['path'])!r} ends with '/', so it names a folder. "
            f"Nothing was written; give the note's name too, e.g. '{folder}/<name>.md'."
        )
    path = stored_path_of(args["path"])
    data = args["content"].encode("utf-8")
    new_hash = sha256_hex(data)
    expected = args.get("expectedHash")
    if args.get("mode") == "create" and expected is None:
        # One request: the POST itself refuses a live note at the path (409 path_exists). A new note's name
        # without an extension gets .md, as below.
        given = None
        if not has_extension(path):
            given, path = path, path + NOTE_EXTENSION
            ctx.report.paths = [path]
        return _create_note(ctx, project_id, args, path, data, given)
    existing = ctx.client.find_file(project_id, path)
    given = None
    if existing is None and not has_extension(path):  # a name as links write it: the note is name.md
        given, path = path, path + NOTE_EXTENSION
        existing = ctx.client.find_file(project_id, path)
        ctx.report.paths = [path]
    expected = expect(ctx, project_id, path, existing, expected)  # from here on the full hash (If-Match)
    if existing is None:
        return _create_note(ctx, project_id, args, path, data, given)
    if args.get("mode") == "create":
        raise _already_exists(path)
    if existing.file_type != "TEXT":
        raise NotTextError(path, existing.mime_type or existing.file_type)
    ctx.report.facts.saw(existing.content_hash, new_hash)
    mode: Mode = "strict" if expected is not None else "replace"
    written = write_content(ctx, project_id, path, existing, data, mode=mode, expected=expected)
    size = written.file.size if written.file.size is not None else len(data)
    result = {"path": written.file.path, "action": "updated", "size": size, "contentHash": new_hash}
    said = f"Updated {written.file.path} ({byte_count(size)}); its contentHash is now {short_hash(new_hash)}."
    said += _md_added(given)
    return written_result(ctx, _given(result, given), written, said)


def _create_note(
    ctx: ToolContext, project_id: str, args: Mapping[str, Any], path: str, data: bytes, given: str | None
) -> ToolOutput:
    if args.get("mode") == "update":
        missing = ctx.not_found(project_id, path)
        missing.extend("(mode=update only changes an existing note; use mode=create or upsert to make one.)")
        raise missing
    stored_path_of(path, incoming=True)  # the server's gate for new paths, before the POST
    new_hash = sha256_hex(data)
    ctx.report.facts.saw(None, new_hash)
    try:
        written, verified = create_content(ctx, project_id, path, data)
    except HTTPStatusError as error:
        if error.status == 409 and error.code == "path_exists" and not outcome(error).uncertain:
            ctx.report.clear()  # nothing is known of the note that is there
            raise _already_exists(path) from None
        raise
    size = written.size if written.size is not None else len(data)
    result = {"path": written.path, "action": "created", "size": size, "contentHash": new_hash}
    said = f"Created {written.path} ({byte_count(size)}); its contentHash is {short_hash(new_hash)}.{_md_added(given)}"
    return result_with(_given(result, given), verified, said)


def _md_added(given: str | None) -> str:
    """What the text says when the path given had no extension: a note's file name ends in .md."""
    if given is None:
        return ""
    return f" ('{NOTE_EXTENSION}' was added to the path you gave, {printable(given)}: a note's name ends in it.)"


def _given(result: dict[str, Any], given: str | None) -> dict[str, Any]:
    if given is not None:
        result["givenPath"] = given
    return result


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
    expected = expect(
        ctx, project_id, note.path, note.file, args.get("expectedHash"), current=(note.content_hash, note.text)
    )
    limit = result_limit(len(note.data))  # a replaceAll can multiply a note: refused before it is built
    changed = apply_edits(note.editable_text("its text"), edits, max_bytes=limit, path=note.path)
    return rewrite(
        ctx,
        project_id,
        note,
        changed,
        dry_run=bool(args.get("dryRun")),
        edits="the edits",
        done="Edited",
        change=lambda text: apply_edits(text, edits, max_bytes=limit, path=note.path),
        expected=expected,
        apply=("edit_note", {**args, "path": note.path}),
    )


# -- move_note, delete_note ----------------------------------------------------------------------------


def move_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    raw = args["newPath"]
    new_path = move_target(raw, stored_path_of(args["path"]))  # refused before any request, like path
    path, file = ctx.existing(project_id, args["path"])
    how = ""
    if names_folder(raw):
        how = f" (into the folder {printable(raw)}, under its own name)"
    elif new_path != stored_path_of(raw, incoming=True):  # an extension was added: unless that is a folder
        folder = stored_path_of(raw, incoming=True)
        if any(f.path.startswith(folder + "/") for f in ctx.client.list_files(project_id, prefix=folder + "/")):
            new_path = stored_path_of(f"{folder}/{name_of(path)}", incoming=True)
            how = f" ({printable(folder)} is a folder: the note went into it, under its own name)"
        else:
            how = f" ('{extension_of(new_path)}' was added to the newPath you gave, {printable(raw)})"
    ctx.report.paths = [path, new_path]
    expected = expect(ctx, project_id, path, file, args.get("expectedHash"))
    relink = args.get("updateLinks", True)
    if args.get("dryRun"):
        return dry_run(ctx, project_id, path, file, new_path, relink)
    ctx.report.facts.saw(file.content_hash, file.content_hash)
    verified = False
    try:
        ctx.client.move_file(project_id, file.id, new_path, if_match=expected)
    except PreconditionFailedError:  # changed since the check above: the server refused, nothing moved
        expect(ctx, project_id, path, ctx.client.find_file(project_id, path), expected)
        raise
    except TeamVaultError as error:
        try:
            settle(
                error,
                lambda: (ctx.client.find_file(project_id, new_path), ctx.client.find_file(project_id, path)),
                applied=lambda found: found[0] is not None and found[0].id == file.id,
                untouched=lambda found: found[1] is not None and found[1].id == file.id,
                untouched_text=f"the note still at {path}",
            )
        except HTTPStatusError as final:
            if final is error and final.status == 409 and final.code == "path_exists":
                _say_who_holds(ctx, project_id, new_path, path, final)
            raise
        verified = ctx.report.facts.verified = True
    if expected is not None and not ctx.client.conditional:
        _undo_move_if_changed(ctx, project_id, file, path, new_path, expected)
    result = {"path": new_path, "previousPath": path, "contentHash": file.content_hash}
    said = f"Moved {path} to {new_path}{how}; its contentHash stays {short_hash(file.content_hash)}."
    if not relink and ctx.tools.has("search_notes") and name_of(new_path) != name_of(path):
        said += (
            " Links to it in other notes are not changed; search_notes(query="
            f'{json.dumps(_links_to(path), ensure_ascii=False)}, mode="regex") finds them.'
        )
    moved = result_with(result, verified, said)
    return update_links(ctx, project_id, path, new_path, moved) if relink else moved


def _links_to(path: str) -> str:
    """A search_notes regex for the wikilinks that name the note at ``path``: ``[[ada]]``, ``[[people/ada|Ada]]``."""
    name = name_of(path)
    stem = name[: -len(extension_of(name))] if extension_of(name) else name
    return rf"\[[^\]|#]*[/\[]{re.escape(stem)}(\.md)?[\]|#]"


def _say_who_holds(ctx: ToolContext, project_id: str, new_path: str, path: str, error: HTTPStatusError) -> None:
    """A move refused with 409 path_exists: when a deleted note holds the path, say so and how to reuse it."""
    try:
        holder = ctx.client.find_file(project_id, new_path, include_deleted=True)
    except TeamVaultError:
        return
    if holder is None or holder.deleted_at is None:
        return
    said = f"{new_path} is held by a note deleted on {when_text(holder.deleted_at)}: the server keeps its path."
    if ctx.tools.has("write_note", "delete_note"):
        said += (
            f" To use the name anyway, write_note at {new_path} with this note's text brings that deleted note "
            f"back (with its own history), and delete_note({json.dumps(path, ensure_ascii=False)}) then removes "
            "this one; or choose another newPath."
        )
    error.extend(said)


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
    except TeamVaultError as error:
        undone = f"undoing the move failed ({error}), so the note is at {new_path} now"
    raise ChangedMeanwhileError(
        f"Conflict: {path} was changed after you read it (you expected contentHash {short_hash(expected)}, it is "
        f"now {short_hash(after.content_hash)}) and while it was being moved; {undone}. Nothing was lost. Read the "
        "note again, then decide whether to move it."
    )


def delete_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    path, file = ctx.existing(project_id, args["path"])
    expected = expect(ctx, project_id, path, file, args.get("expectedHash"))
    ctx.report.facts.saw(file.content_hash, None)
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
        verified = ctx.report.facts.verified = True
    result: dict[str, Any] = {"path": path, "action": "deleted", "contentHash": file.content_hash}
    if expected is not None and not ctx.client.conditional:
        unchecked = _undo_delete_if_changed(ctx, project_id, file, path, expected)
        if unchecked:
            result["unchecked"] = unchecked
    said = f"Deleted {path} (contentHash {short_hash(file.content_hash)}); the server keeps it and its history."
    if ctx.tools.has("write_note"):
        said += " write_note at this path brings it back."
    if result.get("unchecked"):
        said += f" Not checked for a colleague's write at the same moment: {result['unchecked']}."
    return result_with(result, verified, said)


def _undo_delete_if_changed(ctx: ToolContext, project_id: str, file: VaultFile, path: str, expected: str) -> str:
    """After a delete with expectedHash on a server that cannot make it conditional: was the note changed meanwhile?

    The history's newest version is what was deleted. If it is not the expected one, a
    colleague's write slipped in between the check and the delete: the note is brought
    back with their text (a create at a deleted path revives the same note) and the call
    fails. Returns why it could not check, or "".
    """
    try:
        versions = ctx.client.list_versions(project_id, file.id)
    except TeamVaultError as error:
        return f"the note's version history could not be read ({error})"
    newest = max(versions, key=lambda v: v.number or 0, default=None)
    newest_hash = (newest.content_hash or "").lower() if newest is not None else ""
    if newest is None or not newest_hash:
        return "the server keeps no version history of this note"
    if newest_hash == expected.lower():
        return ""
    ctx.client.new_write()
    try:
        data = ctx.client.download_version(project_id, file.id, newest.id)
        ctx.client.create_file(project_id, path, data, file.mime_type or mime_type_for(path))
        undone = f"the delete was undone: their text is back at {path}, with its history"
    except TeamVaultError as error:
        undone = f"bringing it back failed ({error}); write_note at {path} and restore_note_version bring it back"
    raise ChangedMeanwhileError(
        f"Conflict: {path} was changed by {describe(newest)} after you read it (you expected contentHash "
        f"{expected}) and while it was being deleted; {undone}. Nothing was lost. Read the note again, then "
        "decide whether to delete it."
    )


# -- the tools ----------------------------------------------------------------------------------------

PROJECT_FIELDS = {"id": STRING, "slug": NULLABLE_STRING, "name": NULLABLE_STRING}


def _move_paths(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The notes a move names, for the write scopes: the note, and where it goes (``archive/`` → its name in it)."""
    return [("path", args["path"]), ("newPath", move_target(args["newPath"], stored_path_of(args["path"])))]


TOOLS: tuple[Tool, ...] = (
    Tool(
        name="whoami",
        title="Who am I",
        description="The Team Vault user the API key belongs to (name, email, id): whose name your edits carry.",
        params=(),
        handler=whoami,
        takes_project=False,
        output_schema=answer_schema({"id": STRING, "email": NULLABLE_STRING, "name": NULLABLE_STRING}, ["id"]),
    ),
    Tool(
        name="list_projects",
        title="List projects",
        description="The projects (shared vaults) the API key can use: id, name, slug.",
        params=(),
        handler=list_projects,
        takes_project=False,
        output_schema=answer_schema(
            {
                "projects": rows(
                    object_schema({"id": STRING, "slug": NULLABLE_STRING, "name": NULLABLE_STRING}, ["id"])
                ),
                "defaultProject": NULLABLE_STRING,
            },
            ["projects"],
        ),
    ),
    Tool(
        name="write_note",
        title="Write note",
        description=(
            "Create a note, or replace all its text; returns the new contentHash. mode=create never overwrites, "
            "mode=update never creates. Missing folders are made; a deleted note's path brings it back. A retry "
            "never writes twice."
        ),
        see=(See(("edit_note",), "To change part of a note, use edit_note."),),
        params=(
            NOTE_PATH,
            Param("content", "The note's complete new text.", kind="note_text"),
            Param(
                "mode",
                "upsert (default), create or update.",
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
                "givenPath": STRING,
                "summary": STRING,
                **STORY,
            },
            ["path", "action", "size", "contentHash", "summary"],
        ),
    ),
    Tool(
        name="edit_note",
        title="Edit note",
        description=(
            "Change part of a note: edits, replacements made in order (each oldText must occur once, or set "
            "replaceAll; line endings may differ), or patch, a unified diff (@@ line numbers optional). All "
            "apply or none. Returns the diff and the new contentHash; dryRun previews and gives the call that "
            "applies it."
        ),
        params=(
            NOTE_PATH,
            Param(
                "edits",
                "Replacements, made in order.",
                kind="edits",
                required=False,
            ),
            Param("patch", "Instead of edits: a unified diff.", kind="content", required=False),
            DRY_RUN,
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
            "Move or rename a note; it keeps its history. A newPath ending in '/', or naming a folder, moves it "
            "into that folder under its name. Fails if a note, even a deleted one, holds newPath. Links to it in "
            "other notes are rewritten so that they still resolve."
        ),
        params=(
            NOTE_PATH,
            Param("newPath", "Where to, e.g. 'projects/idea.md' or 'archive/'."),
            EXPECTED_HASH,
            Param("updateLinks", "false: leave links to it as they are.", kind="flag", required=False),
            Param("dryRun", "List the links that would change; write nothing.", kind="flag", required=False),
        ),
        handler=move_note,
        writes=True,
        path_params=("path", "newPath"),
        written=_move_paths,
        destructive=False,  # nothing is lost; moving back restores the old state
        idempotent=False,  # a repeat could move another note that has appeared at the old path
        output_schema=answer_schema(
            {
                "path": STRING,
                "previousPath": STRING,
                "contentHash": NULLABLE_STRING,
                "id": STRING,
                "dryRun": {"type": "boolean"},
                "verified": {"type": "boolean"},
                "note": STRING,
                "links": LINKS_SCHEMA,
            },
            ["path", "previousPath", "summary"],
        ),
    ),
    Tool(
        name="delete_note",
        title="Delete note",
        description="Delete a note. The server keeps it and its history; writing a note at its path brings it back.",
        params=(NOTE_PATH, EXPECTED_HASH),
        handler=delete_note,
        writes=True,
        path_params=("path",),
        destructive=True,
        idempotent=True,
        output_schema=object_schema(
            {
                "path": STRING,
                "action": {"type": "string", "enum": ["deleted"]},
                "contentHash": NULLABLE_STRING,
                "unchecked": STRING,
                "verified": {"type": "boolean"},
                "note": STRING,
                "summary": STRING,
            },
            ["path", "action", "summary"],
        ),
    ),
)
