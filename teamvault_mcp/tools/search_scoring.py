"""search_notes' counting on the index on disk (``vault/terms_db.py``): the notes whose words it holds are counted
there, without their text; the others are gathered and counted in memory, as before, and then indexed.

A term of word characters is counted from the index alone; any other term (``e-mail``, a
phrase) is counted in the text of just the notes holding each of its word parts; a note whose
words the index does not keep (too many) is counted in its text. Each count is the one
``Matcher.counts`` finds in memory (``text/terms.py`` says why), so both halves rank alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from teamvault_mcp.text.deadlines import Deadline
from teamvault_mcp.text.search import Matcher, folded_path_of
from teamvault_mcp.text.terms import Term
from teamvault_mcp.tools.context import ToolContext
from teamvault_mcp.tools.gathering import ADD_EVERY, READ_RESERVE_SECONDS, Gathered, Texts, out_of_time

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile
    from teamvault_mcp.vault.terms_db import IndexedText, TermIndex


@dataclass
class OnDisk:
    """The notes of a search counted on disk: each file with its content's row."""

    terms: TermIndex
    notes: list[tuple[VaultFile, IndexedText]]


def split(terms: TermIndex, files: list[VaultFile]) -> tuple[OnDisk, list[VaultFile]]:
    """``files`` whose content the index holds, and the others (to gather)."""
    held = terms.texts([file.content_hash for file in files if file.content_hash])
    on_disk: list[tuple[VaultFile, IndexedText]] = []
    rest: list[VaultFile] = []
    for file in files:
        text = held.get(file.content_hash) if file.content_hash else None
        if text is None:
            rest.append(file)
        else:
            on_disk.append((file, text))
    return OnDisk(terms, on_disk), rest


#: Seconds a search spends giving the index the notes it gathered: those of a few edits at once; a vault not
#: indexed yet is the warm-up's work (the search counts the rest in memory, as it has them).
INDEX_SECONDS = 1.0


def index_gathered(ctx: ToolContext, terms: TermIndex, gathered: Gathered) -> None:
    """Give the index the notes this search gathered (new or changed since it last saw them), a batch at a time
    for up to :data:`INDEX_SECONDS` while the call has time; the next search counts them on disk."""
    began = time.monotonic()  # the machine's clock: how much work, not how long the call may take
    ready = gathered.ready
    for start in range(0, len(ready), ADD_EVERY):
        if out_of_time(ctx, READ_RESERVE_SECONDS) or time.monotonic() - began > INDEX_SECONDS:
            return
        terms.add([(entry.key, entry.folded) for _, entry in ready[start : start + ADD_EVERY]])


@dataclass
class Counted:
    """What counting on disk found: the notes holding every term with their counts, how many notes hold each
    term, and the notes counted (with their folded length, for the average)."""

    matching: list[tuple[VaultFile, int, tuple[int, ...]]]  # file, folded length, count of each term
    holding: list[int]
    searched: int
    chars: int
    not_searched: int = 0


def count_on_disk(
    ctx: ToolContext, matcher: Matcher, on_disk: OnDisk, texts: Texts, deadline: Deadline | None
) -> Counted:
    """Every term's count in every note on disk (its path's words included, as ``Matcher.counts`` does)."""
    notes = on_disk.notes
    unreadable: set[int] = set()  # rows whose text a checked term needed and could not be had (or time ran out)
    paths = [folded_path_of(file.path) for file, _ in notes]
    columns: list[list[int]] = []
    for term in matcher.terms:
        found = _occurrences(ctx, Term.of(term), on_disk, texts, deadline, unreadable)
        column = [found.get(text.id, 0) for _, text in notes]
        columns.append([times + (term in path) for times, path in zip(column, paths, strict=True)])
    if unreadable:  # left out of the search, and said (partial)
        keep = [text.id not in unreadable for _, text in notes]
        columns = [[times for times, kept in zip(column, keep, strict=True) if kept] for column in columns]
        notes = [note for note, kept in zip(notes, keep, strict=True) if kept]
    holding = [len(column) - column.count(0) for column in columns]
    matching = [
        (notes[number][0], notes[number][1].chars, counts)
        for number, counts in enumerate(zip(*columns, strict=True))
        if all(counts)
    ]
    chars = sum(text.chars for _, text in notes)
    return Counted(matching, holding, len(notes), chars, len(on_disk.notes) - len(notes))


def _occurrences(
    ctx: ToolContext, term: Term, on_disk: OnDisk, texts: Texts, deadline: Deadline | None, unreadable: set[int]
) -> dict[int, int]:
    """How often ``term`` occurs in each content of ``on_disk``, by row (none: not at all)."""
    found: dict[int, int] = {}
    if term.counted:
        found = on_disk.terms.occurrences(term.text)
        to_read = [(file, text) for file, text in on_disk.notes if not text.kept]
    else:
        holders: set[int] | None = None
        for part in term.parts:  # the text holds the term only where it holds each of its word parts
            ids = set(on_disk.terms.occurrences(part))
            holders = ids if holders is None else holders & ids
        to_read = [
            (file, text) for file, text in on_disk.notes if not text.kept or holders is None or text.id in holders
        ]
    for file, text in _each_once(to_read):
        if text.id in unreadable:
            continue
        if (ctx.token is not None and ctx.token.cancelled) or (deadline is not None and deadline.passed()):
            unreadable.add(text.id)
            continue
        entry = texts.entry_of(file)
        if entry is None:
            unreadable.add(text.id)
            continue
        times = entry.folded.count(term.text)
        if times:
            found[text.id] = times
    return found


def _each_once(notes: list[tuple[VaultFile, IndexedText]]) -> Iterator[tuple[VaultFile, IndexedText]]:
    """Each content once (two notes of one text are read once)."""
    seen: set[int] = set()
    for file, text in notes:
        if text.id not in seen:
            seen.add(text.id)
            yield file, text
