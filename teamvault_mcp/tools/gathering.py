"""The notes of a project, gathered cheaply within the call's budget: what search and the link index read.

One listing gives every note's ``contentHash``; a note is taken from the in-memory index, else
from the disk cache, else fetched by the cold sync (``vault/sync.py``: folder archives where
they pay, single downloads elsewhere, 8 at a time) and then cached. Fetching stops when the
call's budget runs low or the host cancels; the caller then answers with what it has, marked
partial. Notes the server's warm-up (:func:`warm_up`) is fetching at that moment are waited
for, not fetched twice. The index keeps each note's folded text; the raw text of the notes a
search shows is read back from the content cache (:class:`Texts`; downloaded again, should
another process have evicted it).

Shared by the tool families that read every note of a folder or vault (search_notes,
replace_in_notes, the link index), so it imports none of them.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from teamvault_mcp.errors import TeamVaultError
from teamvault_mcp.text.search import Candidate, Indexed, NoteText, SearchIndex
from teamvault_mcp.tools.context import ToolContext
from teamvault_mcp.vault.sync import VaultSync, key_of

if TYPE_CHECKING:
    from teamvault_mcp.vault.background import Foreground, WarmUp
    from teamvault_mcp.vault.cache import ContentCache
    from teamvault_mcp.vault.records import VaultFile
    from teamvault_mcp.vault.terms_db import TermIndex

log = logging.getLogger(__name__)

PARALLEL_DOWNLOADS = 8
#: Workers of the warm-up: a few connections of the pool's 16, so calls always find an idle one.
WARM_UP_WORKERS = 2
#: Downloads stop when less than this is left of the call's budget: time to search, rank and answer.
RESERVE_SECONDS = 2.5
#: At most one progress notification per this many seconds.
PROGRESS_EVERY = 0.25


@dataclass
class Gathered:
    """The notes a search can look at, and what it could not get."""

    ready: list[tuple[VaultFile, Indexed]]
    not_searched: int = 0
    downloaded: int = 0
    why_partial: str = ""


class _CollectorPause:
    """Counts the searches that hold off the cyclic garbage collector; the last one out resumes it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders = 0
        self.resume = False


_collector = _CollectorPause()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector while a search scores notes (reference counting still frees).

    Full collections walk every object, and the search index holds many: on a 10,000-note
    vault they cost a third of a warm search. Nested and concurrent pauses are counted.
    """
    with _collector.lock:
        if _collector.holders == 0:
            _collector.resume = gc.isenabled()
            gc.disable()
        _collector.holders += 1
    try:
        yield
    finally:
        with _collector.lock:
            _collector.holders -= 1
            if _collector.holders == 0 and _collector.resume:
                gc.enable()


def gather(
    ctx: ToolContext,
    project_id: str,
    files: list[VaultFile],
    *,
    listing: list[VaultFile] | None = None,
    scope: str | None = None,
    fetch: bool = True,
) -> Gathered:
    """Every note's content: from memory, from the disk cache, or fetched while the budget allows (``fetch=False``:
    not fetched, the warm-up's index reads only what its sync brought).

    ``listing`` is everything the listing gave under ``scope`` (its prefix), images too: what a
    folder's archive would hold.
    """
    index = ctx.index if ctx.index is not None else SearchIndex()
    cache = ctx.cache_for(project_id) if ctx.cache_for is not None else None
    gathered = Gathered([])
    missing: list[VaultFile] = []
    for number, file in enumerate(files):
        if number % LOOK_EVERY == 0 and out_of_time(ctx, READ_RESERVE_SECONDS):  # each a read from disk, a fold
            gathered.not_searched = len(files) - number
            gathered.why_partial = "the call was cancelled" if ctx.token.cancelled else "the call's time budget ran out"
            return gathered
        entry = known(file, index, cache)
        if entry is None:
            missing.append(file)
        else:
            gathered.ready.append((file, entry))
    if missing and fetch:
        _fetch(ctx, project_id, listing if listing is not None else files, missing, gathered, scope)
    elif missing:
        gathered.not_searched = len(missing)
        gathered.why_partial = "not in the cache"
    return gathered


#: Notes read from the disk cache between two looks at the call's budget and cancel.
LOOK_EVERY = 200
#: Reading notes from the disk cache stops when less than this is left of the call's budget: what was read is then
#: searched or parsed, which stops a second before the end (a read costs far less than a download, which
#: :data:`RESERVE_SECONDS` is for).
READ_RESERVE_SECONDS = 1.5


def out_of_time(ctx: ToolContext, reserve: float) -> bool:
    """Whether the call is cancelled, or has less than ``reserve`` seconds left: too little to go on reading notes
    (or their facts) and still answer."""
    return (ctx.token is not None and ctx.token.cancelled) or (
        ctx.budget is not None and ctx.budget.remaining() < reserve
    )


def known(file: VaultFile, index: SearchIndex, cache: ContentCache | None) -> Indexed | None:
    """The note's entry in the index, put there from the disk cache if need be; None if neither has it."""
    if not file.content_hash:
        return None
    entry = index.get(file.content_hash)
    if entry is None and cache is not None:
        data = cache.get(file.content_hash, file.size, keep_in_memory=False)
        if data is not None:
            entry = index.add(file.content_hash, data.decode("utf-8", errors="replace"), load=cache.text)
    return entry


def indexer(index: SearchIndex, cache: ContentCache | None) -> Callable[[str, bytes, bool], None]:
    """What a sync does with each note it fetched: into the search index (its raw text too, if no cache kept it)."""

    def add(content_hash: str, data: bytes, cached: bool) -> None:
        load = cache.text if cached and cache is not None else None
        index.add(content_hash, data.decode("utf-8", errors="replace"), load=load)

    return add


def _fetch(
    ctx: ToolContext,
    project_id: str,
    listing: list[VaultFile],
    missing: list[VaultFile],
    gathered: Gathered,
    scope: str | None,
) -> None:
    """Fetch ``missing`` through the session's sync, with up to 8 workers; stop early rather than run out."""
    index = ctx.index if ctx.index is not None else SearchIndex()
    cache = ctx.cache_for(project_id) if ctx.cache_for is not None else None
    project = (ctx.sync or VaultSync()).project(project_id, cache, indexer(index, cache))
    lock = threading.Lock()
    last_report = [0.0, -1.0]  # when, and what, was last reported

    def keep_going() -> str | None:
        if ctx.token is not None and ctx.token.cancelled:
            return "the call was cancelled"
        if ctx.budget is not None and ctx.budget.remaining() < RESERVE_SECONDS:
            return "the call's time budget ran out"
        return None

    def archive_seconds() -> float:  # an archive may take what is left, less the time to search and answer
        return ctx.budget.remaining() - RESERVE_SECONDS if ctx.budget is not None else float("inf")

    def progress(done: int, total: int) -> None:
        _report(ctx, done, total, last_report, lock)

    stopped, settled = project.fetch(
        ctx.client,
        listing,
        missing,
        workers=min(PARALLEL_DOWNLOADS, len(missing)),
        keep_going=keep_going,
        archive_seconds=archive_seconds,
        scope=scope,
        progress=progress,
    )
    # The end is always told: notes others fetched may all have landed before this call's threads first looked.
    progress(sum(1 for file in missing if key_of(file) in settled), len(missing))
    read_back = 0
    for file in missing:
        content_hash = settled.get(key_of(file))
        entry = index.get(content_hash) if content_hash else None
        if entry is None and content_hash and cache is not None:  # pushed out of a full index meanwhile
            read_back += 1
            if read_back % LOOK_EVERY == 0 and out_of_time(ctx, READ_RESERVE_SECONDS):  # each a read, a fold
                stopped = stopped or "the call's time budget ran out"
                break
            entry = known(file._replace(content_hash=content_hash), index, cache)
        if entry is not None:
            gathered.ready.append((file, entry))
            gathered.downloaded += 1
    gathered.not_searched = len(missing) - gathered.downloaded
    if gathered.not_searched:
        gathered.why_partial = stopped or "some notes could not be downloaded"


class Texts:
    """The raw texts of gathered notes, for the lines a search matches or shows: kept by the index, else read
    from the content cache, else downloaded again (another process may have evicted them since)."""

    def __init__(
        self, ctx: ToolContext, project_id: str, gathered: Gathered, by_path: Mapping[str, VaultFile] | None = None
    ) -> None:
        self._ctx = ctx
        self._project_id = project_id
        self._index = ctx.index if ctx.index is not None else SearchIndex()
        self._cache = ctx.cache_for(project_id) if ctx.cache_for is not None else None
        self._files = {entry.key: file for file, entry in gathered.ready}
        self._by_path = by_path or {}  # the notes counted on disk, which were not gathered

    def of(self, file: VaultFile, entry: Indexed, *, shown: bool = True) -> NoteText | None:
        if entry.kept_raw is not None:
            return NoteText(entry.kept_raw, entry.folded) if not shown else self._index.text(entry)
        if shown:
            kept = self._index.text(entry)
            if kept is not None:
                return kept
        data = self._cache.get(entry.key, file.size, keep_in_memory=shown) if self._cache is not None else None
        if data is None:
            data = self._download(file, entry.key)
        if data is None:
            return None
        raw = data.decode("utf-8", errors="replace")
        return self._index.text(entry, raw) if shown else NoteText(raw, entry.folded)

    def raw(self, file: VaultFile, entry: Indexed) -> str | None:
        """A gathered note's raw text, to match in or parse (``entry.raw`` raises :class:`TextGone` once
        another process has evicted it): kept, from the cache, else downloaded again; None if it cannot be had."""
        text = self.of(file, entry, shown=False)
        return text.raw if text is not None else None

    def of_candidate(self, candidate: Candidate) -> NoteText | None:
        if candidate.entry is None:  # counted on disk: read now
            file = self._by_path.get(candidate.path)
            entry = self.entry_of(file) if file is not None else None
            return self.of(file, entry) if file is not None and entry is not None else None
        file = self._files.get(candidate.entry.key)
        return self.of(file, candidate.entry) if file is not None else None

    def entry_of(self, file: VaultFile) -> Indexed | None:
        """A note's entry in the index in memory, read from the disk cache or downloaded again if need be; None
        when it cannot be had (or changed since the listing)."""
        entry = known(file, self._index, self._cache)
        if entry is None and file.content_hash:
            data = self._download(file, file.content_hash)
            if data is not None:
                load = self._cache.text if self._cache is not None else None
                entry = self._index.add(file.content_hash, data.decode("utf-8", errors="replace"), load=load)
        return entry

    def _download(self, file: VaultFile, content_hash: str) -> bytes | None:
        try:
            data = self._ctx.client.download(self._project_id, file.id)
        except TeamVaultError as error:
            log.info("cannot read %s again to show its hits: %s", file.path, error)
            return None
        if hashlib.sha256(data).hexdigest() != content_hash:
            return None  # changed since the listing: its hits would point at other lines
        self._ctx.remember(self._project_id, data)
        return data


def term_index(ctx: ToolContext, project_id: str) -> TermIndex | None:
    """The project's search index on disk (``vault/terms_db.py``); None without a store (no cache directory)."""
    note_index = ctx.note_index
    terms = getattr(note_index.store(project_id), "terms", None) if note_index is not None else None
    return cast("TermIndex | None", terms)


def _report(ctx: ToolContext, done: int, total: int, last: list[float], lock: threading.Lock) -> None:
    if ctx.progress is None:
        return
    now = time.monotonic()  # the machine's clock: a pace for the host, not a limit of the call (budget's)
    with lock:
        if done == last[1] or (done < total and now - last[0] < PROGRESS_EVERY):
            return
        last[0], last[1] = now, done
    ctx.progress(done, total, f"downloaded {done} of {total} notes to search")


# -- the warm-up ---------------------------------------------------------------------------------------


def warm_up(ctx: ToolContext, foreground: Foreground, report: WarmUp) -> list[VaultFile]:
    """Put the default project's notes into the disk cache and the search index, stepping aside for calls; the
    listing it worked from.

    One listing; the notes the disk cache has go into the index, the others are fetched by
    the session's sync with :data:`WARM_UP_WORKERS` workers. Before each note read from the
    disk and each job, it waits while any tool call runs; a search that arrives meanwhile
    fetches what is left itself and waits only for what is in flight.
    """
    project_id = ctx.default_project_id
    assert project_id is not None and ctx.token is not None and ctx.budget is not None
    token, budget = ctx.token, ctx.budget

    def step_aside() -> None:
        foreground.wait_until_idle(token.event)

    def keep_going() -> str | None:  # never waits: the sync asks it while it holds notes a call may wait for
        if token.cancelled:
            return "the server is stopping"
        if budget.remaining() < RESERVE_SECONDS:
            return "its time ran out"
        return None

    with gc_paused():
        listing = ctx.kept_listings.files(ctx.client, project_id)
    files = [file for file in listing if file.file_type == "TEXT"]
    report.notes = len(files)
    report.listed.set()
    index = ctx.index if ctx.index is not None else SearchIndex()
    cache = ctx.cache_for(project_id) if ctx.cache_for is not None else None
    if cache is not None:
        _say_if_it_does_not_fit(files, cache)
    words = _WordsToIndex(term_index(ctx, project_id), files)
    missing: list[VaultFile] = []
    for file in files:
        step_aside()
        stop = keep_going()
        if stop is not None:
            report.stopped = stop
            words.flush()
            return listing
        if words.held(file):  # its words are on disk: a search reads nothing of it
            continue
        already = file.content_hash is not None and index.get(file.content_hash) is not None
        entry = known(file, index, cache)
        if entry is None:
            missing.append(file)
            continue
        words.add(entry)
        if not already:
            report.from_cache += 1
    words.flush()
    if not missing:
        words.prune(listing)
        return listing
    project = (ctx.sync or VaultSync()).project(project_id, cache, indexer(index, cache))
    report.stopped, settled = project.fetch(
        ctx.client,
        listing,
        missing,
        workers=WARM_UP_WORKERS,
        keep_going=keep_going,
        archive_seconds=lambda: budget.remaining() - RESERVE_SECONDS,
        step_aside=step_aside,
    )
    report.fetched = sum(1 for content_hash in settled.values() if content_hash is not None)
    for file in missing:
        step_aside()
        content_hash = settled.get(key_of(file))
        entry = known(file._replace(content_hash=content_hash), index, cache) if content_hash else None
        if entry is not None:
            words.add(entry)
    words.flush()
    words.prune(listing)
    return listing


#: Notes given to the index of words on disk in one transaction (a batch holds the store for a fraction of a second).
ADD_EVERY = 200


class _WordsToIndex:
    """The warm-up's notes for the index of words on disk (``vault/terms_db.py``), given a batch at a time; nothing
    without a store."""

    def __init__(self, terms: TermIndex | None, files: list[VaultFile]) -> None:
        self.terms = terms
        hashes = [file.content_hash for file in files if file.content_hash]
        self._held = set(terms.texts(hashes)) if terms is not None else set()
        self._up_to = terms.last_row() if terms is not None else 0  # contents indexed after the listing stay
        self._batch: list[tuple[str, str]] = []

    def held(self, file: VaultFile) -> bool:
        return file.content_hash in self._held

    def add(self, entry: Indexed) -> None:
        if self.terms is not None and entry.key not in self._held:
            self._held.add(entry.key)
            self._batch.append((entry.key, entry.folded))
            if len(self._batch) >= ADD_EVERY:
                self.flush()

    def flush(self) -> None:
        if self.terms is not None and self._batch:
            self.terms.add(self._batch)
        self._batch = []

    def prune(self, listing: list[VaultFile]) -> None:
        """Drop the contents no note of the whole ``listing`` has (once they are many)."""
        if self.terms is not None:
            self.terms.prune({file.content_hash for file in listing if file.content_hash}, self._up_to)


#: The share of the cache's bound a vault's notes may take and still fit: the index on disk counts in it too.
FITS_SHARE = 0.8
MB = 1024 * 1024  # as TEAM_VAULT_CACHE_MAX_MB counts them


def _say_if_it_does_not_fit(files: list[VaultFile], cache: ContentCache) -> None:
    """A warning on stderr when the project's notes outgrow the cache's bound: every search would then download
    some of them again, and an operator can only see it as slowness."""
    listed = sum(file.size or 0 for file in files)
    if listed > FITS_SHARE * cache.root.max_bytes:
        log.warning(
            "the default project's %s notes take %.0f MB, more than the cache's bound of %.0f MB holds beside the "
            "index: searches will download some of them again each time. Raise TEAM_VAULT_CACHE_MAX_MB (to %.0f, "
            "say).",
            f"{len(files):,}",
            listed / MB,
            cache.root.max_bytes / MB,
            2.5 * listed / MB,
        )
