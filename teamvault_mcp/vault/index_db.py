"""The persistent index of one project: its notes' parsed facts and its last listing, in SQLite, beside the cache.

One database per server and project, ``<root>/<namespace>/index.sqlite`` (0600, in the
content cache's 0700 directory): the parts of :class:`~teamvault_mcp.text.noteindex.NoteFacts`
by content hash, as the compact JSON ``text/noteindex.py`` writes (this module never reads
it), the project's last whole listing (path, id, contentHash, size, mtime), the words of the
search index (``terms_db.py``) and the resolved links (``text/linkdb.py``). A content's facts
do not change, so a row is true as long as it exists: a changed note is parsed once, an
unchanged one never, and a restart parses and resolves nothing.

Nothing in the file is trusted: ``PRAGMA user_version`` holds :data:`SCHEMA_VERSION` with the
facts' own version (``FACTS_VERSION``, bumped when a parser changes what it finds); a file of
another version, or one SQLite finds corrupt on open or on a read (``sqlite3.DatabaseError``),
is deleted and made again, empty. A store that cannot be opened at all is off: the facts then
live in memory only, as with ``TEAM_VAULT_CACHE_DIR=off``.

Several processes may share the file: WAL, a busy timeout, and the open-check-rebuild done
under an exclusive ``flock`` of ``index.lock``, so two processes never rebuild each other's
fresh file. Each write batch (one call's new facts) is one transaction. One connection per
store, used under a lock: reads are index lookups, far shorter than the parse they save.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from teamvault_mcp.text import linkdb
from teamvault_mcp.text.lastseen import LastSeen
from teamvault_mcp.text.noteindex import ListedFile, ListingRow
from teamvault_mcp.vault import terms_db

log = logging.getLogger(__name__)

#: The layout of the tables below; a file of another layout is made again.
SCHEMA_VERSION = 3
#: How long a write waits for another process's transaction (milliseconds).
BUSY_TIMEOUT_MS = 10_000
INDEX_FILE = "index.sqlite"
LOCK_FILE = "index.lock"
_SIDE_FILES = ("-wal", "-shm", "-journal")
#: The write-ahead log is cut back to this after a checkpoint (it would otherwise stay at its largest).
WAL_KEPT_BYTES = 4 * 1024 * 1024
_CHECKPOINT_ROWS = 1000
_CHUNK = 500  # hashes per SELECT … IN (…): well below SQLite's variable limit

_SCHEMA: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS facts (hash TEXT NOT NULL, part TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY (hash, part))",
    "CREATE TABLE IF NOT EXISTS notes (path TEXT PRIMARY KEY, id TEXT, content_hash TEXT, size INTEGER,"
    " mtime TEXT) WITHOUT ROWID",
    *terms_db.SCHEMA,
    *linkdb.SCHEMA,
)


@functools.cache
def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (the full-text search the index's search will use)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as connection:
            connection.execute("CREATE VIRTUAL TABLE probe USING fts5(body)")
        return True
    except sqlite3.Error:
        return False


def sqlite_build() -> str:
    """This Python's SQLite in a few words, for ``check`` and the start-up log: its version, and FTS5 or not."""
    if fts5_available():
        return f"SQLite {sqlite3.sqlite_version} with FTS5"
    return f"SQLite {sqlite3.sqlite_version} without FTS5 (the index cannot hold full-text search)"


class IndexStore:
    """The facts and the listing of one project on disk (see the module docstring); thread-safe."""

    def __init__(self, directory: Path, facts_version: int) -> None:
        self.directory = directory
        self.path = directory / INDEX_FILE
        self.user_version = SCHEMA_VERSION * 1000 + facts_version
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._failed = False  # could not be opened even afresh: off for this process
        self._listing_digest: int | None = None
        self._listing_saved = LastSeen()  # the listing those rows came from, weakly: kept alive by its users only
        #: Files found foreign or corrupt and made again: how tests see a rebuild.
        self.rebuilt = 0
        #: Which file the open connection is on: a count of the files made again (what was read of the last one
        #: is not true of the next).
        self.generation = 0
        #: Whether the file has the words' trigram index (made when this SQLite has FTS5).
        self.has_fts = False
        #: The search index's tables, in this same file.
        self.terms = terms_db.TermIndex(self)
        #: The project's links resolved (``text/linkdb.py``), in this same file.
        self.links = linkdb.LinkTable(self)

    # -- what the facts index asks ------------------------------------------------------------------

    def load(self, hashes: Collection[str], parts: Collection[str]) -> dict[str, dict[str, str]]:
        """The stored parts of these contents: hash → part → its JSON (only what is stored)."""
        found: dict[str, dict[str, str]] = {}
        wanted = list(dict.fromkeys(hashes))
        part_marks = ",".join("?" * len(parts))
        with self.session() as connection:
            if connection is None:
                return found
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                rows = connection.execute(
                    f"SELECT hash, part, value FROM facts WHERE hash IN ({','.join('?' * len(chunk))})"
                    f" AND part IN ({part_marks})",
                    [*chunk, *parts],
                )
                for content_hash, part, value in rows:
                    found.setdefault(content_hash, {})[part] = value
        return found

    def save(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """Keep (hash, part, JSON) rows, in one transaction."""
        if not rows:
            return
        with self.session() as connection:
            if connection is not None:
                with _transaction(connection):
                    connection.executemany("INSERT OR REPLACE INTO facts (hash, part, value) VALUES (?, ?, ?)", rows)
                if len(rows) >= _CHECKPOINT_ROWS:  # copied into the file now, so the next write cuts the log back
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)")

    # -- the listing --------------------------------------------------------------------------------

    def save_listing(self, files: Sequence[ListedFile]) -> None:
        """Keep the project's whole listing (when it differs from the last one kept by this process), and drop
        the facts of contents no note has any more: the file holds one vault's facts, not its history."""
        if self._listing_saved.is_same(files):  # a listing reused by several calls (``listings.py``): kept once
            return
        rows = [(file.path, file.id, file.content_hash, file.size, file.updated_at) for file in files]
        digest = hash(tuple(rows))
        if digest == self._listing_digest:
            self._listing_saved.remember(files)
            return
        with self.session() as connection:
            if connection is None:
                return
            with _transaction(connection):
                connection.execute("DELETE FROM notes")
                connection.executemany(
                    "INSERT OR REPLACE INTO notes (path, id, content_hash, size, mtime) VALUES (?, ?, ?, ?, ?)", rows
                )
                connection.execute("DELETE FROM facts WHERE hash NOT IN (SELECT content_hash FROM notes)")
            self._listing_digest = digest
            self._listing_saved.remember(files)

    def listing(self) -> list[ListingRow]:
        """The last whole listing kept, by path."""
        with self.session() as connection:
            if connection is None:
                return []
            return list(connection.execute("SELECT path, id, content_hash, size, mtime FROM notes ORDER BY path"))

    # -- the file -----------------------------------------------------------------------------------

    def size(self) -> int:
        """Bytes the store takes on disk (the database and its write-ahead log)."""
        total = 0
        for suffix in ("", *_SIDE_FILES):
            with contextlib.suppress(OSError):
                total += os.stat(f"{self.path}{suffix}", follow_symlinks=False).st_size
        return total

    def integrity(self) -> str:
        """``PRAGMA integrity_check``'s answer: ``ok`` for a sound file."""
        with self.session() as connection:
            if connection is None:
                return "off"
            return "; ".join(str(row[0]) for row in connection.execute("PRAGMA integrity_check"))

    @staticmethod
    def transaction(connection: sqlite3.Connection) -> contextlib.AbstractContextManager[None]:
        """One write transaction on ``connection`` (of :meth:`session`), rolled back on any error."""
        return _transaction(connection)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    @contextlib.contextmanager
    def session(self) -> Iterator[sqlite3.Connection | None]:
        """The open connection (None when the store is off), under the lock; a corrupt file found on the way is
        deleted, to be made again by the next use (this use answers without it)."""
        with self._lock:
            if self._connection is None and not self._failed:
                self._connection = self._open()
            try:
                yield self._connection
            except sqlite3.Error as error:
                if not _corrupt(error):  # busy past the timeout, a full disk: this batch goes without
                    log.warning("the index %s could not be used: %s", self.path, error)
                    return
                log.warning("the index %s is unreadable (%s); it is made again", self.path, error)
                self._discard()

    def _discard(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None
        with self._file_lock():
            self._delete_files()
        self.rebuilt += 1
        self.generation += 1
        self._listing_digest = None
        self._listing_saved.forget()

    def _open(self) -> sqlite3.Connection | None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            with self._file_lock():
                for attempt in range(2):
                    try:
                        return self._connect()
                    except (sqlite3.Error, _ForeignVersion) as error:
                        if attempt or not (isinstance(error, _ForeignVersion) or _corrupt(error)):
                            raise  # made again once; a busy or locked file is another process's, not corrupt
                        log.warning(
                            "the index %s is not one this version reads (%s); it is made again", self.path, error
                        )
                        self._delete_files()
                        self.rebuilt += 1
                        self.generation += 1
        except (OSError, sqlite3.Error, _ForeignVersion) as error:
            log.warning("the index %s cannot be used (%s); the facts stay in memory only", self.path, error)
        self._failed = True
        return None

    def _connect(self) -> sqlite3.Connection:
        """Open the file (made 0600), checked and with its tables; under the file lock."""
        handle = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.close(handle)
        connection = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            tables = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if version != self.user_version and (version != 0 or tables):
                raise _ForeignVersion(f"user_version {version}, expected {self.user_version}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute(f"PRAGMA journal_size_limit = {WAL_KEPT_BYTES}")
            if version == 0:
                with _transaction(connection):
                    for statement in (*_SCHEMA, *(terms_db.FTS_SCHEMA if fts5_available() else ())):
                        connection.execute(statement)
                    connection.execute(f"PRAGMA user_version = {self.user_version}")
            connection.execute("SELECT count(*) FROM facts WHERE hash = ''").fetchone()  # the tables are readable
            connection.execute("SELECT count(*) FROM texts WHERE id = 0").fetchone()
            connection.execute("SELECT revision FROM link_state").fetchone()
            self.has_fts = (
                connection.execute("SELECT count(*) FROM sqlite_master WHERE name = 'words_fts'").fetchone()[0] == 1
                and fts5_available()
            )
        except BaseException:
            connection.close()
            raise
        return connection

    def _delete_files(self) -> None:
        for suffix in ("", *_SIDE_FILES):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        """Held while the file is checked, made or deleted: by one process at a time."""
        handle = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield
        finally:
            os.close(handle)


def _corrupt(error: sqlite3.Error) -> bool:
    """Whether ``error`` says the file is damaged or no database (so it is made again): a busy, locked or
    unreachable file (``OperationalError``, which is also a ``DatabaseError``) is in use or out of reach, and is
    left as it is."""
    return isinstance(error, sqlite3.DatabaseError) and not isinstance(error, sqlite3.OperationalError)


class _ForeignVersion(Exception):
    """The file was made by another schema or facts version."""


_transaction = linkdb.transaction
