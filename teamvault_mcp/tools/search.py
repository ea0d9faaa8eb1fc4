"""The search tools, search_notes and find_notes: the vault's notes, gathered cheaply, searched within the budget.

The server has no search endpoint, so the MCP searches itself. One listing gives
every note's ``contentHash``; a note is taken from the in-memory index, else from
the disk cache, else fetched by the cold sync (``vault/sync.py``: folder archives where
they pay, single downloads elsewhere, 8 at a time) and then cached. Fetching stops when
the call's budget runs low or the host cancels; the search then answers with what it
has, marked partial, saying how many notes it did not search. Notes the server's
warm-up (:func:`warm_up`) is fetching at that moment are waited for, not fetched twice.

The index keeps each note's folded text; the raw text of the notes whose hits are shown
is read back from the content cache (or downloaded, should another process have evicted it).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import CallCancelledError, TeamVaultError, ToolInputError
from teamvault_mcp.text.fuzzy import find_paths
from teamvault_mcp.text.paths import folder_prefix
from teamvault_mcp.text.regex_subset import UnsafeRegexError
from teamvault_mcp.text.search import (
    BM25,
    REGEX_LINE_SECONDS,
    Candidate,
    Indexed,
    Matcher,
    NoteText,
    SearchIndex,
    TimeUp,
    rank,
)
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.spec import STRING, Tool, object_schema
from teamvault_mcp.vault.sync import VaultSync, key_of

if TYPE_CHECKING:
    from teamvault_mcp.vault.background import Foreground, WarmUp
    from teamvault_mcp.vault.cache import ContentCache
    from teamvault_mcp.vault.client import VaultFile

log = logging.getLogger(__name__)

PARALLEL_DOWNLOADS = 8
#: Workers of the warm-up: a few connections of the pool's 16, so calls always find an idle one.
WARM_UP_WORKERS = 2
#: Downloads stop when less than this is left of the call's budget: time to search, rank and answer.
RESERVE_SECONDS = 2.5
#: Matching stops when less than this is left: time to rank and answer.
ANSWER_SECONDS = 1.0
#: A regex search stops after this long, whatever the budget (and a line that takes longer than
#: REGEX_LINE_SECONDS is skipped, so one bad line does not use it all up).
REGEX_SECONDS = 10.0
#: At most one progress notification per this many seconds.
PROGRESS_EVERY = 0.25
DEFAULT_HITS = 20
DEFAULT_FOUND = 10


@dataclass
class Gathered:
    """The notes a search can look at, and what it could not get."""

    ready: list[tuple[VaultFile, Indexed]]
    not_searched: int = 0
    downloaded: int = 0
    why_partial: str = ""


def search_notes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    mode = args.get("mode", "text")
    limit = args.get("limit", DEFAULT_HITS)
    try:
        matcher = Matcher(args["query"], mode)
    except UnsafeRegexError as error:
        raise ToolInputError(f"The regex is refused: {error}.") from None
    if matcher.empty:
        raise ToolInputError("The query has nothing to search for; give at least one word.")
    prefix = folder_prefix(args.get("prefix"))
    with gc_paused():  # a listing is thousands of objects at once
        listing = ctx.client.list_files(project_id, prefix=prefix)
        files = [file for file in listing if file.file_type == "TEXT"]
    gathered = gather(ctx, project_id, files, listing=listing, scope=prefix)
    texts = _Texts(ctx, project_id, gathered)
    with gc_paused():  # tens of thousands of short-lived objects; no full collection in between, please
        candidates, searched = _score(ctx, matcher, gathered, mode, texts)
        shown, notes_shown = rank(candidates, matcher, limit, texts.of_candidate)
    total_notes = len(candidates)
    slow_lines = sum(matcher.slow_lines.values())
    result: dict[str, Any] = {
        "query": args["query"],
        "mode": mode,
        "hits": [hit.as_json() for hit in shown],
        "totalNotes": total_notes,
        "moreNotes": total_notes - notes_shown,
        "notesSearched": searched,
        "partial": gathered.not_searched > 0 or slow_lines > 0,
    }
    lines = []
    if gathered.not_searched:
        result["notesNotSearched"] = gathered.not_searched
        lines.append(
            f"[Partial: {gathered.not_searched:,} of {len(files):,} notes were not searched ({gathered.why_partial}). "
            "The notes read so far are cached: searching again continues where this stopped.]"
        )
    if slow_lines:
        result["slowLines"] = slow_lines
        lines.append(_slow_lines_notice(matcher.slow_lines))
    query = json.dumps(args["query"], ensure_ascii=False)
    lines.append(
        f"{total_notes:,} note{'s' if total_notes != 1 else ''} match {query} ({mode}); "
        f"the best {len(shown)} hit{'s' if len(shown) != 1 else ''} (at most 3 per note):"
    )
    for hit in shown:
        where = f" · {hit.breadcrumb}" if hit.breadcrumb else ""
        lines.append(f"{hit.path}:{hit.line}{where} · {hit.snippet}")
    if total_notes > notes_shown:
        lines.append(
            f"[{total_notes - notes_shown:,} more matching notes not shown: narrow with prefix or more words, "
            "or raise limit.]"
        )
    if shown:
        lines.append("Read a hit's part of its note with read_note(path, section=tocPath).")
    return ToolOutput("\n".join(lines), result)


def _score(
    ctx: ToolContext, matcher: Matcher, gathered: Gathered, mode: str, texts: _Texts
) -> tuple[list[Candidate], int]:
    """Every matching note with its score; stops early (partial) when time runs out."""
    stop_at = time.monotonic() + (REGEX_SECONDS if mode == "regex" else float("inf"))
    if ctx.budget is not None:
        stop_at = min(stop_at, time.monotonic() + ctx.budget.remaining() - ANSWER_SECONDS)
    counted: list[tuple[VaultFile, Indexed, list[int]]] = []
    holding = [0] * len(matcher.terms)  # notes that hold each term, for its weight
    candidates: list[Candidate] = []
    searched = 0
    for file, entry in gathered.ready:
        try:
            if (ctx.token is not None and ctx.token.cancelled) or time.monotonic() > stop_at:
                raise TimeUp()
            if matcher.regex is not None:
                text = texts.of(file, entry, shown=False)
                matches = matcher.lines(file.path, text, deadline=stop_at) if text is not None else []
                if matches:
                    score = len(matches) + max(match.score for match in matches)
                    candidates.append(Candidate(file.path, entry, score, matches, text))
            else:
                counts = matcher.counts(file.path, entry)
                for term, count in enumerate(counts):
                    holding[term] += count > 0
                if all(counts):
                    counted.append((file, entry, counts))
        except TimeUp:
            gathered.not_searched += len(gathered.ready) - searched
            gathered.why_partial = gathered.why_partial or _why_stopped(ctx, mode)
            break
        searched += 1
    if counted:
        average = sum(len(entry.folded) for _, entry in gathered.ready[:searched]) / max(searched, 1)
        ranking = BM25(searched, holding, average)
        candidates += [
            Candidate(file.path, entry, ranking.score(counts, len(entry.folded))) for file, entry, counts in counted
        ]
    return candidates, searched


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


def _slow_lines_notice(slow: dict[str, int]) -> str:
    lines = sum(slow.values())
    first = next(iter(slow))
    where = f"in {first}" if len(slow) == 1 else f"in {len(slow):,} notes, the first {first}"
    return (
        f"[Partial: {lines:,} line{'s' if lines != 1 else ''} ({where}) took longer than {REGEX_LINE_SECONDS:g} s "
        "each to match and were skipped: the pattern backtracks heavily on them. Anchor it, use fewer or "
        "narrower repeats or a possessive one (a*+), or search with mode=text.]"
    )


def _why_stopped(ctx: ToolContext, mode: str) -> str:
    if ctx.token is not None and ctx.token.cancelled:
        return "the call was cancelled"
    if ctx.budget is not None and ctx.budget.remaining() < ANSWER_SECONDS + 0.5:
        return "the call's time budget ran out"
    return f"a regex search stops after {REGEX_SECONDS:g} s" if mode == "regex" else "time ran out"


def find_notes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    with gc_paused():
        types = dict(ctx.client.list_paths(project_id))
        found = find_paths(args["query"], list(types), args.get("limit", DEFAULT_FOUND))
    notes = [{"path": path, "type": types[path], "score": score} for path, score in found]
    if notes:
        head = (
            f"{len(notes)} path{'s' if len(notes) != 1 else ''} like {json.dumps(args['query'], ensure_ascii=False)}:"
        )
        text = "\n".join([head, *(f"{note['path']}  ({note['score']})" for note in notes)])
    else:
        text = f"No path like {json.dumps(args['query'], ensure_ascii=False)}. Try fewer letters, or search_notes."
    return ToolOutput(text, {"query": args["query"], "notes": notes})


def gather(
    ctx: ToolContext,
    project_id: str,
    files: list[VaultFile],
    *,
    listing: list[VaultFile] | None = None,
    scope: str | None = None,
) -> Gathered:
    """Every note's content: from memory, from the disk cache, or fetched while the budget allows.

    ``listing`` is everything the listing gave under ``scope`` (its prefix), images too: what a
    folder's archive would hold.
    """
    index = ctx.index if ctx.index is not None else SearchIndex()
    cache = ctx.cache_for(project_id) if ctx.cache_for is not None else None
    gathered = Gathered([])
    missing: list[VaultFile] = []
    for file in files:
        entry = known(file, index, cache)
        if entry is None:
            missing.append(file)
        else:
            gathered.ready.append((file, entry))
    if missing:
        _fetch(ctx, project_id, listing if listing is not None else files, missing, gathered, scope)
    return gathered


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
    last_report = [0.0]

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
    for file in missing:
        content_hash = settled.get(key_of(file))
        entry = index.get(content_hash) if content_hash else None
        if entry is None and content_hash and cache is not None:  # pushed out of a full index meanwhile
            entry = known(file._replace(content_hash=content_hash), index, cache)
        if entry is not None:
            gathered.ready.append((file, entry))
            gathered.downloaded += 1
    gathered.not_searched = len(missing) - gathered.downloaded
    if gathered.not_searched:
        gathered.why_partial = stopped or "some notes could not be downloaded"


class _Texts:
    """The raw texts of gathered notes, for the lines a search matches or shows: kept by the index, else read
    from the content cache, else downloaded again (another process may have evicted them since)."""

    def __init__(self, ctx: ToolContext, project_id: str, gathered: Gathered) -> None:
        self._ctx = ctx
        self._project_id = project_id
        self._index = ctx.index if ctx.index is not None else SearchIndex()
        self._cache = ctx.cache_for(project_id) if ctx.cache_for is not None else None
        self._files = {entry.key: file for file, entry in gathered.ready}

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

    def of_candidate(self, candidate: Candidate) -> NoteText | None:
        file = self._files.get(candidate.entry.key)
        return self.of(file, candidate.entry) if file is not None else None

    def _download(self, file: VaultFile, content_hash: str) -> bytes | None:
        try:
            data = self._ctx.client.download(self._project_id, file.id)
        except CallCancelledError:
            raise
        except TeamVaultError as error:
            log.info("cannot read %s again to show its hits: %s", file.path, error)
            return None
        if hashlib.sha256(data).hexdigest() != content_hash:
            return None  # changed since the listing: its hits would point at other lines
        self._ctx.remember(self._project_id, data)
        return data


def _report(ctx: ToolContext, done: int, total: int, last: list[float], lock: threading.Lock) -> None:
    if ctx.progress is None:
        return
    now = time.monotonic()
    with lock:
        if done < total and now - last[0] < PROGRESS_EVERY:
            return
        last[0] = now
    ctx.progress(done, total, f"downloaded {done} of {total} notes to search")


# -- the warm-up ---------------------------------------------------------------------------------------


def warm_up(ctx: ToolContext, foreground: Foreground, report: WarmUp) -> None:
    """Put the default project's notes into the disk cache and the search index, stepping aside for calls.

    One listing; the notes the disk cache has go into the index, the others are fetched by
    the session's sync with :data:`WARM_UP_WORKERS` workers. Before each note read from the
    disk and each job, it waits while any tool call runs; a search that arrives meanwhile
    fetches what is left itself and waits only for what is in flight.
    """
    project_id = ctx.default_project_id
    assert project_id is not None and ctx.token is not None and ctx.budget is not None
    token, budget = ctx.token, ctx.budget

    def keep_going() -> str | None:
        foreground.wait_until_idle(token.event)
        if token.cancelled:
            return "the server is stopping"
        if budget.remaining() < RESERVE_SECONDS:
            return "its time ran out"
        return None

    with gc_paused():
        listing = ctx.client.list_files(project_id)
    files = [file for file in listing if file.file_type == "TEXT"]
    report.notes = len(files)
    report.listed.set()
    index = ctx.index if ctx.index is not None else SearchIndex()
    cache = ctx.cache_for(project_id) if ctx.cache_for is not None else None
    missing: list[VaultFile] = []
    for file in files:
        stop = keep_going()
        if stop is not None:
            report.stopped = stop
            return
        already = file.content_hash is not None and index.get(file.content_hash) is not None
        if known(file, index, cache) is None:
            missing.append(file)
        elif not already:
            report.from_cache += 1
    if not missing:
        return
    project = (ctx.sync or VaultSync()).project(project_id, cache, indexer(index, cache))
    report.stopped, settled = project.fetch(
        ctx.client,
        listing,
        missing,
        workers=WARM_UP_WORKERS,
        keep_going=keep_going,
        archive_seconds=lambda: budget.remaining() - RESERVE_SECONDS,
    )
    report.fetched = sum(1 for content_hash in settled.values() if content_hash is not None)


# -- the tools ----------------------------------------------------------------------------------------

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="search_notes",
        title="Search notes",
        description=(
            "Search the text of the project's notes. mode=text (default) finds notes holding every word of the "
            "query, ignoring case and accents, and ranks the lines; mode=phrase finds the words in order on one "
            "line; mode=regex takes a regular expression (a safe subset: no nested quantifiers). Each hit gives "
            "path, line, a short snippet, the heading breadcrumb and the tocPath of its section: read just that "
            "part with read_note(path, section=tocPath). Notes are ranked by BM25 (words that are frequent in a "
            f"note and rare in the vault count most); at most limit hits (default {DEFAULT_HITS}), at most 3 per "
            "note, and the result says how many more notes matched. The first search of a big vault downloads its "
            "notes (and caches them); if the time budget runs out first, it answers with what it searched, "
            "marked partial."
        ),
        params=(
            Param("query", "What to look for: words, a phrase, or a regular expression (see mode).", kind="query"),
            Param("prefix", "Only search paths starting with this, e.g. 'projects/'.", kind="prefix", required=False),
            Param(
                "limit",
                f"Most hits to return (default {DEFAULT_HITS}, at most 200).",
                kind="count",
                required=False,
                maximum=200,
            ),
            Param(
                "mode",
                "text (all words, any case and accents), phrase (the words in order), or regex.",
                kind="choice",
                required=False,
                choices=("text", "phrase", "regex"),
            ),
        ),
        handler=search_notes,
        output_schema=object_schema(
            {
                "query": STRING,
                "mode": STRING,
                "hits": {
                    "type": "array",
                    "items": object_schema(
                        {
                            "path": STRING,
                            "line": {"type": "integer"},
                            "snippet": STRING,
                            "breadcrumb": STRING,
                            "tocPath": {"type": "array", "items": STRING},
                            "score": {"type": "number"},
                        },
                        ["path", "line", "snippet", "breadcrumb", "tocPath", "score"],
                    ),
                },
                "totalNotes": {"type": "integer"},
                "moreNotes": {"type": "integer"},
                "notesSearched": {"type": "integer"},
                "notesNotSearched": {"type": "integer"},
                "slowLines": {"type": "integer"},
                "partial": {"type": "boolean"},
            },
            ["query", "mode", "hits", "totalNotes", "moreNotes", "notesSearched", "partial"],
        ),
    ),
    Tool(
        name="find_notes",
        title="Find notes by name",
        description=(
            'Find notes by their path or file name, forgiving typos and missing letters, ranked: for "where is '
            'the note about X". Case and accents are ignored. Returns paths with a score (100 is an exact name).'
        ),
        params=(
            Param("query", "Part of a name or path, e.g. 'kuzma' or 'meeting notes 2026'.", kind="query"),
            Param(
                "limit",
                f"Most paths to return (default {DEFAULT_FOUND}, at most 100).",
                kind="count",
                required=False,
                maximum=100,
            ),
        ),
        handler=find_notes,
        output_schema=object_schema(
            {
                "query": STRING,
                "notes": {
                    "type": "array",
                    "items": object_schema(
                        {"path": STRING, "type": STRING, "score": {"type": "number"}}, ["path", "type", "score"]
                    ),
                },
            },
            ["query", "notes"],
        ),
    ),
)
