"""Safe editing against a real local vault: edit_note, expectedHash, write modes, history, settled writes.

The tools run in-process through a real MCP client (in-memory streams) and real
loopback sockets to a local vault whose faults the tests script. Retry pauses and
the attempt limit are scaled down (the rules are the production ones).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.seeding import digest
from support.sessions import Session, open_session

from teamvault_mcp.errors import UNCERTAIN_WRITE_HINT
from teamvault_mcp.localvault import Fault

pytestmark = pytest.mark.anyio

FILE = "/api/projects/*/files/*"
NOTE = "# Tasks\n- [ ] call Kuzma\n- [ ] send the report\n"


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, structured_content=True) as running:
        yield running


@pytest.fixture
async def old_server(tmp_path: Path) -> AsyncIterator[Session]:
    """A vault that ignores Idempotency-Key, as the public Team Vault server does."""
    async with open_session(tmp_path, structured_content=True, vault_options={"idempotency": False}) as running:
        yield running


# -- edit_note ------------------------------------------------------------------------------------


async def test_edit_note_applies_and_returns_the_diff_and_the_new_hash(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    edit = {"oldText": "- [ ] call Kuzma", "newText": "- [x] call Kuzma"}
    text, is_error, result = await session.call("edit_note", path="tasks.md", edits=[edit])
    assert not is_error
    assert session.content("tasks.md") == NOTE.replace("[ ] call", "[x] call").encode()
    assert result["contentHash"] == digest(session.content("tasks.md"))
    assert result["previousHash"] == digest(NOTE)
    assert "-- [ ] call Kuzma\n+- [x] call Kuzma" in result["diff"]
    assert text.startswith(f"Edited tasks.md; its contentHash is now {result['contentHash'][:12]}.")


async def test_a_dry_run_shows_the_diff_and_writes_nothing(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    before = session.operations()
    text, _, result = await session.call(
        "edit_note", path="tasks.md", edits=[{"oldText": "report", "newText": "invoice"}], dryRun=True
    )
    assert text.startswith("Dry run: nothing was written.")
    assert "+- [ ] send the invoice" in result["diff"]
    assert session.operations() == before
    assert session.content("tasks.md") == NOTE.encode()


async def test_a_failed_edit_writes_nothing(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    before = session.operations()
    edits = [{"oldText": "call Kuzma", "newText": "call Minin"}, {"oldText": "not in the note", "newText": "x"}]
    text, is_error, _ = await session.call("edit_note", path="tasks.md", edits=edits)
    assert is_error and text.startswith("Edit 2 of 2: oldText was not found.")
    assert UNCERTAIN_WRITE_HINT not in text
    assert session.operations() == before


async def test_a_patch_edits_a_crlf_note_and_keeps_its_line_endings(session: Session) -> None:
    await session.ok("write_note", path="win.md", content="one\r\ntwo\r\nthree\r\n")
    await session.ok("edit_note", path="win.md", patch="@@ -2 +2 @@\n one\n-two\n+2\n three\n")
    assert session.content("win.md") == b"one\r\n2\r\nthree\r\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "Give either edits"),
        ({"edits": [{"oldText": "a", "newText": "b"}], "patch": "@@ @@\n-a\n+b\n"}, "Give either edits"),
        ({"edits": []}, "must be an array of 1 to 100 edits"),
        ({"edits": [{"oldText": "a"}]}, "Edit 1 has no newText."),
        ({"edits": [{"old": "a", "newText": "b"}]}, "Edit 1 has unknown fields old"),
        ({"edits": [{"oldText": "a", "newText": "b", "replaceAll": "yes"}]}, "replaceAll must be true or false"),
        ({"edits": [{"oldText": "a", "newText": "b"}], "expectedHash": "abc"}, "must be a contentHash"),
    ],
)
async def test_bad_edit_arguments(session: Session, arguments: dict[str, Any], message: str) -> None:
    text, is_error, _ = await session.call("edit_note", path="tasks.md", **arguments)
    assert is_error and message in text, text


# -- expectedHash -----------------------------------------------------------------------------------


async def test_a_stale_hash_refuses_every_write_and_shows_what_changed(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    seen = (await session.ok("read_note", path="tasks.md"))["contentHash"]
    session.colleague_writes("tasks.md", NOTE.replace("send the report", "send the report today").encode())
    now = digest(session.content("tasks.md"))
    calls = [
        ("write_note", {"content": "mine\n"}),
        ("edit_note", {"edits": [{"oldText": "call Kuzma", "newText": "call Minin"}]}),
        ("move_note", {"newPath": "moved.md"}),
        ("delete_note", {}),
        ("restore_note_version", {"version": 1}),
    ]
    before = session.operations()
    for tool, arguments in calls:
        text, is_error, _ = await session.call(tool, path="tasks.md", expectedHash=seen, **arguments)
        assert is_error, tool
        assert text.startswith(
            f"Conflict: tasks.md has changed since you read it: you expected contentHash {seen[:12]}"
        )
        assert f"it is now {now[:12]}" in text
        assert "-- [ ] send the report\n+- [ ] send the report today" in text  # the diff since what was seen
        assert UNCERTAIN_WRITE_HINT not in text
    assert session.operations() == before


async def test_a_conflicts_instruction_follows_its_diff_on_a_line_of_its_own(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    seen = (await session.ok("read_note", path="tasks.md"))["contentHash"]
    session.colleague_writes("tasks.md", NOTE.replace("send the report", "send the report today").encode())
    edit = {"oldText": "call Kuzma", "newText": "call Minin"}
    text, is_error = await session.texts("edit_note", path="tasks.md", expectedHash=seen[:12], edits=[edit])
    assert is_error
    assert text.endswith(
        "\n-- [ ] send the report\n+- [ ] send the report today\n"
        "Read the note again, then redo your change on its current text."
    ), text
    assert not any(line.startswith(" Read the note") for line in text.splitlines())


async def test_the_right_hash_lets_the_write_through(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    result = await session.ok("write_note", path="tasks.md", content="new\n", expectedHash=digest(NOTE).upper())
    assert result["action"] == "updated"


async def test_a_hash_for_a_note_that_is_gone_is_a_conflict(session: Session) -> None:
    text, is_error, _ = await session.call("write_note", path="gone.md", content="x", expectedHash=digest("x"))
    assert is_error and text.startswith("Conflict: gone.md no longer exists")


async def test_every_read_that_returns_content_returns_its_hash(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    assert (await session.ok("read_note", path="tasks.md"))["contentHash"] == digest(NOTE)
    assert (await session.ok("read_note", path="tasks.md", startLine=1, endLine=1))["contentHash"] == digest(NOTE)
    assert (await session.ok("note_outline", path="tasks.md"))["contentHash"] == digest(NOTE)
    batch = await session.ok("read_notes", paths=["tasks.md"])
    assert batch["notes"][0]["contentHash"] == digest(NOTE)


# -- write modes ------------------------------------------------------------------------------------


async def test_mode_create_never_overwrites_and_mode_update_never_creates(session: Session) -> None:
    created = await session.ok("write_note", path="a.md", content="1\n", mode="create")
    assert created["action"] == "created"
    text, is_error, _ = await session.call("write_note", path="a.md", content="2\n", mode="create")
    assert is_error and text.startswith("Note already exists: a.md.")
    text, is_error, _ = await session.call("write_note", path="b.md", content="2\n", mode="update")
    assert is_error and text.startswith("Note not found: b.md (mode=update")
    assert (await session.ok("write_note", path="a.md", content="3\n", mode="update"))["action"] == "updated"
    text, is_error, _ = await session.call("write_note", path="a.md", content="4\n", mode="replace")
    assert is_error and "must be one of upsert, create, update" in text


# -- history ----------------------------------------------------------------------------------------


async def test_versions_can_be_read_diffed_and_restored_as_a_new_version(session: Session) -> None:
    first = "Ёлка\r\nline two\r\n"
    await session.ok("write_note", path="n.md", content=first)
    await session.ok("write_note", path="n.md", content="changed\n")
    versions = (await session.ok("list_note_versions", path="n.md"))["versions"]
    assert [v["versionNumber"] for v in versions] == [2, 1]

    text, _, meta = await session.call("read_note_version", path="n.md", version=1)
    header, _, body = text.partition("\n")  # the first line names the version's contentHash
    assert header == f"[contentHash: {digest(first)[:12]}]" and body == first
    assert meta["version"]["versionNumber"] == 1 and meta["text"] == first
    by_id, _, _ = await session.call("read_note_version", path="n.md", version=versions[1]["id"])
    assert by_id.partition("\n")[2] == first

    diff = await session.ok("diff_note_versions", path="n.md", **{"from": 1})
    assert diff["changed"] and "-Ёлка\n-line two\n+changed" in diff["diff"]
    assert diff["to"] == {"current": True, "contentHash": digest("changed\n")}

    restored = await session.ok("restore_note_version", path="n.md", version=1)
    assert restored["action"] == "restored"
    assert session.content("n.md") == first.encode()  # byte for byte, CRLF and all
    assert restored["contentHash"] == digest(first)
    versions = (await session.ok("list_note_versions", path="n.md"))["versions"]
    assert [v["versionNumber"] for v in versions] == [3, 2, 1]  # nothing lost: "changed" stays as version 2

    again = await session.ok("restore_note_version", path="n.md", version=3)
    assert again["action"] == "unchanged"


async def test_an_unknown_version_lists_the_ones_there_are(session: Session) -> None:
    await session.ok("write_note", path="n.md", content="a\n")
    await session.ok("write_note", path="n.md", content="b\n")
    text, is_error, _ = await session.call("read_note_version", path="n.md", version=7)
    assert is_error and text.startswith("Version 7 of n.md not found: it has versions 2, 1.")


# -- uncertain writes, settled ----------------------------------------------------------------------------


async def test_an_unanswered_write_found_applied_is_a_verified_success(session: Session) -> None:
    await session.ok("write_note", path="n.md", content="before\n")
    session.vault.faults.add("PUT", FILE, Fault.apply_then_close(), times=4)  # 3 attempts + the free resend
    text, is_error, result = await session.call("write_note", path="n.md", content="after\n")
    assert not is_error, text
    assert result["verified"] is True and "confirmed the change was applied" in result["note"]
    assert session.content("n.md") == b"after\n"
    assert session.operations().count("UPDATE") == 1  # applied once, replayed twice


async def test_an_unanswered_write_found_unchanged_is_a_clean_failure(session: Session) -> None:
    await session.ok("write_note", path="n.md", content="before\n")
    session.vault.faults.add("PUT", FILE, Fault.close_before(), times=4)  # 3 attempts + the free resend
    text, is_error, _ = await session.call("edit_note", path="n.md", edits=[{"oldText": "before", "newText": "x"}])
    assert is_error
    assert f"A check right after found the note unchanged (contentHash {digest('before' + chr(10))[:12]})" in text
    assert UNCERTAIN_WRITE_HINT not in text
    assert session.content("n.md") == b"before\n"


async def test_an_unanswered_write_changed_by_someone_else_keeps_the_hint(session: Session) -> None:
    await session.ok("write_note", path="n.md", content="before\n")

    colleague_done = []

    def colleague_then_drop(method: str, path: str) -> Fault | None:
        if method != "PUT":
            return None
        if not colleague_done:  # meanwhile, a colleague saves the note
            session.colleague_writes("n.md", b"theirs\n")
            colleague_done.append(True)
        return Fault.close_before()

    session.vault.faults.chooser = colleague_then_drop
    text, is_error, _ = await session.call("write_note", path="n.md", content="mine\n")
    assert is_error
    assert text.endswith(UNCERTAIN_WRITE_HINT)  # neither ours nor what it was: it cannot tell


async def test_a_move_and_a_delete_are_settled_too(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="a\n")
    session.vault.faults.add("PATCH", FILE, Fault.apply_then_close(), times=4)  # 3 attempts + the free resend
    moved = await session.ok("move_note", path="a.md", newPath="b.md")
    assert moved["verified"] is True and moved["path"] == "b.md"
    session.vault.faults.add("DELETE", FILE, Fault.close_before(), times=4)  # 3 attempts + the free resend
    text, is_error, _ = await session.call("delete_note", path="b.md")
    assert is_error and "found the note still at b.md: the change was not applied" in text


async def test_a_create_retried_on_a_server_without_idempotency_is_recognised_as_ours(old_server: Session) -> None:
    old_server.vault.faults.add("POST", "/api/projects/*/files", Fault.apply_then_close())
    text, is_error, result = await old_server.call("write_note", path="new.md", content="ours\n")
    assert not is_error, text  # the retry met 409 path_exists: our own first attempt, by its hash
    assert result["action"] == "created" and result["verified"] is True
    assert old_server.operations() == ["CREATE"]


# -- mode=create in one request ---------------------------------------------------------------------------


async def test_mode_create_is_one_post_and_an_existing_note_is_refused_with_the_same_text(session: Session) -> None:
    before = len(session.vault.faults.seen)
    created = await session.ok("write_note", path="c.md", content="1\n", mode="create")
    assert created["action"] == "created"
    assert [method for method, _ in session.vault.faults.seen[before:]] == ["POST"]
    before = len(session.vault.faults.seen)
    text, is_error, _ = await session.call("write_note", path="c.md", content="2\n", mode="create")
    assert is_error and text.startswith("Note already exists: c.md. mode=create never overwrites")
    assert [method for method, _ in session.vault.faults.seen[before:]] == ["POST"]
    assert session.content("c.md") == b"1\n"


async def test_mode_create_retried_on_a_server_without_idempotency_is_recognised_as_ours(old_server: Session) -> None:
    old_server.vault.faults.add("POST", "/api/projects/*/files", Fault.apply_then_close())
    text, is_error, result = await old_server.call("write_note", path="new.md", content="ours\n", mode="create")
    assert not is_error, text  # the retry met 409 path_exists: our own first attempt, by its hash
    assert result["action"] == "created" and result["verified"] is True
    assert old_server.operations() == ["CREATE"]


async def test_mode_create_meeting_a_colleague_s_note_after_a_lost_answer_is_not_called_ours(
    old_server: Session,
) -> None:
    def colleague_then_drop(method: str, path: str) -> Fault | None:
        if method != "POST" or old_server.vault.faults.injected:
            return None
        old_server.colleague_writes("new.md", b"theirs\n")  # meanwhile, a colleague creates the note
        return Fault.close_before()  # and our first attempt's answer is lost

    old_server.vault.faults.chooser = colleague_then_drop
    text, is_error, _ = await old_server.call("write_note", path="new.md", content="ours\n", mode="create")
    assert is_error and text.endswith(UNCERTAIN_WRITE_HINT)  # the 409 may be our own lost attempt's
    assert old_server.content("new.md") == b"theirs\n"
