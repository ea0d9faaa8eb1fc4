"""The vault-wide replace tool, replace_in_notes: find and replace across notes, previewed first.

Matching and the compact preview are ``text/replace.py``'s; the notes come from the gathering
search uses (``gathering.py``). A dry run (the default) counts every note's matches and diffs
only the notes it shows. Applying counts again on the notes as they are now, refuses when
``expectedCount`` differs (or when not every note could be read), and writes each note with
``edit_note``'s write (``writing/many.py``: ``write_one``), the hash it was computed on as its
expectedHash: a colleague's write meanwhile is that note's conflict, never overwritten. Each
note gets its own Idempotency-Key and its own outcome — applied, conflict or failed (with the
uncertain-write hint when the outcome table says the write may have landed).
A note outside the write scope is reported and left alone (and when every note with a match is, the apply
says so first); every note written is audited. A match inside a link's target breaks that link when replaced:
the preview and the applied answer name each such link, and ``links="keep"`` leaves them alone.

About 590 lines: one tool's survey, preview and answers, which read best together (each note's write is the
write pipeline's: ``writing/many.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import CallCancelledError, EditFailedError, short_hash
from teamvault_mcp.text.paths import folder_prefix
from teamvault_mcp.text.search import TimeUp
from teamvault_mcp.text.sizes import refuse_past, utf8_size
from teamvault_mcp.tools.context import Note, ToolContext, ToolOutput, sha256_hex
from teamvault_mcp.tools.gathering import RESERVE_SECONDS, Texts, gather
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.spec import NULLABLE_STRING, STRING, Tool, answer_schema, object_schema, rows
from teamvault_mcp.tools.writing.many import write_one
from teamvault_mcp.tools.writing.rules import VERIFIED, result_limit

if TYPE_CHECKING:  # text/replace.py loads the regex package: the first call does, not start-up
    from teamvault_mcp.text.replace import LinkMatch, Replacer
    from teamvault_mcp.vault.records import VaultFile

#: Notes a preview shows with their diff; the next LISTED_NOTES are listed by path and count, the rest counted.
PREVIEW_NOTES = 50
LISTED_NOTES = 100
#: Characters of context on each side of a change in a preview line: 18 keeps a 30-note rename (preview and
#: apply) under 6 KB of UTF-8 (each cut side's "…" is 3 bytes; bench/section_tools_bench.py).
PREVIEW_CONTEXT_CHARS = 18
#: Links inside whose target a match is, listed by name and line in an answer; the rest counted.
LISTED_LINKS = 20
#: What ``links`` may be: replace inside link targets too (the default, as before it existed), or keep them.
LINK_MODES = ("replace", "keep")
#: Matching stops when less than this is left of the budget: time to answer.
ANSWER_SECONDS = 1.0


@dataclass(frozen=True)
class _Match:
    """A note with matches: its listing record, the text they were counted on (hash ``read``), how many, and the
    size in bytes its text would have with them replaced."""

    file: VaultFile
    text: str
    read: str
    count: int
    size: int
    in_links: tuple[LinkMatch, ...] = ()  # the matches inside link targets: replaced, or left alone (links="keep")

    @property
    def path(self) -> str:
        return self.file.path


@dataclass
class _Survey:
    """What a find finds: notes to write (in scope, by path), notes left alone, and what was not read."""

    found: list[_Match] = field(default_factory=list)
    outside: list[_Match] = field(default_factory=list)
    left_alone: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    links_only: list[_Match] = field(default_factory=list)  # links="keep": in scope, every match in a link target
    searched: int = 0
    not_searched: int = 0
    why_partial: str = ""


def replace_in_notes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    from teamvault_mcp.text.replace import Replacer

    project_id = ctx.project(args)
    replacer = Replacer(
        args["find"],
        args["replace"],
        regex=bool(args.get("regex")),
        case_sensitive=args.get("caseSensitive", True),
        links=args.get("links", "replace"),
    )
    survey = _survey(ctx, project_id, replacer, folder_prefix(args.get("prefix")))
    chosen = survey.found[: args["limit"]] if "limit" in args else survey.found
    matches = sum(match.count for match in chosen)
    for match in chosen:  # a replacement that would multiply a note is refused before any text is built
        refuse_past(
            result_limit(utf8_size(match.text)), match.size, match.path, f"The replacement ({match.count:,} matches)"
        )
    if args.get("dryRun", True):
        ctx.report.noop = True
        return _preview(ctx, args, replacer, survey, chosen)
    if survey.not_searched:
        raise EditFailedError(
            f"{survey.not_searched:,} notes could not be read ({survey.why_partial}), so their matches are unknown. "
            "Nothing was written. Call again: the notes read so far are cached."
        )
    if not chosen and survey.outside:
        raise EditFailedError(_all_outside_scope(ctx, args, survey))
    expected = args.get("expectedCount")
    if expected is not None and expected != matches:
        now = "\n".join(_preview_lines(ctx, args, replacer, survey, chosen))
        raise EditFailedError(
            f"expectedCount is {expected:,}, but there are {_matches(matches)} now in the {_notes(len(chosen))} "
            "this call would write: the notes changed since the preview, or it had other arguments. Nothing was "
            f"written. What it would do now:\n{now}"
        )
    return _apply(ctx, project_id, args, replacer, survey, chosen)


def _survey(ctx: ToolContext, project_id: str, replacer: Replacer, prefix: str | None) -> _Survey:
    """Every note under ``prefix`` with matches, counted on its text now; in path order."""
    files = [
        file
        for file in ctx.client.list_files(project_id, prefix=prefix)
        if file.file_type == "TEXT" and (prefix is None or file.path.startswith(prefix))  # an old server's listing
    ]
    gathered = gather(ctx, project_id, files)
    survey = _Survey(not_searched=gathered.not_searched, why_partial=gathered.why_partial)
    deadline = ctx.deadline(ANSWER_SECONDS)
    texts = Texts(ctx, project_id, gathered)
    for done, (file, entry) in enumerate(sorted(gathered.ready, key=lambda pair: pair[0].path)):
        if ctx.token is not None and ctx.token.cancelled:
            raise CallCancelledError()
        raw = texts.raw(file, entry)
        if raw is None:  # evicted from the cache by another process meanwhile, and changed or gone at the vault
            survey.not_searched += 1
            survey.why_partial = survey.why_partial or "some notes could not be read again"
            continue
        try:
            count, size, in_links = replacer.measure_links(raw, deadline)
        except TimeUp:
            survey.not_searched += len(gathered.ready) - done
            survey.why_partial = survey.why_partial or "the call's time budget ran out while matching"
            break
        except EditFailedError as error:  # a regex too slow on one of its lines
            survey.searched += 1
            survey.left_alone.append((file.path, str(error)))
            continue
        survey.searched += 1
        if not count and not in_links:
            continue
        read = file.content_hash
        if read is None or "\ufffd" in raw:  # no hash listed, or bytes that may have decoded with losses
            read = sha256_hex(raw.encode("utf-8"))
        if file.content_hash is not None and read != file.content_hash:  # bytes that are not UTF-8 text
            survey.left_alone.append((file.path, "not valid UTF-8 text, so replacing in it could damage it"))
            continue
        match = _Match(file, raw, read, count, size, tuple(in_links))
        writable = ctx.write_prefixes is None or file.path.startswith(ctx.write_prefixes)
        if not count:  # links="keep", and every match is in a link target: nothing to write
            if writable:
                survey.links_only.append(match)
            continue
        (survey.found if writable else survey.outside).append(match)
    return survey


def _all_outside_scope(ctx: ToolContext, args: Mapping[str, Any], survey: _Survey) -> str:
    """Why an apply writes nothing when every note with a match is outside the write scope."""
    matches = sum(match.count for match in survey.outside)
    scopes = ", ".join(ctx.write_prefixes or ())
    return (
        f"Nothing was written: every note with a match of {_what(args)} ({_matches(matches)} in "
        f"{_notes(len(survey.outside))}) is outside the folders this server may write to ({scopes}; set by "
        f"TEAM_VAULT_WRITE_PREFIXES): {_listing(survey.outside)}. Narrow prefix to a folder it may write to, or "
        "ask whoever runs this server to open those folders."
    )


# -- the preview ------------------------------------------------------------------------------------


def _preview(
    ctx: ToolContext, args: Mapping[str, Any], replacer: Replacer, survey: _Survey, chosen: list[_Match]
) -> ToolOutput:
    matches = sum(match.count for match in chosen)
    searched = _notes(survey.searched)
    if chosen:
        headline = f"Dry run: nothing was written. {_what(args)}: {_matches(matches)} in {_notes(len(chosen))} "
        headline += f"({searched} searched):"
    elif survey.links_only:
        headline = (
            f"Nothing to replace: every match of {_what(args)} in a note this call may write is inside a link "
            f'target, and links="keep" leaves those alone ({searched} searched).'
        )
    else:
        headline = (
            f"Nothing to replace: {_what(args)} has no match in a note this call may write ({searched} searched)."
        )
    diffs = _diffs(ctx, replacer, chosen)
    notes: list[dict[str, Any]] = []
    for number, match in enumerate(chosen[: PREVIEW_NOTES + LISTED_NOTES]):
        note = {"path": match.path, "matches": match.count, "previousHash": match.read}
        if number < len(diffs):
            note["diff"] = diffs[number]  # as the text shows it, under the note's line
        notes.append(note)
    result: dict[str, Any] = {
        "summary": headline,
        "dryRun": True,
        "matches": matches,
        "totalNotes": len(chosen),
        "notes": notes,
        "notesSearched": survey.searched,
        "partial": survey.not_searched > 0,
    }
    notices = _preview_notices(args, survey, chosen)
    if notices:
        result["notices"] = notices
    if chosen:
        result["applyWith"] = _apply_call(args, chosen)
    hits = _link_hits(args, chosen, survey)
    warning = _links_line(args, hits, applied=False)
    if warning:
        result["linkTargets"] = _link_fields(args, hits, warning)
    # the links come right under the headline: a long preview's diffs would push them out of sight
    lines = [headline, *warning, *_preview_lines(ctx, args, replacer, survey, chosen, diffs)]
    return ToolOutput("\n".join(lines), _left_alone_fields(result, survey, chosen))


def _link_hits(args: Mapping[str, Any], written: list[_Match], survey: _Survey) -> list[tuple[str, LinkMatch]]:
    """The matches inside link targets in the notes ``written`` (and, links="keep", in the notes it leaves be)."""
    notes = written + survey.links_only if args.get("links") == "keep" else written
    return [(match.path, hit) for match in notes for hit in match.in_links]


def _links_line(args: Mapping[str, Any], hits: list[tuple[str, LinkMatch]], *, applied: bool) -> list[str]:
    """What the matches inside link targets mean: links a replace breaks, or, links="keep", matches left alone."""
    if not hits:
        return []
    unique = list(dict.fromkeys(f"{hit.link} in {path} (line {hit.line})" for path, hit in hits))
    shown = ", ".join(unique[:LISTED_LINKS])
    if len(unique) > LISTED_LINKS:
        shown += f" and {len(unique) - LISTED_LINKS:,} more"
    count = len(hits)
    if args.get("links") == "keep":
        verb = ("was" if count == 1 else "were") if applied else "will be"
        return [
            f'[{_matches(count)} inside link targets {verb} left alone (links="keep"), so these links keep working: '
            f"{shown}. Their alias and link text is replaced.]"
        ]
    if applied:
        return [
            f"[{count:,} of the matches replaced were inside link targets, so these links are broken now: {shown}; "
            "to rename a note use move_note(updateLinks=true), which updates the links to it.]"
        ]
    return [
        f"[{count:,} of the matches are inside link targets: applying breaks these links: {shown}; to rename a note "
        'use move_note(updateLinks=true), or pass links="keep" to replace everywhere but in link targets.]'
    ]


def _link_fields(args: Mapping[str, Any], hits: list[tuple[str, LinkMatch]], said: list[str]) -> dict[str, Any]:
    """:func:`_links_line` as a structured field: its sentence as the text says it (``said``), and its rows."""
    return {
        "notice": said[0],
        "matches": len(hits),
        "links": args.get("links", "replace"),
        "found": [{"path": path, "line": hit.line, "link": hit.link} for path, hit in hits[:LISTED_LINKS]],
    }


def _diffs(ctx: ToolContext, replacer: Replacer, chosen: list[_Match]) -> list[str]:
    """The compact diff of each of the first PREVIEW_NOTES notes, as a preview shows it; past the call's time
    for it, or too costly (``diff.py``), a note's diff is the line that counts its changed lines."""
    from teamvault_mcp.text.replace import compact_diff

    deadline = ctx.deadline(ANSWER_SECONDS)
    return [
        compact_diff(match.text, _replaced(replacer, match), around=PREVIEW_CONTEXT_CHARS, deadline=deadline)
        for match in chosen[:PREVIEW_NOTES]
    ]


def _replaced(replacer: Replacer, match: _Match) -> str:
    """The note's text with the replacement made, refused past the size a note may have (as the survey was)."""
    return replacer.apply(match.text, max_bytes=result_limit(utf8_size(match.text)), path=match.path)[0]


def _preview_lines(
    ctx: ToolContext,
    args: Mapping[str, Any],
    replacer: Replacer,
    survey: _Survey,
    chosen: list[_Match],
    diffs: list[str] | None = None,
) -> list[str]:
    """Each note to write with its count and compact diff (the first PREVIEW_NOTES), the rest listed, the notes
    left alone (:func:`_preview_notices`), and the call that applies it."""
    diffs = _diffs(ctx, replacer, chosen) if diffs is None else diffs
    lines = []
    for match, diff in zip(chosen, diffs, strict=False):
        lines += [f"{match.path} ({match.count})", diff]
    lines += _preview_notices(args, survey, chosen)
    if chosen:
        lines.append(f"Apply with: {_apply_call(args, chosen)}")
    return lines


def _preview_notices(args: Mapping[str, Any], survey: _Survey, chosen: list[_Match]) -> list[str]:
    """The notes a preview lists without their diff, and the notes it leaves alone."""
    listed = chosen[PREVIEW_NOTES:]
    lines = [f"[Not shown, {_notes(len(listed), 'more ')}: {_listing(listed)}]"] if listed else []
    return lines + _left_alone_lines(args, survey, chosen)


def _apply_call(args: Mapping[str, Any], chosen: list[_Match]) -> str:
    """The call that applies a preview of ``chosen``."""
    return _call(args, dryRun=False, expectedCount=sum(match.count for match in chosen))


def _left_alone_lines(args: Mapping[str, Any], survey: _Survey, chosen: list[_Match]) -> list[str]:
    """The lines about notes this call does not write: past ``limit``, outside the scope, unreadable, unread."""
    lines = []
    beyond = survey.found[len(chosen) :]
    if beyond:
        lines.append(f"[Past limit={args['limit']}, not written by this call: {_listing(beyond)}]")
    if survey.outside:
        lines.append(f"[Outside the folders this server may write to, left alone: {_listing(survey.outside)}]")
    for path, why in survey.left_alone[:LISTED_NOTES]:
        lines.append(f"[Left alone: {path}: {why}]")
    if survey.not_searched:
        lines.append(
            f"[Partial: {_notes(survey.not_searched)} could not be read ({survey.why_partial}); their matches are "
            "not counted, and applying waits until every note is read. Call again: the notes read so far are cached.]"
        )
    return lines


def _left_alone_fields(result: dict[str, Any], survey: _Survey, chosen: list[_Match]) -> dict[str, Any]:
    """``result`` with what :func:`_left_alone_lines` says, as structured fields."""
    beyond = survey.found[len(chosen) :]
    if beyond:
        result["pastLimit"] = {"notes": len(beyond), "matches": sum(match.count for match in beyond)}
    if survey.outside:
        result["outsideScope"] = [{"path": m.path, "matches": m.count} for m in survey.outside[:LISTED_NOTES]]
    if survey.left_alone:
        result["leftAlone"] = [{"path": path, "why": why} for path, why in survey.left_alone[:LISTED_NOTES]]
    if survey.not_searched:
        result["notesNotSearched"] = survey.not_searched
    return result


# -- applying ---------------------------------------------------------------------------------------


def _apply(
    ctx: ToolContext,
    project_id: str,
    args: Mapping[str, Any],
    replacer: Replacer,
    survey: _Survey,
    chosen: list[_Match],
) -> ToolOutput:
    ctx.report.many()
    done: list[dict[str, Any]] = []
    not_reached: list[_Match] = []
    for index, match in enumerate(chosen):
        if ctx.budget is not None and ctx.budget.remaining() < RESERVE_SECONDS:
            not_reached = chosen[index:]
            break
        done.append(_write(ctx, project_id, replacer, match))
        if done[-1].get("outOfTime"):
            not_reached = chosen[index + 1 :]
            break
    applied = [entry for entry in done if entry["status"] == "applied"]
    troubled = [entry for entry in done if entry["status"] in ("conflict", "failed")]
    replaced = sum(entry["matches"] for entry in applied)
    total = sum(match.count for match in chosen)
    summary = f"Replaced {_what(args)} in {len(applied):,} of {_notes(len(chosen))} ({replaced:,} of {_matches(total)})"
    conflicts = sum(entry["status"] == "conflict" for entry in done)
    failed = sum(entry["status"] == "failed" for entry in done)
    troubles = [f"{conflicts:,} conflict{'s' if conflicts != 1 else ''}"] if conflicts else []
    troubles += [f"{failed:,} failed"] if failed else []
    headline = summary + "".join(f"; {trouble}" for trouble in troubles) + "."
    written = {entry["path"] for entry in applied}
    hits = _link_hits(args, [match for match in chosen if match.path in written], survey)
    warning = _links_line(args, hits, applied=True)
    lines = [headline, *warning, *(_note_line(entry) for entry in done)]  # each note's outcome, and its new contentHash
    notices = _left_alone_lines(args, survey, chosen)
    if not_reached:
        notices.append(
            f"[Not reached, the call's time budget ran out: {_listing(not_reached)}. Nothing was written to them; "
            "preview again (dryRun=true) to see what is left.]"
        )
    lines += notices
    result: dict[str, Any] = {
        "summary": headline,
        "dryRun": False,
        "matches": replaced,
        "applied": len(applied),
        "conflicts": conflicts,
        "failed": failed,
        "notes": done,
        "notesSearched": survey.searched,
        "partial": False,
    }
    if notices:
        result["notices"] = notices
    if not_reached:
        result["notReached"] = [match.path for match in not_reached]
    if warning:
        result["linkTargets"] = _link_fields(args, hits, warning)
    _left_alone_fields(result, survey, chosen)
    return ToolOutput("\n".join(lines), result, is_error=not applied and bool(troubled))


def _write(ctx: ToolContext, project_id: str, replacer: Replacer, match: _Match) -> dict[str, Any]:
    """One note rewritten with the replacement, its read hash as expectedHash: what happened to it."""
    new, count = replacer.apply(match.text, max_bytes=result_limit(utf8_size(match.text)), path=match.path)
    entry: dict[str, Any] = {"path": match.path, "matches": count, "previousHash": match.read}
    if new == match.text:  # the replacement is the text it replaces
        entry["status"] = "unchanged"
        return entry
    note = Note(match.path, match.file, match.text.encode("utf-8"))
    written = write_one(ctx, project_id, note, new, expected=match.read, edits="the replacement", done="Replaced in")
    entry.update(written)
    return entry


def _note_line(entry: dict[str, Any]) -> str:
    """What happened to one note, as the applied answer's text says it: ``Applied: a.md (2); its contentHash is
    now 9f2c41d07a3b.``"""
    said = f"{entry['status'].capitalize()}: {entry['path']} ({entry['matches']})"
    if entry["status"] == "applied":
        said += f"; its contentHash is now {short_hash(entry['contentHash'])}."
        if entry.get("verified"):
            said += f" {VERIFIED}"
        if entry.get("unchecked"):
            said += f" Not checked for a colleague's write at the same moment: {entry['unchecked']}."
        return said
    if entry["status"] == "unchanged":
        return f"{said}: the replacement is the text it replaces; nothing was written."
    return f"{said}: {entry['error']}"


# -- words ------------------------------------------------------------------------------------------


def _what(args: Mapping[str, Any]) -> str:
    how = [word for word, on in (("regex", args.get("regex")), ("any case", args.get("caseSensitive") is False)) if on]
    shown = f"{_json(args['find'])} → {_json(args['replace'])}"
    return f"{shown} ({', '.join(how)})" if how else shown


def _listing(matches: list[_Match]) -> str:
    """``a.md (2), b.md (1)``, at most LISTED_NOTES of them, then how many more."""
    shown = ", ".join(f"{match.path} ({match.count})" for match in matches[:LISTED_NOTES])
    rest = matches[LISTED_NOTES:]
    if rest:
        shown += f" and {_notes(len(rest), 'more ')} ({_matches(sum(match.count for match in rest))})"
    return shown


def _matches(count: int) -> str:
    return f"{count:,} match{'es' if count != 1 else ''}"


def _notes(count: int, more: str = "") -> str:
    return f"{count:,} {more}note{'s' if count != 1 else ''}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _call(args: Mapping[str, Any], **changes: Any) -> str:
    """The replace_in_notes call with these arguments and ``changes``: what applies a preview."""
    values = {**args, **changes}
    order = (
        "find",
        "replace",
        "prefix",
        "regex",
        "caseSensitive",
        "links",
        "limit",
        "projectId",
        "dryRun",
        "expectedCount",
    )
    shown = ", ".join(f"{name}={_json(values[name])}" for name in order if name in values)
    return f"replace_in_notes({shown})"


# -- the tool ----------------------------------------------------------------------------------------------

#: One note of the answer: a preview's (its matches, the hash they were counted on, and for the first
#: PREVIEW_NOTES the compact diff the text shows under it), or an applied one's (its status, its new contentHash,
#: or why not).
NOTE_RESULT = object_schema(
    {
        "path": STRING,
        "matches": {"type": "integer"},
        "previousHash": STRING,
        "diff": STRING,
        "status": {"type": "string", "enum": ["applied", "unchanged", "conflict", "failed"]},
        "contentHash": NULLABLE_STRING,
        "error": STRING,
        "uncertain": {"type": "boolean"},
        "outOfTime": {"type": "boolean"},
        "verified": {"type": "boolean"},
        "rebasedOnto": rows(STRING),
        "unchecked": STRING,
    },
    ["path", "matches"],
)

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="replace_in_notes",
        title="Replace in notes",
        description=(
            "Find and replace across notes. dryRun (default true): each note's matches, a short diff, the call that "
            "applies it; expectedCount refuses if the count changed. regex=true: find in search's safe subset, $1 "
            "groups."
        ),
        params=(  # what the description says is not said again: the tool list is carried on every turn
            Param("find", "", kind="content"),
            Param("replace", "", kind="content"),
            Param("prefix", "Path prefix.", kind="prefix", required=False),
            Param("regex", "", kind="flag", required=False),
            Param("caseSensitive", "Default true.", kind="flag", required=False),
            Param(
                "links",
                "Matches in link targets: replace (default; the answer lists the links broken) or keep them.",
                kind="choice",
                required=False,
                choices=LINK_MODES,
            ),
            Param("dryRun", "", kind="flag", required=False),
            Param("expectedCount", "The preview's matches.", kind="count", required=False),
            Param("limit", "Most notes written.", kind="count", required=False),
        ),
        handler=replace_in_notes,
        writes=True,
        destructive=True,  # replaces text in many notes (the server keeps the old content as versions)
        idempotent=False,  # a replacement that contains what it replaces changes the notes again
        output_schema=answer_schema(
            {
                "dryRun": {"type": "boolean"},
                "matches": {"type": "integer"},
                "notes": rows(NOTE_RESULT),
                "notesSearched": {"type": "integer"},
                "partial": {"type": "boolean"},
                "applyWith": STRING,
                "totalNotes": {"type": "integer"},
                "applied": {"type": "integer"},
                "conflicts": {"type": "integer"},
                "failed": {"type": "integer"},
                "notReached": rows(STRING),
                "pastLimit": object_schema(
                    {"notes": {"type": "integer"}, "matches": {"type": "integer"}}, ["notes", "matches"]
                ),
                "outsideScope": rows(object_schema({"path": STRING, "matches": {"type": "integer"}}, ["path"])),
                "leftAlone": rows(object_schema({"path": STRING, "why": STRING}, ["path", "why"])),
                "notesNotSearched": {"type": "integer"},
                "linkTargets": object_schema(
                    {
                        "notice": STRING,
                        "matches": {"type": "integer"},
                        "links": {"type": "string", "enum": list(LINK_MODES)},
                        "found": rows(
                            object_schema(
                                {"path": STRING, "line": {"type": "integer"}, "link": STRING}, ["path", "line", "link"]
                            )
                        ),
                    },
                    ["notice", "matches", "links", "found"],
                ),
            },
            ["summary", "dryRun", "matches", "notes", "notesSearched", "partial"],
        ),
    ),
)
