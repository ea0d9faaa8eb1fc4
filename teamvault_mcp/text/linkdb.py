"""A project's links resolved, in SQLite: every note's links with the file each resolves to, and the paths resolved
against, so that a backlink, a broken link or an ambiguous one is an index lookup, not a walk of the vault in memory.

The tables (:data:`SCHEMA`) live in the project's ``index.sqlite`` (``vault/index_db.py``) and so survive a
restart; with no store they live in a private in-memory database (:class:`MemoryLinks`), the same code either way.

- ``link_paths``: every live file the rows were resolved against, with the row id by which ``links`` names notes
  and files (a path written once, not in every link and every index entry: half the file's size); for a note
  resolved, the content hash its links were read from and how many it has;
- ``links``: each of its links (in order: ``n``), as written, with its :func:`~teamvault_mcp.text.resolution.name_key`
  and where it resolves (NULL: to no file) and whether it names a file several share;
- ``link_state.revision`` counts the changes of the paths.

When files come or go (:meth:`LinkTable.sync`), the notes with a link to one of their names (or a link whose name
any file may change: ``name`` NULL) are resolved again from their rows, and only those; a note whose path went is
dropped. A changed note is written again whole (:meth:`LinkTable.write`). Paths, targets and links as written are
kept as UTF-8 BLOBs with surrogates passed through: a listing's path may hold a lone surrogate, and byte order is
then code point order, as Python sorts. Each write is one transaction, checked against the revision it was worked
out for: another process that changed the paths meanwhile wins, and this one resolves again next time.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import NamedTuple, Protocol, TypeVar

from teamvault_mcp.text.resolution import VaultPaths, name_key, names_of

SCHEMA: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS link_paths (id INTEGER PRIMARY KEY AUTOINCREMENT, path BLOB NOT NULL UNIQUE,"
    " hash TEXT, links INTEGER)",
    "CREATE TABLE IF NOT EXISTS links (source INTEGER NOT NULL, n INTEGER NOT NULL, target BLOB NOT NULL,"
    " markdown INTEGER NOT NULL, line INTEGER NOT NULL, raw BLOB NOT NULL, col INTEGER NOT NULL, name BLOB,"
    " resolved INTEGER, ambiguous INTEGER NOT NULL, PRIMARY KEY (source, n)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS links_by_target ON links (resolved, source, n)",
    "CREATE INDEX IF NOT EXISTS links_by_name ON links (name)",
    "CREATE INDEX IF NOT EXISTS links_ambiguous ON links (source, n) WHERE ambiguous",
    "CREATE TABLE IF NOT EXISTS link_state (id INTEGER PRIMARY KEY CHECK (id = 1), revision INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO link_state (id, revision) VALUES (1, 0)",
)
_CHUNK = 500  # values per … IN (…)
V = TypeVar("V")
_LINK = "l.target, l.markdown, l.line, l.raw, l.col"
_ID = "(SELECT id FROM link_paths WHERE path = ?)"  # a path's row: links and notes name files by it
#: A link with its note's path and the path it resolves to; the links first (CROSS JOIN keeps SQLite to that order),
#: found by the index the WHERE names, never by a walk of every path (63 ms for no ambiguous link at 20,000 notes).
_JOINED = "FROM links l CROSS JOIN link_paths p ON p.id = l.source LEFT JOIN link_paths r ON r.id = l.resolved"


class LinkFact(NamedTuple):
    """A link as the index keeps it: what resolution needs, and what an answer shows."""

    target: str  # the path part, decoded; "" for a heading of the note itself
    markdown: bool  # [text](path) rather than [[path]]: resolved relative to the note first
    line: int  # 1-based
    raw: str  # the link as written (a front matter link: its value)
    column: int  # 1-based, where raw starts on its line


#: A link and the file it resolves to (None: none), of the note ``source``.
Row = tuple[str, LinkFact, str | None]


class Store(Protocol):
    """What the table needs of its file (``vault/index_db.IndexStore``, or :class:`MemoryLinks`)."""

    generation: int  # which file the connection is on (counted up each time it is made again)

    def session(self) -> contextlib.AbstractContextManager[sqlite3.Connection | None]: ...

    def transaction(self, connection: sqlite3.Connection) -> contextlib.AbstractContextManager[None]: ...


def _blob(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _text(blob: bytes) -> str:
    return blob.decode("utf-8", "surrogatepass")


@contextlib.contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """One write transaction on ``connection`` (opened with ``isolation_level=None``), rolled back on any error."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


class MemoryLinks:
    """The link tables in a private in-memory database: a project's links when it has no store on disk."""

    generation = 0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        for statement in SCHEMA:
            self._connection.execute(statement)

    @contextlib.contextmanager
    def session(self) -> Iterator[sqlite3.Connection | None]:
        with self._lock:
            yield self._connection

    @staticmethod
    def transaction(connection: sqlite3.Connection) -> contextlib.AbstractContextManager[None]:
        return transaction(connection)


class LinkTable:
    """One project's resolved links (see the module docstring); thread-safe, through its store's session."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._fallback: MemoryLinks | None = None  # when the store cannot be opened at all
        #: (store generation, revision) that ``_paths`` is the paths of; a revision another process made is read.
        self._seen: tuple[int, int] = (-1, -1)
        self._paths: frozenset[str] = frozenset()

    @contextlib.contextmanager
    def _session(self) -> Iterator[tuple[sqlite3.Connection, Store]]:
        """The store's connection, or the private one when the store is off. An SQLite error on the way is the
        store's to handle (a corrupt file is made again), then :class:`LinksUnavailable` for the caller."""
        failed: sqlite3.Error | None = None
        with self._store.session() as connection:
            if connection is not None:
                try:
                    yield connection, self._store
                except sqlite3.Error as error:
                    failed = error
                    raise
                return
        if failed is not None:
            raise LinksUnavailable(str(failed)) from failed
        if self._fallback is None:
            self._fallback = MemoryLinks()
        with self._fallback.session() as memory:
            assert memory is not None
            yield memory, self._fallback

    # -- keeping it true ----------------------------------------------------------------------------

    def sync(self, vault: VaultPaths) -> int:
        """Bring the rows to ``vault``'s paths: the notes whose links a file that came or went may change are
        resolved again, those whose path went are dropped. How many links were resolved again."""
        again = 0
        with self._session() as (connection, store):
            if self._current(connection, store) and (self._paths is vault.paths or self._paths == vault.paths):
                self._paths = vault.paths
                return 0
            with store.transaction(connection):
                if not self._current(connection, store):
                    self._paths = frozenset(_text(row[0]) for row in connection.execute("SELECT path FROM link_paths"))
                revision = connection.execute("SELECT revision FROM link_state").fetchone()[0]
                if self._paths != vault.paths:
                    again = self._moved(connection, self._paths, vault)
                    revision += 1
                    connection.execute("UPDATE link_state SET revision = ?", (revision,))
                self._seen = (store.generation, revision)
            self._paths = vault.paths
        return again

    def _current(self, connection: sqlite3.Connection, store: Store) -> bool:
        """Whether ``_paths`` are the rows' paths (no other process changed them, the file is the same one)."""
        revision = connection.execute("SELECT revision FROM link_state").fetchone()[0]
        return self._seen == (store.generation, revision)

    def _moved(self, connection: sqlite3.Connection, before: frozenset[str], vault: VaultPaths) -> int:
        """Within a transaction: the rows from ``before``'s paths to ``vault``'s; links resolved again."""
        gone, came = before - vault.paths, vault.paths - before
        connection.executemany("INSERT OR IGNORE INTO link_paths (path) VALUES (?)", ((_blob(p),) for p in came))
        gone_ids = [row[0] for chunk in _chunks(sorted(gone)) for row in _ids(connection, chunk)]
        for ids in _chunks(gone_ids):
            marks = ",".join("?" * len(ids))
            connection.execute(f"DELETE FROM links WHERE source IN ({marks})", ids)
        affected: set[int] = {row[0] for row in connection.execute("SELECT source FROM links WHERE name IS NULL")}
        for names in _chunks(sorted(names_of(gone | came))):
            marks = ",".join("?" * len(names))
            rows = connection.execute(f"SELECT source FROM links WHERE name IN ({marks})", [_blob(n) for n in names])
            affected.update(row[0] for row in rows)
        again = 0
        for sources in _chunks(sorted(affected)):
            marks = ",".join("?" * len(sources))
            stored = [
                (source, n, _text(path), LinkFact(_text(target), bool(markdown), line, _text(raw), col))
                for source, n, path, target, markdown, line, raw, col in connection.execute(
                    f"SELECT l.source, l.n, p.path, {_LINK} {_JOINED} WHERE l.source IN ({marks})", sources
                )
            ]
            connection.executemany(
                f"UPDATE links SET resolved = {_ID}, ambiguous = ? WHERE source = ? AND n = ?",
                ((*_resolved(vault, path, link), source, n) for source, n, path, link in stored),
            )
            again += len(stored)
        for ids in _chunks(gone_ids):  # nothing resolves to them any more: each link to their names was again
            connection.execute(f"DELETE FROM link_paths WHERE id IN ({','.join('?' * len(ids))})", ids)
        return again

    def write(self, vault: VaultPaths, notes: Sequence[tuple[str, str, Sequence[LinkFact]]]) -> bool:
        """Keep these notes' (path, content hash, links) resolved against ``vault`` (which :meth:`sync` brought the
        rows to), replacing what was kept of them; False when another process changed the paths meanwhile (nothing
        is written: :meth:`sync` first)."""
        rows = [
            (path, content_hash, [(link, *_resolved(vault, path, link)) for link in links])
            for path, content_hash, links in notes
        ]
        with self._session() as (connection, store):
            with store.transaction(connection):
                if not self._current(connection, store) or self._paths is not vault.paths:
                    return False
                self._drop(connection, [path for path, _, _ in rows])
                connection.executemany(  # a note not among the paths (a caller's slip) gets a row all the same
                    "INSERT OR IGNORE INTO link_paths (path) VALUES (?)", ((_blob(path),) for path, _, _ in rows)
                )
                ids = {
                    _text(path): number
                    for chunk in _chunks([p for p, _, _ in rows])
                    for number, path in _ids(connection, chunk)
                }
                connection.executemany(
                    "UPDATE link_paths SET hash = ?, links = ? WHERE id = ?",
                    ((content_hash, len(links), ids[path]) for path, content_hash, links in rows),
                )
                connection.executemany(
                    "INSERT INTO links (source, n, target, markdown, line, raw, col, name, resolved, ambiguous)"
                    f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, {_ID}, ?)",
                    _link_rows(rows, ids),
                )
            return True

    def drop(self, paths: Collection[str]) -> None:
        """Forget the links of the notes at ``paths`` (changed, or no note any more)."""
        if paths:
            with self._session() as (connection, store), store.transaction(connection):
                self._drop(connection, paths)

    @staticmethod
    def _drop(connection: sqlite3.Connection, paths: Iterable[str]) -> None:
        for chunk in _chunks(sorted(paths)):
            ids = [row[0] for row in _ids(connection, chunk)]
            marks = ",".join("?" * len(ids))
            connection.execute(f"DELETE FROM links WHERE source IN ({marks})", ids)
            connection.execute(f"UPDATE link_paths SET hash = NULL, links = NULL WHERE id IN ({marks})", ids)

    # -- what the tools ask -------------------------------------------------------------------------

    def hashes(self) -> Known:
        """Every note resolved: path → (the content hash its links were read from, how many links it has)."""
        with self._session() as (connection, store):
            found = Known((store, store.generation))
            rows = connection.execute("SELECT path, hash, links FROM link_paths WHERE hash IS NOT NULL")
            for source, content_hash, links in rows:
                found[_text(source)] = (content_hash, links)
            return found

    def still(self, known: Known) -> bool:
        """Whether ``known`` was read from the file the table is on now (none was made again since)."""
        with self._session() as (_, store):
            return known.file == (store, store.generation)

    def outgoing(self, path: str) -> list[tuple[LinkFact, str | None]]:
        """The note's links in order, each with the file it resolves to."""
        with self._session() as (connection, _):
            query = f"SELECT {_LINK}, r.path {_JOINED} WHERE l.source = {_ID} ORDER BY l.n"
            return [(_link(row), _maybe(row[5])) for row in connection.execute(query, (_blob(path),))]

    def incoming(self, path: str) -> list[Row]:
        """The links in other notes that resolve to ``path``, by source path and order."""
        query = (
            f"SELECT p.path, {_LINK}, r.path {_JOINED} WHERE l.resolved = {_ID} AND p.path != ? ORDER BY p.path, l.n"
        )
        return self._rows(query, (_blob(path), _blob(path)))

    def broken(self) -> list[Row]:
        """The links that resolve to no file, by source path and order."""
        return self._rows(f"SELECT p.path, {_LINK}, NULL {_JOINED} WHERE l.resolved IS NULL ORDER BY p.path, l.n", ())

    def ambiguous(self) -> list[Row]:
        """The links that name a file several share, by source path and order."""
        return self._rows(f"SELECT p.path, {_LINK}, r.path {_JOINED} WHERE l.ambiguous ORDER BY p.path, l.n", ())

    def named(self, names: Collection[str]) -> list[Row]:
        """The links whose target's last segment (:func:`~teamvault_mcp.text.resolution.name_key`) is one of
        ``names``, with where each resolves, by source path and order."""
        marks = ",".join("?" * len(names))
        query = f"SELECT p.path, {_LINK}, r.path {_JOINED} WHERE l.name IN ({marks}) ORDER BY p.path, l.n"
        return self._rows(query, [_blob(name) for name in names])

    def _rows(self, query: str, parameters: Sequence[bytes]) -> list[Row]:
        """(note, link, where it resolves) of the rows of ``query`` (note path, link fields, resolved path)."""
        with self._session() as (connection, _):
            return [(_text(row[0]), _link(row[1:]), _maybe(row[6])) for row in connection.execute(query, parameters)]


class Known(dict[str, tuple[str, int]]):
    """:meth:`LinkTable.hashes`: path → (content hash, links), and which file it was read from."""

    def __init__(self, file: tuple[object, int]) -> None:
        super().__init__()
        self.file = file


class LinksUnavailable(Exception):
    """The store failed under a call (busy past its timeout, a full disk, a file found corrupt and made again)."""


def _ids(connection: sqlite3.Connection, paths: Sequence[str]) -> list[tuple[int, bytes]]:
    """(row id, path) of those of ``paths`` that have a row."""
    marks = ",".join("?" * len(paths))
    return list(
        connection.execute(f"SELECT id, path FROM link_paths WHERE path IN ({marks})", [_blob(p) for p in paths])
    )


def _link_rows(
    notes: Iterable[tuple[str, str, Sequence[tuple[LinkFact, bytes | None, int]]]], ids: dict[str, int]
) -> Iterator[tuple[object, ...]]:
    """The ``links`` rows of these notes' (path, hash, resolved links), each note by its path's row id."""
    for path, _, links in notes:
        source = ids[path]
        for n, (link, target, ambiguous) in enumerate(links):
            written = (_blob(link.target), int(link.markdown), link.line, _blob(link.raw), link.column)
            yield source, n, *written, _name(link.target), target, ambiguous


def _resolved(vault: VaultPaths, path: str, link: LinkFact) -> tuple[bytes | None, int]:
    """Where ``link`` of the note at ``path`` resolves (as stored), and whether it names a file several share."""
    target = vault.resolve(link.target, path, markdown=link.markdown)
    if target is None:
        return None, 0
    return _blob(target), int(bool(vault.alternatives(link.target, path, markdown=link.markdown)))


def _name(target: str) -> bytes | None:
    key = name_key(target)
    return None if key is None else _blob(key)


def _link(row: Sequence[object]) -> LinkFact:
    target, markdown, line, raw, column = row[:5]
    assert isinstance(target, bytes) and isinstance(raw, bytes) and isinstance(line, int) and isinstance(column, int)
    return LinkFact(_text(target), bool(markdown), line, _text(raw), column)


def _maybe(blob: object) -> str | None:
    return _text(blob) if isinstance(blob, bytes) else None


def _chunks(values: Sequence[V]) -> Iterator[Sequence[V]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]
