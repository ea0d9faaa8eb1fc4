"""Handlers of the tools that identify and change notes, and the rules every write follows.

whoami, list_projects, write_note, edit_note, move_note, delete_note. Reading lives in
``reading.py``, version history in ``history.py``.

Every write (also restore_note_version) follows the same two rules:

- **Preconditions.** With ``expectedHash`` (the ``contentHash`` the agent last saw) a
  write happens only if the note still has it; otherwise a :class:`ConflictError`
  shows what changed since (:func:`expect`).
- **Settled outcomes.** A write that ends without a definite answer is checked once
  (:func:`settle`): found applied → success, marked ``verified``; found as it was
  before, with no attempt possibly still running on the server → a clean failure;
  anything else keeps the "may or may not have been applied" hint.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from teamvault_mcp.calls import Note, ToolContext, ToolOutput, json_output, sha256_hex
from teamvault_mcp.editing import Edit, apply_edits, edits_from_patch
from teamvault_mcp.errors import (
    CallCancelledError,
    ConflictError,
    NotAppliedError,
    NoteNotFoundError,
    NotTextError,
    TeamVaultError,
    ToolInputError,
)
from teamvault_mcp.paths import stored_path_of
from teamvault_mcp.textdiff import shortened, unified_diff

if TYPE_CHECKING:
    from teamvault_mcp.client import VaultFile

T = TypeVar("T")

VERIFIED = "The server's answer was lost on the way; a check right after confirmed the change was applied."


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
    mode = args.get("mode", "upsert")
    data = args["content"].encode("utf-8")
    new_hash = sha256_hex(data)
    existing = ctx.client.find_file(project_id, path)
    expect(ctx, project_id, path, existing, args.get("expectedHash"))
    if existing is not None:
        if mode == "create":
            raise TeamVaultError(
                f"Note already exists: {path}. mode=create never overwrites; use mode=update (or upsert) "
                "to replace it, or choose another path."
            )
        if existing.file_type != "TEXT":
            raise NotTextError(path, existing.mime_type or existing.file_type)
        before = existing.content_hash
        action = "updated"

        def write() -> VaultFile:
            return ctx.client.replace_content(project_id, existing.id, data)

    else:
        if mode == "update":
            missing = NoteNotFoundError(path)
            missing.extend("(mode=update only changes an existing note; use mode=create or upsert to make one.)")
            raise missing
        stored_path_of(args["path"], incoming=True)  # the server's gate for new paths, before the POST
        before = None
        action = "created"

        def write() -> VaultFile:
            return ctx.client.create_file(project_id, path, data, mime_type_for(path))

    ctx.facts.update(hashBefore=before, hashAfter=new_hash)
    written, verified = settle_content(ctx, project_id, path, write, before=before, data=data)
    size = written.size if written.size is not None else len(data)
    return _result({"path": written.path, "action": action, "size": size, "contentHash": new_hash}, verified)


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
    expect(ctx, project_id, note.path, note.file, args.get("expectedHash"), current=(note.content_hash, note.text))
    changed = apply_edits(note.editable_text("its text"), edits)
    return rewrite(ctx, project_id, note, changed, dry_run=bool(args.get("dryRun")), edits="the edits", done="Edited")


def rewrite(
    ctx: ToolContext,
    project_id: str,
    note: Note,
    changed: str,
    *,
    dry_run: bool,
    edits: str,
    done: str,
    extra: dict[str, Any] | None = None,
) -> ToolOutput:
    """Replace ``note``'s text by ``changed`` (unless it is the same, or a dry run): the result with its diff.

    ``edits`` names what changes it in messages ("the edits"), ``done`` what was done ("Edited");
    ``extra`` adds fields to the result.
    """
    original = note.data.decode("utf-8")
    data = changed.encode("utf-8")
    diff = unified_diff(original, changed, before=f"a/{note.path}", after=f"b/{note.path}")
    result: dict[str, Any] = {
        "path": note.path,
        "dryRun": dry_run,
        "changed": changed != original,
        "previousHash": note.content_hash,
        "contentHash": sha256_hex(data),
        "diff": diff,
        **(extra or {}),
    }
    ctx.facts.update(hashBefore=note.content_hash, hashAfter=result["contentHash"])
    if changed == original:
        ctx.facts["noop"] = True
        return ToolOutput(f"No change: {edits} leave {note.path} as it is. Nothing was written.", result)
    if dry_run:
        ctx.facts["noop"] = True
        headline = f"Dry run: nothing was written. Applied, {edits} would give contentHash {result['contentHash']}."
        return ToolOutput(f"{headline}\n{diff}", result)
    file = note.file

    def write() -> VaultFile:
        return ctx.client.replace_content(project_id, file.id, data)

    _, verified = settle_content(ctx, project_id, note.path, write, before=note.content_hash, data=data)
    if verified:
        result.update(verified=True, note=VERIFIED)
    headline = f"{done} {note.path}; its contentHash is now {result['contentHash']}."
    return ToolOutput(f"{headline}{' ' + VERIFIED if verified else ''}\n{diff}", result)


# -- move_note, delete_note ----------------------------------------------------------------------------


def move_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    new_path = stored_path_of(args["newPath"], incoming=True)  # refused before any request, like path
    path, file = ctx.existing(project_id, args["path"])
    expect(ctx, project_id, path, file, args.get("expectedHash"))
    ctx.facts.update(hashBefore=file.content_hash, hashAfter=file.content_hash)
    try:
        moved = ctx.client.move_file(project_id, file.id, new_path)
        return json_output({"id": moved.get("id", file.id), "path": moved.get("path", new_path)})
    except TeamVaultError as error:
        settle(
            error,
            lambda: (ctx.client.find_file(project_id, new_path), ctx.client.find_file(project_id, path)),
            applied=lambda found: found[0] is not None and found[0].id == file.id,
            untouched=lambda found: found[1] is not None and found[1].id == file.id,
            untouched_text=f"the note still at {path}",
        )
    ctx.facts["verified"] = True
    return _result({"id": file.id, "path": new_path}, verified=True)


def delete_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    path, file = ctx.existing(project_id, args["path"])
    expect(ctx, project_id, path, file, args.get("expectedHash"))
    ctx.facts.update(hashBefore=file.content_hash, hashAfter=None)
    try:
        ctx.client.delete_file(project_id, file.id)
        return json_output({"path": path, "action": "deleted"})
    except TeamVaultError as error:
        settle(
            error,
            lambda: ctx.client.find_file(project_id, path),
            applied=lambda found: found is None or found.id != file.id,
            untouched=lambda found: found is not None and found.id == file.id,
            untouched_text=f"the note still at {path}",
        )
    ctx.facts["verified"] = True
    return _result({"path": path, "action": "deleted"}, verified=True)


# -- the rules every write follows ----------------------------------------------------------------------


def expect(
    ctx: ToolContext,
    project_id: str,
    path: str,
    file: VaultFile | None,
    expected: str | None,
    *,
    current: tuple[str, str] | None = None,
) -> None:
    """Refuse with a :class:`ConflictError` if the note is not at ``expected`` (when given).

    ``current`` is the note's hash and text when the caller has downloaded it already.
    """
    if expected is None:
        return
    expected = expected.lower()
    if file is None:
        raise ConflictError(path, expected, None, None)
    current_hash, current_text = current if current is not None else (file.content_hash, None)
    if current_hash is None:  # a server that does not report hashes: compute it
        data = ctx.client.download(project_id, file.id)
        current_hash, current_text = sha256_hex(data), data.decode("utf-8", errors="replace")
    if current_hash == expected:
        return
    since = _since(ctx, project_id, file, expected, current_hash, current_text)
    raise ConflictError(path, expected, current_hash, since)


def _since(
    ctx: ToolContext, project_id: str, file: VaultFile, expected: str, current: str, current_text: str | None
) -> str | None:
    """The diff from the version the agent saw to the note now, if the history still has that version."""
    try:
        seen = next(
            (v for v in ctx.client.list_versions(project_id, file.id) if v.get("contentHash") == expected), None
        )
        if seen is None or file.file_type != "TEXT":
            return None
        then = ctx.client.download_version(project_id, file.id, str(seen["id"])).decode("utf-8", errors="replace")
        if current_text is None:
            current_text = ctx.client.download(project_id, file.id).decode("utf-8", errors="replace")
    except CallCancelledError:
        raise
    except TeamVaultError:
        return None  # the conflict stands; only the diff is missing
    label = f"version {seen.get('versionNumber', '?')} ({expected[:12]}…, what you saw)"
    return shortened(unified_diff(then, current_text, before=label, after=f"now ({current[:12]}…)"))


def settle_content(
    ctx: ToolContext,
    project_id: str,
    path: str,
    write: Callable[[], VaultFile],
    *,
    before: str | None,
    data: bytes,
) -> tuple[VaultFile, bool]:
    """Run a write of ``data``; on an unanswered one, look at the note once. Returns (file, verified).

    The bytes written go to the content cache, so the next read of the note is one request.
    """
    after = sha256_hex(data)
    try:
        written = write()
    except TeamVaultError as error:
        found = settle(
            error,
            lambda: ctx.client.find_file(project_id, path),
            applied=lambda file: file is not None and file.content_hash == after,
            untouched=lambda file: (file.content_hash if file is not None else None) == before,
            untouched_text=f"the note unchanged (contentHash {before})" if before else f"still no note at {path}",
        )
        assert found is not None
        ctx.facts["verified"] = True
        ctx.remember(project_id, data)
        return found, True
    ctx.remember(project_id, data)
    return written, False


def settle(
    error: TeamVaultError,
    look: Callable[[], T],
    *,
    applied: Callable[[T], bool],
    untouched: Callable[[T], bool],
    untouched_text: str,
) -> T:
    """Settle a write that ended in ``error``: what ``look`` found if it shows the write applied.

    Raises :class:`NotAppliedError` if it shows the note untouched and no attempt can still
    be running on the server; re-raises ``error`` (with its hint) in every other case.
    """
    if isinstance(error, CallCancelledError) or not error.uncertain:
        raise error
    try:
        found = look()
    except CallCancelledError:
        raise
    except TeamVaultError:
        raise error from None  # no budget left to look, or the look failed too: it stays uncertain
    if applied(found):
        return found
    if untouched(found) and not error.pending:
        raise NotAppliedError(error, untouched_text) from None
    raise error


def _result(result: dict[str, Any], verified: bool) -> ToolOutput:
    if verified:
        result.update(verified=True, note=VERIFIED)
    return json_output(result)


def mime_type_for(path: str) -> str:
    """The mime type a new note is created with. Always a text type: the content is text."""
    name = path.rsplit("/", 1)[-1].lower()
    if "." not in name or name.endswith((".md", ".markdown")):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed and (guessed.startswith("text/") or guessed in ("application/json", "application/yaml")):
        return guessed
    return "text/plain"
