"""What the link, tag, task and property tools know of each note, kept between calls. Pure, thread-safe.

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
  (:class:`~teamvault_mcp.text.resolution.VaultPaths`), with the backlinks of each file. The next
  graph reuses a note's resolved links while its content is unchanged; a new, moved or deleted
  file can change where a link to its name resolves, so then the notes with such a link are
  resolved again, and only those (:func:`~teamvault_mcp.text.resolution.name_key`).
- :class:`NoteIndex`: the facts, and the last graph of each project, for a server's calls.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple, Protocol

from teamvault_mcp.text.links import Link, parse_links
from teamvault_mcp.text.prose import NoteText
from teamvault_mcp.text.resolution import VaultPaths, name_key, names_of
from teamvault_mcp.text.tags import NoteTags, Tag, note_tags
from teamvault_mcp.text.tally import Tallies
from teamvault_mcp.text.tasks import Task, note_tasks

PARTS = ("links", "tags", "tasks", "fields")

#: The version of the facts a store keeps: bump it when a parser (links, tags, tasks, front matter) finds
#: something else in the same text, or the JSON below changes; a store of another version is made again.
FACTS_VERSION = 1

#: The facts kept in memory, by the estimate of :func:`_weight_of` (bytes of Python objects, roughly).
FACTS_BYTES = 96 * 1024 * 1024

#: Projects whose last link graph is kept.
GRAPHS_KEPT = 4
#: Notes resolved between two looks at whether the call must stop (:meth:`NoteIndex.graph`).
STOP_EVERY = 200


class LinkFact(NamedTuple):
    """A link as the index keeps it: what resolution needs, and what an answer shows."""

    target: str  # the path part, decoded; "" for a heading of the note itself
    markdown: bool  # [text](path) rather than [[path]]: resolved relative to the note first
    line: int  # 1-based
    raw: str  # the link as written (a front matter link: its value)
    column: int  # 1-based, where raw starts on its line

    @classmethod
    def of(cls, link: Link) -> LinkFact:
        # Names and targets repeat across a vault (everyone links [[Ada]]): one string each.
        return cls(sys.intern(link.target), link.syntax == "markdown", link.line, sys.intern(link.raw), link.column)


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
            self.links = tuple(LinkFact.of(link) for link in parse_links(note))
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
    """Facts kept below the memory, for one project (``vault/index_db.py``'s ``IndexStore``)."""

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


#: A note's broken and ambiguous links, found as its links are resolved (only notes with some are kept).
Flagged = tuple[tuple[BrokenLink, ...], tuple[AmbiguousLink, ...]]


class LinkGraph:
    """The notes' links resolved against one set of vault paths.

    ``notes`` maps each Markdown note read to (its content hash, its links, where each resolves:
    a path, or None when it resolves to no file); ``flagged``: the broken and ambiguous links of those
    of them that have some.
    """

    def __init__(self, vault: VaultPaths, notes: dict[str, Resolved], flagged: dict[str, Flagged]) -> None:
        self.vault = vault
        self.notes = notes
        self._flagged = flagged

    def outgoing(self, path: str) -> list[tuple[LinkFact, str | None]]:
        """The links of the note at ``path``, in order, each with the file it resolves to."""
        found = self.notes.get(path)
        return list(zip(found[1], found[2], strict=True)) if found is not None else []

    def incoming(self, path: str) -> list[Backlink]:
        """The links in other notes that resolve to ``path``, by source path and line."""
        found = []
        for source in self._sources.get(path, ()):
            _, links, targets = self.notes[source]
            found += [Backlink(source, link) for link, target in zip(links, targets, strict=True) if target == path]
        return found

    @cached_property
    def _sources(self) -> dict[str, list[str]]:
        """By file, the notes with a link to it, by path: a path per note, not an object per link (a vault of
        100,000 notes has 1.5 million links)."""
        found: dict[str, list[str]] = {}
        for source in sorted(self.notes):
            _, _, targets = self.notes[source]
            for target in dict.fromkeys(targets):
                if target is not None and target != source:
                    found.setdefault(target, []).append(source)
        return found

    def broken(self) -> list[BrokenLink]:
        """The links of the graph's notes that resolve to no file, by note and line."""
        return [item for source in self._flagged_sources for item in self._flagged[source][0]]

    def ambiguous(self) -> list[AmbiguousLink]:
        """The links of the graph's notes that resolve to one of several files of their name, by note and line."""
        return [item for source in self._flagged_sources for item in self._flagged[source][1]]

    @cached_property
    def _flagged_sources(self) -> list[str]:
        """The notes with a broken or ambiguous link, by path: the few to look at, not every note of the vault."""
        return sorted(self._flagged)


def flagged_links(vault: VaultPaths, source: str, links: Sequence[LinkFact], targets: Sequence[str | None]) -> Flagged:
    """The links of the note at ``source`` that resolve to no file, and those that name a file several share."""
    broken: list[BrokenLink] = []
    ambiguous: list[AmbiguousLink] = []
    for link, target in zip(links, targets, strict=True):
        if target is None:
            broken.append(BrokenLink(source, link))
            continue
        others = vault.alternatives(link.target, source, markdown=link.markdown)
        if others:
            ambiguous.append(AmbiguousLink(source, link, target, tuple(others)))
    return tuple(broken), tuple(ambiguous)


Resolved = tuple[str, tuple[LinkFact, ...], tuple[str | None, ...]]  # (content hash, links, where each resolves)


class _Resolutions:
    """One project's links resolved against one set of its paths: by note, and the last graph made of them.

    ``names``: by note, the :func:`~teamvault_mcp.text.resolution.name_key` of each of its links' targets, so that
    when files come or go only the notes linking to a name they have are resolved again (:meth:`changed`).
    """

    def __init__(self, vault: VaultPaths) -> None:
        self.vault = vault
        self.by_path: dict[str, Resolved] = {}
        self.names: dict[str, frozenset[str | None]] = {}
        self.flagged: dict[str, Flagged] = {}
        self.last: LinkGraph | None = None

    def resolve(self, path: str, content_hash: str, links: tuple[LinkFact, ...]) -> Resolved:
        """The note's links resolved, kept with their names and the broken and ambiguous ones among them."""
        targets = tuple(self.vault.resolve(link.target, path, markdown=link.markdown) for link in links)
        resolved = self.by_path[path] = (content_hash, links, targets)
        self.names[path] = frozenset(name_key(link.target) for link in links)
        flagged = flagged_links(self.vault, path, links, targets)
        if flagged[0] or flagged[1]:
            self.flagged[path] = flagged
        else:
            self.flagged.pop(path, None)
        return resolved

    def changed(self, all_paths: frozenset[str]) -> _Resolutions:
        """These resolutions for the vault's new ``all_paths``: a note keeps its resolved links unless one of
        them names a file that came or went (or ends in ``.``, ``..`` or ``/``: anything may change it)."""
        after = _Resolutions(self.vault.changed(all_paths))
        touched: set[str | None] = {None, *names_of(self.vault.paths ^ all_paths)}  # None: a target of any name
        for path, resolved in self.by_path.items():
            names = self.names[path]
            if path in all_paths and names.isdisjoint(touched):
                after.by_path[path] = resolved
                after.names[path] = names
                if path in self.flagged:
                    after.flagged[path] = self.flagged[path]
        return after


class NoteIndex:
    """The facts of every content seen, and each project's resolved links; shared by all calls.

    Besides the facts (bounded by :class:`FactsIndex`), each of the last :data:`GRAPHS_KEPT`
    projects keeps the resolved links of its notes as last read (at most one vault's links), and its tallies.
    """

    def __init__(
        self, max_bytes: int = FACTS_BYTES, *, stores: Callable[[str], FactsStore | None] | None = None
    ) -> None:
        """``stores``: each project's :class:`FactsStore` (None, or a store of None: memory only)."""
        self.facts = FactsIndex(max_bytes)
        self._stores = stores
        self._projects: OrderedDict[str, _Resolutions] = OrderedDict()
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
            return self._resolutions(project_id, frozenset(paths)).vault

    def known_links(self, project_id: str, paths: Iterable[str]) -> dict[str, tuple[str, tuple[LinkFact, ...]]]:
        """The notes whose links the project's resolutions hold for the vault's ``paths`` (every live file): path →
        (content hash, links). A note listed with that hash needs no facts read for :meth:`graph`: a vault's
        links are more than memory keeps of its facts."""
        with self._lock:
            state = self._resolutions(project_id, frozenset(paths))
            return {path: (resolved[0], resolved[1]) for path, resolved in state.by_path.items()}

    def graph(
        self,
        project_id: str,
        paths: Iterable[str],
        notes: Mapping[str, tuple[str, tuple[LinkFact, ...]]],
        *,
        keep: bool = True,
        stop: Callable[[], bool] | None = None,
    ) -> LinkGraph:
        """The links of ``notes`` (path → (content hash, links)) resolved against the vault's ``paths`` (every
        live file, attachments too); the project's last kept graph again when nothing changed.

        ``keep``: this graph is the one to reuse next time (it holds every note: its backlinks are worth
        keeping); a graph of some notes only (one folder's) is not kept, so it does not displace that one.
        ``stop``: asked now and then while links are resolved; when it says so, the graph holds the notes resolved
        by then (and is not kept): what was resolved is, for the next call.
        """
        all_paths = frozenset(paths)
        with self._lock:  # resolving a whole vault takes a moment; calls for the same index wait for it
            state = self._resolutions(project_id, all_paths)
            last = state.last
            if last is not None and _same_notes(last, notes):
                return last
            resolved: dict[str, Resolved] = {}
            fresh, stopped = 0, False
            for path, (content_hash, links) in notes.items():
                known = state.by_path.get(path)
                if known is None or known[0] != content_hash:
                    fresh += 1
                    stopped = stopped or (stop is not None and fresh % STOP_EVERY == 0 and stop())
                    if stopped:
                        continue
                    known = state.resolve(path, content_hash, links)
                    self.resolved += len(links)
                resolved[path] = known
            flagged = {path: state.flagged[path] for path in resolved if path in state.flagged}
            graph = LinkGraph(state.vault, resolved, flagged)
            if keep and not stopped:
                state.last = graph
            return graph

    def _resolutions(self, project_id: str, all_paths: frozenset[str]) -> _Resolutions:
        """The project's resolutions for these paths (new ones when its paths changed); under the lock."""
        state = self._projects.get(project_id)
        if state is None:
            state = self._projects[project_id] = _Resolutions(VaultPaths(all_paths))
        elif state.vault.paths is not all_paths and state.vault.paths != all_paths:
            state = self._projects[project_id] = state.changed(all_paths)
        self._projects.move_to_end(project_id)
        while len(self._projects) > GRAPHS_KEPT:
            self._projects.popitem(last=False)
        return state


def _same_notes(graph: LinkGraph, notes: Mapping[str, tuple[str, tuple[LinkFact, ...]]]) -> bool:
    """Whether ``graph`` was made of exactly these notes, each with the same content."""
    return len(graph.notes) == len(notes) and all(
        graph.notes.get(path, ("",))[0] == entry[0] for path, entry in notes.items()
    )
