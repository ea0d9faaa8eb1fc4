"""Content writes that lose no colleague's change: :func:`write_content`, and :func:`rewrite` on top of it.

A content write (:func:`write_content`) names the hash its new text was computed from. A
server that checks ``If-Match`` atomically (it says so with
``X-TeamVault-Conditional-Writes: if-match``, as our local vault does) refuses the PUT when
a colleague wrote first. Any other server cannot refuse, so the version history is read
right after the PUT (``versions.py``): our version must follow the one it was computed
from (our own earlier versions in this call aside); a colleague's version in between is
one we replaced. Then, by the kind of write (:data:`Mode`):

- ``rebase`` — edits (edit_note, update_frontmatter, upsert) without ``expectedHash``:
  the change is made again on top of the colleague's text (re-applied, or merged so
  their change is kept: :func:`~teamvault_mcp.text.merge.merge3`) and written again under the
  same check, up to :data:`REBASE_ROUNDS` times; when it no longer applies, their text
  is put back and the call fails with :class:`ChangedMeanwhileError`.
- ``strict`` — any write with ``expectedHash`` ("only if unchanged since I read"): a
  conflict; their text is put back (or, conditionally, never replaced).
- ``replace`` — write_note and restore_note_version without ``expectedHash``: last
  writer wins, by intent; the result says what was replaced, by whom, and how to get it back.

When the history cannot tell (no version history, our version not in it), the result
says so instead of claiming safety. Every PUT is settled as the write rules say (``writes.py``).

About 400 lines: one algorithm (the write loop and the rebase, merge and put-back it does), read whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from teamvault_mcp.errors import (
    CallCancelledError,
    ChangedMeanwhileError,
    EditFailedError,
    NoteNotFoundError,
    PreconditionFailedError,
    TeamVaultError,
    short_hash,
)
from teamvault_mcp.text.diff import hunks_only, shortened, unified_diff
from teamvault_mcp.text.merge import merge3, only_adds, swap_additions
from teamvault_mcp.tools.context import Note, ToolContext, ToolOutput, sha256_hex
from teamvault_mcp.tools.note_locks import LOCK_RESERVE
from teamvault_mcp.tools.spec import NULLABLE_INT, NULLABLE_STRING, STRING, object_schema
from teamvault_mcp.tools.versions import check_history, describe, hash_of, to_keep, version_with
from teamvault_mcp.tools.writes import VERIFIED, expect, settle_content

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient, VaultFile

#: How a content write treats a colleague's write that came between our read and ours (see the module).
Mode = Literal["rebase", "strict", "replace"]

#: Times a rebased change is written again before the call gives up (colleagues writing all the while).
REBASE_ROUNDS = 20

#: Up to this many seconds, doubled each round (at most REBASE_PAUSE_MAX), between rebase rounds:
#: writers racing for one note fall out of step, as on a shared network wire.
REBASE_PAUSE = 0.05

REBASE_PAUSE_MAX = 2.0

#: Said by an ``expectedHash`` conflict when others wrote the note between our write and its put-back: their
#: repairs only ever add lines back, so this call's lines can come back beside theirs (see the README, §13).
STORM = (
    " Others wrote this note at the same moment, and their repairs can bring your lines back: after redoing "
    "your change, check that the note holds it once."
)


@dataclass
class Written:
    """What a content write did: the file, the bytes now current, the text they were made from, and the story."""

    file: VaultFile
    data: bytes
    #: The text the final write was computed from (what the agent read, or a colleague's version), if known.
    based_on: bytes | None
    verified: bool = False
    #: Colleagues' versions the change was made again on top of, described for the model.
    rebased: list[str] = field(default_factory=list)
    #: ``replace`` mode: the colleague's change that this write replaced, described.
    replaced: str | None = None
    #: Why no check for a colleague's change was possible, if none was.
    unchecked: str | None = None
    #: The versions of ``rebased`` and ``replaced`` as data, for the structured result (those the history names).
    rebased_versions: list[dict[str, Any]] = field(default_factory=list)
    replaced_version: dict[str, Any] | None = None

    def rebase_onto(self, version: dict[str, Any] | None) -> None:
        """The change was made again on top of ``version`` (None: the history does not say which)."""
        self.rebased.append(describe(version))
        if version is not None:
            self.rebased_versions.append(version_facts(version))

    def replacing(self, version: dict[str, Any] | None, path: str) -> None:
        """This write replaced ``version``, a colleague's (``replace`` mode)."""
        self.replaced = describe(version, restore_hint=path)
        self.replaced_version = version_facts(version) if version is not None else None

    def notes(self) -> list[str]:
        """Sentences for the result's text: what happened besides the write itself."""
        notes = []
        if self.verified:
            notes.append(VERIFIED)
        if self.rebased:
            notes.append(
                "A colleague's change landed while this call was writing; the change was made again on top of "
                f"it, so both are in the note ({'; '.join(self.rebased)})."
            )
        if self.replaced:
            notes.append(f"This replaced a change made meanwhile: {self.replaced}.")
        if self.unchecked:
            notes.append(f"Not checked for a colleague's write at the same moment: {self.unchecked}.")
        return notes


def version_facts(version: dict[str, Any]) -> dict[str, Any]:
    """A version as the story's data names it: what :func:`~teamvault_mcp.tools.versions.describe` says, the
    contentHash in full."""
    author = version.get("author")
    author = author if isinstance(author, dict) else {}
    return {
        "versionNumber": version.get("versionNumber"),
        "by": author.get("name") or author.get("email") or version.get("authorId"),
        "createdAt": version.get("createdAt"),
        "contentHash": hash_of(version) or None,
    }


@dataclass(frozen=True)
class _Head:
    """The note as the server has it now."""

    hash: str
    data: bytes


def write_content(
    ctx: ToolContext,
    project_id: str,
    path: str,
    file: VaultFile,
    data: bytes,
    *,
    mode: Mode,
    read: bytes | None = None,
    change: Callable[[str], str] | None = None,
    expected: str | None = None,
    putting_back: bool = False,
) -> Written:
    """Replace the content of the note ``file`` at ``path`` by ``data``, losing no colleague's change made meanwhile.

    ``read`` is the text ``data`` was computed from (needed to rebase; else the listing's
    hash stands for it); ``change`` makes the new text from any text (needed in rebase
    mode); ``expected`` is the agent's ``expectedHash`` (strict mode). ``putting_back``:
    this write restores a colleague's version (its change is idempotent; no further put-back).
    See the module docstring for the rules.
    """
    if mode == "rebase" and (change is None or read is None):
        raise ValueError("a rebased write needs the text it was made from and the change to make again")
    if ctx.note_locks is None:
        return _write(ctx, project_id, path, file, data, mode, read, change, expected, putting_back)
    budget, token = ctx.budget, ctx.token
    with ctx.note_locks.holding(
        project_id,
        [path],
        seconds=lambda: budget.remaining() - LOCK_RESERVE if budget is not None else float("inf"),
        cancelled=lambda: token is not None and token.cancelled,
    ) as fresh:
        if fresh and mode == "strict" and not ctx.client.conditional:
            # Read before this lock was ours (replace_in_notes, the notes move_note relinks): has a write of
            # this process changed it since? Then it is a conflict, and nothing is written.
            built_on = sha256_hex(read) if read is not None else file.content_hash
            expect(ctx, project_id, path, ctx.client.find_file(project_id, path), expected or built_on)
        return _write(ctx, project_id, path, file, data, mode, read, change, expected, putting_back)


def _write(
    ctx: ToolContext,
    project_id: str,
    path: str,
    file: VaultFile,
    data: bytes,
    mode: Mode,
    read: bytes | None,
    change: Callable[[str], str] | None,
    expected: str | None,
    putting_back: bool,
) -> Written:
    """:func:`write_content`, its note's lock held."""
    client = ctx.client
    built_on = read  # what `data` is computed from
    built_on_hash = sha256_hex(read) if read is not None else file.content_hash
    current = built_on_hash  # what the server has, as far as we know: the If-Match
    own: set[str] = set()  # hashes this call wrote
    outcome = Written(file, data, built_on)
    first = data
    adds = read is not None and only_adds(_text(read), _text(data))  # an append: merged by adding lines only
    for round_number in range(REBASE_ROUNDS + 1):
        if round_number and sha256_hex(data) == current:
            return outcome  # the note holds it all already (a put-back that others did too)
        if round_number:
            client.new_write()
        try:
            written, verified = _put(ctx, project_id, path, file, data, if_match=current)
        except PreconditionFailedError:  # a server that checks If-Match: someone wrote since `current`
            head = _head(ctx, project_id, path)
            if mode == "strict":
                expect(ctx, project_id, path, file, expected or current, current=(head.hash, _text(head.data)))
            elif mode == "replace":
                outcome.replacing(version_with(ctx, project_id, file, head.hash), path)
            else:
                assert change is not None
                data = _remade(change, head.data, path)  # nothing of ours was written: a plain redo
                outcome.rebase_onto(version_with(ctx, project_id, file, head.hash))
            built_on, built_on_hash, current = head.data, head.hash, head.hash
            _back_off(client, round_number)
            continue
        written_hash = sha256_hex(data)
        own.add(written_hash)
        outcome.file, outcome.data, outcome.based_on = written, data, built_on
        outcome.verified = outcome.verified or verified
        if client.conditional:
            return outcome  # the server checked If-Match with the write itself
        if built_on_hash is None:
            outcome.unchecked = "the server reports no content hashes to compare"
            return outcome
        check = check_history(ctx, project_id, file.id, built_on_hash, written_hash, own)
        if check.unknown is not None or check.replaced is None:
            outcome.unchecked = check.unknown
            return outcome
        if mode == "replace":
            outcome.replacing(check.replaced, path)
            return outcome
        if mode == "rebase":
            # Ours is made again on exactly what our write replaced: the version just before ours. Any version
            # before that one was replaced by that version's writer, who makes good on it in turn.
            theirs = check.between[-1]
            theirs_data = client.download_version(project_id, file.id, str(theirs["id"]))
        else:
            theirs, theirs_data = to_keep(ctx, project_id, file, built_on, check.between)
        try:
            head = _head(ctx, project_id, path)
        except NoteNotFoundError:
            outcome.unchecked = f"the note was deleted right after this write, over {describe(theirs)}"
            return outcome
        slip = _Slip(theirs_data, head, built_on, data)
        if mode == "strict":
            where = _put_back(ctx, project_id, path, file, slip, adds)
            raise ChangedMeanwhileError(
                f"Conflict: {path} was changed by {describe(theirs)} after you read it (you expected contentHash "
                f"{short_hash(expected)}), and this call's write replaced their version. {where}; your text stays in "
                f"the history as {describe(check.ours)}. Nothing of theirs is lost. Read the note again, then redo "
                f"your change on its current text.{STORM if adds and head.hash != written_hash else ''}"
            )
        assert change is not None and read is not None
        remade = None
        if round_number == 0 and head.hash == written_hash:
            remade = _redone(change, theirs_data)  # nobody wrote after us: make the change on their text
        if remade is None:
            remade = _merged(slip, change=change if putting_back else None, ours=(read, first) if adds else None)
        if remade is None or round_number == REBASE_ROUNDS:
            where = "Nothing more was written" if putting_back else _put_back(ctx, project_id, path, file, slip, adds)
            diff = shortened(unified_diff(_text(theirs_data), _text(data), before="their version", after="yours"))
            raise ChangedMeanwhileError(
                f"Conflict: {path} was changed by {describe(theirs)} while this call was writing, and the change "
                f"could not be made again on top of theirs. {where}; your version stays in the history as "
                f"{describe(check.ours)}. Nothing of theirs is lost. Their version against yours:\n"
                f"{diff.rstrip(chr(10))}\nRead the note again and redo your change."
            )
        outcome.rebase_onto(theirs)
        built_on = theirs_data if head.hash in own else head.data
        built_on_hash = sha256_hex(built_on)
        current, data = head.hash, remade
        _back_off(client, round_number)
    raise ChangedMeanwhileError(
        f"Conflict: {path} kept changing while this call tried to write it ({REBASE_ROUNDS + 1} times); "
        "nothing of this call was written. Read the note again and try once more."
    )


def _back_off(client: TeamVaultClient, round_number: int) -> None:
    """A random pause, doubling each round: writers racing for one note fall out of step."""
    client.pause(client.random() * min(REBASE_PAUSE * 2**round_number, REBASE_PAUSE_MAX))


@dataclass(frozen=True)
class _Slip:
    """A colleague's version that one of our writes replaced, and what we know around it."""

    theirs: bytes
    head: _Head  # the note now
    built_on: bytes | None  # what our write was made from
    ours: bytes  # what we wrote


def _put(
    ctx: ToolContext, project_id: str, path: str, file: VaultFile, data: bytes, *, if_match: str | None
) -> tuple[VaultFile, bool]:
    """One conditional PUT of ``data``, settled (see :func:`settle_content`)."""
    return settle_content(
        ctx,
        project_id,
        path,
        lambda: ctx.client.replace_content(project_id, file.id, data, if_match=if_match),
        before=if_match,
        data=data,
    )


def _redone(change: Callable[[str], str], theirs: bytes) -> bytes | None:
    try:
        return change(_text(theirs)).encode("utf-8")
    except EditFailedError:
        return None  # it may still merge


def _merged(slip: _Slip, *, change: Callable[[str], str] | None, ours: tuple[bytes, bytes] | None) -> bytes | None:
    """Their change merged into the note as it is now (ours is in it, or owed by whoever replaced ours).

    ``ours`` (the text read and our first write) is given when our change only adds lines:
    then the merge only adds lines, and ours are added back if the note lost them.
    ``change`` is given when it is idempotent (a put-back): it is made again on the merge.
    None: the changes conflict.
    """
    assert slip.built_on is not None
    additive = ours is not None or change is not None
    merged = merge3(_text(slip.built_on), _text(slip.head.data), _text(slip.theirs), additive=additive)
    if merged is not None and ours is not None and not only_adds(_text(ours[1]), merged):
        merged = merge3(_text(ours[0]), merged, _text(ours[1]), additive=True)  # our lines, if the note lost them
    if merged is not None and change is not None:
        merged = change(merged)
    return merged.encode("utf-8") if merged is not None else None


def _remade(change: Callable[[str], str], data: bytes, path: str) -> bytes:
    """``change`` applied to a colleague's text, or :class:`ChangedMeanwhileError` when it no longer applies."""
    try:
        return change(_text(data)).encode("utf-8")
    except EditFailedError as error:
        raise ChangedMeanwhileError(
            f"Conflict: {path} was changed by someone else while this call was writing, and the change no longer "
            f"applies to their text: {error} Nothing was written; their version is current. Read the note again "
            "and redo your change."
        ) from None


def _head(ctx: ToolContext, project_id: str, path: str) -> _Head:
    """The note's content now (from the cache when its hash is known there)."""
    fresh = ctx.note(project_id, path)
    return _Head(fresh.content_hash, fresh.data)


def _put_back(ctx: ToolContext, project_id: str, path: str, file: VaultFile, slip: _Slip, adds: bool) -> str:
    """Make a colleague's version (that we replaced) current again, without our change; says where it is now.

    When nobody wrote after us, their exact text (our write undone, nothing else). Otherwise,
    for a change that only adds lines, our lines are taken out of the note as it is now and
    theirs put in, as a verified write like any other (others' lines stay); for another change,
    a merge, written once.
    """
    theirs, ours, head = _text(slip.theirs), _text(slip.ours), slip.head
    ctx.client.new_write()
    try:
        written_since = head.hash != sha256_hex(slip.ours)
        if adds and written_since and slip.built_on is not None:
            base = _text(slip.built_on)

            def undo(text: str) -> str:
                return swap_additions(text, base, ours, theirs)

            restored = undo(_text(head.data)).encode("utf-8")
            if sha256_hex(restored) != head.hash:
                restored = write_content(
                    ctx, project_id, path, file, restored, mode="rebase", read=head.data, change=undo, putting_back=True
                ).data
        else:
            merged = theirs if head.hash == sha256_hex(slip.ours) else merge3(ours, _text(head.data), theirs)
            if merged is None:
                return (
                    "Their text could not be put back automatically because the note changed again since; "
                    "restore_note_version brings their version back"
                )
            restored = merged.encode("utf-8")
            _put(ctx, project_id, path, file, restored, if_match=head.hash)
    except CallCancelledError:
        raise
    except TeamVaultError as error:
        return f"Putting their text back failed ({error}); restore_note_version brings their version back"
    return f"Their text is the current version again (contentHash {short_hash(sha256_hex(restored))})"


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# -- rewriting a note's text ----------------------------------------------------------------------------------


def rewrite(
    ctx: ToolContext,
    project_id: str,
    note: Note,
    changed: str,
    *,
    dry_run: bool,
    edits: str,
    done: str,
    change: Callable[[str], str] | None = None,
    expected: str | None = None,
    extra: dict[str, Any] | None = None,
    apply: tuple[str, Mapping[str, Any]] | None = None,
) -> ToolOutput:
    """Replace ``note``'s text by ``changed`` (unless it is the same, or a dry run): the result with its diff.

    ``edits`` names what changes it in messages ("the edits"), ``done`` what was done ("Edited");
    ``change`` makes the same change on another text (to rebase onto a colleague's write);
    ``expected`` is the agent's expectedHash (then a colleague's write is a conflict);
    ``extra`` adds fields to the result; ``apply`` is the tool and arguments of a dry run, to say the
    exact call that applies it.

    The text is the headline, then the diff's hunks; the data holds the headline as ``summary`` (the
    call after "Apply with:" as ``applyWith``), the whole diff, both hashes in full and the story.
    """
    original = note.data.decode("utf-8")
    data = changed.encode("utf-8")
    result: dict[str, Any] = {
        "path": note.path,
        "dryRun": dry_run,
        "changed": changed != original,
        "previousHash": note.content_hash,
        "contentHash": sha256_hex(data),
        "diff": "",  # made once the write is done (a dry run: now), within the budget: diff.py
        **(extra or {}),
    }
    ctx.facts.update(hashBefore=note.content_hash, hashAfter=result["contentHash"])
    if changed == original:
        ctx.facts["noop"] = True
        result["summary"] = (
            f"No change: {edits} leave {note.path} as it is (contentHash {short_hash(note.content_hash)}). "
            "Nothing was written."
        )
        return ToolOutput(result["summary"], result)
    if dry_run:
        ctx.facts["noop"] = True
        result["diff"] = diff = _diff(ctx, note.path, original, changed)
        result["summary"] = (
            f"Dry run: nothing was written. {note.path}: previousHash {short_hash(note.content_hash)}, contentHash "
            f"{short_hash(result['contentHash'])} once applied."
        )
        if apply is None:
            return ToolOutput(f"{result['summary']}\n{hunks_only(diff)}", result)
        tool, args = apply
        result["applyWith"] = applying_call(tool, args, short_hash(note.content_hash))
        return ToolOutput(f"{result['summary']} Apply with: {result['applyWith']}\n{hunks_only(diff)}", result)
    mode: Mode = "strict" if expected is not None else "rebase" if change is not None else "replace"
    written = write_content(
        ctx, project_id, note.path, note.file, data, mode=mode, read=note.data, change=change, expected=expected
    )
    if written.data != data and written.based_on is not None:  # made again on a colleague's change: show ours there
        result["contentHash"] = sha256_hex(written.data)
        result["diff"] = diff = _diff(ctx, note.path, _text(written.based_on), _text(written.data))
        ctx.facts["hashAfter"] = result["contentHash"]
    else:
        result["diff"] = diff = _diff(ctx, note.path, original, changed)
    said = f"{done} {note.path}; its contentHash is now {short_hash(result['contentHash'])}."
    output = written_result(ctx, result, written, said)
    return ToolOutput(f"{output.text}\n{hunks_only(diff)}", result)


#: Seconds of the budget a write's diff leaves for the answer: past them, the diff is summarised (diff.py).
DIFF_RESERVE_SECONDS = 1.0


def _diff(ctx: ToolContext, path: str, old: str, new: str) -> str:
    """The diff a rewrite's answer shows, bounded by its work and by the call's budget (then a summary line)."""
    return unified_diff(old, new, before=f"a/{path}", after=f"b/{path}", deadline=ctx.deadline(DIFF_RESERVE_SECONDS))


#: A dry run's call is written out in full up to this many characters of arguments; a longer one is described.
APPLY_CALL_CHARS = 1_000


def applying_call(tool: str, args: Mapping[str, Any], previous_hash: str) -> str:
    """The call that applies a dry run: its arguments without ``dryRun``, with ``expectedHash``, in JSON."""
    kept = {name: value for name, value in args.items() if name not in ("dryRun", "expectedHash")}
    shown = ", ".join(f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in kept.items())
    if len(shown) > APPLY_CALL_CHARS:
        return f'the same {tool} call without dryRun, with expectedHash="{previous_hash}".'
    return f'{tool}({shown}, expectedHash="{previous_hash}")'


def add_story(ctx: ToolContext, result: dict[str, Any], written: Written) -> None:
    """The structured fields and audit facts of what :func:`write_content` found on the way."""
    if written.verified:
        result.update(verified=True, note=VERIFIED)
    if written.rebased:
        result["rebasedOnto"] = written.rebased
        ctx.facts["rebased"] = len(written.rebased)
    if written.rebased_versions:
        result["rebasedOntoVersions"] = written.rebased_versions
    if written.replaced:
        result["replacedMeanwhile"] = written.replaced
        ctx.facts["replacedMeanwhile"] = True
    if written.replaced_version is not None:
        result["replacedVersion"] = written.replaced_version
    if written.unchecked:
        result["unchecked"] = written.unchecked


def written_result(ctx: ToolContext, result: dict[str, Any], written: Written, said: str) -> ToolOutput:
    """A write's result: ``said`` and what :func:`write_content` found on the way, as the text and as the data's
    ``summary``, with the story's fields (:func:`add_story`)."""
    add_story(ctx, result, written)
    result["summary"] = " ".join([said, *written.notes()])
    return ToolOutput(result["summary"], result)


#: A version the story names (:func:`version_facts`).
VERSION_FACTS = object_schema(
    {
        "versionNumber": NULLABLE_INT,
        "by": NULLABLE_STRING,
        "createdAt": NULLABLE_STRING,
        "contentHash": NULLABLE_STRING,
    },
    [],
)

#: What :func:`add_story` may add to a write's result: the sentences the text says besides the write itself.
STORY = {
    "verified": {"type": "boolean"},
    "note": STRING,
    "rebasedOnto": {"type": "array", "items": STRING},
    "rebasedOntoVersions": {"type": "array", "items": VERSION_FACTS},
    "replacedMeanwhile": STRING,
    "replacedVersion": VERSION_FACTS,
    "unchecked": STRING,
}

#: The fields of :func:`rewrite`'s result, all of them always there: ``summary`` is the text's headline (the
#: sentences above the diff's hunks), ``diff`` the whole diff (the text shows its hunks).
REWRITTEN = {
    "path": STRING,
    "dryRun": {"type": "boolean"},
    "changed": {"type": "boolean"},
    "previousHash": STRING,
    "contentHash": STRING,
    "diff": STRING,
    "summary": STRING,
}

#: A dry run's call that applies it, exactly as the text shows it after "Apply with:" (when the tool gives one).
APPLY_WITH = {"applyWith": STRING}


def rewritten_schema(extra: dict[str, Any] | None = None, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The output schema of a tool that answers with :func:`rewrite`'s result, plus its ``extra`` fields
    (``required`` of them always there), the dry run's ``applyWith`` and the story's fields."""
    return object_schema({**REWRITTEN, **APPLY_WITH, **STORY, **(extra or {})}, [*REWRITTEN, *required])
