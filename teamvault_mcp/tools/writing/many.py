"""One note of a write of many notes (replace_in_notes): :func:`write_one`, the note's own write with its own
Idempotency-Key and its own outcome (applied, conflict or failed, with the uncertain-write hint when the outcome
table says the write may have landed), reported to the audit log as one of the call's notes."""

from __future__ import annotations

from typing import Any

from teamvault_mcp.errors import (
    CallCancelledError,
    ChangedMeanwhileError,
    ConflictError,
    OutOfTimeError,
    TeamVaultError,
    short_hash,
)
from teamvault_mcp.tools.context import Note, ToolContext
from teamvault_mcp.tools.writing.report import audit_outcome
from teamvault_mcp.tools.writing.rewrite import rewrite
from teamvault_mcp.vault.retry import call_failure


def write_one(
    ctx: ToolContext, project_id: str, note: Note, new: str, *, expected: str, edits: str, done: str
) -> dict[str, Any]:
    """``note`` rewritten as ``new`` with ``expected`` (the hash it was read at) as expectedHash: how it went, as
    the answer's row for it says (``status``, and ``contentHash`` or ``error``; the story's fields).

    Call :meth:`~teamvault_mcp.tools.writing.report.WriteReport.many` first, once per call.
    """
    ctx.client.new_write()  # another note, another request: a key of its own
    row: dict[str, Any] = {}
    with ctx.report.note(note.path, ctx.client.idempotency_key) as reported:
        attempts = ctx.client.write_attempts
        try:
            output = rewrite(ctx, project_id, note, new, dry_run=False, edits=edits, done=done, expected=expected)
        except CallCancelledError as error:
            reported.outcome = audit_outcome(call_failure(error, write_sent=ctx.client.write_attempts > attempts))
            raise
        except TeamVaultError as error:
            ended = call_failure(error, write_sent=ctx.client.write_attempts > attempts)
            reported.outcome, reported.error = audit_outcome(ended), type(error).__name__
            row.update(_failed_row(error, ended.text, uncertain=reported.outcome == "uncertain"))
        else:
            written = output.structured or {}
            row.update(status="applied", contentHash=written.get("contentHash"))
            for name in ("verified", "rebasedOnto", "unchecked"):
                if name in written:
                    row[name] = written[name]
            reported.outcome = audit_outcome(None, replayed=ctx.client.replayed)
    return row


def _failed_row(error: TeamVaultError, text: str, *, uncertain: bool) -> dict[str, Any]:
    """The row of a note whose write failed with ``error`` (whose message is ``text``): a conflict, or failed."""
    if isinstance(error, ConflictError):
        return {"status": "conflict", "error": _conflict(error)}
    if isinstance(error, ChangedMeanwhileError):
        return {"status": "conflict", "error": str(error)}
    row: dict[str, Any] = {"status": "failed", "error": text}
    if uncertain:
        row["uncertain"] = True
    if isinstance(error, OutOfTimeError):
        row["outOfTime"] = True
    return row


def _conflict(error: ConflictError) -> str:
    if error.current is None:
        return "deleted since this call read it; nothing was written."
    return (
        f"changed since this call read it (its contentHash is now {short_hash(error.current)}); nothing was written "
        "to it, their text stands. Preview again to include it."
    )
