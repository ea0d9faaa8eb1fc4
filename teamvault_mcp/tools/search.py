"""The search tools, search_notes and find_notes: the vault's notes, gathered cheaply, searched within the budget.

The server has no search endpoint, so the MCP searches itself, over the notes
``gathering.py`` collects (memory, disk cache, downloads within the budget). When not
every note could be had in time, the search answers with what it has, marked partial,
saying how many notes it did not search.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.text.fuzzy import find_paths
from teamvault_mcp.text.paths import folder_prefix
from teamvault_mcp.text.regex_subset import UnsafeRegexError
from teamvault_mcp.text.search import (
    BM25,
    REGEX_LINE_SECONDS,
    Candidate,
    Indexed,
    Matcher,
    TimeUp,
    rank,
)
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.gathering import Gathered, gather, gc_paused
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.spec import STRING, Tool, object_schema

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import VaultFile

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
    prefix = folder_prefix(args.get("prefix"))
    with gc_paused():  # a listing is thousands of objects at once
        files = [file for file in ctx.client.list_files(project_id, prefix=prefix) if file.file_type == "TEXT"]
    gathered = gather(ctx, project_id, files)
    with gc_paused():  # tens of thousands of short-lived objects; no full collection in between, please
        candidates, searched = _score(ctx, matcher, gathered, mode)
        shown, notes_shown = rank(candidates, matcher, limit)
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


def _score(ctx: ToolContext, matcher: Matcher, gathered: Gathered, mode: str) -> tuple[list[Candidate], int]:
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
                matches = matcher.lines(file.path, entry, deadline=stop_at)
                if matches:
                    score = len(matches) + max(match.score for match in matches)
                    candidates.append(Candidate(file.path, entry, score, matches))
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
