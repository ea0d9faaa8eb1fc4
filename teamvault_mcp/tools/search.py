"""The search tools, search_notes and find_notes: the vault's notes, gathered cheaply, searched within the budget.

The server has no search endpoint, so the MCP searches itself, on the notes
``gathering.py`` gathers (from memory, the disk cache, or fetched by the cold sync within the
budget). When not every note could be gathered, the search answers with what it
has, marked partial, saying how many notes it did not search.
"""

from __future__ import annotations

import heapq
import json
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.text.deadlines import Deadline
from teamvault_mcp.text.fuzzy import find_paths
from teamvault_mcp.text.markdown import toc_argument
from teamvault_mcp.text.paths import folder_prefix
from teamvault_mcp.text.regex_subset import UnsafeRegexError
from teamvault_mcp.text.search import (
    BM25,
    HITS_PER_NOTE,
    REGEX_LINE_SECONDS,
    Candidate,
    Indexed,
    Matcher,
    TimeUp,
    rank,
)
from teamvault_mcp.text.terms import close_words, vocabulary
from teamvault_mcp.tools.answer import Answer
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.gathering import Gathered, Texts, gather, gc_paused, term_index
from teamvault_mcp.tools.indexing import listed_files
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.search_scoring import OnDisk, count_on_disk, index_gathered, split
from teamvault_mcp.tools.spec import STRING, See, Tool, answer_schema, object_schema, rows

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile

#: Matching stops when less than this is left: time to rank and answer.
ANSWER_SECONDS = 1.0
#: A regex search stops after this long, whatever the budget (and a line that takes longer than
#: REGEX_LINE_SECONDS is skipped, so one bad line does not use it all up).
REGEX_SECONDS = 10.0
DEFAULT_HITS = 20
DEFAULT_FOUND = 10


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
    files, gathered, on_disk, texts = _searched_notes(ctx, project_id, mode, folder_prefix(args.get("prefix")))
    with gc_paused():  # tens of thousands of short-lived objects; no full collection in between, please
        scored = _score(ctx, matcher, gathered, mode, texts, on_disk)
        corrected = _corrected(ctx, matcher, gathered, scored, texts, on_disk) if not scored.total else None
        if corrected is not None:
            matcher, scored = corrected
        shown, notes_shown = rank(scored.best_first(), matcher, limit, texts.of_candidate, ordered=True)
    total_notes = scored.total
    slow_lines = sum(matcher.slow_lines.values())
    answer = Answer(
        query=args["query"],
        mode=mode,
        hits=[],
        totalNotes=total_notes,
        moreNotes=total_notes - notes_shown,
        notesSearched=scored.searched,
        partial=gathered.not_searched > 0 or slow_lines > 0,
    )
    if gathered.not_searched:
        answer.data["notesNotSearched"] = gathered.not_searched
        answer.notice(
            f"[Partial: {gathered.not_searched:,} of {len(files):,} notes were not searched ({gathered.why_partial}). "
            "The notes read so far are cached: searching again continues where this stopped.]"
        )
    if slow_lines:
        answer.data["slowLines"] = slow_lines
        answer.notice(_slow_lines_notice(matcher.slow_lines))
    query = json.dumps(args["query"], ensure_ascii=False)
    if corrected is not None:
        corrected_query = " ".join(matcher.words)
        answer.data["correctedQuery"] = corrected_query
        answer.summary(
            f"No note holds {query}; {_said_as(scored.replaced)}, the closest word"
            f"{'s' if len(scored.replaced) > 1 else ''} in this vault. Hits for "
            f"{json.dumps(corrected_query, ensure_ascii=False)}:"
        )
    elif not shown:
        answer.summary(_no_hits(ctx, args["query"], mode, matcher, gathered, scored, on_disk))
    else:
        # The agent knows its query and mode; the count, and the cap when it may have hidden lines of a note.
        per_note = Counter(hit.path for hit in shown)
        capped = " (at most 3 per note)" if max(per_note.values()) >= HITS_PER_NOTE else ""
        answer.summary(
            f"{len(shown)} hit{'s' if len(shown) != 1 else ''} in {notes_shown:,} note"
            f"{'s' if notes_shown != 1 else ''}{capped}:"
        )
    said_status: set[str] = set()
    for hit in shown:
        where = f" section={toc_argument(hit.toc_path)}" if hit.toc_path else ""
        status = ""
        if hit.status is not None and hit.path not in said_status:  # said once, at the note's first hit
            said_status.add(hit.path)
            status = f" (status: {hit.status})"
        answer.row("hits", f"{hit.path}:{hit.line}{status}{where} · {hit.snippet}", hit.as_json())
    if total_notes > notes_shown:
        answer.notice(
            f"[{total_notes - notes_shown:,} more matching notes not shown: narrow with prefix or more words, "
            "or raise limit.]"
        )
    if any(hit.toc_path for hit in shown) and ctx.tools.has("read_note"):
        answer.notice("read_note(path, section=...) reads a hit's section.")
    return answer.output()


def _searched_notes(
    ctx: ToolContext, project_id: str, mode: str, prefix: str | None
) -> tuple[list[VaultFile], Gathered, OnDisk | None, Texts]:
    """The notes to search: all of them, those counted on disk (none for a regex, which reads every note), the
    others gathered (and then given to the index on disk), and where the texts to show come from."""
    with gc_paused():  # a listing is thousands of objects at once
        listing = ctx.kept_listings.files(ctx.client, project_id, prefix)
        files = [file for file in listing if file.file_type == "TEXT"]
    terms = term_index(ctx, project_id) if mode != "regex" else None
    with gc_paused():  # 100,000 pairs: a full collection here would walk the whole heap for nothing
        on_disk, unindexed = split(terms, files) if terms is not None else (None, files)
    gathered = gather(ctx, project_id, unindexed, listing=listing, scope=prefix)
    if terms is not None:
        index_gathered(ctx, terms, gathered)
    return files, gathered, on_disk, Texts(ctx, project_id, gathered, listed_files(ctx, listing) if terms else None)


@dataclass
class Scored:
    """What matching found: the notes that match (those counted on disk as a score and a path only: 100,000 of
    them are ranked, and only those looked at become candidates), how many were searched, how many hold each term,
    and (for a corrected query) which query words were replaced by which."""

    candidates: list[Candidate]
    searched: int
    holding: list[int]
    replaced: dict[str, str] = field(default_factory=dict)
    on_disk: list[tuple[float, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.candidates) + len(self.on_disk)

    def best_first(self) -> Iterator[Candidate]:
        """Every matching note, best score first, then by path (a note is in memory or on disk, never both)."""
        heap = [(-candidate.score, candidate.path, -1 - number) for number, candidate in enumerate(self.candidates)]
        heap += [(-score, path, number) for number, (score, path) in enumerate(self.on_disk)]
        heapq.heapify(heap)
        while heap:
            score, path, number = heapq.heappop(heap)
            yield self.candidates[-1 - number] if number < 0 else Candidate(path, None, -score)


#: Seconds a search that found nothing may spend collecting the vault's words, for close words.
VOCABULARY_SECONDS = 2.0


def _vocabulary(ctx: ToolContext, gathered: Gathered, on_disk: OnDisk | None, missing: list[str]) -> Counter[str]:
    """How many notes hold each word: every word of the notes in memory, and of the index's words those close to
    a ``missing`` one (the only ones close words are picked from)."""
    counts = vocabulary((entry for _, entry in gathered.ready), deadline=_within(ctx, VOCABULARY_SECONDS))
    if on_disk is not None and on_disk.notes:
        every = Counter(dict.fromkeys(on_disk.terms.vocabulary(), 1))
        near = {other for word in missing for other, _ in close_words(word, every, limit=len(every))}
        counts.update(on_disk.terms.holders(near, Counter(text.id for _, text in on_disk.notes)))
    return counts


def _within(ctx: ToolContext, seconds: float) -> Deadline:
    """``seconds`` from now, or sooner, time to answer before the call's budget ends: on the budget's clock.
    Only a context without a budget (a bare one, in tests) has no clock but the machine's."""
    deadline = ctx.deadline(ANSWER_SECONDS)
    return Deadline.after(seconds, time.monotonic) if deadline is None else deadline.within(seconds)


def _corrected(
    ctx: ToolContext, matcher: Matcher, gathered: Gathered, scored: Scored, texts: Texts, on_disk: OnDisk | None
) -> tuple[Matcher, Scored] | None:
    """A text search whose words are not all in the vault, made again with the closest word of the vault for
    each missing one (a typo: ``failovr``); None when a word has no close word, or the new search finds nothing."""
    if matcher.mode != "text":  # a phrase or a regex counts its notes as one term, not word by word
        return None
    missing = [word for word, notes in zip(matcher.words, scored.holding, strict=True) if not notes]
    if not missing:
        return None
    counts = _vocabulary(ctx, gathered, on_disk, missing)
    replaced = {}
    for word in missing:
        close = close_words(word, counts, limit=1)
        if not close:
            return None
        replaced[word] = close[0][0]
    fixed = Matcher(" ".join(replaced.get(word, word) for word in matcher.words), "text")
    again = _score(ctx, fixed, gathered, "text", texts, on_disk)
    if not again.total:
        return None
    again.replaced = replaced
    return fixed, again


def _said_as(replaced: dict[str, str]) -> str:
    return ", ".join(
        f"{json.dumps(word, ensure_ascii=False)} is not in it but {json.dumps(close, ensure_ascii=False)} is"
        for word, close in replaced.items()
    )


def _no_hits(
    ctx: ToolContext,
    query: str,
    mode: str,
    matcher: Matcher,
    gathered: Gathered,
    scored: Scored,
    on_disk: OnDisk | None,
) -> str:
    """What a search that found nothing says: which words the vault lacks and its close words, what to try."""
    quoted = json.dumps(query, ensure_ascii=False)
    searched = f"{scored.searched:,} note{'s' if scored.searched != 1 else ''} searched"
    said = [f"No note matches {quoted} ({mode}; {searched})."]
    tries = []
    if mode == "text":
        words = matcher.words
        held = dict(zip(words, scored.holding, strict=True))
        missing = [word for word in words if not held[word]]
        if len(words) > 1:
            counts = ", ".join(f"{json.dumps(word, ensure_ascii=False)} {_notes(held[word])}" for word in words)
            said.append(f"Notes holding each word: {counts}.")
        if missing:
            vocabulary_counts = _vocabulary(ctx, gathered, on_disk, missing)
            for word in missing:
                close = close_words(word, vocabulary_counts)
                if close:
                    options = ", ".join(f"{json.dumps(other, ensure_ascii=False)} ({_notes(n)})" for other, n in close)
                    said.append(f"Close to {json.dumps(word, ensure_ascii=False)} in this vault: {options}.")
        if len(words) > 1:
            tries.append("fewer words (every word must be in the note)")
    elif mode == "phrase":
        tries.append('mode="text" (the words anywhere in a note, in any order)')
    else:
        tries.append('mode="text" for plain words, or a looser pattern')
    if ctx.tools.has("find_notes"):
        tries.append("find_notes(query) if it is part of a note's name")
    if tries:
        said.append(f"Try {'; or '.join(tries)}.")
    return " ".join(said)


def _notes(count: int) -> str:
    return "in no note" if not count else f"in {count:,} note{'s' if count != 1 else ''}"


def _score(
    ctx: ToolContext, matcher: Matcher, gathered: Gathered, mode: str, texts: Texts, on_disk: OnDisk | None = None
) -> Scored:
    """Every matching note with its score, those in memory and those ``on_disk``; stops early (partial) when time
    runs out."""
    deadline = _within(ctx, REGEX_SECONDS) if mode == "regex" else ctx.deadline(ANSWER_SECONDS)
    counted: list[tuple[VaultFile, Indexed, list[int]]] = []
    holding = [0] * len(matcher.terms)  # notes that hold each term, for its weight
    candidates: list[Candidate] = []
    searched = 0
    for file, entry in gathered.ready:
        try:
            if (ctx.token is not None and ctx.token.cancelled) or (deadline is not None and deadline.passed()):
                raise TimeUp()
            if matcher.regex is not None:
                text = texts.of(file, entry, shown=False)
                matches = matcher.lines(file.path, text, deadline=deadline) if text is not None else []
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
    chars = sum(len(entry.folded) for _, entry in gathered.ready[:searched])
    on_disk_counted = count_on_disk(ctx, matcher, on_disk, texts, deadline) if on_disk is not None else None
    if on_disk_counted is not None:
        holding = [mine + theirs for mine, theirs in zip(holding, on_disk_counted.holding, strict=True)]
        searched += on_disk_counted.searched
        chars += on_disk_counted.chars
        if on_disk_counted.not_searched:
            gathered.not_searched += on_disk_counted.not_searched
            gathered.why_partial = gathered.why_partial or _why_stopped(ctx, mode)
    ranking = BM25(searched, holding, chars / max(searched, 1))
    candidates += [
        Candidate(file.path, entry, ranking.score(counts, len(entry.folded))) for file, entry, counts in counted
    ]
    matching = [] if on_disk_counted is None else on_disk_counted.matching
    scores = ranking.scores((counts, length) for _, length, counts in matching)
    on_disk_scores = [(score, file.path) for score, (file, _, _) in zip(scores, matching, strict=True)]
    return Scored(candidates, searched, holding, on_disk=on_disk_scores)


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
        types, paths = _paths_and_types(ctx, project_id)
        found = find_paths(args["query"], paths, args.get("limit", DEFAULT_FOUND))
    query = json.dumps(args["query"], ensure_ascii=False)
    answer = Answer(query=args["query"], notes=[])
    if found:
        answer.summary(f"{len(found)} path{'s' if len(found) != 1 else ''} like {query}:")
    else:
        answer.summary(f"No path like {query}. Try fewer letters, or search_notes.")
    for path, score in found:
        answer.row("notes", f"{path}  ({score})", {"path": path, "type": types[path], "score": score})
    return answer.output()


def _paths_and_types(ctx: ToolContext, project_id: str) -> tuple[dict[str, str], list[str]]:
    """Every live file's type by path, and the paths: a big vault's from its kept listing (listed and kept now if
    there is none: the calls that come next reuse it), worked out once per listing; a small vault's paths only."""
    kept_listings = ctx.kept_listings
    listing = kept_listings.reusable(project_id)
    if listing is None and kept_listings.was_big(project_id):
        listing = kept_listings.files(ctx.client, project_id)
    pairs = ctx.client.list_paths(project_id) if listing is None else [(f.path, f.file_type) for f in listing]
    if listing is None:
        return _types_and_paths(pairs)
    return kept_listings.derived(listing, "types and paths", lambda: _types_and_paths(pairs))


def _types_and_paths(pairs: list[tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    types = dict(pairs)
    return types, list(types)


# -- the tools ----------------------------------------------------------------------------------------

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="search_notes",
        title="Search notes",
        description=(
            "Search what notes say. mode=text (default): notes holding every word, any case or accents, best "
            "lines first; phrase: the words in order on one line; regex: a safe subset. A hit is path:line, its "
            "section and a snippet, at most 3 per note. No hits: it says what to try (a typo is retried as the "
            "vault's closest word). A search cut short by time says so."
        ),
        see=(See(("read_note",), "read_note(path, section=...) reads a hit's section."),),
        params=(
            Param("query", "Words, a phrase, or a regex (see mode).", kind="query"),
            Param("prefix", "Only paths starting with this, e.g. 'projects/'.", kind="prefix", required=False),
            Param(
                "limit",
                f"Most hits (default {DEFAULT_HITS}, at most 200).",
                kind="count",
                required=False,
                maximum=200,
            ),
            Param(
                "mode",
                "text (default), phrase or regex.",
                kind="choice",
                required=False,
                choices=("text", "phrase", "regex"),
            ),
        ),
        handler=search_notes,
        output_schema=answer_schema(
            {
                "query": STRING,
                "mode": STRING,
                "correctedQuery": STRING,
                "hits": rows(
                    object_schema(
                        {
                            "path": STRING,
                            "line": {"type": "integer"},
                            "snippet": STRING,
                            "breadcrumb": STRING,
                            "tocPath": rows(STRING),
                            "score": {"type": "number"},
                            "status": STRING,
                        },
                        ["path", "line", "snippet", "breadcrumb", "tocPath", "score"],
                    )
                ),
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
            "Find notes by path or name, forgiving typos, best first with a score (100: the exact name); for "
            '"where is the note about X". Case and accents are ignored.'
        ),
        params=(
            Param("query", "Part of a name or path, e.g. 'kuzma'.", kind="query"),
            Param(
                "limit",
                f"Most paths (default {DEFAULT_FOUND}, at most 100).",
                kind="count",
                required=False,
                maximum=100,
            ),
        ),
        handler=find_notes,
        output_schema=answer_schema(
            {
                "query": STRING,
                "notes": rows(
                    object_schema(
                        {"path": STRING, "type": STRING, "score": {"type": "number"}}, ["path", "type", "score"]
                    )
                ),
            },
            ["query", "notes"],
        ),
    ),
)
