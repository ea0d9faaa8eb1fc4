"""The vault's structure as a team knows it: note_links, broken_links, list_tags, query_notes, list_tasks.

All read the project's Markdown notes through ``indexing.py`` (one listing, then only what
changed since: a note is parsed once per content), and answer in compact text, one line per
item in the ``path:line  text`` style, counted, capped, and ending with the call that reads
on. The models are ``text/``: links and their resolution ``links.py``, tags ``tags.py``,
tasks ``tasks.py``, the ``where`` and ``sort`` of a query ``properties.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import NoteNotFoundError
from teamvault_mcp.text.links import MAX_LINKS_PER_NOTE
from teamvault_mcp.text.paths import folder_prefix, stored_path_of
from teamvault_mcp.text.properties import (
    MISSING,
    compile_sort,
    compile_where,
    field_value,
    sort_rows,
    unknown_fields,
)
from teamvault_mcp.text.prose import unindexed_notice
from teamvault_mcp.text.resolution import path_key
from teamvault_mcp.text.tags import MAX_TAGS_PER_NOTE, counted_tags, tag_key
from teamvault_mcp.text.tally import TagShare, spelled
from teamvault_mcp.text.tasks import STATUS_CHOICES
from teamvault_mcp.tools.answer import Answer
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.indexing import (
    collector_paused,
    index_notes,
    link_graph,
    links_cut,
    list_vault,
    listed_files,
    listed_paths,
    note_index,
    texts_of,
    vault_graph,
)
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.spec import NULLABLE_STRING, STRING, Tool, answer_schema, object_schema, rows
from teamvault_mcp.tools.tallies import Tallied, queried_notes, tallied_tags, tasks_counted, tasks_named

if TYPE_CHECKING:
    from teamvault_mcp.text.noteindex import LinkFact
    from teamvault_mcp.vault.records import VaultFile

#: Links shown per direction by note_links; tags or notes by list_tags.
MAX_SHOWN = 200
#: Time a broken_links call spends working out "closest" hints it has not worked out before.
CLOSEST_SECONDS = 1.0
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
#: A line shown with a link, a task or a value is cut to about this many characters.
LINE_CHARS = 160
VALUE_CHARS = 80
DIRECTIONS = ("in", "out", "both")


# -- note_links --------------------------------------------------------------------------------------


def note_links(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    direction = args.get("direction", "both")
    listing = list_vault(ctx, project_id)
    path = _file_named(stored_path_of(args["path"]), listing, ctx, project_id)
    answer = Answer(path=path)
    counts = []
    said_out: list[tuple[str, dict[str, Any]]] = []
    said_in: list[tuple[str, dict[str, Any]]] = []
    notices: list[str] = []
    if direction in ("out", "both"):
        outgoing, partial = _outgoing(ctx, project_id, listing, path)
        size = listed_files(ctx, listing)[path].size or 0
        cut = unindexed_notice([(path, size, len(outgoing))], "links", MAX_LINKS_PER_NOTE)
        notices += [cut] if cut else []
        counts.append(f"{_count(len(outgoing), 'link')} out")
        answer.data.update(out=len(outgoing), linksOut=[])
        vault = note_index(ctx).vault_paths(project_id, listed_paths(ctx, listing))
        for link, target in outgoing[:MAX_SHOWN]:
            where = "this note" if target == path else (target or "unresolved")
            others = vault.alternatives(link.target, path, markdown=link.markdown)
            record = _link_out(link, target)
            if others:
                record["ambiguous"] = others
            said_out.append((f"{link.line}  {_short(link.raw)} → {where}{_also(others)}", record))
        notices += [partial] if partial else []
    if direction in ("in", "both"):
        indexed, graph = vault_graph(ctx, project_id, listing)
        incoming = graph.incoming(path)
        # One line of the answer per linking line: three links to the note on one line are one place to look.
        places = list(dict.fromkeys((backlink.source, backlink.link.line) for backlink in incoming))
        sources = len({source for source, _ in places})
        counts.append(f"{len(incoming):,} in (on {_count(len(places), 'line')} of {_count(sources, 'note')})")
        answer.data.update({"in": len(incoming), "linksIn": [], "partial": indexed.not_read > 0})
        if incoming:
            first = {(b.source, b.link.line): b.link for b in reversed(incoming)}
            shown = places[:MAX_SHOWN]
            files = listed_files(ctx, listing)
            texts = texts_of(ctx, project_id, [files[source] for source in dict.fromkeys(s for s, _ in shown)])
            lines_of = {source: text.splitlines() for source, text in texts.items()}  # once a note, not a line
            for source, line_number in shown:
                link, lines = first[(source, line_number)], lines_of.get(source)
                line = _line_around(lines, link) if lines is not None else _short(link.raw)
                record = {"path": source, "line": line_number, "text": line, "link": _short(link.raw)}
                said_in.append((f"{source}:{line_number}  {line}", record))
        notice = indexed.partial_notice("links from them")
        notices += [notice] if notice else []
        cut = links_cut(ctx, project_id, indexed, graph)
        notices += [cut] if cut and cut not in notices else []
    for notice in notices:
        answer.notice(notice)
    answer.summary(f"{path}: {', '.join(counts)}.")
    if said_out:
        answer.label("Out (line  link → where it resolves):")
        for line, record in said_out:
            answer.row("linksOut", line, record)
        _cut(answer, answer.data["out"], "outgoing links")
    if said_in:
        answer.label("In (note:line  the line):")
        for line, record in said_in:
            answer.row("linksIn", line, record)
        _cut(answer, len(places), "linking lines")
    return answer.output()


STRINGS = {"type": "array", "items": STRING}


def _also(others: list[str] | tuple[str, ...]) -> str:
    """What a line adds for an ambiguous link: the other files of its name (a few, and how many more)."""
    if not others:
        return ""
    shown = ", ".join(others[:5]) + (f" and {len(others) - 5:,} more" if len(others) > 5 else "")
    return f" (ambiguous: also {shown})"


def _link_out(link: LinkFact, target: str | None) -> dict[str, Any]:
    """A link of the note as data: its line, the link as written (cut as the text cuts it), where it resolves."""
    return {"line": link.line, "link": _short(link.raw), "target": target}


def _outgoing(
    ctx: ToolContext, project_id: str, listing: list[VaultFile], path: str
) -> tuple[list[tuple[LinkFact, str | None]], str | None]:
    """The links of the note at ``path`` with where each resolves (none for an attachment); a partial notice."""
    indexed = index_notes(ctx, project_id, listing, ("links",), paths=(path,))
    facts = indexed.facts.get(path)
    if facts is None or facts.links is None:
        return [], indexed.partial_notice()
    vault = note_index(ctx).vault_paths(project_id, listed_paths(ctx, listing))
    return [(link, vault.resolve(link.target, path, markdown=link.markdown)) for link in facts.links], None


def _file_named(wanted: str, listing: list[VaultFile], ctx: ToolContext, project_id: str) -> str:
    """The live file ``wanted`` names: exactly, with ``.md`` added, or ignoring case when that is one file."""
    paths = listed_paths(ctx, listing)
    for candidate in (wanted, wanted + ".md"):
        if candidate in paths:
            return candidate
    for candidate in (wanted, wanted + ".md"):
        same = [path for path in paths if path_key(path) == path_key(candidate)]
        if len(same) == 1:
            return same[0]
    missing = NoteNotFoundError(wanted)
    closest = note_index(ctx).vault_paths(project_id, paths).closest(wanted)
    missing.extend(f"Did you mean {closest}?" if closest else "find_notes(query) finds a note by its name.")
    raise missing


# -- broken_links ------------------------------------------------------------------------------------


def broken_links(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    prefix = folder_prefix(args.get("prefix"))
    limit = args.get("limit", DEFAULT_LIMIT)
    listing = list_vault(ctx, project_id)
    if prefix is None:
        indexed, graph = vault_graph(ctx, project_id, listing)
    else:  # a folder's graph: not kept, so that it does not displace the whole vault's
        indexed = index_notes(ctx, project_id, listing, ("links",), prefix=prefix)
        graph = link_graph(ctx, project_id, indexed, keep=False)
    broken = graph.broken()
    notes = len({item.source for item in broken})
    answer = Answer(broken=len(broken), notes=notes, links=[], partial=indexed.not_read > 0)
    notice = indexed.partial_notice("broken links in them")
    if notice:
        answer.notice(notice)
    cut = links_cut(ctx, project_id, indexed, graph)
    if cut:
        answer.notice(cut)
    answer.summary(
        f"{_count(len(broken), 'broken link')} in {_count(notes, 'note')} (of {_count(len(indexed.notes), 'note')}"
        f"{_under(prefix)}){':' if broken else '.'}"
    )
    started = ctx.budget.remaining() if ctx.budget is not None else 0.0
    unhinted = 0
    for item in broken[:limit]:
        # Each new name is a walk of every file's name (0.2 s at 100,000 files): hints past a second's worth of
        # them come only from those worked out before (kept with the vault's paths), and the answer comes in time.
        spent = started - ctx.budget.remaining() if ctx.budget is not None else 0.0
        known_only = spent > CLOSEST_SECONDS
        closest = graph.vault.closest(item.link.target, known_only=known_only) if item.link.target else None
        unhinted += known_only and bool(item.link.target) and not graph.vault.closest_known(item.link.target)
        hint = f"  → closest: {closest}" if closest else ""
        record = {"path": item.source, "line": item.link.line, "link": _short(item.link.raw), "closest": closest}
        answer.row("links", f"{item.source}:{item.link.line}  {_short(item.link.raw)}{hint}", record)
    if unhinted:
        answer.notice(
            f"[{_count(unhinted, 'link')} shown without a closest note: not worked out in this call's time. "
            "Calling again adds them.]"
        )
    if len(broken) > limit:
        answer.notice(
            f"[Cut: {limit:,} of {len(broken):,} shown. Narrow with prefix, or raise limit (at most {MAX_LIMIT:,}).]"
        )
    if broken:
        fix = " Fix it with edit_note, or make the note it names." if ctx.tools.has("edit_note") else ""
        answer.notice(f"A link resolves to no file.{fix}")
    ambiguous = graph.ambiguous()
    if ambiguous:
        answer.data["ambiguous"] = []
        answer.label(
            f"{_count(len(ambiguous), 'ambiguous link')}: each names a file several share; it resolves to the "
            "first (Obsidian's pick), the others are listed:"
        )
        for one in ambiguous[:limit]:
            record = {
                "path": one.source,
                "line": one.link.line,
                "link": _short(one.link.raw),
                "target": one.target,
                "others": list(one.others),
            }
            line = f"{one.source}:{one.link.line}  {_short(one.link.raw)} → {one.target}{_also(one.others)}"
            answer.row("ambiguous", line, record)
        if len(ambiguous) > limit:
            answer.notice(f"[Cut: {limit:,} of {len(ambiguous):,} ambiguous links shown.]")
        other = ambiguous[0].others[0]
        other = other[: -len(".md")] if other.lower().endswith(".md") else other
        answer.notice(f"To pick one file, write its path in the link: [[{other}]].")
    return answer.output()


# -- list_tags ---------------------------------------------------------------------------------------


def list_tags(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    prefix = folder_prefix(args.get("prefix"))
    tallied = tallied_tags(ctx, project_id, prefix)
    answer = Answer(partial=tallied.not_read > 0)
    notice = tallied.partial_notice("tags of them")
    if notice:
        answer.notice(notice)
    cut = tallied.unindexed_notice("tags", MAX_TAGS_PER_NOTE)
    if cut:
        answer.notice(cut)
    if "tag" in args:
        _notes_with_tag(answer, args["tag"], tallied, prefix)
    else:
        pairs = note_index(ctx).tallies(project_id).tags.pairs() if prefix is None else None
        counts = counted_tags(pairs if pairs is not None else spelled(tallied.shares.values()))
        tagged = sum(1 for share in tallied.shares.values() if share.names)
        answer.data.update(tags=[], total=len(counts))
        answer.summary(
            f"{_count(len(counts), 'tag')} in {_count(tagged, 'note')} (of {_count(len(tallied.shares), 'note')}"
            f"{_under(prefix)}; a nested tag counts at each level){':' if counts else '.'}"
        )
        for count in counts[:MAX_SHOWN]:
            answer.row("tags", f"#{count.name}  {count.notes:,}", {"tag": count.name, "notes": count.notes})
        if len(counts) > MAX_SHOWN:
            answer.notice(f"[Cut: the {MAX_SHOWN} most used of {len(counts):,} tags shown. Narrow with prefix.]")
        if counts:
            answer.notice('The notes with one: list_tags(tag="…").')
    rejected = tallied.sorted(lambda share: bool(share.rejected))
    if rejected:
        first_path, first = rejected[0]
        answer.notice(
            f"[Not tags: {_count(len(rejected), 'note')} list front matter tags that are no valid tag, e.g. "
            f"{json.dumps(first.rejected[0], ensure_ascii=False)} in {first_path} (a tag has no spaces and is not all "
            "digits).]"
        )
    return answer.output()


def _notes_with_tag(answer: Answer, tag: str, tallied: Tallied[TagShare], prefix: str | None) -> None:
    wanted = tag_key(tag.strip().removeprefix("#"))
    found = tallied.sorted(lambda share: share.carries(wanted))
    answer.data.update(tag=wanted, notes=[], total=len(found))
    answer.summary(
        f"#{wanted}: {_count(len(found), 'note')}{_under(prefix)} {'carries' if len(found) == 1 else 'carry'} it "
        "or a tag nested under it"
        f"{':' if found else '.'}"
    )
    for path, share in found[:MAX_SHOWN]:
        names = share.names_under(wanted)
        answer.row("notes", f"{path}  {' '.join('#' + name for name in names)}", {"path": path, "tags": names})
    if len(found) > MAX_SHOWN:
        answer.notice(f"[Cut: {MAX_SHOWN} of {len(found):,} notes shown, by path. Narrow with prefix.]")


# -- query_notes -------------------------------------------------------------------------------------


def query_notes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    where = compile_where(args["where"])  # checked whole before any request
    order = compile_sort(args.get("sort"))
    limit = args.get("limit", DEFAULT_LIMIT)
    prefix = folder_prefix(args.get("prefix"))
    named = [condition.field for condition in where.conditions] + [key.field for key in order]
    shown_fields = list(args["fields"]) if "fields" in args else list(dict.fromkeys(named))
    shown_fields = [name for name in shown_fields if name != "path"]
    needs_tags = any(name.casefold() == "tags" for name in [*named, *shown_fields])
    queried = queried_notes(ctx, project_id, prefix, with_tags=needs_tags)
    notes, names, read = queried.notes, queried.names, len(queried.notes)
    matches = where.matcher(names)
    ranked = sort_rows([fields for fields in notes if matches(fields)], order)
    query = json.dumps(args["where"], ensure_ascii=False)
    sorted_by = f", sorted by {', '.join(('-' if k.descending else '') + k.field for k in order)}" if order else ""
    answer = Answer(matches=len(ranked), notes=[], partial=queried.partial is not None)
    if queried.partial:
        answer.notice(queried.partial)
    answer.summary(
        f"{_count(len(ranked), 'note')} of {read:,}{_under(prefix)} match {_short(query)}"
        f"{sorted_by}{':' if ranked else '.'}"
    )
    if read:
        for sentence in unknown_fields(where, names, read, _under(prefix)):
            answer.notice(sentence)
    for row in ranked[:limit]:
        found = {name: field_value(row, name) for name in shown_fields}
        values = " · ".join(f"{name}: {_value(value)}" for name, value in found.items())
        record = {"path": row["path"], "fields": {name: _data(value) for name, value in found.items()}}
        answer.row("notes", f"{row['path']}  {values}" if values else str(row["path"]), record)
    if len(ranked) > limit:
        answer.notice(
            f"[Cut: {limit:,} of {len(ranked):,} shown. Narrow where or prefix, or raise limit "
            f"(at most {MAX_LIMIT:,}).]"
        )
    unreadable = queried.unreadable
    if unreadable:
        verb = "has" if len(unreadable) == 1 else "have"
        answer.notice(
            f"[{_count(len(unreadable), 'note')} {verb} front matter that cannot be read (e.g. {unreadable[0]}): only "
            "path, tags and updatedAt of them can match. read_frontmatter(path) says what is wrong.]"
        )
    if ranked:
        answer.notice("A note's whole front matter: read_frontmatter(path).")
    return answer.output()


def _data(value: Any) -> Any:
    """A field's value as data: as the front matter holds it, null when the note has no such field."""
    return None if value is MISSING else value


def _value(value: Any) -> str:
    if value is MISSING or value is None:
        return "–"
    if isinstance(value, str):
        text = value
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        text = "[" + ", ".join(value) + "]"
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


# -- list_tasks --------------------------------------------------------------------------------------


def list_tasks(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    status = args.get("status", "open")
    limit = args.get("limit", DEFAULT_LIMIT)
    prefix = folder_prefix(args.get("prefix"))
    if "assignee" in args or "owner" in args:
        found = tasks_named(ctx, project_id, args, status, prefix)
    else:
        found = tasks_counted(ctx, project_id, status, prefix, limit)
    filters = "; ".join(f"{name}: {args[name]}" for name in ("assignee", "owner") if name in args)
    what = {"open": "open task", "done": "done task", "all": "task"}[status]
    answer = Answer(tasks=[], total=found.total, notes=found.notes, partial=found.partial is not None)
    for notice in (found.partial, found.cut):
        if notice:
            answer.notice(notice)
    answer.summary(
        f"{_count(found.total, what)}{f' ({filters})' if filters else ''} in {_count(found.notes, 'note')} "
        f"(of {found.read:,}{_under(prefix)}){':' if found.total else '.'}"
    )
    for path, task in found.first[:limit]:
        section = f" · {' > '.join(task.section)}" if task.section else ""
        record = {"path": path, "line": task.line, "status": task.status, "text": task.text}
        record["section"] = list(task.section)
        answer.row("tasks", f"{path}:{task.line}  [{task.status}] {_short(task.text)}{section}", record)
    if found.total > limit:
        answer.notice(
            f"[Cut: {limit:,} of {found.total:,} shown, by note and line. Narrow with prefix, or raise limit "
            f"(at most {MAX_LIMIT:,}).]"
        )
    ways = ctx.tools.ways_on(
        ("edit_note", "tick one with edit_note (oldText: the task's line)"),
        ("read_note", "its section: read_note(path, section=[…])"),
    )
    if found.total and ways:
        answer.notice(ways)
    return answer.output()


# -- text helpers ----------------------------------------------------------------------------------


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _under(prefix: str | None) -> str:
    return f" under {prefix}" if prefix else ""


def _cut(answer: Answer, total: int, what: str) -> None:
    if total > MAX_SHOWN:
        answer.notice(f"[Cut: {MAX_SHOWN} of {total:,} {what} shown, by note and line.]")


def _short(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _line_around(lines: list[str], link: LinkFact) -> str:
    """The line of ``link`` in its note's ``lines``, cut around the link when it is long."""
    if not 0 < link.line <= len(lines):
        return _short(link.raw)
    line = lines[link.line - 1].strip()
    if len(line) <= LINE_CHARS:
        return line
    raw = lines[link.line - 1]
    start = max(0, link.column - 1 - 40)
    piece = raw[start : start + LINE_CHARS].strip()
    return ("…" if start else "") + piece + ("…" if start + LINE_CHARS < len(raw) else "")


# -- the tools ---------------------------------------------------------------------------------------

INTEGER = {"type": "integer"}
BOOLEAN = {"type": "boolean"}
PLACE = {"path": STRING, "line": INTEGER}

_PREFIX = Param("prefix", "Path prefix.", kind="prefix", required=False)
_LIMIT = Param("limit", f"Default {DEFAULT_LIMIT}.", kind="count", required=False, maximum=MAX_LIMIT)

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="note_links",
        title="Links of a note",
        description=(
            "A note's links as Obsidian resolves them (wikilinks, embeds, Markdown, front matter; not code). "
            "in: notes linking here, with the line; out: its links, their targets."
        ),
        params=(
            Param("path", "Note path, e.g. 'people/ada.md'."),
            Param("direction", "in, out or both (default).", kind="choice", required=False, choices=DIRECTIONS),
        ),
        handler=collector_paused(note_links),
        output_schema=answer_schema(
            {
                "path": STRING,
                "out": INTEGER,
                "in": INTEGER,
                "linksOut": rows(
                    object_schema(
                        {"line": INTEGER, "link": STRING, "target": NULLABLE_STRING, "ambiguous": STRINGS},
                        ["line", "link"],
                    )
                ),
                "linksIn": rows(object_schema({**PLACE, "text": STRING, "link": STRING}, ["path", "line", "text"])),
                "partial": BOOLEAN,
            },
            ["path"],
        ),
    ),
    Tool(
        name="broken_links",
        title="Broken links",
        description="Links that resolve to no file: note:line, the link, the closest note.",
        params=(_PREFIX, _LIMIT),
        handler=collector_paused(broken_links),
        output_schema=answer_schema(
            {
                "broken": INTEGER,
                "notes": INTEGER,
                "links": rows(object_schema({**PLACE, "link": STRING, "closest": NULLABLE_STRING}, ["path", "line"])),
                "ambiguous": rows(
                    object_schema(
                        {**PLACE, "link": STRING, "target": STRING, "others": STRINGS},
                        ["path", "line", "target", "others"],
                    )
                ),
                "partial": BOOLEAN,
            },
            ["broken", "notes", "links"],
        ),
    ),
    Tool(
        name="list_tags",
        title="List tags",
        description=(
            "Tags (inline and front matter) with note counts; a nested a/b counts at each level. "
            "With tag: the notes that carry it."
        ),
        params=(_PREFIX, Param("tag", "A tag, e.g. 'project'.", kind="query", required=False)),
        handler=collector_paused(list_tags),
        output_schema=answer_schema(
            {
                "tags": rows(object_schema({"tag": STRING, "notes": INTEGER}, ["tag", "notes"])),
                "tag": STRING,
                "notes": rows(object_schema({"path": STRING, "tags": rows(STRING)}, ["path", "tags"])),
                "total": INTEGER,
                "partial": BOOLEAN,
            },
            ["total"],
        ),
    ),
    Tool(
        name="query_notes",
        title="Query notes by properties",
        description=(
            'By front matter: where={"status":"open","due":{"lt":"2025-01-01"}}, all hold; ops eq ne '
            "in contains gt gte lt lte exists; path, tags, updatedAt too. fields: shown; sort: -due descends; "
            f"prefix: folder; limit: default {DEFAULT_LIMIT}."
        ),
        params=(  # described above: the tool list carries each byte on every turn
            Param("where", "", kind="fields"),
            Param("fields", "", kind="keys", required=False),
            Param("prefix", "", kind="prefix", required=False),
            Param("sort", "", kind="order", required=False),
            Param("limit", "", kind="count", required=False, maximum=MAX_LIMIT),
        ),
        handler=collector_paused(query_notes),
        output_schema=answer_schema(
            {
                "matches": INTEGER,
                "notes": rows(object_schema({"path": STRING, "fields": {"type": "object"}}, ["path", "fields"])),
                "partial": BOOLEAN,
            },
            ["matches", "notes"],
        ),
    ),
    Tool(
        name="list_tasks",
        title="List tasks",
        description=(
            "Checkbox tasks (- [ ], - [x]…): note:line, status, text, section. assignee: tasks naming them (@bob, "
            "Bob:, [[Bob Lee]]); owner: notes whose owner does; whole words, any case."
        ),
        params=(
            _PREFIX,
            Param("status", "open (default), done or all.", kind="choice", required=False, choices=STATUS_CHOICES),
            _LIMIT,
            Param("assignee", "", kind="query", required=False),
            Param("owner", "", kind="query", required=False),
        ),
        handler=collector_paused(list_tasks),
        output_schema=answer_schema(
            {
                "tasks": rows(
                    object_schema(
                        {**PLACE, "status": STRING, "text": STRING, "section": rows(STRING)},
                        ["path", "line", "status", "text", "section"],
                    )
                ),
                "total": INTEGER,
                "notes": INTEGER,
                "partial": BOOLEAN,
            },
            ["tasks", "total"],
        ),
    ),
)
