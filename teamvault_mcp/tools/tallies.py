"""The notes ``list_tags`` and ``list_tasks`` count and ``query_notes`` queries, from the project's tallies
(``text/tally.py``), and the tasks ``list_tasks`` finds.

One listing; the facts of only the notes that changed since the last call are read (``indexing.py``: memory,
the store, else read and parsed while the budget lasts), and each one's share is kept. A note not read in
time is not counted, and the answer says how many (:meth:`Tallied.partial_notice`). ``list_tasks`` then reads
only the notes whose tasks it shows (:func:`tasks_counted`); with ``assignee`` or ``owner`` it reads every note's
tasks (:func:`tasks_named`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic

from teamvault_mcp.text.properties import BUILT_IN_FIELDS, field_value, with_built_ins
from teamvault_mcp.text.prose import MAX_FACTS_BYTES, unindexed_notice
from teamvault_mcp.text.tally import FieldShare, Share, TagShare, Tally, TaskShare
from teamvault_mcp.text.tasks import MAX_TASKS_PER_NOTE, Person, Task, select_tasks
from teamvault_mcp.tools.context import ToolContext
from teamvault_mcp.tools.indexing import index_notes, list_vault, listed_files, note_index, notes_of, partial_notice

if TYPE_CHECKING:
    from teamvault_mcp.text.noteindex import NoteFacts
    from teamvault_mcp.vault.records import VaultFile


@dataclass
class Tallied(Generic[Share]):
    """The notes under a prefix: (path, share) of those counted, how many there are, and why some are not."""

    shares: dict[str, Share]  # by path
    notes: int
    why_partial: str
    listing: list[VaultFile]

    @property
    def not_read(self) -> int:
        return max(0, self.notes - len(self.shares))

    def partial_notice(self, missing: str) -> str | None:
        return partial_notice(self.not_read, self.notes, self.why_partial, missing)

    def unindexed_notice(self, what: str, cap: int) -> str | None:
        """``prose.unindexed_notice`` of the notes counted: those whose ``what`` the index keeps only in part."""
        some = self.sorted(lambda share: share.size > MAX_FACTS_BYTES or share.kept >= cap)
        return unindexed_notice(((path, share.size, share.kept) for path, share in some), what, cap)

    def sorted(self, keep: Callable[[Share], bool]) -> list[tuple[str, Share]]:
        """(path, share) of the notes whose share ``keep`` keeps, by path."""
        return sorted(((path, share) for path, share in self.shares.items() if keep(share)), key=lambda item: item[0])


def tallied_tags(
    ctx: ToolContext, project_id: str, prefix: str | None, listing: list[VaultFile] | None = None
) -> Tallied[TagShare]:
    tally = note_index(ctx).tallies(project_id).tags
    return _tallied(
        ctx, project_id, prefix, tally, "tags", lambda file, facts: TagShare.of(facts.tags, file.size or 0), listing
    )


def tallied_fields(
    ctx: ToolContext, project_id: str, prefix: str | None, listing: list[VaultFile] | None = None
) -> Tallied[FieldShare]:
    tally = note_index(ctx).tallies(project_id).fields
    return _tallied(
        ctx,
        project_id,
        prefix,
        tally,
        "fields",
        lambda file, facts: FieldShare.of(facts.front_matter, file.size or 0),
        listing,
    )


def tallied_tasks(ctx: ToolContext, project_id: str, prefix: str | None) -> Tallied[TaskShare]:
    tally = note_index(ctx).tallies(project_id).tasks
    return _tallied(
        ctx, project_id, prefix, tally, "tasks", lambda file, facts: TaskShare.of(facts.tasks, file.size or 0)
    )


def _tallied(
    ctx: ToolContext,
    project_id: str,
    prefix: str | None,
    tally: Tally[Share],
    part: str,
    share: Callable[[VaultFile, NoteFacts], Share],
    listing: list[VaultFile] | None = None,
) -> Tallied[Share]:
    """The tally brought up to date with ``listing`` (by default the project's, under ``prefix``)."""
    listing = list_vault(ctx, project_id, prefix) if listing is None else listing
    notes = tally.still(listing, prefix)  # a listing reused since the last call, and nothing taken since
    if notes is not None:
        return Tallied(tally.shares(prefix), notes, "", listing)
    markdown = notes_of(ctx, listing, prefix)
    stale = {file.path for file in tally.stale(markdown, prefix)}
    why, read = "", 0
    if stale:
        indexed = index_notes(ctx, project_id, listing, (part,), prefix=prefix, paths=stale)
        for file, facts in indexed.read():
            tally.take(file.path, indexed.hashes[file.path], share(file, facts))
            read += 1
        why = indexed.why_partial
    if read == len(stale):
        tally.checked(listing, prefix, len(markdown))
    return Tallied(tally.shares(prefix), len(markdown), why, listing)


@dataclass
class QueriedNotes:
    """The notes a query looks at, each as its fields (``properties.queryable``), by path; how many notes have each
    field name, in the order the names first come; the notes whose front matter cannot be read; and the notice
    that some notes were not read in time (None when none)."""

    notes: list[Mapping[str, Any]]
    names: Counter[str]
    unreadable: list[str]
    partial: str | None


def queried_notes(ctx: ToolContext, project_id: str, prefix: str | None, *, with_tags: bool) -> QueriedNotes:
    """The notes under ``prefix`` as ``query_notes`` reads them, from the fields' tally (and the tags', when the
    query names tags); a note whose fields or tags were not read in time is left out, and the notice says so."""
    listing = list_vault(ctx, project_id, prefix)
    fields_of = tallied_fields(ctx, project_id, prefix, listing)
    tags_of = tallied_tags(ctx, project_id, prefix, listing) if with_tags else None
    files = listed_files(ctx, listing)
    notes: list[Mapping[str, Any]] = []
    unreadable: list[str] = []
    named_alike: Counter[tuple[str, ...]] = Counter()  # the notes with each set of field names
    for path in sorted(fields_of.shares):
        share = fields_of.shares[path]
        tagged = tags_of.shares.get(path) if tags_of is not None else None
        if tags_of is not None and tagged is None:
            continue
        if share.unreadable:
            unreadable.append(path)
        tags = tagged.names if tagged is not None else ()
        notes.append(with_built_ins(share.fields, path=path, tags=tags, updated_at=files[path].updated_at))
        named_alike[share.names] += 1
    names: Counter[str] = Counter()
    for alike, count in named_alike.items():
        first = not names
        for name in alike:
            names[name] += count
        if first:  # every note has these, after its own fields
            names.update(dict.fromkeys(BUILT_IN_FIELDS, len(notes)))
    why = fields_of.why_partial or (tags_of.why_partial if tags_of is not None else "")
    partial = partial_notice(fields_of.notes - len(notes), fields_of.notes, why, "matches among them")
    return QueriedNotes(notes, names, unreadable, partial)


@dataclass
class FoundTasks:
    """The tasks list_tasks found: the first ones (by note and line), how many in all and in how many notes, of how
    many notes read; the notices that the notes were not all read, or their tasks not all indexed."""

    first: list[tuple[str, Task]]
    total: int
    notes: int
    read: int
    partial: str | None
    cut: str | None


def tasks_counted(ctx: ToolContext, project_id: str, status: str, prefix: str | None, limit: int) -> FoundTasks:
    """The tasks with ``status``, counted from the tally: only the notes shown are read."""
    select_tasks([], status)  # a status none of these can have is refused all the same
    tallied = tallied_tasks(ctx, project_id, prefix)
    with_some = tallied.sorted(lambda share: share.count(status) > 0)
    shown, upto = 0, 0
    while upto < len(with_some) and shown < limit:  # the notes whose tasks are shown: their counts say which
        shown += with_some[upto][1].count(status)
        upto += 1
    paths = {path for path, _ in with_some[:upto]}
    indexed = index_notes(ctx, project_id, tallied.listing, ("tasks",), prefix=prefix, paths=paths)
    first = [
        (file.path, task) for file, facts in indexed.read() for task in select_tasks(list(facts.tasks or ()), status)
    ]
    return FoundTasks(
        first,
        sum(share.count(status) for _, share in with_some),
        len(with_some),
        len(tallied.shares),
        tallied.partial_notice("tasks in them"),
        tallied.unindexed_notice("tasks", MAX_TASKS_PER_NOTE),
    )


def tasks_named(
    ctx: ToolContext, project_id: str, args: Mapping[str, Any], status: str, prefix: str | None
) -> FoundTasks:
    """The tasks with ``status`` naming the assignee, in notes whose owner is the one named: every note read."""
    assignee = Person.named(args["assignee"]) if "assignee" in args else None
    owner = Person.named(args["owner"]) if "owner" in args else None
    parts = ("tasks", "fields") if owner else ("tasks",)  # the YAML is read only when owner asks for it
    indexed = index_notes(ctx, project_id, list_vault(ctx, project_id, prefix), parts, prefix=prefix)
    found = [
        (file.path, task)
        for file, facts in indexed.read()
        if owner is None or owner.named_by(field_value(facts.fields, "owner"))
        for task in select_tasks(list(facts.tasks or ()), status)
        if assignee is None or assignee.mentioned_in(task.text)
    ]
    counted = [(file.path, file.size or 0, len(facts.tasks or ())) for file, facts in indexed.read()]
    return FoundTasks(
        found,
        len(found),
        len({path for path, _ in found}),
        len(indexed.read()),
        indexed.partial_notice("tasks in them"),
        unindexed_notice(counted, "tasks", MAX_TASKS_PER_NOTE),
    )
