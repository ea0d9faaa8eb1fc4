"""The server's records as the tools read them: a file of a listing, a user, a project, a version.

Built from the answers ``answers.py`` has read defensively (each field of its type or None); ``client.py``
makes them from the server's answers. Plain values, never changed once built.
"""

from __future__ import annotations

import re
import sys
from typing import Any, NamedTuple

from teamvault_mcp.vault.answers import (
    content_hash,
    file_type_of,
    identifier,
    project_record,
    size_of,
    timestamp,
    user_record,
    version_record,
)


class VaultFile(NamedTuple):
    """A file record from the server (the fields every endpoint returns; others are ignored).

    A named tuple, not a dataclass: a 20,000-note listing makes 20,000 of them per search.
    The dates are the server's strings (ISO 8601, UTC), None where it sent none.
    """

    id: str
    path: str
    file_type: str  # "TEXT" or "BINARY"
    size: int | None  # the server sends a decimal string
    content_hash: str | None = None  # 64 lowercase hex digits, or None when the server gave no usable one
    mime_type: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    deleted_at: str | None = None  # set on a tombstone (listed only with include_deleted)
    modified_by: str | None = None  # lastModifiedById: the user id of the last writer

    @classmethod
    def from_json(cls, raw: Any) -> VaultFile:
        """The record, with odd field types tolerated; ``ValueError`` without a string ``id`` and ``path``."""
        usual = _usual_record(raw)
        if usual is not None:
            return usual
        if not isinstance(raw, dict):
            raise ValueError("a file record must be an object")
        file_id, path = identifier(raw.get("id")), raw.get("path")
        if file_id is None or not isinstance(path, str) or not path:
            raise ValueError("a file record needs string 'id' and 'path'")
        mime_type = raw.get("mimeType")
        return cls(
            id=file_id,
            path=path,
            file_type=file_type_of(raw.get("fileType")),
            size=size_of(raw.get("size")),
            content_hash=content_hash(raw.get("contentHash")),
            mime_type=mime_type if isinstance(mime_type, str) else None,
            created_at=timestamp(raw.get("createdAt")),
            updated_at=timestamp(raw.get("updatedAt")),
            deleted_at=timestamp(raw.get("deletedAt")),
            modified_by=identifier(raw.get("lastModifiedById")),
        )


class VaultListing(list[VaultFile]):
    """A listing as the client returns it: a list that can be referenced weakly, so that what remembers having
    seen one (``text/lastseen.py``) does not keep it alive."""

    __slots__ = ("__weakref__",)


def _usual_record(raw: Any) -> VaultFile | None:
    """The record as :meth:`VaultFile.from_json` reads it, when every field is already of its type (as the server
    sends them): one step, where the general reading takes a call per field (a listing of 100,000 files took
    0.6 s). None for anything else, which the general reading takes."""
    if type(raw) is not dict:
        return None
    file_id, path, kind, size = raw.get("id"), raw.get("path"), raw.get("fileType"), raw.get("size")
    digest, mime_type, by = raw.get("contentHash"), raw.get("mimeType"), raw.get("lastModifiedById")
    created, updated, deleted = raw.get("createdAt"), raw.get("updatedAt"), raw.get("deletedAt")
    if not (
        type(file_id) is str
        and file_id
        and type(path) is str
        and path
        and kind in ("TEXT", "BINARY")
        and type(size) is str
        and size.isascii()
        and size.isdigit()
        and type(digest) is str
        and len(digest) == 64
        and _LOWER_HEX.fullmatch(digest)
        and (mime_type is None or type(mime_type) is str)
        and (by is None or (type(by) is str and by))
        and all(moment is None or (type(moment) is str and 0 < len(moment) <= 40) for moment in (created, updated))
        and deleted is None
    ):
        return None
    # The kind, the type and the writer repeat across a listing: one string each, not one per file (190 B a file).
    kind = "TEXT" if kind == "TEXT" else "BINARY"
    mime_type = sys.intern(mime_type) if mime_type is not None else None
    by = sys.intern(by) if by is not None else None
    return VaultFile(file_id, path, kind, int(size), digest, mime_type, created, updated, None, by)


_LOWER_HEX = re.compile(r"[0-9a-f]{64}")


class _Record(dict[str, Any]):
    """A record of the server's with only the fields it sent that are plain values (answers.py keeps those, each
    field the contract names in its type), in the server's order: what a tool shows of it as given. The fields we
    read are attributes; None where the server sent none (the contract infers some of them: §9, §4.1).

    A dict, so that code that still reads ``record.get("versionNumber")`` (the write rules, issue 28) keeps working
    while it moves; new code reads the attributes. Not to be changed once built.
    """

    __slots__ = ()

    def _text(self, key: str) -> str | None:
        value = self.get(key)
        return value if isinstance(value, str) else None

    @property
    def id(self) -> str:
        return str(self["id"])  # the record functions refuse a record without one


class VaultUser(_Record):
    """The key's user (``GET /api/auth/me``): ``id``, and ``email``, ``name`` where the server gives them."""

    __slots__ = ()

    @classmethod
    def from_json(cls, raw: Any) -> VaultUser | None:
        """The user; None without an id."""
        user = user_record(raw) if isinstance(raw, dict) else None
        return None if user is None else cls(user)

    @property
    def email(self) -> str | None:
        return self._text("email")

    @property
    def name(self) -> str | None:
        return self._text("name")


class VaultProject(_Record):
    """A project the key reaches (``GET /api/projects``): ``id``; ``slug``, ``name``, ``role`` where given."""

    __slots__ = ()

    @classmethod
    def from_json(cls, raw: Any) -> VaultProject | None:
        """The project; None without an id."""
        project = project_record(raw)
        return None if project is None else cls(project)

    @property
    def slug(self) -> str | None:
        return self._text("slug")

    @property
    def name(self) -> str | None:
        return self._text("name")

    @property
    def role(self) -> str | None:
        return self._text("role")


class VersionAuthor(NamedTuple):
    """Who saved a version, as far as the server says (any of them may be None)."""

    id: str | None
    name: str | None
    email: str | None


class VaultVersion(_Record):
    """A saved version of a file (``GET …/versions``, docs/teamvault-api.md §4.1). Its number and author are
    inferred fields: a server may leave them out."""

    __slots__ = ()

    @classmethod
    def from_json(cls, raw: Any) -> VaultVersion | None:
        """The version; None without an id."""
        version = version_record(raw)
        return None if version is None else cls(version)

    @property
    def number(self) -> int | None:
        """``versionNumber``: 1 is the first."""
        number = self.get("versionNumber")
        return number if isinstance(number, int) and not isinstance(number, bool) else None

    @property
    def content_hash(self) -> str | None:
        return self._text("contentHash")

    @property
    def created_at(self) -> str | None:
        return self._text("createdAt")

    @property
    def author_id(self) -> str | None:
        return self._text("authorId")

    @property
    def message(self) -> str | None:
        return self._text("message")

    @property
    def author(self) -> VersionAuthor | None:
        author = self.get("author")
        if not isinstance(author, dict):
            return None
        return VersionAuthor(*(author.get(key) for key in ("id", "name", "email")))
