"""What a note's version history says: its versions oldest first, a version's hash and author, and a version
described for the model (``version 7 by Ada Lovelace (…)``). What the history says about a write is
``writing/history.py``'s."""

from __future__ import annotations

import json
from typing import Any

from teamvault_mcp.errors import short_hash


def describe(version: dict[str, Any] | None, *, restore_hint: str | None = None) -> str:
    """``version 7 by Ada Lovelace (2026-12-01T09:20:00.000Z, contentHash …)``."""
    if version is None:
        return "someone (the history does not say who)"
    author = version.get("author")
    author = author if isinstance(author, dict) else {}
    who = author.get("name") or author.get("email") or version.get("authorId") or "someone"
    number = version.get("versionNumber", "?")
    when = version.get("createdAt") or "time unknown"
    text = f"version {number} by {who} ({when}, contentHash {short_hash(hash_of(version))})"
    if restore_hint is not None:
        call = f"restore_note_version(path={json.dumps(restore_hint, ensure_ascii=False)}, version={number})"
        text += f"; it stays in the history: {call} brings it back"
    return text


def oldest_first(versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if all(isinstance(v.get("versionNumber"), int) for v in versions):
        return sorted(versions, key=lambda v: int(v["versionNumber"]))
    return list(reversed(versions))  # the contract: newest first


def hash_of(version: dict[str, Any] | None) -> str:
    value = version.get("contentHash") if version else None
    return value.lower() if isinstance(value, str) else ""


def version_author(version: dict[str, Any]) -> str | None:
    """Who a version's line names: the author's name, else their email, else their user id; None: no one."""
    author = version.get("author") or {}
    return author.get("name") or author.get("email") or version.get("authorId") or None
