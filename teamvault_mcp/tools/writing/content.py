"""Content writes that lose no colleague's change: :func:`write_content`.

A content write names the hash its new text was computed from. A server that checks
``If-Match`` atomically (it says so with ``X-TeamVault-Conditional-Writes: if-match``, as
our local vault does) refuses the PUT when a colleague wrote first. Any other server cannot
refuse, so the version history is read right after the PUT (``history.py``): our version
must follow the one it was computed from (our own earlier versions in this call aside); a
colleague's version in between is one we replaced. Then, by the kind of write (:data:`Mode`):

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
says so instead of claiming safety. Every PUT is settled as the write rules say (``rules.py``).

The functions read top to bottom: :func:`write_content` holds the note's lock and runs the
rounds (:func:`_rounds`: a PUT, then :func:`_refused` when the server refused it, or
:func:`_checked` and :func:`_made_again` when the history shows a colleague's version it
replaced); a round that cannot go on ends in a :class:`_Conflict`, whose colleague's text
:func:`_put_back` restores (with rounds of its own) before the call fails.

About 440 lines: one algorithm (the write rounds and the rebase, merge and put-back they do), read whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from teamvault_mcp.errors import (
    ChangedMeanwhileError,
    EditFailedError,
    NoteNotFoundError,
    PreconditionFailedError,
    TeamVaultError,
    short_hash,
)
from teamvault_mcp.text.diff import shortened, unified_diff
from teamvault_mcp.text.merge import merge3, only_adds, swap_additions
from teamvault_mcp.tools.context import ToolContext, sha256_hex
from teamvault_mcp.tools.note_locks import LOCK_RESERVE
from teamvault_mcp.tools.versions import describe
from teamvault_mcp.tools.writing.history import check_history, replaced_text, to_keep, version_with
from teamvault_mcp.tools.writing.rules import expect, settle_content
from teamvault_mcp.tools.writing.story import Written

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.records import VaultFile, VaultVersion

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
) -> Written:
    """Replace the content of the note ``file`` at ``path`` by ``data``, losing no colleague's change made meanwhile.

    ``read`` is the text ``data`` was computed from (needed to rebase; else the listing's
    hash stands for it); ``change`` makes the new text from any text (needed in rebase
    mode); ``expected`` is the agent's ``expectedHash`` (strict mode).
    See the module docstring for the rules.
    """
    if mode == "rebase" and (change is None or read is None):
        raise ValueError("a rebased write needs the text it was made from and the change to make again")
    job = _Job.start(path, file, data, mode=mode, read=read, change=change, expected=expected)
    if ctx.note_locks is None:
        return _write(ctx, project_id, job)
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
            expect(ctx, project_id, path, ctx.client.find_file(project_id, path), expected or job.built_on_hash)
        return _write(ctx, project_id, job)


@dataclass
class _Job:
    """A content write under way: what the next PUT writes, what that was made from, and the story so far."""

    path: str
    file: VaultFile
    mode: Mode
    #: The text the agent's change was made on, and the change (to make it again), when known.
    read: bytes | None
    change: Callable[[str], str] | None
    expected: str | None
    #: This write restores a colleague's version: its change is idempotent, and it puts nothing back itself.
    putting_back: bool
    data: bytes
    #: What ``data`` is computed from, and its hash.
    built_on: bytes | None
    built_on_hash: str | None
    #: What the server has, as far as we know: the If-Match.
    current: str | None
    #: The first text written, and whether it only adds lines to ``read`` (then merges only add lines).
    first: bytes
    adds: bool
    outcome: Written
    #: The hashes this write wrote.
    own: set[str] = field(default_factory=set)

    @classmethod
    def start(
        cls,
        path: str,
        file: VaultFile,
        data: bytes,
        *,
        mode: Mode,
        read: bytes | None,
        change: Callable[[str], str] | None,
        expected: str | None = None,
        putting_back: bool = False,
    ) -> _Job:
        built_on_hash = sha256_hex(read) if read is not None else file.content_hash
        adds = read is not None and only_adds(_text(read), _text(data))  # an append: merged by adding lines only
        return cls(
            path=path,
            file=file,
            mode=mode,
            read=read,
            change=change,
            expected=expected,
            putting_back=putting_back,
            data=data,
            built_on=read,
            built_on_hash=built_on_hash,
            current=built_on_hash,
            first=data,
            adds=adds,
            outcome=Written(file, data, read),
        )


@dataclass(frozen=True)
class _Head:
    """The note as the server has it now."""

    hash: str
    data: bytes


@dataclass(frozen=True)
class _Slip:
    """A colleague's version that one of our writes replaced, and what we know around it."""

    theirs: bytes
    head: _Head  # the note now
    built_on: bytes | None  # what our write was made from
    ours: bytes  # what we wrote


@dataclass(frozen=True)
class _Conflict:
    """How a write ends that replaced a colleague's version it cannot be made again on (or, strict, may not be):
    their text is to be put back, then ``said`` (given where their text is now) is the call's error."""

    slip: _Slip
    said: Callable[[str], str]


def _write(ctx: ToolContext, project_id: str, job: _Job) -> Written:
    """:func:`write_content`, its note's lock held: the rounds, and their colleague's text put back on a conflict."""
    ended = _rounds(ctx, project_id, job)
    if isinstance(ended, Written):
        return ended
    where = "Nothing more was written" if job.putting_back else _put_back(ctx, project_id, job, ended.slip)
    raise ChangedMeanwhileError(ended.said(where))


def _rounds(ctx: ToolContext, project_id: str, job: _Job) -> Written | _Conflict:
    """Write ``job``, made again on each colleague's change found, up to REBASE_ROUNDS times more."""
    client = ctx.client
    for round_number in range(REBASE_ROUNDS + 1):
        if round_number and sha256_hex(job.data) == job.current:
            return job.outcome  # the note holds it all already (a put-back that others did too)
        if round_number:
            client.new_write()
        try:
            written, verified = _put(ctx, project_id, job.path, job.file, job.data, if_match=job.current)
        except PreconditionFailedError:  # a server that checks If-Match: someone wrote since `current`
            _refused(ctx, project_id, job)
        else:
            ended = _checked(ctx, project_id, job, written, verified, round_number)
            if ended is not None:
                return ended
        _back_off(client, round_number)
    raise ChangedMeanwhileError(
        f"Conflict: {job.path} kept changing while this call tried to write it ({REBASE_ROUNDS + 1} times); "
        "nothing of this call was written. Read the note again and try once more."
    )


def _refused(ctx: ToolContext, project_id: str, job: _Job) -> None:
    """The server refused the PUT (412: someone wrote since ``job.current``); nothing of ours was written. Strict:
    a conflict; replace: the next round writes over theirs; rebase: the change is made again on their text."""
    head = _head(ctx, project_id, job.path)
    if job.mode == "strict":
        expect(ctx, project_id, job.path, job.file, job.expected or job.current, current=(head.hash, _text(head.data)))
    elif job.mode == "replace":
        job.outcome.replacing(version_with(ctx, project_id, job.file, head.hash), job.path)
    else:
        assert job.change is not None
        job.data = _remade(job.change, head.data, job.path)  # nothing of ours was written: a plain redo
        job.outcome.rebase_onto(version_with(ctx, project_id, job.file, head.hash))
    job.built_on, job.built_on_hash, job.current = head.data, head.hash, head.hash


def _checked(
    ctx: ToolContext, project_id: str, job: _Job, written: VaultFile, verified: bool, round_number: int
) -> Written | _Conflict | None:
    """After a PUT the server could not make conditional: the write, unless the version history shows a colleague's
    version it replaced; then a conflict (strict, or when ours cannot be made again on theirs), the write (replace)
    or None: ours was made again on theirs, for the next round to write."""
    written_hash = sha256_hex(job.data)
    job.own.add(written_hash)
    outcome = job.outcome
    outcome.file, outcome.data, outcome.based_on = written, job.data, job.built_on
    outcome.verified = outcome.verified or verified
    if ctx.client.conditional:
        return outcome  # the server checked If-Match with the write itself
    if job.built_on_hash is None:
        outcome.unchecked = "the server reports no content hashes to compare"
        return outcome
    check = check_history(ctx, project_id, job.file.id, job.built_on_hash, written_hash, job.own)
    if check.unknown is not None or check.replaced is None:
        outcome.unchecked = check.unknown
        return outcome
    if job.mode == "replace":
        outcome.replacing(check.replaced, job.path)
        return outcome
    if job.mode == "rebase":
        # Ours is made again on exactly what our write replaced: the version just before ours. Any version
        # before that one was replaced by that version's writer, who makes good on it in turn.
        theirs = check.between[-1]
        assert job.built_on is not None  # a rebase knows what it read
        theirs_data = replaced_text(ctx, project_id, job.file, job.built_on, check, additive=job.adds)
    else:
        theirs, theirs_data = to_keep(ctx, project_id, job.file, job.built_on, check.between)
    try:
        head = _head(ctx, project_id, job.path)
    except NoteNotFoundError:
        outcome.unchecked = f"the note was deleted right after this write, over {describe(theirs)}"
        return outcome
    slip = _Slip(theirs_data, head, job.built_on, job.data)
    if job.mode == "strict":
        return _Conflict(slip, lambda where: _replaced_theirs(job, slip, theirs, check.ours, where))
    return _made_again(job, slip, theirs, check.ours, round_number)


def _made_again(
    job: _Job, slip: _Slip, theirs: VaultVersion, ours: VaultVersion | None, round_number: int
) -> _Conflict | None:
    """Ours made again on ``theirs`` (the colleague's version our write replaced), for the next round to write;
    a conflict when it cannot be, or when the rounds are up."""
    change, read = job.change, job.read
    assert change is not None and read is not None
    remade = None
    if round_number == 0 and slip.head.hash == sha256_hex(slip.ours):
        remade = _redone(change, slip.theirs)  # nobody wrote after us: make the change on their text
    if remade is None:
        again = change if job.putting_back else None
        remade = _merged(slip, change=again, ours=(read, job.first) if job.adds else None)
    if remade is None or round_number == REBASE_ROUNDS:
        return _Conflict(slip, lambda where: _not_made_again(job, slip, theirs, ours, where))
    job.outcome.rebase_onto(theirs)
    job.built_on = slip.theirs if slip.head.hash in job.own else slip.head.data
    job.built_on_hash = sha256_hex(job.built_on)
    job.current, job.data = slip.head.hash, remade
    return None


def _replaced_theirs(job: _Job, slip: _Slip, theirs: VaultVersion, ours: VaultVersion | None, where: str) -> str:
    """The conflict of a strict write that replaced a colleague's version; ``where`` says where their text is."""
    storm = STORM if job.adds and slip.head.hash != sha256_hex(slip.ours) else ""
    return (
        f"Conflict: {job.path} was changed by {describe(theirs)} after you read it (you expected contentHash "
        f"{short_hash(job.expected)}), and this call's write replaced their version. {where}; your text stays in "
        f"the history as {describe(ours)}. Nothing of theirs is lost. Read the note again, then redo "
        f"your change on its current text.{storm}"
    )


def _not_made_again(job: _Job, slip: _Slip, theirs: VaultVersion, ours: VaultVersion | None, where: str) -> str:
    """The conflict of a write whose change could not be made again on a colleague's version it replaced."""
    diff = shortened(unified_diff(_text(slip.theirs), _text(slip.ours), before="their version", after="yours"))
    return (
        f"Conflict: {job.path} was changed by {describe(theirs)} while this call was writing, and the change "
        f"could not be made again on top of theirs. {where}; your version stays in the history as "
        f"{describe(ours)}. Nothing of theirs is lost. Their version against yours:\n"
        f"{diff.rstrip(chr(10))}\nRead the note again and redo your change."
    )


def _back_off(client: TeamVaultClient, round_number: int) -> None:
    """A random pause, doubling each round: writers racing for one note fall out of step."""
    client.pause(client.random() * min(REBASE_PAUSE * 2**round_number, REBASE_PAUSE_MAX))


def _put(
    ctx: ToolContext, project_id: str, path: str, file: VaultFile, data: bytes, *, if_match: str | None
) -> tuple[VaultFile, bool]:
    """One conditional PUT of ``data``, settled (see :func:`~teamvault_mcp.tools.writing.rules.settle_content`)."""
    return settle_content(
        ctx,
        project_id,
        path,
        lambda: ctx.client.replace_content(project_id, file.id, data, if_match=if_match),
        before=if_match,
        data=data,
    )


def _head(ctx: ToolContext, project_id: str, path: str) -> _Head:
    """The note's content now (from the cache when its hash is known there)."""
    fresh = ctx.note(project_id, path)
    return _Head(fresh.content_hash, fresh.data)


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


def _put_back(ctx: ToolContext, project_id: str, job: _Job, slip: _Slip) -> str:
    """Make a colleague's version (that we replaced) current again, without our change; says where it is now.

    When nobody wrote after us, their exact text (our write undone, nothing else). Otherwise,
    for a change that only adds lines, our lines are taken out of the note as it is now and
    theirs put in, as a verified write like any other, in rounds of its own (others' lines
    stay); for another change, a merge, written once.
    """
    theirs, ours, head = _text(slip.theirs), _text(slip.ours), slip.head
    ctx.client.new_write()
    try:
        written_since = head.hash != sha256_hex(slip.ours)
        if job.adds and written_since and slip.built_on is not None:
            base = _text(slip.built_on)

            def undo(text: str) -> str:
                return swap_additions(text, base, ours, theirs)

            restored = undo(_text(head.data)).encode("utf-8")
            if sha256_hex(restored) != head.hash:
                again = _Job.start(
                    job.path, job.file, restored, mode="rebase", read=head.data, change=undo, putting_back=True
                )
                ended = _rounds(ctx, project_id, again)
                if isinstance(ended, _Conflict):
                    raise ChangedMeanwhileError(ended.said("Nothing more was written"))
                restored = ended.data
        else:
            merged = theirs if head.hash == sha256_hex(slip.ours) else merge3(ours, _text(head.data), theirs)
            if merged is None:
                return (
                    "Their text could not be put back automatically because the note changed again since; "
                    "restore_note_version brings their version back"
                )
            restored = merged.encode("utf-8")
            _put(ctx, project_id, job.path, job.file, restored, if_match=head.hash)
    except TeamVaultError as error:
        return f"Putting their text back failed ({error}); restore_note_version brings their version back"
    return f"Their text is the current version again (contentHash {short_hash(sha256_hex(restored))})"


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
