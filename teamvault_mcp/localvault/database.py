"""The local vault's SQLite database: its tables, their migrations, and a bounded pool of connections.

:class:`Database` opens ``data_dir/vault.sqlite3`` (private, WAL, ``synchronous=FULL``) and hands out
connections for reads and write transactions (``BEGIN IMMEDIATE``); the rules of the API on the tables
are :class:`~teamvault_mcp.localvault.store.Store`'s.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY, prefix TEXT NOT NULL, user_id TEXT NOT NULL, created_at TEXT NOT NULL,
    label TEXT, kind TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS projects (
    id TEXT PRIMARY KEY, slug TEXT NOT NULL UNIQUE, name TEXT NOT NULL, description TEXT,
    icon_emoji TEXT, owner_id TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS members (
    project_id TEXT NOT NULL, user_id TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (project_id, user_id));
CREATE TABLE IF NOT EXISTS files (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL, path TEXT NOT NULL, file_type TEXT NOT NULL,
    content_hash TEXT NOT NULL, size INTEGER NOT NULL, mime_type TEXT, deleted_at TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, last_modified_by TEXT,
    UNIQUE (project_id, path));
CREATE TABLE IF NOT EXISTS versions (
    id TEXT PRIMARY KEY, file_id TEXT NOT NULL, version_number INTEGER NOT NULL, content_hash TEXT NOT NULL,
    size INTEGER NOT NULL, author_id TEXT, message TEXT, created_at TEXT NOT NULL,
    UNIQUE (file_id, version_number));
CREATE TABLE IF NOT EXISTS operations (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, project_id TEXT NOT NULL, file_id TEXT NOT NULL, kind TEXT NOT NULL,
    path TEXT NOT NULL, new_path TEXT, content_hash TEXT, user_id TEXT, idempotency_key TEXT,
    created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS idempotency (
    user_id TEXT NOT NULL, method TEXT NOT NULL, route TEXT NOT NULL, key TEXT NOT NULL,
    fingerprint TEXT NOT NULL, status INTEGER NOT NULL, content_type TEXT, body BLOB NOT NULL,
    created_at REAL NOT NULL, headers TEXT, PRIMARY KEY (user_id, method, route, key));
CREATE INDEX IF NOT EXISTS idempotency_age ON idempotency (created_at);
"""

#: Columns added since the first release: (table, column, definition). A key from before ``kind``
#: existed was a start key (the generated one or an ``--api-key``), so it is retired at the next start.
MIGRATIONS = (
    ("api_keys", "label", "TEXT"),
    ("api_keys", "kind", "TEXT NOT NULL DEFAULT 'start'"),
    ("idempotency", "headers", "TEXT"),
)
DATABASE_FILE = "vault.sqlite3"
#: At most this many SQLite connections (two descriptors each); a request waits for a free one.
DATABASE_POOL = 16
POOL_WAIT = 30.0


class Database:
    """The vault's SQLite database. Thread-safe: a request takes a pooled connection and gives it back."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        # SQLite gives its -wal and -shm files the database file's mode: create it private.
        os.close(os.open(data_dir / DATABASE_FILE, os.O_RDWR | os.O_CREAT, 0o600))
        self._idle: queue.Queue[sqlite3.Connection] = queue.Queue()
        self._all: list[sqlite3.Connection] = []
        self._opening = 0  # connections being opened, counted against DATABASE_POOL
        self._all_lock = threading.Lock()
        self._closed = False
        with self.read() as db:
            db.executescript(SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Add the columns a database made by an earlier version lacks (once, even with two vaults starting)."""
        with self.write() as db:
            for table, column, definition in MIGRATIONS:
                columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                if column not in columns:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection from the pool; returned to it afterwards (the server makes a thread per client).

        The pool is bounded (DATABASE_POOL), so that many clients cannot use up the
        process's file descriptors through it; a request waits for a free connection.
        """
        db = self._take_connection()
        try:
            yield db
        finally:
            with self._all_lock:
                closed = self._closed
                if not closed:
                    self._idle.put(db)
            if closed:  # closed meanwhile: this connection's request was the last to use it
                db.close()

    def _take_connection(self) -> sqlite3.Connection:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._all_lock:
            if self._closed:
                raise sqlite3.OperationalError("the vault is closed")
            may_open = len(self._all) + self._opening < DATABASE_POOL
            if may_open:
                self._opening += 1
        if not may_open:
            try:
                return self._idle.get(timeout=POOL_WAIT)
            except queue.Empty:
                raise sqlite3.OperationalError(f"no free database connection within {POOL_WAIT:.0f} s") from None
        try:
            db = sqlite3.connect(self.data_dir / DATABASE_FILE, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a committed note survives a power cut
            db.execute("PRAGMA busy_timeout=10000")
        except BaseException:
            with self._all_lock:
                self._opening -= 1
            raise
        with self._all_lock:
            self._opening -= 1
            self._all.append(db)
        return db

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with self._connection() as db:
            yield db

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed if the block ends normally, rolled back if it raises."""
        with self._connection() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def connections(self) -> int:
        """How many SQLite connections the store has opened (they are pooled, not one per client)."""
        with self._all_lock:
            return len(self._all)

    def close(self) -> None:
        """Close the idle connections now, and each one in use when its request gives it back.

        A request thread may still be inside SQLite on its connection (the HTTP server's threads
        are not joined): closing that connection under it crashed the process.
        """
        with self._all_lock:
            self._closed = True
            idle = []
            with contextlib.suppress(queue.Empty):
                while True:
                    idle.append(self._idle.get_nowait())
            self._all.clear()
        for db in idle:
            with contextlib.suppress(sqlite3.Error):
                db.close()

    # -- blobs -----------------------------------------------------------------------------------
