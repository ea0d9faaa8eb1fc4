"""A project's Markdown notes with their parsed facts, fresh by ``contentHash``, read within the call's budget.

One listing gives every note's hash. A note whose facts (``text/noteindex.py``) hold the
parts a tool asks for costs nothing more; next the project's store on disk
(``vault/index_db.py``) is asked, in one query, for the facts memory lacks; only the others
are read through ``gathering.py`` (memory, disk cache, downloads) and parsed, once per
content, and what was parsed is written to the store in one transaction. Parsing is CPU work no
request's time limit covers, so it stops, like the downloads, when the budget runs low or
the host cancels: the tool then answers from the notes it has, and says how many it lacks.

Only Markdown notes (``.md``) have links, tags, tasks and properties, as in Obsidian; every
live file (attachments too) is a path a link can resolve to. Shared by the tool families
that read the vault's structure (``graph.py`` now, ``move_note``'s link updates next), so it
imports none of them.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import CallCancelledError
from teamvault_mcp.text.links import MARKDOWN_EXTENSION, MAX_LINKS_PER_NOTE
from teamvault_mcp.text.noteindex import PARTS, FactsStore, LinkFact, LinkGraph, NoteFacts, NoteIndex
from teamvault_mcp.text.prose import unindexed_notice
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.gathering import PROGRESS_EVERY, Gathered, Texts, gather, gc_paused, out_of_time
from teamvault_mcp.tools.spec import Handler

if TYPE_CHECKING:
    from teamvault_mcp.vault.background import Foreground, WarmUp
    from teamvault_mcp.vault.records import VaultFile

log = logging.getLogger(__name__)

#: Parsing stops when less than this is left of the call's budget: time to answer.
ANSWER_SECONDS = 1.0
#: ... and more for a big vault: how many notes' facts an answer goes through in a second (under load, on 2 cores).
NOTES_ANSWERED_PER_SECOND = 20_000
#: Notes whose facts are read back from the store at a time, between two looks at the call's budget.
RECALL_CHUNK = 2000
#: Notes parsed between two writes of their facts to the store (one transaction each).
SAVE_EVERY = 500
#: Notes the warm-up indexes at a time (:func:`index_in_background`): one store query and one write each.
WARM_INDEX_CHUNK = 500

#: Called before each note parsed: where the warm-up steps aside for calls.
Pause = Callable[[], None]


def is_markdown(file: VaultFile) -> bool:
    return file.file_type == "TEXT" and file.path.lower().endswith(MARKDOWN_EXTENSION)


@dataclass
class IndexedNotes:
    """The Markdown notes asked for, those whose facts are at hand, and what could not be read in time."""

    listing: list[VaultFile]  # every live file listed (the whole vault, or the prefix asked for)
    notes: list[VaultFile]  # the Markdown notes among them, by path
    facts: dict[str, NoteFacts] = field(default_factory=dict)  # by path: the notes read
    hashes: dict[str, str] = field(default_factory=dict)  # by path: the content hash of what was read
    why_partial: str = ""

    @property
    def not_read(self) -> int:
        return len(self.notes) - len(self.hashes)

    def read(self) -> list[tuple[VaultFile, NoteFacts]]:
        """The notes read, by path, with their facts."""
        return [(file, self.facts[file.path]) for file in self.notes if file.path in self.facts]

    def partial_notice(self, missing: str = "") -> str | None:
        """The line that says this answer lacks some notes, and why (None when it lacks none).

        ``missing`` says what the answer may lack, e.g. "links from them".
        """
        return partial_notice(self.not_read, len(self.notes), self.why_partial, missing)


def partial_notice(not_read: int, notes: int, why: str, missing: str = "") -> str | None:
    """:meth:`IndexedNotes.partial_notice` of ``not_read`` notes of ``notes``, not read because ``why``."""
    if not not_read:
        return None
    lacks = f"; this answer may lack {missing}" if missing else ""
    return (
        f"[Partial: {not_read:,} of {notes:,} notes were not read ({why}){lacks}. "
        "What was read is kept: calling again continues where this stopped.]"
    )


def list_vault(ctx: ToolContext, project_id: str, prefix: str | None = None) -> list[VaultFile]:
    """Every live file under ``prefix`` (a stored folder prefix; None: the whole vault), in one request, or from
    a big vault's listing of a moment ago (``vault/listings.py``)."""
    with gc_paused():  # a listing is thousands of objects at once
        listing = ctx.kept_listings.files(ctx.client, project_id, prefix)
    store = note_index(ctx).store(project_id)
    if prefix is None and store is not None:  # the whole vault: the snapshot the store keeps
        store.save_listing(listing)
    return listing


def index_notes(
    ctx: ToolContext,
    project_id: str,
    listing: list[VaultFile],
    parts: Collection[str],
    *,
    prefix: str | None = None,
    paths: Collection[str] | None = None,
) -> IndexedNotes:
    """The Markdown notes of ``listing`` under ``prefix`` (or just those at ``paths``) with ``parts`` of their
    facts: from the index, else read and parsed while the budget allows."""
    return _indexed(ctx, project_id, IndexedNotes(listing, notes_of(ctx, listing, prefix, paths)), parts)


def notes_of(
    ctx: ToolContext, listing: list[VaultFile], prefix: str | None = None, paths: Collection[str] | None = None
) -> list[VaultFile]:
    """:func:`markdown_notes`, without a walk of the whole listing when it is a kept one (``listings.py``): its
    notes by path are worked out once, and a few notes are looked up by path."""
    if paths is not None:
        files = listed_files(ctx, listing)
        found = (files.get(path) for path in sorted(paths))
        return [f for f in found if f is not None and is_markdown(f) and (prefix is None or f.path.startswith(prefix))]
    if prefix is not None:
        return markdown_notes(listing, prefix)
    return ctx.kept_listings.derived(listing, "notes", lambda: markdown_notes(listing))


def listed_files(ctx: ToolContext, listing: list[VaultFile]) -> dict[str, VaultFile]:
    """The files of ``listing`` by path (once per kept listing)."""
    return ctx.kept_listings.derived(listing, "files", lambda: {file.path: file for file in listing})


def listed_paths(ctx: ToolContext, listing: list[VaultFile]) -> frozenset[str]:
    """The paths of ``listing``: every live file, a link's possible target (once per kept listing)."""
    return ctx.kept_listings.derived(listing, "paths", lambda: frozenset(file.path for file in listing))


def markdown_notes(
    listing: list[VaultFile], prefix: str | None = None, paths: Collection[str] | None = None
) -> list[VaultFile]:
    """The Markdown notes of ``listing`` under ``prefix`` (or just those at ``paths``), by path."""
    return sorted(
        (
            file
            for file in listing
            if is_markdown(file)
            and (prefix is None or file.path.startswith(prefix))
            and (paths is None or file.path in paths)
        ),
        key=lambda file: file.path,
    )


def _indexed(
    ctx: ToolContext, project_id: str, indexed: IndexedNotes, parts: Collection[str], pause: Pause | None = None
) -> IndexedNotes:
    """``indexed.notes`` with ``parts`` of their facts: memory, else the store, else read and parsed; ``pause``
    is called before each note parsed (the warm-up steps aside there; it parses only the notes its sync brought,
    and fetches none)."""
    index = note_index(ctx)
    notes = indexed.notes
    unread: list[VaultFile] = []
    for file in notes:
        content_hash = file.content_hash
        facts = index.facts.cached(content_hash, parts) if content_hash else None
        if content_hash is None or facts is None:
            unread.append(file)
            continue
        indexed.facts[file.path] = facts
        indexed.hashes[file.path] = content_hash
    store = index.store(project_id) if unread else None
    if store is not None:
        hashes = [file.content_hash for file in unread if file.content_hash]
        kept = _recalled(ctx, index, store, hashes, parts, len(notes))
        still: list[VaultFile] = []
        for file in unread:
            facts = kept.get(file.content_hash) if file.content_hash else None
            if facts is None:
                still.append(file)
                continue
            indexed.facts[file.path] = facts
            indexed.hashes[file.path] = file.content_hash or ""
        unread = still
    if unread:
        _read_and_parse(ctx, project_id, unread, parts, indexed, index, pause)
    return indexed


def _recalled(
    ctx: ToolContext, index: NoteIndex, store: FactsStore, hashes: list[str], parts: Collection[str], notes: int
) -> dict[str, NoteFacts]:
    """The facts of those ``hashes`` the store holds, read back :data:`RECALL_CHUNK` at a time while the budget
    lasts (100,000 notes' facts take longer to read back than a call has), keeping time to answer about ``notes``
    notes; what is not read back is then read and parsed, which stops in time."""
    kept: dict[str, NoteFacts] = {}
    for start in range(0, len(hashes), RECALL_CHUNK):
        if out_of_time(ctx, answer_reserve(notes)):
            break
        kept.update(index.facts.recall(store, hashes[start : start + RECALL_CHUNK], parts))
    return kept


def answer_reserve(notes: int) -> float:
    """Seconds kept for answering about ``notes`` notes once their facts are read: counting 50,000 notes' tags takes
    seconds, not the one second a small vault's answer needs."""
    return ANSWER_SECONDS + notes / NOTES_ANSWERED_PER_SECOND


def _read_and_parse(
    ctx: ToolContext,
    project_id: str,
    unread: list[VaultFile],
    parts: Collection[str],
    indexed: IndexedNotes,
    index: NoteIndex,
    pause: Pause | None,
) -> None:
    gathered = gather(ctx, project_id, unread, fetch=pause is None)  # the warm-up's index fetches nothing
    texts = Texts(ctx, project_id, gathered)
    indexed.why_partial = gathered.why_partial
    parsed: dict[str, NoteFacts] = {}
    store = index.store(project_id)

    def keep() -> None:  # what was parsed goes to the store as it comes: a batch is quick, 40,000 notes are not
        if store is not None and parsed:
            index.facts.keep(store, parsed.items())
        parsed.clear()

    try:
        _parse(ctx, gathered, texts, parts, indexed, index, parsed, pause, keep)
    finally:  # what was parsed is kept, even when the call stops early
        keep()


def _parse(
    ctx: ToolContext,
    gathered: Gathered,
    texts: Texts,
    parts: Collection[str],
    indexed: IndexedNotes,
    index: NoteIndex,
    parsed: dict[str, NoteFacts],
    pause: Pause | None,
    keep: Callable[[], None],
) -> None:
    last_report = 0.0
    reserve = answer_reserve(len(indexed.notes))
    with gc_paused():  # a note's parse makes thousands of small objects
        for done, (file, entry) in enumerate(sorted(gathered.ready, key=lambda pair: pair[0].path)):
            if pause is not None:
                pause()
            if ctx.token is not None and ctx.token.cancelled:
                raise CallCancelledError()
            if ctx.budget is not None and ctx.budget.remaining() < reserve:
                indexed.why_partial = indexed.why_partial or "the call's time budget ran out"
                return
            raw = texts.raw(file, entry)
            if raw is None:  # evicted from the cache by another process meanwhile, and changed or gone at the vault
                indexed.why_partial = indexed.why_partial or "some notes could not be read again"
                continue
            content_hash = file.content_hash or hashlib.sha256(raw.encode()).hexdigest()
            indexed.facts[file.path] = parsed[content_hash] = index.facts.facts(content_hash, raw, parts)
            indexed.hashes[file.path] = content_hash
            if len(parsed) >= SAVE_EVERY:
                keep()
            # Paced on the machine's clock: how often the host hears, not how long the call may take.
            if ctx.progress is not None and time.monotonic() - last_report >= PROGRESS_EVERY:
                last_report = time.monotonic()
                ctx.progress(done + 1, len(gathered.ready), f"read {done + 1} of {len(gathered.ready)} new notes")


def index_in_background(ctx: ToolContext, foreground: Foreground, report: WarmUp, listing: list[VaultFile]) -> None:
    """The warm-up's second part, after its sync: every Markdown note of the default project with its links, tags,
    tasks and front matter in the index, the tallies of list_tags, list_tasks and query_notes made, and the vault's
    links resolved, so that the first graph call on a big vault reads and resolves nothing. It steps aside before each
    note while a call runs (the links: every :data:`~teamvault_mcp.text.noteindex.STOP_EVERY` notes), and does
    nothing when the facts have no store on disk (they would not stay: memory holds a bounded part of them). A call
    that comes first reads and indexes what it needs itself. ``listing``: the one the sync worked from (the whole
    project)."""
    project_id = ctx.default_project_id
    assert project_id is not None and ctx.token is not None
    token = ctx.token
    if note_index(ctx).store(project_id) is None:
        return
    notes = markdown_notes(listing)
    report.to_index = len(notes)
    tallies = note_index(ctx).tallies(project_id)

    def step_aside() -> None:
        foreground.wait_until_idle(token.event)

    def stopping() -> bool:
        if out_of_time(ctx, ANSWER_SECONDS):
            report.stopped = "the server is stopping" if token.cancelled else "its time ran out"
            return True
        return False

    paths = listed_paths(ctx, listing)
    for start in range(0, len(notes), WARM_INDEX_CHUNK):
        step_aside()
        if stopping():
            return
        chunk = _indexed(ctx, project_id, IndexedNotes([], notes[start : start + WARM_INDEX_CHUNK]), PARTS, step_aside)
        links: dict[str, tuple[str, tuple[LinkFact, ...]]] = {}
        for file, facts in chunk.read():  # the counts of list_tags and list_tasks, ready for their first call
            tallies.take(
                file.path, chunk.hashes[file.path], file.size or 0, facts.tags, facts.tasks, facts.front_matter
            )
            links[file.path] = (chunk.hashes[file.path], facts.links or ())
        report.indexed += len(chunk.facts)
        log.info("the warm-up indexed %s of %s notes", f"{report.indexed:,}", f"{len(notes):,}")
        while True:  # resolved a few hundred notes at a time, stopping for any call: what is resolved stays
            with gc_paused():
                graph = note_index(ctx).graph(project_id, paths, links, keep=False, stop=lambda: foreground.busy)
            if len(graph) == len(links):
                break
            step_aside()
            if stopping():
                return
    report.resolved = True


def texts_of(ctx: ToolContext, project_id: str, files: list[VaultFile]) -> dict[str, str]:
    """The texts of a few notes, by path, to show lines of (from memory or the disk cache once read)."""
    gathered = gather(ctx, project_id, files)
    texts = Texts(ctx, project_id, gathered)
    raws = {file.path: texts.raw(file, entry) for file, entry in gathered.ready}
    return {path: raw for path, raw in raws.items() if raw is not None}


def vault_graph(ctx: ToolContext, project_id: str, listing: list[VaultFile]) -> tuple[IndexedNotes, LinkGraph]:
    """Every Markdown note of ``listing`` (the whole vault) and their links resolved. Only the notes new or changed
    since the project's links were last resolved have their facts read: the resolved links are in the project's
    link table (``text/linkdb.py``), and memory keeps a bounded part of a big vault's facts. The notes' facts are
    not in ``indexed.facts``: :func:`link_counts` says how many links each note has. A whole graph is kept with a
    kept listing: the next call on that listing walks none of its notes."""
    kept: tuple[IndexedNotes, LinkGraph] | None = ctx.kept_listings.recall(listing, ("graph", project_id))
    if kept is not None:
        return kept
    notes = notes_of(ctx, listing)
    known = note_index(ctx).link_hashes(project_id, listed_paths(ctx, listing))
    changed = [
        file for file in notes if file.content_hash is None or known.get(file.path, ("",))[0] != file.content_hash
    ]
    indexed = _indexed(ctx, project_id, IndexedNotes(listing, changed), ("links",))
    links: dict[str, tuple[str, tuple[LinkFact, ...]]] = {}
    for file in changed:
        facts = indexed.facts.get(file.path)
        if facts is not None:  # else: changed, and not read in time: its old links are not this listing's
            assert facts.links is not None
            links[file.path] = (indexed.hashes[file.path], facts.links)
    changed_paths = {file.path for file in changed}
    unchanged = [file.path for file in notes if file.path not in changed_paths]
    with gc_paused():
        graph = note_index(ctx).graph(
            project_id,
            listed_paths(ctx, listing),
            links,
            unchanged=unchanged,
            known=known,
            stop=lambda: out_of_time(ctx, answer_reserve(len(notes))),
        )
    hashes = {
        file.path: indexed.hashes.get(file.path) or file.content_hash or "" for file in notes if file.path in graph
    }
    whole = IndexedNotes(listing, notes, hashes=hashes)
    whole.why_partial = indexed.why_partial or (
        "the call's time budget ran out" if len(graph) < len(links) + len(unchanged) else ""
    )
    if not whole.why_partial:
        ctx.kept_listings.remember(listing, ("graph", project_id), (whole, graph))
    return whole, graph


def links_cut(ctx: ToolContext, project_id: str, indexed: IndexedNotes, graph: LinkGraph) -> str | None:
    """``prose.unindexed_notice`` of the notes read whose links the index keeps only in part; worked out once for
    the whole graph kept with its listing (:func:`vault_graph`)."""

    def notice() -> str:
        return unindexed_notice(link_counts(indexed, graph), "links", MAX_LINKS_PER_NOTE) or ""

    kept = ctx.kept_listings.recall(indexed.listing, ("graph", project_id))
    if kept is None or kept[1] is not graph or kept[0].notes is not indexed.notes:
        return notice() or None  # a folder's graph, or one not kept
    return ctx.kept_listings.derived(indexed.listing, ("links cut", project_id), notice) or None


def link_counts(indexed: IndexedNotes, graph: LinkGraph) -> list[tuple[str, int, int]]:
    """(path, size, links kept) of each note read, for the notice of notes whose links were cut."""
    counts = graph.link_counts
    return [(file.path, file.size or 0, counts[file.path]) for file in indexed.notes if file.path in counts]


def link_graph(ctx: ToolContext, project_id: str, indexed: IndexedNotes, *, keep: bool = True) -> LinkGraph:
    """The links of the notes read, resolved against every path of the listing (which must be the whole vault);
    ``keep=False`` for a graph of some of the vault's notes (see :meth:`NoteIndex.graph`)."""
    notes = {}
    for file, facts in indexed.read():
        assert facts.links is not None, "index_notes(parts=('links',)) first"
        notes[file.path] = (indexed.hashes[file.path], facts.links)
    with gc_paused():
        return note_index(ctx).graph(project_id, listed_paths(ctx, indexed.listing), notes, keep=keep)


def note_index(ctx: ToolContext) -> NoteIndex:
    return ctx.note_index


def collector_paused(handler: Handler) -> Handler:
    """``handler`` run with the cyclic garbage collector held off (``gathering.gc_paused``): a tool that walks
    every note's links, tags or tasks makes many objects, and a full collection would walk the whole index."""

    @functools.wraps(handler)
    def paused(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
        with gc_paused():
            return handler(ctx, args)

    return paused
