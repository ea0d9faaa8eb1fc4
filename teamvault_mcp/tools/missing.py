"""What ``Note not found`` says next: the note that exists instead, or that the note was deleted and how to
bring it back.

An agent often names a note the way a link does (``[[grace-hopper]]`` carries no ``.md``),
in another case, or with a typo; and a colleague may have deleted it. When a path names no
live note, one listing of the project with its tombstones (one per call, shared by the
notes of a batch read) tells which: a deleted note at that very path (when it was deleted,
and the calls that bring it back, with the version that holds its last text), else the
path with ``.md``, a path differing only in case, or the closest name ``find_notes``
would give. Nothing is read unless a note is missing.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from teamvault_mcp.errors import NoteNotFoundError, TeamVaultError, printable
from teamvault_mcp.text.fuzzy import find_paths
from teamvault_mcp.text.note_paths import has_extension

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.records import VaultFile

#: The closest name is suggested only from this score of find_notes on (100: the exact name).
CLOSEST_NAME_SCORE = 40.0


@dataclass
class Listings:
    """The projects' listings (tombstones included) one call has made to explain a missing note, by project."""

    by_project: dict[str, list[VaultFile]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class Revival:
    """Which of the tools that bring a deleted note back are registered."""

    write: bool
    restore: bool


def not_found(
    client: TeamVaultClient, project_id: str, path: str, listings: Listings, revival: Revival
) -> NoteNotFoundError:
    """``Note not found: <path>``, followed by what is there instead, if anything (see the module)."""
    error = NoteNotFoundError(path)
    try:
        files = _listing(client, project_id, listings)
        said = _deleted(client, project_id, path, files, revival) or _instead(path, files)
    except TeamVaultError:
        return error  # the note is missing all the same; only the hint is lost
    if said:
        error.extend(f"— {said}")
    return error


def _listing(client: TeamVaultClient, project_id: str, listings: Listings) -> list[VaultFile]:
    """The project's files and tombstones: listed once per call, whichever thread of a batch read asks first; a
    listing that failed is not tried again in the same call (the notes are missing all the same)."""
    with listings.lock:
        files = listings.by_project.get(project_id)
        if files is None:
            listings.by_project[project_id] = []
            files = listings.by_project[project_id] = client.list_files(project_id, include_deleted=True)
        return files


def _deleted(client: TeamVaultClient, project_id: str, path: str, files: list[VaultFile], revival: Revival) -> str:
    """What to say of a deleted note at ``path``: when, and how to bring it back; "" if there is none."""
    tomb = next((file for file in files if file.path == path and file.deleted_at is not None), None)
    if tomb is None:
        return ""
    when = when_text(tomb.deleted_at or "")
    said = f"it was deleted{' on ' + when if when else ''}."
    if not revival.write:
        return said + " This server may not write, so it cannot bring it back."
    quoted = json.dumps(path, ensure_ascii=False)
    said += f" write_note(path={quoted}, content=…) brings the note back, with its history"
    version = _last_version(client, project_id, tomb) if revival.restore else None
    if version is not None:
        said += f"; restore_note_version(path={quoted}, version={version}) then restores the text it had"
    return said + "."


def _last_version(client: TeamVaultClient, project_id: str, tomb: VaultFile) -> int | None:
    """The number of the version holding a deleted note's last text (the server may keep no history)."""
    try:
        versions = client.list_versions(project_id, tomb.id)
    except TeamVaultError:
        return None
    numbered = [v.number for v in versions if v.number is not None]
    last = [v.number for v in versions if v.number is not None and v.content_hash == tomb.content_hash]
    return max(last or numbered, default=None)


def _instead(path: str, files: list[VaultFile]) -> str:
    """The live note an agent most likely meant by ``path``: with ``.md``, in another case, or the closest name."""
    live = [file.path for file in files if file.deleted_at is None]
    paths = set(live)
    with_md = f"{path}.md"
    if not has_extension(path) and with_md in paths:
        link = printable(path.rsplit("/", 1)[-1])
        return f"did you mean {printable(with_md)}? (A link such as [[{link}]] leaves out .md.)"
    folded = {candidate.casefold(): candidate for candidate in sorted(live, reverse=True)}
    for wanted in (path, with_md) if not has_extension(path) else (path,):
        same = folded.get(wanted.casefold())
        if same is not None:
            return f"did you mean {printable(same)}? Paths are case-sensitive."
    found = find_paths(path, live, 1)
    if found and found[0][1] >= CLOSEST_NAME_SCORE:
        return f"the closest name in the project is {printable(found[0][0])}."
    return ""


def when_text(iso: str) -> str:
    """``2026-12-01T12:20:08.181Z`` → ``2026-12-01 12:20 UTC`` (as the server gave it, if it is not that form)."""
    if len(iso) >= 16 and iso[10] == "T" and iso.endswith("Z"):
        return f"{iso[:10]} {iso[11:16]} UTC"
    return printable(iso)[:40]
