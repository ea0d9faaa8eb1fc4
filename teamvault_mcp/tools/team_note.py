"""The team's own instructions for agents: the note TEAM_VAULT_INSTRUCTIONS_NOTE names, added to the server's
instructions.

A team keeps its conventions in the vault (where meeting notes go, how people notes are
named). The note is read once at start-up, within the short limit the schema notes get,
so a slow or missing note never holds the server back: the instructions then go without
it, and ``teamvault-mcp check`` says why. A long note is cut at a line, with a notice.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from teamvault_mcp.errors import TeamVaultError, printable
from teamvault_mcp.tools.schema_registry import SCHEMA_LOAD_LIMIT

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient

log = logging.getLogger(__name__)

#: At most this many characters of the note go into the instructions, which the host keeps in every turn.
TEAM_NOTE_CHARS = 4_000

#: The note's read at start-up gets as long as the schema notes' (seconds).
TEAM_NOTE_LIMIT = SCHEMA_LOAD_LIMIT

#: Seconds waited beyond the read's own limit for its thread to end.
TEAM_NOTE_GRACE = 2.0


@dataclass(frozen=True)
class TeamNote:
    """What was read of the instructions note: the text to send (None: nothing), and what happened, in words."""

    path: str
    text: str | None
    status: str
    chars: int = 0
    cut: bool = False


def read_team_note(client: TeamVaultClient, project_id: str, path: str, limit: int = TEAM_NOTE_CHARS) -> TeamNote:
    """The note at ``path``, capped at ``limit`` characters; a :class:`TeamNote` saying why when it cannot be used.

    :class:`TeamVaultError` when the server could not be asked."""
    file = client.find_file(project_id, path)
    if file is None:
        return TeamNote(path, None, f"no note at {printable(path)}: the instructions go without it")
    if file.file_type != "TEXT":
        return TeamNote(path, None, f"{printable(path)} is not a text note ({file.mime_type or file.file_type})")
    text = client.download(project_id, file.id).decode("utf-8", errors="replace").removeprefix("\ufeff")
    if not text.strip():
        return TeamNote(path, None, f"{printable(path)} is empty: nothing to add", chars=len(text))
    shown, cut = capped(path, text, limit)
    status = f"{printable(path)}: {len(text):,} characters, added to the instructions"
    if cut:
        status = f"{printable(path)}: {len(text):,} characters; only the first {limit:,} go into the instructions"
    return TeamNote(path, shown, status, chars=len(text), cut=cut)


def capped(path: str, text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut at the last line that ends within ``limit`` characters, with a notice; (text, whether cut)."""
    text = text.rstrip()
    if len(text) <= limit:
        return text, False
    end = text.rfind("\n", 0, limit + 1)
    shown = text[: end if end > 0 else limit].rstrip()
    notice = (
        f"[Cut: the note is {len(text):,} characters and the instructions take {limit:,}; "
        f"read_note(path={json.dumps(path, ensure_ascii=False)}) reads it all.]"
    )
    return f"{shown}\n{notice}", True


def load_team_note(open_client: Callable[[], TeamVaultClient], project_id: str, path: str) -> TeamNote:
    """The note, read in a thread of its own and waited for at most TEAM_NOTE_LIMIT (plus a grace): whatever
    happens, this returns in time, with a status that says what went wrong."""
    found: list[TeamNote] = []

    def read() -> None:
        try:
            client = open_client()
            try:
                found.append(read_team_note(client, project_id, path))
            finally:
                client.close()
        except TeamVaultError as error:
            found.append(TeamNote(path, None, f"{printable(path)} was not read at start-up: {error}"))
        except Exception as error:  # a bug must not keep the server from starting
            log.exception("reading the instructions note %s failed", path)
            found.append(TeamNote(path, None, f"{printable(path)} was not read: internal error {type(error).__name__}"))

    reader = threading.Thread(target=read, name="instructions-note", daemon=True)
    reader.start()
    reader.join(TEAM_NOTE_LIMIT + TEAM_NOTE_GRACE)
    if not found:
        return TeamNote(path, None, f"{printable(path)} was not read within {TEAM_NOTE_LIMIT:g} s at start-up")
    note = found[0]
    if note.text is None:
        log.warning("TEAM_VAULT_INSTRUCTIONS_NOTE: %s", note.status)
    return note
