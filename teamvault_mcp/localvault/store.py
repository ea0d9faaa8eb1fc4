"""The local vault's data model: every rule of the API on users, projects, files and versions.

Everything the HTTP layer does to data goes through :class:`Store`. A write runs in
one SQLite transaction (``BEGIN IMMEDIATE``, database.py); the bytes it needs are written
before the transaction commits, as a blob named by its SHA-256 (blobs.py). A crash
therefore leaves either the old note or the new one, never half of one, and a blob can be
written twice without harm.

Domain failures are :class:`~teamvault_mcp.localvault.records.VaultError` with the status,
code and message the real server answers with (teamvault-api.md); the HTTP layer only
serialises them.

The rules on the tables stay together on purpose: they refer to each other (a folder move
is file moves, a create checks blockers), and splitting them would scatter one transaction's
logic over files. What is not a rule on the tables lives beside it: the records and the rules
on one value in ``records.py``, the connections in ``database.py``, the blobs in ``blobs.py``,
the remembered answers of keyed writes in ``idempotency.py``, API keys beyond the lookup in
``keys.py``, the data directory's modes in ``datadir.py``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from teamvault_mcp.errors import InvalidPathError
from teamvault_mcp.localvault import blobs
from teamvault_mcp.localvault.database import Database
from teamvault_mcp.localvault.preconditions import IfMatch, entity_tag
from teamvault_mcp.localvault.records import (
    FILE_FIELDS,
    Change,
    FileRow,
    User,
    VaultError,
    file_type_for,
    gate,
    key_hash,
    key_prefix,
    mime_type_for,
    new_api_key,
    new_id,
    not_found,
    now_iso,
)
from teamvault_mcp.text.paths import stored_path_of


class Store(Database):
    """The vault's database and blobs, and the API's rules on them. Thread-safe (database.py's pool)."""

    def __init__(self, data_dir: Path, *, max_file_size: int | None = None) -> None:
        self.blob_dir = data_dir / "blobs"
        self.max_file_size = max_file_size
        self.blob_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        super().__init__(data_dir)

    # -- blobs -----------------------------------------------------------------------------------

    def blob_path(self, content_hash: str) -> Path:
        return blobs.blob_path(self.blob_dir, content_hash)

    def put_blob(self, content: bytes) -> str:
        """Store ``content`` under its hash, durably (blobs.py); return the hash."""
        return blobs.put_blob(self.blob_dir, content)

    def get_blob(self, content_hash: str) -> bytes | None:
        return blobs.get_blob(self.blob_dir, content_hash)

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
            raise not_found("Project not found")
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
            raise not_found("Project not found")
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
            raise not_found("The file is missing from storage", "file_missing_on_disk")
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
            raise not_found("Version not found")
        return content

    # -- files: writes (each inside a transaction the caller opened with write()) ---------------

    def check_size(self, content: bytes) -> None:
        if self.max_file_size is not None and len(content) > self.max_file_size:
            raise VaultError(400, "file_too_large", f"File larger than {self.max_file_size} bytes")

    def create(self, change: Change, raw_path: str, content: bytes, part_type: str | None) -> FileRow:
        """``POST /files``: a new note, or the revival of a tombstone at the path (same id)."""
        db, project_id = change.db, change.project_id
        path = gate(raw_path, incoming=True)
        self.check_size(content)
        existing = db.execute(
            "SELECT id, deleted_at FROM files WHERE project_id = ? AND path = ?", (project_id, path)
        ).fetchone()
        if existing is not None and existing[1] is None:
            raise VaultError(409, "path_exists", "A file with this path already exists")
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
            raise VaultError(409, "path_exists", "A file with this path already exists")
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
            raise VaultError(400, "invalid_path", "A folder cannot be moved into itself")
        files = self._live_under(db, project_id, folder)
        if not files:
            raise not_found("Folder is empty or not found")
        moves = [(file, target + file.path[len(folder) :]) for file in files]
        live = "SELECT 1 FROM files WHERE project_id = ? AND path = ? AND deleted_at IS NULL"
        taken = [new_path for _, new_path in moves if db.execute(live, (project_id, new_path)).fetchone()]
        if taken:
            raise VaultError(409, "path_exists", "The path is already taken: " + ", ".join(taken))
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
            raise not_found("Folder is empty or not found")
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


def check_precondition(file: FileRow, expected: IfMatch | None) -> None:
    """412 ``precondition_failed`` unless ``file`` passes ``If-Match``; run inside the write's transaction."""
    if expected is None:
        return
    current = None if file.deleted_at is not None else file.content_hash
    if expected.matches(current):
        return
    if current is None:
        raise VaultError(
            412,
            "precondition_failed",
            "The file was deleted: the If-Match condition failed",
            fields={"currentHash": None},
        )
    raise VaultError(
        412,
        "precondition_failed",
        "The file's content changed: If-Match does not match the current hash",
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
        raise VaultError(409, "path_blocked", f"The path “{path}” is taken by the file “{blocker}”")


def _folder_gate(raw: str, *, incoming: bool) -> str:
    try:
        return gate(raw.rstrip("/"), incoming=incoming)
    except VaultError:
        raise VaultError(400, "invalid_path", "Invalid folder path") from None
