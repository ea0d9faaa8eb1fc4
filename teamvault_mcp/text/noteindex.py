"""What the link, tag, task and property tools know of each note, kept between calls. Thread-safe.

- :class:`NoteFacts`: one content's links, tags, tasks and front matter fields, each part
  parsed the first time a tool needs it (``links.py``, ``tags.py``, ``tasks.py``, the front
  matter through ``prose.py``), and never again: a part's parse is kept with the content.
  Only the parts asked for are parsed, so ``list_tasks`` reads no YAML (about 1 ms a note),
  and the YAML read for one part is handed on to the next.
- :class:`FactsIndex`: the facts by content hash (a content's facts do not depend on its
  path), bounded by an estimate of their size, least recently used first out. A changed
  note has a new hash: it is parsed again, and nothing else is. Below it, a project's
  :class:`FactsStore` (``vault/index_db.py``: on disk, kept across restarts) is asked for
  what memory lacks, and given what was parsed, as compact JSON (:func:`encode_part`,
  :func:`decode_part`; :data:`FACTS_VERSION` names the format and the parsers' rules).
- :class:`LinkGraph`: every note's links resolved against the vault's paths
  (:class:`~teamvault_mcp.text.resolution.VaultPaths`), with the backlinks of each file: a view
  of the project's link table (``linkdb.py``: in the store, so a restart resolves nothing). A
  note's resolved links are kept while its content is unchanged; a new, moved or deleted file
  can change where a link to its name resolves, so then the notes with such a link are
  resolved again, and only those (:func:`~teamvault_mcp.text.resolution.name_key`).
- :class:`NoteIndex`: the facts, each project's paths and links, and the last graph of each, for a server's calls.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, TypeVar

from teamvault_mcp.text.linkdb import Known, LinksUnavailable, LinkTable, MemoryLinks
from teamvault_mcp.text.linkdb import LinkFact as LinkFact  # re-exported: what the index says a link is
from teamvault_mcp.text.links import Link, parse_links
from teamvault_mcp.text.prose import NoteText
from teamvault_mcp.text.resolution import VaultPaths
from teamvault_mcp.text.tags import NoteTags, Tag, note_tags
from teamvault_mcp.text.tally import Tallies
from teamvault_mcp.text.tasks import Task, note_tasks

PARTS = ("links", "tags", "tasks", "fields")

#: The version of the facts a store keeps: bump it when a parser (links, tags, tasks, front matter) finds
#: something else in the same text, or the JSON below changes; a store of another version is made again.
FACTS_VERSION = 1

#: The facts kept in memory, by the estimate of :func:`_weight_of` (bytes of Python objects, roughly: measured at
#: 20,000 notes, the real size is ~1.5 times it). A few thousand notes' worth: the store holds them all, the links
#: are resolved in it and the tallies keep what their counts need, so memory serves the notes a call reads again.
FACTS_BYTES = 32 * 1024 * 1024

#: Projects whose last link graph is kept.
GRAPHS_KEPT = 4
#: Notes resolved between two looks at whether the call must stop (:meth:`NoteIndex.graph`).
STOP_EVERY = 200

T = TypeVar("T")


class NoteFacts:
    """One content's parts, each None until it is parsed; see the module docstring."""

    __slots__ = ("front_matter", "links", "tags", "tasks", "weight")

    def __init__(self) -> None:
        self.links: tuple[LinkFact, ...] | None = None
        self.tags: NoteTags | None = None
        self.tasks: tuple[Task, ...] | None = None
        #: (fields, why they could not be read): ({}, None) without front matter.
        self.front_matter: tuple[dict[str, Any], str | None] | None = None
        self.weight = 64

    @property
    def fields(self) -> dict[str, Any]:
        return self.front_matter[0] if self.front_matter is not None else {}

    def missing(self, parts: Collection[str]) -> list[str]:
        return [part for part in parts if getattr(self, "front_matter" if part == "fields" else part) is None]

    def parse(self, text: str, parts: Collection[str]) -> int:
        """Parse ``parts`` of ``text`` (this content) that are not parsed yet; the weight they add."""
        note = NoteText(text, front_matter=self.front_matter)
        added = 0
        if self.front_matter is None and ("fields" in parts or "tags" in parts):  # tags read its tags too
            self.front_matter = (note.fields, note.front_matter_problem)
            added += self._weight("fields")
        if "links" in parts and self.links is None:
            self.links = tuple(_link_fact(link) for link in parse_links(note))
            added += self._weight("links")
        if "tags" in parts and self.tags is None:
            self.tags = note_tags(note)
            self.tags.spellings  # noqa: B018  # worked out in the parse the budget watches, not in the count after it
            added += self._weight("tags")
        if "tasks" in parts and self.tasks is None:
            self.tasks = tuple(note_tasks(note))
            added += self._weight("tasks")
        if self.front_matter is None and note.front_matter_read is not None:  # the links read it for theirs
            self.front_matter = note.front_matter_read
            added += self._weight("fields")
        self.weight += added
        return added

    def take(self, stored: Mapping[str, str]) -> int:
        """Take the parts not parsed yet from a store's JSON (part → JSON); the weight they add."""
        added = 0
        for part, value in stored.items():
            if part in PARTS and self.missing((part,)):
                try:
                    decoded = decode_part(part, value)
                except (ValueError, TypeError, KeyError):  # not what this version writes: parsed again instead
                    continue
                setattr(self, "front_matter" if part == "fields" else part, decoded)
                added += self._weight(part)
        self.weight += added
        return added

    def encoded(self) -> list[tuple[str, str]]:
        """(part, JSON) of every part parsed, for a store."""
        found = []
        for part in PARTS:
            if not self.missing((part,)):
                try:
                    value = encode_part(self, part)
                except (TypeError, ValueError):  # a value JSON cannot hold: this part stays in memory only
                    continue
                if part == "fields" and json.loads(value) != list(self.front_matter or ()):
                    continue  # JSON would change it (a key that is no string, say): kept in memory only
                found.append((part, value))
        return found

    def _weight(self, part: str) -> int:
        if part == "links":
            return sum(120 + 2 * len(link.raw) for link in self.links or ())
        if part == "tags":
            return sum(100 + len(tag.name) for tag in self.tags.tags) if self.tags is not None else 0
        if part == "tasks":
            return sum(160 + len(task.text) for task in self.tasks or ())
        return _weight_of(self.front_matter[0]) if self.front_matter is not None else 0


def _link_fact(link: Link) -> LinkFact:
    # Names and targets repeat across a vault (everyone links [[Ada]]): one string each.
    return LinkFact(sys.intern(link.target), link.syntax == "markdown", link.line, sys.intern(link.raw), link.column)


def encode_part(facts: NoteFacts, part: str) -> str:
    """One parsed part of ``facts`` as compact JSON (ASCII: a lone surrogate survives the trip)."""
    value: Any
    if part == "links":
        value = [[link.target, int(link.markdown), link.line, link.raw, link.column] for link in facts.links or ()]
    elif part == "tags":
        assert facts.tags is not None
        value = [[[tag.name, tag.source, tag.line, tag.column] for tag in facts.tags.tags], list(facts.tags.rejected)]
    elif part == "tasks":
        value = [[task.line, task.status, task.text, list(task.section), task.indent] for task in facts.tasks or ()]
    else:
        assert facts.front_matter is not None
        value = list(facts.front_matter)
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def decode_part(part: str, value: str) -> Any:
    """What :func:`encode_part` wrote, as :class:`NoteFacts` holds it."""
    data = json.loads(value)
    if part == "links":
        return tuple(
            LinkFact(sys.intern(target), bool(markdown), line, sys.intern(raw), column)
            for target, markdown, line, raw, column in data
        )
    if part == "tags":
        tags, rejected = data
        return NoteTags(tuple(Tag(*tag) for tag in tags), tuple(rejected))
    if part == "tasks":
        return tuple(Task(line, status, text, tuple(section), indent) for line, status, text, section, indent in data)
    fields, problem = data
    return (fields, problem)


class FactsStore(Protocol):
    """Facts kept below the memory, for one project (``vault/index_db.py``'s ``IndexStore``), and its links."""

    links: LinkTable

    def load(self, hashes: Collection[str], parts: Collection[str]) -> dict[str, dict[str, str]]:
        """hash → part → JSON, of what is kept of these contents and parts."""
        ...

    def save(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """Keep (hash, part, JSON) rows, at once."""
        ...

    def save_listing(self, files: Sequence[ListedFile]) -> None:
        """Keep the project's whole listing: each file's path, id, contentHash, size and mtime."""
        ...


class ListedFile(Protocol):
    """A file of a listing, as a store keeps it (``vault/records.py``'s ``VaultFile`` is one)."""

    @property
    def path(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def content_hash(self) -> str | None: ...
    @property
    def size(self) -> int | None: ...
    @property
    def updated_at(self) -> str | None: ...


#: A note of a listing as a store keeps it: (path, id, contentHash, size, mtime).
ListingRow = tuple[str, str | None, str | None, int | None, str | None]


def _weight_of(value: Any) -> int:
    """About how many bytes ``value`` (JSON: front matter fields) takes as Python objects."""
    if isinstance(value, str):
        return 50 + len(value)
    if isinstance(value, dict):
        return 100 + sum(_weight_of(key) + _weight_of(item) for key, item in value.items())
    if isinstance(value, list):
        return 60 + sum(_weight_of(item) for item in value)
    return 32


class FactsIndex:
    """:class:`NoteFacts` by content hash, within ``max_bytes`` (estimated); thread-safe."""

    def __init__(self, max_bytes: int = FACTS_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, NoteFacts] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        #: Parts parsed since the index was made (one per content and part): how tests see what was re-read.
        self.parsed = 0
        #: Parts taken from a store since the index was made.
        self.loaded = 0

    def __len__(self) -> int:
        return len(self._entries)

    def cached(self, content_hash: str, parts: Collection[str]) -> NoteFacts | None:
        """The facts of ``content_hash`` if ``parts`` are all parsed already; None otherwise."""
        with self._lock:
            facts = self._entries.get(content_hash)
            if facts is None or facts.missing(parts):
                return None
            self._entries.move_to_end(content_hash)
            return facts

    def recall(self, store: FactsStore, hashes: Collection[str], parts: Collection[str]) -> dict[str, NoteFacts]:
        """The facts of those ``hashes`` whose ``parts`` memory lacks and ``store`` holds, now kept in memory too."""
        stored = store.load(hashes, parts)
        found: dict[str, NoteFacts] = {}
        with self._lock:
            for content_hash, values in stored.items():
                facts = self._entry(content_hash)
                self.loaded += sum(1 for part in values if facts.missing((part,)))
                self._bytes += facts.take(values)
                if not facts.missing(parts):
                    found[content_hash] = facts
            self._evict()
        return found

    def keep(self, store: FactsStore, parsed: Iterable[tuple[str, NoteFacts]]) -> None:
        """Give ``store`` the parts of these (hash, facts), in one batch."""
        store.save([(content_hash, part, value) for content_hash, facts in parsed for part, value in facts.encoded()])

    def _entry(self, content_hash: str) -> NoteFacts:
        """The facts kept for ``content_hash`` (made empty if none), now the most recently used; under the lock."""
        facts = self._entries.get(content_hash)
        if facts is None:
            facts = self._entries[content_hash] = NoteFacts()
            self._bytes += facts.weight
        else:
            self._entries.move_to_end(content_hash)
        return facts

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and len(self._entries) > 1:
            _, dropped = self._entries.popitem(last=False)
            self._bytes -= dropped.weight

    def facts(self, content_hash: str, text: str, parts: Collection[str]) -> NoteFacts:
        """The facts of the content ``text`` (whose hash is ``content_hash``) with ``parts`` parsed."""
        with self._lock:  # a note parses in about a millisecond: held per note, never for a whole vault
            facts = self._entry(content_hash)
            missing = facts.missing(parts)
            if missing:
                self._bytes += facts.parse(text, missing)
                self.parsed += len(missing)
                self._evict()
            return facts


@dataclass(frozen=True)
class Backlink:
    """A link in ``source`` that resolves to the note asked about."""

    source: str
    link: LinkFact


@dataclass(frozen=True)
class BrokenLink:
    """A link in ``source`` that resolves to no file."""

    source: str
    link: LinkFact


@dataclass(frozen=True)
class AmbiguousLink:
    """A link in ``source`` that names a file only by a name several files share: it resolves to ``target``
    (Obsidian's pick), and could mean any of ``others``."""

    source: str
    link: LinkFact
    target: str
    others: tuple[str, ...]


class LinkGraph:
    """The links of the notes at the paths ``notes`` resolved against ``vault``: a view of the project's link table
    (``linkdb.py``), so that a graph of 100,000 notes holds their paths, not their 1.5 million links."""

    def __init__(
        self, vault: VaultPaths, table: LinkTable, notes: frozenset[str], counts: Mapping[str, int] | None = None
    ) -> None:
        """``counts``: how many links the table keeps of each note (of some at least; the others are looked up)."""
        self.vault = vault
        self._table = table
        self.notes = notes
        self._counts = counts

    def __len__(self) -> int:
        return len(self.notes)

    def __contains__(self, path: object) -> bool:
        return path in self.notes

    def outgoing(self, path: str) -> list[tuple[LinkFact, str | None]]:
        """The links of the note at ``path``, in order, each with the file it resolves to."""
        return self._table.outgoing(path) if path in self.notes else []

    def incoming(self, path: str) -> list[Backlink]:
        """The links in other notes that resolve to ``path``, by source path and line."""
        return [Backlink(source, link) for source, link, _ in self._table.incoming(path) if source in self.notes]

    def broken(self) -> list[BrokenLink]:
        """The links of the graph's notes that resolve to no file, by note and line."""
        return [BrokenLink(source, link) for source, link, _ in self._table.broken() if source in self.notes]

    def ambiguous(self) -> list[AmbiguousLink]:
        """The links of the graph's notes that resolve to one of several files of their name, by note and line."""
        found = []
        for source, link, target in self._table.ambiguous():
            if source in self.notes and target is not None:
                others = self.vault.alternatives(link.target, source, markdown=link.markdown)
                found.append(AmbiguousLink(source, link, target, tuple(others)))
        return found

    def named(self, names: Collection[str]) -> list[tuple[str, LinkFact, str | None]]:
        """The links of the graph's notes whose target's last segment is one of ``names``
        (:func:`~teamvault_mcp.text.resolution.name_key`), with where each resolves, by note and line."""
        return [row for row in self._table.named(names) if row[0] in self.notes]

    @cached_property
    def link_counts(self) -> dict[str, int]:
        """How many links the index keeps of each of the graph's notes."""
        counts = self._counts
        if counts is None or any(path not in counts for path in self.notes):
            counts = {path: count for path, (_, count) in self._table.hashes().items()}
        return {path: counts[path] for path in self.notes if path in counts}


class _Counts(Mapping[str, int]):
    """How many links each note has: the fresh ones', else the table's as read (path → (hash, count))."""

    def __init__(self, known: Mapping[str, tuple[str, int]], fresh: dict[str, int]) -> None:
        self._known = known
        self._fresh = fresh

    def __getitem__(self, path: str) -> int:
        return self._fresh[path] if path in self._fresh else self._known[path][1]

    def __contains__(self, path: object) -> bool:
        return path in self._fresh or path in self._known

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._known), **dict.fromkeys(self._fresh)})

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _ProjectLinks:
    """A project's paths indexed for resolution, its link table, and the last whole graph made of them."""

    def __init__(self, vault: VaultPaths, table: LinkTable) -> None:
        self.vault = vault
        self.table = table
        self.last: LinkGraph | None = None


class NoteIndex:
    """The facts of every content seen, and each project's resolved links; shared by all calls.

    Besides the facts (bounded by :class:`FactsIndex`), each of the last :data:`GRAPHS_KEPT` projects keeps its
    paths indexed for resolution and its tallies; the resolved links are in the project's store (``linkdb.py``),
    or in memory for a project without one.
    """

    def __init__(
        self, max_bytes: int = FACTS_BYTES, *, stores: Callable[[str], FactsStore | None] | None = None
    ) -> None:
        """``stores``: each project's :class:`FactsStore` (None, or a store of None: memory only)."""
        self.facts = FactsIndex(max_bytes)
        self._stores = stores
        self._projects: OrderedDict[str, _ProjectLinks] = OrderedDict()
        self._memory_links: dict[str, LinkTable] = {}  # projects without a store (as many as _projects)
        self._tallies: OrderedDict[str, Tallies] = OrderedDict()
        self._lock = threading.Lock()
        #: Links resolved since the index was made: how tests see that an unchanged vault is not resolved again.
        self.resolved = 0

    def store(self, project_id: str) -> FactsStore | None:
        """The project's facts on disk, if it has any."""
        return self._stores(project_id) if self._stores is not None else None

    def tallies(self, project_id: str) -> Tallies:
        """What list_tags and list_tasks count over the project's notes (``tally.py``); the last
        :data:`GRAPHS_KEPT` projects keep theirs."""
        with self._lock:
            tallies = self._tallies.get(project_id) or Tallies()
            self._tallies[project_id] = tallies
            self._tallies.move_to_end(project_id)
            while len(self._tallies) > GRAPHS_KEPT:
                self._tallies.popitem(last=False)
            return tallies

    def vault_paths(self, project_id: str, paths: Iterable[str]) -> VaultPaths:
        """The vault's ``paths`` (every live file) indexed for resolution: the project's last index when the
        same, so its cached answers (and closest-note suggestions) are kept."""
        with self._lock:
            return self._project(project_id, frozenset(paths)).vault

    def link_hashes(self, project_id: str, paths: Iterable[str]) -> dict[str, tuple[str, int]]:
        """The notes whose links are resolved for the vault's ``paths`` (every live file): path → (the content
        hash they were read from, how many). A note listed with that hash needs no facts read for :meth:`graph`."""
        with self._lock:
            state = self._project(project_id, frozenset(paths))
            return self._synced(state, lambda: state.table.hashes())

    def graph(
        self,
        project_id: str,
        paths: Iterable[str],
        notes: Mapping[str, tuple[str, Sequence[LinkFact]]],
        *,
        keep: bool = True,
        stop: Callable[[], bool] | None = None,
        unchanged: Collection[str] = (),
        known: Mapping[str, tuple[str, int]] | None = None,
    ) -> LinkGraph:
        """The links of ``notes`` (path → (content hash, links)) resolved against the vault's ``paths`` (every
        live file, attachments too), with those of the notes ``unchanged`` (resolved already at the hash listed:
        :meth:`link_hashes`); only a note new or changed since it was last resolved is resolved now.

        ``keep``: this graph holds every note of the vault (what no note has any more is dropped) and is the one
        to give again while nothing changes; a graph of some notes only (one folder's) is not kept.
        ``stop``: asked now and then while links are resolved; when it says so, the graph holds the notes resolved
        by then (and is not kept): what was resolved is, for the next call. ``known``: what :meth:`link_hashes`
        just said (read again when not given).
        """
        with self._lock:  # resolving a whole vault takes a moment; calls for the same project wait for it
            state = self._project(project_id, frozenset(paths))
            given = [known]  # what the caller read: true of this file unless the store fails under this call

            def work() -> LinkGraph:
                return self._graph(state, notes, keep, stop, unchanged, given.pop() if given else None)

            return self._synced(state, work)

    def _synced(self, state: _ProjectLinks, work: Callable[[], T]) -> T:
        """``work`` on the project's links brought to its paths; once again if the store failed under it (a
        corrupt file is made again: the links are then resolved afresh)."""
        for attempt in range(2):
            try:
                self.resolved += state.table.sync(state.vault)
                return work()
            except LinksUnavailable:
                state.last = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _graph(
        self,
        state: _ProjectLinks,
        notes: Mapping[str, tuple[str, Sequence[LinkFact]]],
        keep: bool,
        stop: Callable[[], bool] | None,
        unchanged: Collection[str],
        known: Mapping[str, tuple[str, int]] | None,
    ) -> LinkGraph:
        if not isinstance(known, Known) or not state.table.still(known):
            known = state.table.hashes()
        fresh = sorted(path for path, (content_hash, _) in notes.items() if known.get(path, ("",))[0] != content_hash)
        members = {*notes, *(path for path in unchanged if path in known)}  # (known: read again after a rebuild)
        last = state.last
        if not fresh and last is not None and last.notes == members and last.vault is state.vault:
            return last
        gone = [path for path in known if path not in members] if keep else []
        kept = [path for path in fresh if path in known]  # their links are not this listing's: a stopped graph
        state.table.drop([*kept, *gone])  # lacks them (a note new to the table has none to drop)
        members.difference_update(fresh)
        batch: list[tuple[str, str, Sequence[LinkFact]]] = []

        def written() -> bool:  # False: another process changed the paths meanwhile (resolved again next time)
            if batch and not state.table.write(state.vault, batch):
                return False
            members.update(path for path, _, _ in batch)
            self.resolved += sum(len(links) for _, _, links in batch)
            batch.clear()
            return True

        stopped = False
        for number, path in enumerate(fresh, 1):
            stopped = stop is not None and number % STOP_EVERY == 0 and stop()
            if stopped or (len(batch) == STOP_EVERY and not written()):
                stopped = True
                break
            batch.append((path, *notes[path]))
        stopped = not written() or stopped  # what was resolved before a stop is kept too
        counts = _Counts(known, {path: len(notes[path][1]) for path in fresh})
        graph = LinkGraph(state.vault, state.table, frozenset(members), counts)
        state.last = graph if keep and not stopped else state.last
        return graph

    def _project(self, project_id: str, all_paths: frozenset[str]) -> _ProjectLinks:
        """The project's links, its paths indexed anew when they changed; under the lock."""
        state = self._projects.get(project_id)
        if state is None:
            state = self._projects[project_id] = _ProjectLinks(VaultPaths(all_paths), self._links_of(project_id))
        elif state.vault.paths is not all_paths and state.vault.paths != all_paths:
            state.vault = state.vault.changed(all_paths)
            state.last = None
        self._projects.move_to_end(project_id)
        while len(self._projects) > GRAPHS_KEPT:
            dropped, _ = self._projects.popitem(last=False)
            self._memory_links.pop(dropped, None)
        return state

    def _links_of(self, project_id: str) -> LinkTable:
        store = self.store(project_id)
        if store is not None:
            return store.links
        return self._memory_links.setdefault(project_id, LinkTable(MemoryLinks()))
