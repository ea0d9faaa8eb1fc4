"""What ``list_tags``, ``list_tasks`` and ``query_notes`` read of every note, kept from call to call: each note's
share, by path, and the sums of the shares, as notes come, change and go. No I/O.

Counting every note's tags or tasks anew meant reading all their facts back: at 100,000 notes more than
memory keeps (``noteindex.FactsIndex``), so every call read them from the store again (4 s). A :class:`Tally`
keeps of each note only what the counts need — a :class:`TagShare` or a :class:`TaskShare`, a few strings and
numbers; for ``query_notes`` a :class:`FieldShare`, the note's front matter fields — with the content hash it
was made from. A call hands it the listing (:meth:`Tally.stale`: the notes
to read again; the shares of changed notes and of notes gone are dropped at once, so nothing out of date is
ever counted), then the shares of the notes it read (:meth:`Tally.take`), and answers from :meth:`Tally.shares`
(and, for the whole vault, the tags' running sums :meth:`TagTally.pairs`, for ``tags.counted_tags``).
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from teamvault_mcp.text.lastseen import LastSeen
from teamvault_mcp.text.properties import own_fields
from teamvault_mcp.text.tags import NoteTags, tag_key, tag_levels
from teamvault_mcp.text.tasks import Task


class Listed(Protocol):
    """A listed note, as far as a tally needs it."""

    @property
    def path(self) -> str: ...

    @property
    def content_hash(self) -> str | None: ...


class TagShare(NamedTuple):
    """One note's part in ``list_tags``."""

    #: The note's tags as written, in order (front matter first).
    names: tuple[str, ...]
    #: Each tag at each level, case folded, with the note's first spelling of it.
    spellings: tuple[tuple[str, str], ...]
    #: Front matter tags that are no valid tag.
    rejected: tuple[str, ...]
    size: int

    @classmethod
    def of(cls, tags: NoteTags | None, size: int) -> TagShare:
        if tags is None:
            return cls((), (), (), size)
        names = tuple(sys.intern(tag.name) for tag in tags.tags)
        spellings = tuple(_pair(key, name) for key, name in tags.spellings.items())
        return cls(names, spellings, tags.rejected, size)

    @property
    def kept(self) -> int:
        return len(self.names)

    def carries(self, key: str) -> bool:
        """Whether the note carries the tag ``key`` (case folded) or one nested under it."""
        return any(level == key for level, _ in self.spellings)

    def names_under(self, key: str) -> list[str]:
        """The note's tags that are ``key`` or nested under it, as written, each once."""
        return list(dict.fromkeys(name for name in self.names if key in map(tag_key, tag_levels(name))))


#: (tag key, spelling) pairs shared by every share that has them: a vault's notes repeat a few hundred tags, and a
#: pair of its own per note and level was 1 KB a note (100 MB at 100,000 notes). Emptied when it holds this many.
PAIRS_KEPT = 100_000
_PAIRS: dict[tuple[str, str], tuple[str, str]] = {}


def _pair(key: str, name: str) -> tuple[str, str]:
    pair = (sys.intern(key), sys.intern(name))
    found = _PAIRS.get(pair)
    if found is None:
        if len(_PAIRS) >= PAIRS_KEPT:
            _PAIRS.clear()  # a new one is as good, only not shared with the pairs made before
        found = _PAIRS.setdefault(pair, pair)
    return found


class TaskShare(NamedTuple):
    """One note's part in ``list_tasks``: how many of its tasks are open and how many done (or cancelled)."""

    open: int
    done: int
    size: int

    @classmethod
    def of(cls, tasks: Iterable[Task] | None, size: int) -> TaskShare:
        done = opened = 0
        for task in tasks or ():
            if task.done:
                done += 1
            else:
                opened += 1
        return cls(opened, done, size)

    @property
    def kept(self) -> int:
        return self.open + self.done

    def count(self, status: str) -> int:
        """The note's tasks with ``status`` (``open``, ``done`` or ``all``, as ``tasks.select_tasks``)."""
        return {"open": self.open, "done": self.done}.get(status, self.open + self.done)


class FieldShare(NamedTuple):
    """One note's part in ``query_notes``: the fields of its front matter a query reads (``properties.own_fields``:
    the values as read, shared with its facts, never changed), their names, and whether its front matter could not
    be read."""

    fields: Mapping[str, Any]
    names: tuple[str, ...]  # of the fields named by a string (the only ones a query can name)
    unreadable: bool
    size: int

    @classmethod
    def of(cls, front_matter: tuple[Mapping[str, Any], str | None] | None, size: int) -> FieldShare:
        fields, problem = front_matter or ({}, None)
        own = own_fields(fields)
        names = tuple(sys.intern(name) for name in own if isinstance(name, str))
        return cls(own, names, bool(problem), size)

    @property
    def kept(self) -> int:
        return len(self.fields)


Share = TypeVar("Share", TagShare, TaskShare, FieldShare)


class Tally(Generic[Share]):
    """Each note's share by path, with the content hash it was made from; thread-safe."""

    def __init__(self) -> None:
        self._hashes: dict[str, str] = {}
        self._shares: dict[str, Share] = {}
        self._lock = threading.Lock()
        #: Counts every share taken or dropped: a tally checked against a listing, and unchanged since, is still true
        #: of it (a big vault's listing is reused for a moment, ``listings.py``).
        self._changes = 0
        self._checked: tuple[str | None, int, int] | None = None  # prefix, changes, notes of the listing seen
        self._checked_listing = LastSeen()  # weakly: a tally keeps no listing alive

    def __len__(self) -> int:
        return len(self._shares)

    def stale(self, notes: Iterable[Listed], prefix: str | None = None) -> list[Listed]:
        """The ``notes`` (the vault's Markdown notes under ``prefix``, all of them) whose share is missing or made
        from other content; the shares of those, and of every note under ``prefix`` no longer listed, are dropped."""
        stale: list[Listed] = []
        listed: set[str] = set()
        with self._lock:
            hashes = self._hashes
            for note in notes:
                listed.add(note.path)
                kept = hashes.get(note.path)
                if kept is None or note.content_hash is None or kept != note.content_hash:
                    stale.append(note)
                    if kept is not None:
                        self._drop(note.path)
            for path in [p for p in hashes if p not in listed and (prefix is None or p.startswith(prefix))]:
                self._drop(path)
        return stale

    def checked(self, listing: object, prefix: str | None, notes: int) -> None:
        """Say that the tally was just brought up to date with ``listing`` (of ``notes`` notes under ``prefix``)."""
        with self._lock:
            self._checked = (prefix, self._changes, notes)
            self._checked_listing.remember(listing)

    def still(self, listing: object, prefix: str | None) -> int | None:
        """The number of notes of ``listing`` under ``prefix`` when the tally was last brought up to date with this
        very listing (the same object) and has not changed since; None otherwise."""
        with self._lock:
            last = self._checked
            if last is None or not self._checked_listing.is_same(listing) or last[:2] != (prefix, self._changes):
                return None
            return last[2]

    def take(self, path: str, content_hash: str, share: Share) -> None:
        """The share of the note at ``path``, made from the content with ``content_hash``."""
        with self._lock:
            if path in self._shares:
                self._drop(path)
            self._hashes[path] = content_hash
            self._shares[path] = share
            self._changes += 1
            self._counted(share, 1)

    def shares(self, prefix: str | None = None) -> dict[str, Share]:
        """The shares of the notes counted under ``prefix`` (None: all), by path, in no particular order."""
        with self._lock:
            if prefix is None:
                return dict(self._shares)  # a copy of the table, not 100,000 new pairs
            return {path: share for path, share in self._shares.items() if path.startswith(prefix)}

    def _drop(self, path: str) -> None:
        del self._hashes[path]
        self._changes += 1
        self._counted(self._shares.pop(path), -1)

    def _counted(self, share: Share, sign: int) -> None:
        """Keep the running sums (none here): called with the lock held as a share comes (1) or goes (-1)."""


class TagTally(Tally[TagShare]):
    """The tags' tally, with the whole vault's sums kept as shares come and go: a count needs no walk."""

    def __init__(self) -> None:
        super().__init__()
        self._pairs: Counter[tuple[str, str]] = Counter()

    def pairs(self) -> Counter[tuple[str, str]]:
        """How many notes of the whole vault spell each tag (case folded) each way."""
        with self._lock:
            return +self._pairs

    def _counted(self, share: TagShare, sign: int) -> None:
        for pair in share.spellings:
            self._pairs[pair] += sign


def spelled(shares: Iterable[TagShare]) -> Counter[tuple[str, str]]:
    """How many of the notes with ``shares`` spell each tag (case folded) each way."""
    pairs: Counter[tuple[str, str]] = Counter()
    for share in shares:
        pairs.update(share.spellings)
    return pairs


@dataclass
class Tallies:
    """A project's tallies."""

    tags: TagTally = field(default_factory=TagTally)
    tasks: Tally[TaskShare] = field(default_factory=Tally)
    fields: Tally[FieldShare] = field(default_factory=Tally)

    def take(
        self,
        path: str,
        content_hash: str,
        size: int,
        tags: NoteTags | None,
        tasks: Iterable[Task] | None,
        front_matter: tuple[Mapping[str, Any], str | None] | None,
    ) -> None:
        """The shares of a note whose tags, tasks and front matter were read (the warm-up's index, as it goes)."""
        self.tags.take(path, content_hash, TagShare.of(tags, size))
        self.tasks.take(path, content_hash, TaskShare.of(tasks, size))
        self.fields.take(path, content_hash, FieldShare.of(front_matter, size))
