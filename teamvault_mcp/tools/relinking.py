"""Links kept pointing at a moved note: what ``move_note``'s ``updateLinks`` and ``dryRun`` do.

:func:`plan_relinks` finds, from one listing and the link index (``indexing.py``), every
note with a link that resolved to the moved note before the move, and makes each note's
new text with ``text/relink.py`` (only those links change: alias, heading, embed and style
kept). The moved note itself is in the plan too when its new folder would turn one of its
own relative links elsewhere. :func:`update_links` writes each changed note on its own,
through ``writing/content.py`` with the hash its new text was computed on as the expected
hash: a colleague's edit in between is a conflict for that note alone (their text is kept,
the note is reported), and the others are still written. A note outside the write scopes
(``TEAM_VAULT_WRITE_PREFIXES``) is reported and not written. :func:`dry_run` lists the
lines that would change and writes nothing.

The plan is made from the vault as it was before the move, also after the move: the
moved file is put back at its old path in the listing, so one call after a successful
move (or one before, for a dry run) is all ``move_note`` needs.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import (
    ChangedMeanwhileError,
    ConflictError,
    PreconditionFailedError,
    TeamVaultError,
    ToolInputError,
    short_hash,
)
from teamvault_mcp.text.frontmatter import FrontMatterError
from teamvault_mcp.text.relink import LinkChange, rewrite_note_links
from teamvault_mcp.text.resolution import path_key
from teamvault_mcp.tools.answer import Answer
from teamvault_mcp.tools.context import ToolContext, ToolOutput, sha256_hex
from teamvault_mcp.tools.indexing import index_notes, is_markdown, link_graph, list_vault, texts_of
from teamvault_mcp.tools.spec import STRING, object_schema
from teamvault_mcp.tools.writing.content import write_content

if TYPE_CHECKING:
    from teamvault_mcp.text.noteindex import LinkGraph
    from teamvault_mcp.vault.records import VaultFile

#: Notes an answer names one by one; distinct link rewrites a dry run shows.
MAX_SHOWN = 100
MAX_REWRITES = 12
#: A link shown in an answer is cut to about this many characters.
LINK_CHARS = 80

#: The ``links`` field of move_note's result: the notes whose links were (or would be) rewritten, and those not;
#: ``summary`` is the text's line on them (``Links: 14 links in 3 notes updated to …``). A dry run gives each
#: note's ``lines`` and the distinct ``rewrites`` its text shows (the most frequent first, as many as it shows).
LINKS_SCHEMA = object_schema(
    {
        "summary": STRING,
        "updated": {
            "type": "array",
            "items": object_schema(
                {
                    "path": STRING,
                    "links": {"type": "integer"},
                    "contentHash": STRING,
                    "lines": {"type": "array", "items": {"type": "integer"}},
                },
                ["path"],
            ),
        },
        "notUpdated": {
            "type": "array",
            "items": object_schema({"path": STRING, "why": STRING, "retry": STRING}, ["path", "why", "retry"]),
        },
        "rewrites": {
            "type": "array",
            "items": object_schema(
                {"link": STRING, "newLink": STRING, "times": {"type": "integer"}}, ["link", "newLink", "times"]
            ),
        },
        "problem": STRING,
    },
    ["summary", "updated", "notUpdated"],
)


@dataclass(frozen=True)
class NoteRelink:
    """One note whose links change: where it is (after the move), its file, the text read and the new one."""

    path: str
    file: VaultFile
    before: bytes
    after: str
    changes: tuple[LinkChange, ...]


@dataclass
class RelinkPlan:
    """What keeping the links right takes: the notes to rewrite, the notes that cannot be, and what to tell."""

    notes: list[NoteRelink] = field(default_factory=list)
    #: (path, why, how to finish it) of each linking note that will not be written.
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    #: (path, line, link) of links that resolved elsewhere (or nowhere) and will resolve to the moved note.
    captured: list[tuple[str, int, str]] = field(default_factory=list)
    #: Why some notes' links are unknown (not read in the call's budget), if so.
    partial: str | None = None


def plan_relinks(ctx: ToolContext, project_id: str, old_path: str, new_path: str, *, moved: bool) -> RelinkPlan:
    """The rewrites that keep every link to ``old_path`` resolving once the note is at ``new_path``.

    ``moved``: the move is done (the listing has the note at ``new_path``); else it is yet to be.
    """
    listing = list_vault(ctx, project_id)
    if moved:  # the vault as it was: the moved file back at its old path
        after = {file.path: file for file in listing}
        before_listing = [file._replace(path=old_path) if file.path == new_path else file for file in listing]
    else:
        before_listing = listing
        after = {(new_path if file.path == old_path else file.path): file for file in listing}
    indexed = index_notes(ctx, project_id, before_listing, ("links",))
    graph = link_graph(ctx, project_id, indexed)
    plan = RelinkPlan()
    if indexed.not_read:
        plan.partial = (
            f"{indexed.not_read:,} of {len(indexed.notes):,} notes could not be read ({indexed.why_partial}), so "
            "their links were not checked: broken_links() finds any of them left pointing at the old path."
        )
    sources = sorted({backlink.source for backlink in graph.incoming(old_path)})
    by_path = {file.path: file for file in before_listing}
    moved_file = by_path.get(old_path)
    if moved_file is not None and is_markdown(moved_file) and old_path not in sources:
        sources.append(old_path)  # its own relative links may point elsewhere from its new folder
    plan.captured = _captured(graph, set(sources), old_path, new_path)
    texts = texts_of(ctx, project_id, [by_path[source] for source in sources if source in by_path])
    prefixes = ctx.write_prefixes
    for source in sources:
        text = texts.get(source)
        path = new_path if source == old_path else source
        if text is None:
            why = "it could not be read (a download failed, or the call's time ran out)"
            plan.refused.append((path, why, "broken_links() finds its links afterwards"))
            continue
        try:
            relinked = rewrite_note_links(text, source, old_path, new_path, graph.vault)
        except (ToolInputError, FrontMatterError) as error:
            plan.refused.append((path, str(error), "change its links with edit_note"))
            continue
        plan.captured += [(path, link.line, link.raw) for link in relinked.captured]
        if not relinked.changes:
            continue
        before = text.encode("utf-8")
        file = after.get(path, by_path[source])
        if file.content_hash is not None and sha256_hex(before) != file.content_hash:
            plan.refused.append((path, "its bytes are not plain UTF-8 text", _edit_hint(path, relinked.changes)))
        elif prefixes is not None and not path.startswith(prefixes):
            plan.refused.append((path, "it is outside the write scopes", _edit_hint(path, relinked.changes)))
        else:
            plan.notes.append(NoteRelink(path, file, before, relinked.text, relinked.changes))
    return plan


def _captured(graph: LinkGraph, skipped: set[str], old_path: str, new_path: str) -> list[tuple[str, int, str]]:
    """The links of the notes not ``skipped`` that resolve elsewhere (or nowhere) and will resolve to ``new_path``.

    Only a link whose last part names the note (``lovelace``, ``../people/Lovelace.md``) can; only those are
    resolved again.
    """
    name = _stem(new_path)
    after = graph.vault.moved(old_path, new_path)
    found = []
    for source, link, target in graph.named((name, f"{name}.md")):
        if source in skipped or target in (old_path, new_path) or _stem(link.target) != name:
            continue
        if after.resolve(link.target, source, markdown=link.markdown) == new_path:
            found.append((source, link.line, link.raw))
    return found


def _stem(path: str) -> str:
    last = path_key(path.rpartition("/")[2])
    return last.removesuffix(".md")


def dry_run(
    ctx: ToolContext, project_id: str, path: str, file: VaultFile, new_path: str, update_links: bool
) -> ToolOutput:
    """What ``move_note`` would do with the note ``file`` at ``path``: the move, and each link that would change;
    nothing is written."""
    target = ctx.client.find_file(project_id, new_path)
    if target is not None:
        raise TeamVaultError(
            f"Dry run: a note already exists at {new_path}, so moving {path} there would fail. Nothing was changed; "
            "choose another newPath."
        )
    ctx.report.noop = True
    answer = Answer(id=file.id, path=new_path, previousPath=path, dryRun=True)
    answer.summary(f"Dry run: nothing was written. {path} would move to {new_path}.")
    links: dict[str, Any] = {"summary": "", "updated": [], "notUpdated": []}
    answer.data["links"] = links
    if not update_links:
        links["summary"] = "updateLinks=false: no link would be changed."
        answer.line(links["summary"])
        return answer.output()
    plan = plan_relinks(ctx, project_id, path, new_path, moved=False)
    changes = [change for note in plan.notes for change in note.changes]
    links["summary"] = f"{_count(len(changes), 'link')} in {_count(len(plan.notes), 'note')} would be rewritten."
    answer.line(links["summary"])
    for note in plan.notes:  # every note in the data, as before; the first MAX_SHOWN in the text
        lines = sorted({change.line for change in note.changes})
        links["updated"].append({"path": note.path, "links": len(note.changes), "lines": lines})
    if changes:  # where (one line a note), then what: each distinct rewrite once, the most frequent first
        answer.label("Where (note:lines):")
        for entry in links["updated"][:MAX_SHOWN]:
            answer.line(f"{entry['path']}:{','.join(str(line) for line in entry['lines'])}")
        if len(plan.notes) > MAX_SHOWN:
            answer.notice(_cut_notice(ctx, len(plan.notes), path))
        rewrites = Counter((_old(change), change.new) for change in changes)
        answer.label("What (link → new link):")
        links["rewrites"] = []
        for (old, new), times in rewrites.most_common(MAX_REWRITES):
            answer.line(f"{_short(old)} → {_short(new)}{f'  ×{times}' if times > 1 else ''}")
            links["rewrites"].append({"link": old, "newLink": new, "times": times})
        if len(rewrites) > MAX_REWRITES:
            answer.notice(f"[and {_count(len(rewrites) - MAX_REWRITES, 'more rewrite')}; the lines above show where]")
    _told(answer, plan, would=True)
    answer.notice("To do it: the same move_note call without dryRun.")
    return answer.output()


def update_links(ctx: ToolContext, project_id: str, old_path: str, new_path: str, moved: ToolOutput) -> ToolOutput:
    """``moved`` (move_note's result) with every link to the moved note kept right, note by note, and what was not."""
    answer = Answer(**(moved.structured or {}))
    answer.line(moved.text)
    try:
        plan = plan_relinks(ctx, project_id, old_path, new_path, moved=True)
    except TeamVaultError as error:  # the move is done: say so, and how to find the links left behind
        problem = (
            f"The move is done, but the links to it were not updated: {_short(str(error), 240)} broken_links() "
            f"lists the links left pointing at {old_path}; fix them with edit_note."
        )
        summary = f"Links: NOT updated. {problem}"
        answer.data["links"] = {"summary": summary, "updated": [], "notUpdated": [], "problem": problem}
        answer.line(summary)
        return answer.output()
    updated: list[dict[str, Any]] = []
    refused = list(plan.refused)
    for note in plan.notes:
        ctx.client.new_write()  # a write of other bytes: a key of its own
        try:
            written = write_content(
                ctx,
                project_id,
                note.path,
                note.file,
                note.after.encode("utf-8"),
                mode="strict",
                read=note.before,
                expected=note.file.content_hash or sha256_hex(note.before),
            )
        except (ChangedMeanwhileError, ConflictError, PreconditionFailedError):
            why = "someone changed it while the links were updated; their text is kept and nothing was written"
            refused.append((note.path, why, _edit_hint(note.path, note.changes, read_first=True)))
            continue
        except TeamVaultError as error:
            refused.append((note.path, _short(str(error), 240), _edit_hint(note.path, note.changes, read_first=True)))
            continue
        ctx.remember(project_id, written.data)
        updated.append({"path": note.path, "links": len(note.changes), "contentHash": sha256_hex(written.data)})
    count = sum(entry["links"] for entry in updated)
    if updated or refused:
        headline = f"Links: {_count(count, 'link')} in {_count(len(updated), 'note')} updated to {new_path}"
        headline += ":" if updated else "."
    else:
        headline = "Links: none to change (no link resolved to the note, or each still does)."
    links: dict[str, Any] = {"summary": headline, "updated": updated, "notUpdated": []}
    answer.data["links"] = links
    answer.line(headline)
    # Each with its new hash, which the next edit of it takes (a text-only host sees nothing else).
    for entry in updated[:MAX_SHOWN]:
        answer.line(f"{entry['path']} ({entry['links']}); its contentHash is now {short_hash(entry['contentHash'])}")
    if len(updated) > MAX_SHOWN:
        answer.notice(_cut_notice(ctx, len(updated), new_path))
    _told(answer, RelinkPlan(refused=refused, captured=plan.captured, partial=plan.partial), would=False)
    return answer.output()


def _cut_notice(ctx: ToolContext, notes: int, path: str) -> str:
    """The line that says only the first MAX_SHOWN notes are named, and where to see them all."""
    where = f'; note_links(path={json.dumps(path, ensure_ascii=False)}, direction="in") lists the notes linking to it'
    return f"[Cut: {MAX_SHOWN} of {notes:,} notes shown{where if ctx.tools.has('note_links') else ''}.]"


def _told(answer: Answer, plan: RelinkPlan, *, would: bool) -> None:
    """The lines on what is not (or would not be) written (rows of ``links.notUpdated``), on links the move
    captures, and a partial read (notices)."""
    links = answer.data["links"]
    if plan.refused:
        verb = "would not be updated" if would else "NOT updated; their links still name the old path"
        answer.label(f"{_count(len(plan.refused), 'note')} {verb}:")
        for path, why, retry in plan.refused[:MAX_SHOWN]:
            answer.line(f"{path}  ({why}) → {retry}")
        links["notUpdated"] += [{"path": path, "why": why, "retry": retry} for path, why, retry in plan.refused]
        if len(plan.refused) > MAX_SHOWN:
            answer.notice(f"[Cut: {MAX_SHOWN} of {len(plan.refused):,} notes not updated shown.]")
    if plan.captured:
        path, line, raw = plan.captured[0]
        answer.notice(
            f"[{_count(len(plan.captured), 'link')} that pointed elsewhere will resolve to the moved note, e.g. "
            f"{path}:{line} {_short(raw)}; left as written.]"
        )
    if plan.partial:
        answer.notice(f"[Partial: {plan.partial}]")


def _edit_hint(path: str, changes: tuple[LinkChange, ...], *, read_first: bool = False) -> str:
    """How to finish a note by hand: edit_note with each link's old and new text."""
    pairs = dict.fromkeys((_old(change), change.new) for change in changes)
    shown = ", ".join(f"{_short(old)} → {_short(new)}" for old, new in list(pairs)[:3])
    more = f" and {len(pairs) - 3} more" if len(pairs) > 3 else ""
    first = "read_note, then " if read_first else ""
    return f"{first}edit_note(path={path!r}, replaceAll) with {shown}{more}"


def _old(change: LinkChange) -> str:
    """The link as written (a front matter link in its quotes, as :attr:`LinkChange.new` is)."""
    link = change.link
    return f"{link.quote}{link.raw}{link.quote}" if link.in_front_matter else link.raw


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _short(text: str, limit: int = LINK_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
