"""The short contentHash: texts show its first 12 hex digits, and every expectedHash takes that (or any start of
8 or more digits, or all 64) as exactly as the full hash.

Through a real MCP client, reading the text content only (what a text-only host gives the model), against both
kinds of server: the local vault with its conditional writes (If-Match refused atomically; a short hash sent as
If-Match would never match, so a write that succeeds there sent the full one) and without them (the version
history is checked after the write).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.seeding import digest
from support.sessions import Session, open_session

from teamvault_mcp.localvault import Fault

pytestmark = pytest.mark.anyio

FILE = "/api/projects/*/files/*"
NOTE = "---\nstatus: draft\n---\n# Log\n\n## Today\n\n- [ ] call Kuzma\n"
THEIRS = NOTE.replace("call Kuzma", "call Minin")

#: Every tool that takes expectedHash, the arguments of a call that changes a.md, and what a.md holds after it
#: (None: the note is gone from a.md).
WRITES: dict[str, tuple[dict[str, Any], str | None]] = {
    "write_note": ({"content": "new\n"}, "new\n"),
    "edit_note": ({"edits": [{"oldText": "Kuzma", "newText": "Pozharsky"}]}, NOTE.replace("Kuzma", "Pozharsky")),
    "edit_section": ({"section": "Log > Today", "content": "- [ ] more"}, NOTE + "- [ ] more\n"),
    "update_frontmatter": ({"set": {"status": "done"}}, NOTE.replace("draft", "done")),
    "restore_note_version": ({"version": 1}, "first\n"),
    "move_note": ({"newPath": "b.md"}, None),
    "delete_note": ({}, None),
}


@pytest.fixture(params=[True, False], ids=["conditional", "history"])
async def session(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Session]:
    async with open_session(
        tmp_path, structured_content=True, vault_options={"conditional_writes": request.param}
    ) as running:
        await running.ok("write_note", path="a.md", content="first\n")  # version 1, for restore_note_version
        await running.ok("write_note", path="a.md", content=NOTE)
        yield running


async def shown_hash(session: Session, path: str) -> str:
    """The contentHash as the text of a plain read shows it."""
    text = await session.text_ok("read_note", path=path)
    found = re.search(r"\[contentHash: ([0-9a-f]+)\]", text)
    assert found, text
    return found.group(1)


def gone_or_holds(session: Session, path: str) -> str | None:
    """The live note's text at ``path``, or None when no live note is there."""
    store, project = session.vault.store, session.vault.project_id
    if not store.list_files(project, path=path, prefix=None, include_deleted=False):
        return None
    return session.text(path)


async def test_texts_show_the_first_12_digits_and_structured_content_keeps_all_64(session: Session) -> None:
    assert await shown_hash(session, "a.md") == digest(NOTE)[:12]
    _, _, structured = await session.call("read_note", path="a.md")
    assert structured["contentHash"] == digest(NOTE)
    listing = await session.text_ok("read_notes", paths=["a.md"])
    assert f"=== a.md · {digest(NOTE)[:12]} ===" in listing and digest(NOTE) not in listing
    edited = await session.text_ok("edit_note", path="a.md", edits=[{"oldText": "Kuzma", "newText": "Minin"}])
    assert f"its contentHash is now {digest(THEIRS)[:12]}." in edited and digest(THEIRS) not in edited


@pytest.mark.parametrize("tool", sorted(WRITES))
@pytest.mark.parametrize("digits", [12, 8, 64])
async def test_every_expected_hash_takes_the_hash_the_text_shows_or_a_start_of_it_or_all_of_it(
    session: Session, tool: str, digits: int
) -> None:
    arguments, after = WRITES[tool]
    given = (await shown_hash(session, "a.md"))[:digits] if digits <= 12 else digest(NOTE)
    text = await session.text_ok(tool, path="a.md", expectedHash=given, **arguments)
    assert gone_or_holds(session, "a.md") == after, text
    if tool == "move_note":
        assert session.text("b.md") == NOTE


@pytest.mark.parametrize("tool", sorted(WRITES))
async def test_a_start_that_is_not_the_notes_is_a_conflict_and_nothing_changes(session: Session, tool: str) -> None:
    arguments, _ = WRITES[tool]
    wrong = digest("something else\n")[:12]
    text, is_error = await session.texts(tool, path="a.md", expectedHash=wrong, **arguments)
    assert is_error and text.startswith("Conflict: a.md has changed since you read it"), text
    assert f"you expected contentHash {wrong}, it is now {digest(NOTE)[:12]}" in text
    assert session.text("a.md") == NOTE


@pytest.mark.parametrize("tool", sorted(WRITES))
@pytest.mark.parametrize("given", [digest(NOTE)[:7], "xyz" + digest(NOTE)[3:12], digest(NOTE) + "0"])
async def test_a_hash_of_under_8_digits_or_not_hex_is_a_clear_input_error(
    session: Session, tool: str, given: str
) -> None:
    arguments, _ = WRITES[tool]
    writes = len(session.writes_sent())
    text, is_error = await session.texts(tool, path="a.md", expectedHash=given, **arguments)
    assert is_error, text
    assert "Argument 'expectedHash' must be a contentHash as a read gives it" in text
    assert f"({len(given)} characters)" in text
    assert session.writes_sent()[writes:] == [] and session.text("a.md") == NOTE


def colleague_writes_before_our(session: Session, method: str) -> None:
    """The next ``method`` request on a note first lets a colleague write THEIRS to a.md."""
    session.vault.faults.add(method, FILE, Fault.first(lambda: session.colleague_writes("a.md", THEIRS.encode())))


@pytest.mark.parametrize("tool", sorted(WRITES))
async def test_with_a_short_hash_a_colleagues_write_between_the_check_and_ours_is_still_a_conflict(
    session: Session, tool: str
) -> None:
    """The check passed (the note had the short hash); then a colleague wrote; our write named the full hash
    it was checked against (If-Match), so it is refused (or undone), and their text stays."""
    arguments, _ = WRITES[tool]
    short = await shown_hash(session, "a.md")
    assert len(short) == 12
    colleague_writes_before_our(session, {"move_note": "PATCH", "delete_note": "DELETE"}.get(tool, "PUT"))
    text, is_error = await session.texts(tool, path="a.md", expectedHash=short, **arguments)
    assert is_error and text.startswith("Conflict: a.md"), text
    assert session.text("a.md") == THEIRS
