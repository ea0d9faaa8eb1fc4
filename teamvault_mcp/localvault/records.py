"""The local vault's records and the rules on one value: errors, users, file rows, ids, keys, types, the path gate.

What :class:`~teamvault_mcp.localvault.store.Store` hands out and takes, and the pure rules the API applies to a
single value (a file's type from its path, a key's stored hash, the server's path gate). No queries, no I/O.
"""

from __future__ import annotations

import hashlib
import mimetypes
import secrets
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from teamvault_mcp.errors import InvalidPathError
from teamvault_mcp.text.paths import stored_path_of

TEXT_SUFFIXES = (".md", ".txt", ".json", ".yml", ".yaml", ".csv")
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


def not_found(message: str = "File not found", code: str = "not_found") -> VaultError:
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
