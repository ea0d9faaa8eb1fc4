"""What a write tool call learnt on the way, for its audit line: :class:`WriteReport`, and the one function that
says how the call ended in the audit log's words (:func:`audit_outcome`).

The pipeline fills the report as it goes (the hashes before and after, a check that settled an unanswered write,
a colleague's change it was made again on or replaced); a write of many notes (replace_in_notes) adds one
:class:`NoteReport` for each note it writes. ``server/runner.py`` writes the report's every fact into the line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from teamvault_mcp.vault.retry import CallFailure

#: How a write tool call ended, as its audit line says it; ``noop``: a dry run, or a change to the same content.
AuditOutcome = Literal["applied", "replayed", "failed", "uncertain", "cancelled", "noop"]
AUDIT_WORDS: tuple[AuditOutcome, ...] = ("applied", "replayed", "failed", "uncertain", "cancelled", "noop")


@dataclass
class WriteFacts:
    """What the pipeline learnt about the write of one note."""

    #: The content hash before and after the write (None in either: no note), when known.
    hashes: tuple[str | None, str | None] | None = None
    #: An unanswered write that a check found applied.
    verified: bool = False
    #: How many colleagues' changes the write was made again on top of.
    rebased: int = 0
    #: The write replaced a colleague's change made meanwhile (last writer wins, by intent).
    replaced_meanwhile: bool = False

    def saw(self, before: str | None, after: str | None) -> None:
        """The note's content hash before the write, and the one the write gives it."""
        self.hashes = (before, after)

    def now(self, after: str | None) -> None:
        """The write gives the note another content hash than first said (it was made again on a colleague's)."""
        self.hashes = (self.hashes[0] if self.hashes is not None else None, after)

    def audited(self) -> dict[str, Any]:
        """These facts as the audit line names them: only those known."""
        line: dict[str, Any] = {}
        if self.hashes is not None:
            line.update(hashBefore=self.hashes[0], hashAfter=self.hashes[1])
        if self.verified:
            line["verified"] = True
        if self.rebased:
            line["rebased"] = self.rebased
        if self.replaced_meanwhile:
            line["replacedMeanwhile"] = True
        return line


@dataclass
class NoteReport:
    """One note of a write of many notes: its path, its own Idempotency-Key, how its write ended, and its facts."""

    path: str
    idempotency_key: str | None
    outcome: AuditOutcome | None = None
    #: The name of the error its write ended with, if any.
    error: str | None = None
    facts: WriteFacts = field(default_factory=WriteFacts)

    def audited(self) -> dict[str, Any]:
        line: dict[str, Any] = {"path": self.path, "idempotencyKey": self.idempotency_key}
        if self.outcome is not None:
            line["outcome"] = self.outcome
        if self.error is not None:
            line["error"] = self.error
        return {**line, **self.facts.audited()}


@dataclass
class WriteReport:
    """What a write tool call learnt for the audit log. ``facts`` are the note being written (in a write of many
    notes, the one of :meth:`note`); ``paths`` the notes it names, when the arguments do not (None: they do)."""

    facts: WriteFacts = field(default_factory=WriteFacts)
    paths: list[str] | None = None
    #: Nothing was written, by design: a dry run, or a change to the same content.
    noop: bool = False
    #: A write of many notes: each note it wrote (None: a write of one note).
    notes: list[NoteReport] | None = None

    def clear(self) -> None:
        """Forget all of it: the call learnt nothing that holds of the note there now."""
        self.facts, self.paths, self.noop, self.notes = WriteFacts(), None, False, None

    def many(self) -> None:
        """This call writes many notes, each reported by :meth:`note`; the arguments name none of them."""
        self.paths, self.notes, self.noop = [], [], False

    @contextmanager
    def note(self, path: str, idempotency_key: str | None) -> Iterator[NoteReport]:
        """Report the write of one of many notes: what the pipeline learns meanwhile is that note's."""
        assert self.paths is not None and self.notes is not None, "many() first"
        entry = NoteReport(path, idempotency_key)
        self.paths.append(path)
        call_facts, self.facts = self.facts, entry.facts
        try:
            yield entry
        finally:
            self.facts = call_facts
            self.notes.append(entry)

    def audited(self, ended: CallFailure | None, *, replayed: bool) -> dict[str, Any]:
        """The audit line's outcome and every fact known, for a call that ended in ``ended`` (None: it succeeded)
        and whose (last) write was answered by a replay (``replayed``)."""
        line: dict[str, Any] = {"outcome": audit_outcome(ended, replayed=replayed, noop=self.noop, notes=self.notes)}
        line.update(self.facts.audited())
        if self.notes is not None:
            line["notes"] = [note.audited() for note in self.notes]
        return line


def audit_outcome(
    ended: CallFailure | None,
    *,
    replayed: bool = False,
    noop: bool = False,
    notes: Sequence[NoteReport] | None = None,
) -> AuditOutcome:
    """How a write ended, in the audit log's words: the one place that says it, for a call and for each of the
    notes a write of many notes writes.

    ``ended`` is how it failed (None: it succeeded): ``cancelled`` by the host, ``uncertain`` when the message says
    the write may have been applied, ``failed`` otherwise. A success is ``noop`` when nothing was to be written,
    ``replayed`` when the server answered with the replay of an earlier attempt, else ``applied``; a write of many
    ``notes`` is ``uncertain`` if any of them is, ``applied`` if any was written, else ``failed`` if any failed.
    """
    if ended is not None:
        return "cancelled" if ended.cancelled else "uncertain" if ended.uncertain else "failed"
    if notes is not None:
        seen = {note.outcome for note in notes}
        if "uncertain" in seen:
            return "uncertain"
        if seen & {"applied", "replayed"}:
            return "applied"
        return "failed" if "failed" in seen else "noop"
    if noop:
        return "noop"
    return "replayed" if replayed else "applied"
