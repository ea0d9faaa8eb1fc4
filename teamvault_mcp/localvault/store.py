"""The local vault's data: one directory holding a SQLite database and content-addressed blobs.

Everything the HTTP layer does to data goes through :class:`Store`. A write runs in
one SQLite transaction (``BEGIN IMMEDIATE``); the bytes it needs are written before
the transaction commits, to a temp file that is fsynced and renamed into a blob
named by its SHA-256. A crash therefore leaves either the old note or the new one,
never half of one, and a blob can be written twice without harm.

Domain failures are :class:`VaultError` with the status, code and message the real
server answers with (teamvault-api.md); the HTTP layer only serialises them.

The module holds the whole data model (tables, rows, every rule of the API on them) in one
place on purpose: the rules refer to each other (a folder move is file moves, a create
checks blockers), and splitting them would scatter one transaction's logic over files.
API keys beyond the lookup live in ``keys.py``, the data directory's modes in ``datadir.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mimetypes
import os
import queue
import secrets
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from teamvault_mcp.errors import InvalidPathError
from teamvault_mcp.localvault.preconditions import IfMatch, entity_tag
from teamvault_mcp.text.paths import stored_path_of

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

TEXT_SUFFIXES = (".md", ".txt", ".json", ".yml", ".yaml", ".csv")
#: Temp files of blobs being written; any left at start are from a crash (datadir.py removes them).
INCOMING_PREFIX = ".incoming-"
EDIT_ROLES = frozenset({"OWNER", "ADMIN", "EDITOR"})
FILE_FIELDS = "id, path, file_type, content_hash, size, mime_type, deleted_at, created_at, updated_at, last_modified_by"


class VaultError(Exception):
    """A failure with the real server's status, error code and message (and, for 412, the current hash)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        fields: dict[str, Any] | None = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields or {}  # more members of the error object, after code and message
        self.headers = headers


def not_found(message: str = "Файл не найден", code: str = "not_found") -> VaultError:
    return VaultError(404, code, message)


@dataclass(frozen=True)
class User:
    id: str
    email: str
    name: str | None


@dataclass(frozen=True)
class Change:
    """One write transaction: its connection, the project, the user, and the request's Idempotency-Key."""

    db: sqlite3.Connection
    project_id: str
    user: User
    key: str | None = None


@dataclass(frozen=True)
class RememberedAnswer:
    """A keyed write's answer as stored for replay (teamvault-api.md §11.2), with its ``ETag``."""

    fingerprint: str
    status: int
    content_type: str | None
    body: bytes
    headers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class FileRow:
    id: str
    path: str
    file_type: str
    content_hash: str
    size: int
    mime_type: str | None
    deleted_at: str | None
    created_at: str
    updated_at: str
    last_modified_by: str | None

    def as_json(self, *fields: str) -> dict[str, Any]:
        """The record in the server's JSON shape; ``size`` as a string, as Prisma's BigInt serialises."""
        full = {
            "id": self.id,
            "path": self.path,
            "fileType": self.file_type,
            "contentHash": self.content_hash,
            "size": str(self.size),
            "mimeType": self.mime_type,
            "deletedAt": self.deleted_at,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "lastModifiedById": self.last_modified_by,
        }
        return {name: full[name] for name in fields} if fields else full


#: The field sets of POST and PUT answers (teamvault-api.md §3.2, §3.4); a list gives every field (§3.1).
CREATE_FIELDS = ("id", "path", "fileType", "contentHash", "size", "mimeType", "createdAt", "updatedAt")
REPLACE_FIELDS = ("id", "path", "fileType", "contentHash", "size", "mimeType", "updatedAt")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    """A CUID-like id: opaque, URL-safe, 25 characters."""
    return "c" + uuid.uuid4().hex[:24]


def sha256_hex(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def new_api_key() -> str:
    """A key of the real server's form, ``osync_`` and 64 hex digits (256 random bits)."""
    return "osync_" + secrets.token_hex(32)


def key_hash(key: str) -> str:
    """What is stored of a key: its SHA-256 (unsalted; see keys.py for why that is enough)."""
    return sha256_hex(key.encode("utf-8", errors="surrogateescape"))


def key_prefix(key: str) -> str:
    """The part of a key kept in the clear to tell keys apart: 12 characters, at most half of a short key."""
    return key[: min(12, len(key) // 2)]


def mime_type_for(path: str, declared: str | None) -> str:
    """The part's own type if it has one, else by extension, else ``application/octet-stream`` (§6)."""
    if declared:
        return declared
    guessed, _ = mimetypes.guess_type(path.rsplit("/", 1)[-1], strict=False)
    return guessed or "application/octet-stream"


def file_type_for(path: str, mime_type: str) -> str:
    """TEXT for a ``text/*`` type or one of six suffixes (case-sensitive, as on the server)."""
    return "TEXT" if mime_type.startswith("text/") or path.endswith(TEXT_SUFFIXES) else "BINARY"


def gate(raw: str, *, incoming: bool) -> str:
    """The server's path gate: the stored path, or 400 ``invalid_path`` with the gate's message."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from JSON: no database can store it
        raise VaultError(400, "invalid_path", "Path is not valid Unicode") from None
    try:
        return stored_path_of(raw, incoming=incoming)
    except InvalidPathError as error:
        raise VaultError(400, "invalid_path", error.rule) from None


class Store:
    """The vault's database and blobs. Thread-safe: one SQLite connection per thread."""

    def __init__(self, data_dir: Path, *, max_file_size: int | None = None) -> None:
        self.data_dir = data_dir
        self.blob_dir = data_dir / "blobs"
        self.max_file_size = max_file_size
        self.blob_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
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

    # -- connections and transactions ------------------------------------------------------------

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

    def blob_path(self, content_hash: str) -> Path:
        return self.blob_dir / content_hash[:2] / content_hash

    def put_blob(self, content: bytes) -> str:
        """Store ``content`` under its hash, durably (temp file, fsync, rename); return the hash."""
        content_hash = sha256_hex(content)
        target = self.blob_path(content_hash)
        if target.exists():
            return content_hash
        target.parent.mkdir(exist_ok=True, mode=0o700)
        handle, temp = tempfile.mkstemp(dir=target.parent, prefix=INCOMING_PREFIX)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(content)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        _fsync_dir(target.parent)
        return content_hash

    def get_blob(self, content_hash: str) -> bytes | None:
        try:
            return self.blob_path(content_hash).read_bytes()
        except FileNotFoundError:
            return None

    # -- users, keys, projects -------------------------------------------------------------------

    def user_for_key(self, key: str) -> User | None:
        """The user of a valid key; looked up on every request, so a revoked key is refused at once."""
        with self.read() as db:
            row = db.execute(
                "SELECT u.id, u.email, u.name FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = ?",
                (key_hash(key),),
            ).fetchone()
        return User(*row) if row else None

    def add_user(self, email: str, name: str | None = None) -> User:
        user = User(new_id(), email, name)
        with self.write() as db:
            db.execute("INSERT INTO users VALUES (?, ?, ?, ?)", (user.id, email, name, now_iso()))
        return user

    def add_api_key(self, user_id: str, key: str | None = None, *, label: str | None = None) -> str:
        """A key for ``user_id`` that stays valid until it is revoked (``keys add``); a new one unless given."""
        key = key or new_api_key()
        with self.write() as db:
            db.execute(
                "INSERT OR IGNORE INTO api_keys (key_hash, prefix, user_id, created_at, label, kind) "
                "VALUES (?, ?, ?, ?, ?, 'added')",
                (key_hash(key), key_prefix(key), user_id, now_iso(), label),
            )
        return key

    def add_project(self, slug: str, name: str, owner: User) -> str:
        project_id = new_id()
        with self.write() as db:
            db.execute(
                "INSERT INTO projects VALUES (?, ?, ?, ?, ?, ?, ?)",
                (project_id, slug, name, None, None, owner.id, now_iso()),
            )
            db.execute("INSERT INTO members VALUES (?, ?, 'OWNER')", (project_id, owner.id))
        return project_id

    def add_member(self, project_id: str, user_id: str, role: str) -> None:
        with self.write() as db:
            db.execute("INSERT OR REPLACE INTO members VALUES (?, ?, ?)", (project_id, user_id, role))

    def owner_of(self, project_id: str) -> User:
        with self.read() as db:
            row = db.execute(
                "SELECT u.id, u.email, u.name FROM projects p JOIN users u ON u.id = p.owner_id WHERE p.id = ?",
                (project_id,),
            ).fetchone()
        return User(*row)

    def project_by_slug(self, slug: str) -> str | None:
        with self.read() as db:
            row = db.execute("SELECT id FROM projects WHERE slug = ?", (slug,)).fetchone()
        return row[0] if row else None

    def role_in(self, project_id: str, user: User) -> str:
        """The user's role in the project; 404 if the project is unknown or the user is no member."""
        with self.read() as db:
            row = db.execute(
                "SELECT role FROM members WHERE project_id = ? AND user_id = ?", (project_id, user.id)
            ).fetchone()
        if row is None:
            raise not_found("Проект не найден")
        return str(row[0])

    def projects_of(self, user: User) -> list[dict[str, Any]]:
        with self.read() as db:
            rows = db.execute(
                "SELECT p.id, p.slug, p.name, p.description, p.icon_emoji, p.owner_id, m.role "
                "FROM projects p JOIN members m ON m.project_id = p.id WHERE m.user_id = ? ORDER BY p.created_at",
                (user.id,),
            ).fetchall()
        return [_project_json(row) for row in rows]

    def project(self, project_id: str, user: User) -> dict[str, Any]:
        with self.read() as db:
            row = db.execute(
                "SELECT p.id, p.slug, p.name, p.description, p.icon_emoji, p.owner_id, m.role "
                "FROM projects p JOIN members m ON m.project_id = p.id WHERE p.id = ? AND m.user_id = ?",
                (project_id, user.id),
            ).fetchone()
        if row is None:
            raise not_found("Проект не найден")
        return _project_json(row)

    # -- files: reads ----------------------------------------------------------------------------

    def list_files(
        self, project_id: str, *, path: str | None, prefix: str | None, include_deleted: bool
    ) -> list[FileRow]:
        where, args = _file_filter(project_id, path, prefix, include_deleted)
        with self.read() as db:
            rows = db.execute(f"SELECT {FILE_FIELDS} FROM files WHERE {where} ORDER BY path", args).fetchall()
        return [FileRow(*row) for row in rows]

    def list_json(self, project_id: str, *, path: str | None, prefix: str | None, include_deleted: bool) -> bytes:
        """The ``GET /files`` answer body, built by SQLite itself: a 10,000-note listing in milliseconds."""
        where, args = _file_filter(project_id, path, prefix, include_deleted)
        fields = ", ".join(f"'{name}', {column}" for name, column in _LIST_JSON_COLUMNS)
        with self.read() as db:
            row = db.execute(
                f"SELECT json_group_array(json_object({fields})) FROM "
                f"(SELECT {FILE_FIELDS} FROM files WHERE {where} ORDER BY path)",
                args,
            ).fetchone()
        array: str = row[0]
        return b'{"files": ' + array.encode() + b"}"

    def live_file(self, db: sqlite3.Connection, project_id: str, file_id: str) -> FileRow:
        row = db.execute(
            f"SELECT {FILE_FIELDS} FROM files WHERE id = ? AND project_id = ? AND deleted_at IS NULL",
            (file_id, project_id),
        ).fetchone()
        if row is None:
            raise not_found()
        return FileRow(*row)

    def any_file(self, db: sqlite3.Connection, project_id: str, file_id: str) -> FileRow:
        row = db.execute(
            f"SELECT {FILE_FIELDS} FROM files WHERE id = ? AND project_id = ?", (file_id, project_id)
        ).fetchone()
        if row is None:
            raise not_found()
        return FileRow(*row)

    def content(self, project_id: str, file_id: str) -> tuple[FileRow, bytes]:
        with self.read() as db:
            file = self.live_file(db, project_id, file_id)
        content = self.get_blob(file.content_hash)
        if content is None:
            raise not_found("Файл отсутствует в хранилище", "file_missing_on_disk")
        return file, content

    def contents_under(self, project_id: str, folder: str) -> list[tuple[str, str, str]]:
        """``(path, content_hash, updated_at)`` of each live file under ``folder/`` (nested too), by path.

        Three columns, not a :class:`FileRow`: a folder archive keeps them for every file until it is sent.
        """
        prefix = folder + "/"
        with self.read() as db:
            rows: list[tuple[str, str, str]] = db.execute(
                "SELECT path, content_hash, updated_at FROM files WHERE project_id = ? AND deleted_at IS NULL "
                "AND path >= ? AND substr(path, 1, ?) = ? ORDER BY path",
                (project_id, prefix, len(prefix), prefix),
            ).fetchall()
        return rows

    def versions(self, project_id: str, file_id: str) -> list[dict[str, Any]]:
        with self.read() as db:
            self.any_file(db, project_id, file_id)  # versions remain after a delete
            rows = db.execute(
                "SELECT v.id, v.version_number, v.content_hash, v.author_id, v.message, v.created_at, "
                "u.id, u.name, u.email FROM versions v LEFT JOIN users u ON u.id = v.author_id "
                "WHERE v.file_id = ? ORDER BY v.version_number DESC",
                (file_id,),
            ).fetchall()
        return [
            {
                "id": row[0],
                "versionNumber": row[1],
                "contentHash": row[2],
                "authorId": row[3],
                "message": row[4],
                "createdAt": row[5],
                "author": {"id": row[6], "name": row[7], "email": row[8]} if row[6] else None,
            }
            for row in rows
        ]

    def version_content(self, project_id: str, file_id: str, version_id: str) -> bytes:
        with self.read() as db:
            self.any_file(db, project_id, file_id)
            row = db.execute(
                "SELECT content_hash FROM versions WHERE id = ? AND file_id = ?", (version_id, file_id)
            ).fetchone()
        content = self.get_blob(row[0]) if row else None
        if content is None:
            raise not_found("Версия не найдена")
        return content

    # -- files: writes (each inside a transaction the caller opened with write()) ---------------

    def check_size(self, content: bytes) -> None:
        if self.max_file_size is not None and len(content) > self.max_file_size:
            raise VaultError(400, "file_too_large", f"Файл больше {self.max_file_size} байт")

    def create(self, change: Change, raw_path: str, content: bytes, part_type: str | None) -> FileRow:
        """``POST /files``: a new note, or the revival of a tombstone at the path (same id)."""
        db, project_id = change.db, change.project_id
        path = gate(raw_path, incoming=True)
        self.check_size(content)
        existing = db.execute(
            "SELECT id, deleted_at FROM files WHERE project_id = ? AND path = ?", (project_id, path)
        ).fetchone()
        if existing is not None and existing[1] is None:
            raise VaultError(409, "path_exists", "Файл с таким путём уже существует")
        _check_not_blocked(db, project_id, path)
        mime_type = mime_type_for(path, part_type)
        file_type = file_type_for(path, mime_type)
        content_hash = self.put_blob(content)
        stamp = now_iso()
        if existing is None:
            file_id = new_id()
            db.execute(
                "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
                (
                    file_id,
                    project_id,
                    path,
                    file_type,
                    content_hash,
                    len(content),
                    mime_type,
                    stamp,
                    stamp,
                    change.user.id,
                ),
            )
        else:
            file_id = existing[0]
            db.execute(
                "UPDATE files SET file_type = ?, content_hash = ?, size = ?, mime_type = ?, deleted_at = NULL, "
                "updated_at = ?, last_modified_by = ? WHERE id = ?",
                (file_type, content_hash, len(content), mime_type, stamp, change.user.id, file_id),
            )
        _record_version(db, file_id, content_hash, len(content), change.user.id, stamp)
        return self._log(change, file_id, "CREATE", path, None, content_hash, stamp)

    def replace(self, change: Change, file_id: str, content: bytes, expected: IfMatch | None = None) -> FileRow:
        """``PUT /files/:id``: new bytes; the type and mime type stay as created."""
        file = self.live_file(change.db, change.project_id, file_id)
        check_precondition(file, expected)
        self.check_size(content)
        content_hash = self.put_blob(content)
        stamp = now_iso()
        change.db.execute(
            "UPDATE files SET content_hash = ?, size = ?, updated_at = ?, last_modified_by = ? WHERE id = ?",
            (content_hash, len(content), stamp, change.user.id, file_id),
        )
        _record_version(change.db, file_id, content_hash, len(content), change.user.id, stamp)
        return self._log(change, file_id, "UPDATE", file.path, None, content_hash, stamp)

    def move(self, change: Change, file_id: str, raw_new_path: str, expected: IfMatch | None = None) -> FileRow:
        """``PATCH /files/:id``: a new path; the id and the history stay."""
        db, project_id = change.db, change.project_id
        new_path = gate(raw_new_path, incoming=True)
        file = self.live_file(db, project_id, file_id)
        check_precondition(file, expected)
        if new_path == file.path:
            return file
        if db.execute("SELECT 1 FROM files WHERE project_id = ? AND path = ?", (project_id, new_path)).fetchone():
            raise VaultError(409, "path_exists", "Файл с таким путём уже существует")
        _check_not_blocked(db, project_id, new_path)
        stamp = now_iso()
        db.execute("UPDATE files SET path = ?, updated_at = ? WHERE id = ?", (new_path, stamp, file_id))
        return self._log(change, file_id, "MOVE", file.path, new_path, None, stamp)

    def delete(self, change: Change, file_id: str, expected: IfMatch | None = None) -> None:
        """``DELETE /files/:id``: a tombstone; deleting a tombstone again changes nothing."""
        file = self.any_file(change.db, change.project_id, file_id)
        check_precondition(file, expected)
        if file.deleted_at is not None:
            return
        stamp = now_iso()
        change.db.execute("UPDATE files SET deleted_at = ?, updated_at = ? WHERE id = ?", (stamp, stamp, file_id))
        self._log(change, file_id, "DELETE", file.path, None, None, stamp)

    def move_folder(self, change: Change, raw_path: str, raw_new_path: str) -> dict[str, Any]:
        """``PATCH /folders``: every live file under the folder, in one transaction."""
        db, project_id = change.db, change.project_id
        folder = _folder_gate(raw_path, incoming=False)
        target = _folder_gate(raw_new_path, incoming=True)
        if folder == target:
            return {"path": target, "moved": 0}
        if target.startswith(folder + "/"):
            raise VaultError(400, "invalid_path", "Нельзя переместить папку внутрь себя")
        files = self._live_under(db, project_id, folder)
        if not files:
            raise not_found("Папка пуста или не найдена")
        moves = [(file, target + file.path[len(folder) :]) for file in files]
        live = "SELECT 1 FROM files WHERE project_id = ? AND path = ? AND deleted_at IS NULL"
        taken = [new_path for _, new_path in moves if db.execute(live, (project_id, new_path)).fetchone()]
        if taken:
            raise VaultError(409, "path_exists", "Путь уже занят: " + ", ".join(taken))
        moved, failed = 0, []
        for file, new_path in moves:
            if db.execute("SELECT 1 FROM files WHERE project_id = ? AND path = ?", (project_id, new_path)).fetchone():
                failed.append(file.path)  # a tombstone there: the per-file move refuses, the folder move goes on
                continue
            self.move(change, file.id, new_path)
            moved += 1
        return {"path": target, "moved": moved, "failed": failed}

    def delete_folder(self, change: Change, raw_path: str) -> dict[str, Any]:
        folder = _folder_gate(raw_path, incoming=False)
        files = self._live_under(change.db, change.project_id, folder)
        if not files:
            raise not_found("Папка пуста или не найдена")
        for file in files:
            self.delete(change, file.id)
        return {"path": folder, "deleted": len(files)}

    def _live_under(self, db: sqlite3.Connection, project_id: str, folder: str) -> list[FileRow]:
        prefix = folder + "/"
        rows = db.execute(
            f"SELECT {FILE_FIELDS} FROM files WHERE project_id = ? AND deleted_at IS NULL "
            "AND path >= ? AND substr(path, 1, ?) = ? ORDER BY path",
            (project_id, prefix, len(prefix), prefix),
        ).fetchall()
        return [FileRow(*row) for row in rows]

    def _log(
        self,
        change: Change,
        file_id: str,
        kind: str,
        path: str,
        new_path: str | None,
        content_hash: str | None,
        stamp: str,
    ) -> FileRow:
        """Append to the operation log (as the real server does) and return the file as it is now."""
        change.db.execute(
            "INSERT INTO operations (project_id, file_id, kind, path, new_path, content_hash, user_id, "
            "idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (change.project_id, file_id, kind, path, new_path, content_hash, change.user.id, change.key, stamp),
        )
        return self.any_file(change.db, change.project_id, file_id)

    def operations(self, project_id: str) -> list[dict[str, Any]]:
        """The operation log, oldest first: what was applied, by whom, under which Idempotency-Key."""
        with self.read() as db:
            rows = db.execute(
                "SELECT seq, file_id, kind, path, new_path, content_hash, user_id, idempotency_key, created_at "
                "FROM operations WHERE project_id = ? ORDER BY seq",
                (project_id,),
            ).fetchall()
        names = ("seq", "fileId", "kind", "path", "newPath", "contentHash", "userId", "idempotencyKey", "createdAt")
        return [dict(zip(names, row, strict=True)) for row in rows]

    # -- idempotency (teamvault-api.md §11.2) -------------------------------------------------------

    def remembered_answer(
        self, user_id: str, method: str, route: str, key: str, *, retention: float
    ) -> RememberedAnswer | None:
        with self.read() as db:
            row = db.execute(
                "SELECT fingerprint, status, content_type, body, headers FROM idempotency "
                "WHERE user_id = ? AND method = ? AND route = ? AND key = ? AND created_at >= ?",
                (user_id, method, route, key, time.time() - retention),
            ).fetchone()
        if row is None:
            return None
        headers = tuple((str(name), str(value)) for name, value in json.loads(row[4] or "[]"))
        return RememberedAnswer(row[0], row[1], row[2], bytes(row[3]), headers)

    def remember_answer(
        self,
        db: sqlite3.Connection,
        user_id: str,
        method: str,
        route: str,
        key: str,
        fingerprint: str,
        status: int,
        content_type: str | None,
        body: bytes,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        db.execute(
            "INSERT OR REPLACE INTO idempotency "
            "(user_id, method, route, key, fingerprint, status, content_type, body, created_at, headers) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (user_id, method, route, key, fingerprint, status, content_type, body, time.time(), json.dumps(headers)),
        )

    def forget_answers_older_than(self, seconds: float) -> None:
        with self.write() as db:
            db.execute("DELETE FROM idempotency WHERE created_at < ?", (time.time() - seconds,))


def check_precondition(file: FileRow, expected: IfMatch | None) -> None:
    """412 ``precondition_failed`` unless ``file`` passes ``If-Match``; run inside the write's transaction."""
    if expected is None:
        return
    current = None if file.deleted_at is not None else file.content_hash
    if expected.matches(current):
        return
    if current is None:
        raise VaultError(
            412, "precondition_failed", "Файл удалён: условие If-Match не выполнено", fields={"currentHash": None}
        )
    raise VaultError(
        412,
        "precondition_failed",
        "Содержимое файла изменилось: If-Match не совпадает с текущим хешем",
        fields={"currentHash": current},
        headers=(("ETag", entity_tag(current)),),
    )


def _project_json(row: tuple[Any, ...]) -> dict[str, Any]:
    return {
        "id": row[0],
        "slug": row[1],
        "name": row[2],
        "description": row[3],
        "iconEmoji": row[4],
        "ownerId": row[5],
        "role": row[6],
    }


#: The list answer's fields and the columns they come from (``size`` as a string, as the server sends it).
_LIST_JSON_COLUMNS = (
    ("id", "id"),
    ("path", "path"),
    ("fileType", "file_type"),
    ("contentHash", "content_hash"),
    ("size", "CAST(size AS TEXT)"),
    ("mimeType", "mime_type"),
    ("deletedAt", "deleted_at"),
    ("createdAt", "created_at"),
    ("updatedAt", "updated_at"),
    ("lastModifiedById", "last_modified_by"),
)


def _file_filter(project_id: str, path: str | None, prefix: str | None, include_deleted: bool) -> tuple[str, list[Any]]:
    """The WHERE clause of a listing (teamvault-api.md §3.1): ``prefix`` wins over ``path``."""
    where = ["project_id = ?"]
    args: list[Any] = [project_id]
    if prefix:
        where.append("path >= ? AND substr(path, 1, ?) = ?")
        args += [prefix, len(prefix), prefix]
    elif path:
        try:
            args.append(stored_path_of(path))
            where.append("path = ?")
        except InvalidPathError:
            where.append("0")  # a refused path lists nothing, never an error
    if not include_deleted:
        where.append("deleted_at IS NULL")
    return " AND ".join(where), args


def _record_version(
    db: sqlite3.Connection, file_id: str, content_hash: str, size: int, author: str, stamp: str
) -> None:
    """A new version when the content differs from the latest version's: one version per distinct content."""
    latest = db.execute(
        "SELECT version_number, content_hash FROM versions WHERE file_id = ? ORDER BY version_number DESC LIMIT 1",
        (file_id,),
    ).fetchone()
    if latest is not None and latest[1] == content_hash:
        return
    number = 1 if latest is None else latest[0] + 1
    db.execute(
        "INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
        (new_id(), file_id, number, content_hash, size, author, stamp),
    )


def _blocker(db: sqlite3.Connection, project_id: str, path: str) -> str | None:
    """What stops a file at ``path``: a live file below it (a folder), or a live file at a parent."""
    prefix = path + "/"
    below = db.execute(
        "SELECT path FROM files WHERE project_id = ? AND deleted_at IS NULL AND path >= ? "
        "AND substr(path, 1, ?) = ? LIMIT 1",
        (project_id, prefix, len(prefix), prefix),
    ).fetchone()
    if below is not None:
        return str(below[0])
    segments = path.split("/")
    for end in range(1, len(segments)):
        parent = "/".join(segments[:end])
        if db.execute(
            "SELECT 1 FROM files WHERE project_id = ? AND path = ? AND deleted_at IS NULL", (project_id, parent)
        ).fetchone():
            return parent
    return None


def _check_not_blocked(db: sqlite3.Connection, project_id: str, path: str) -> None:
    blocker = _blocker(db, project_id, path)
    if blocker is not None:
        raise VaultError(409, "path_blocked", f"Путь «{path}» занят файлом «{blocker}»")


def _folder_gate(raw: str, *, incoming: bool) -> str:
    try:
        return gate(raw.rstrip("/"), incoming=incoming)
    except VaultError:
        raise VaultError(400, "invalid_path", "Недопустимый путь папки") from None


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable: fsync the directory that holds the new name."""
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
