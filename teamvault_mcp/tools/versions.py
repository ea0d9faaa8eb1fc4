"""What a note's version history says: its versions oldest first, a version's hash and author, and a version
described for the model (``version 7 by Ada Lovelace (…)``). What the history says about a write is
``writing/history.py``'s."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from teamvault_mcp.errors import short_hash

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultVersion


def describe(version: VaultVersion | None, *, restore_hint: str | None = None) -> str:
    """``version 7 by Ada Lovelace (2026-12-01T09:20:00.000Z, contentHash …)``."""
    if version is None:
        return "someone (the history does not say who)"
    who = version_author(version) or "someone"
    number = version.number if version.number is not None else "?"
    when = version.created_at or "time unknown"
    text = f"version {number} by {who} ({when}, contentHash {short_hash(hash_of(version))})"
    if restore_hint is not None:
        call = f"restore_note_version(path={json.dumps(restore_hint, ensure_ascii=False)}, version={number})"
        text += f"; it stays in the history: {call} brings it back"
    return text


def oldest_first(versions: list[VaultVersion]) -> list[VaultVersion]:
    if all(version.number is not None for version in versions):
        return sorted(versions, key=lambda version: version.number or 0)
    return list(reversed(versions))  # the contract: newest first


def hash_of(version: VaultVersion | None) -> str:
    value = version.content_hash if version is not None else None
    return value.lower() if value is not None else ""


def version_author(version: VaultVersion) -> str | None:
    """Who a version's line names: the author's name, else their email, else their user id; None: no one."""
    author = version.author
    return (author.name or author.email if author is not None else None) or version.author_id or None
