"""No lost updates: a colleague's write that lands between our read and our write is never silently replaced.

Every test runs against both kinds of server: the local vault with its conditional
writes (``If-Match`` refused atomically, 412) and with them off, like today's Team
Vault server, where the client finds out from the version history right after its
PUT. A scripted fault runs the colleague's write at the exact moment: after our read,
just before our PUT.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.seeding import digest
from support.sessions import Session, open_session

from teamvault_mcp.errors import UNCERTAIN_WRITE_HINT
from teamvault_mcp.localvault import Fault
from teamvault_mcp.localvault.store import Change

pytestmark = pytest.mark.anyio

FILE = "/api/projects/*/files/*"
NOTE = "# Tasks\n- [ ] call Kuzma\n- [ ] send the report\n"
THEIRS = NOTE.replace("- [ ] send the report", "- [x] send the report")


@pytest.fixture(params=[True, False], ids=["conditional", "history"])
async def session(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Session]:
    async with open_session(
        tmp_path, structured_content=True, vault_options={"conditional_writes": request.param}
    ) as running:
        yield running


def conditional(session: Session) -> bool:
    return session.vault.state.conditional_writes


def colleague_writes_before_our_put(session: Session, path: str, content: str) -> None:
    """The next PUT of the note first lets a colleague write ``content`` (a version of their own)."""
    session.vault.faults.add("PUT", FILE, Fault.first(lambda: session.colleague_writes(path, content.encode())))


def history(session: Session, path: str) -> list[bytes]:
    """Every version's bytes, oldest first."""
    store, project = session.vault.store, session.vault.project_id
    file_id = session.file_id(path)
    versions = sorted(store.versions(project, file_id), key=lambda v: v["versionNumber"])
    return [store.version_content(project, file_id, v["id"]) for v in versions]


async def test_an_edit_is_made_again_on_top_of_a_colleagues_write_that_slipped_in(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    colleague_writes_before_our_put(session, "tasks.md", THEIRS)
    edit = {"oldText": "- [ ] call Kuzma", "newText": "- [x] call Kuzma"}
    text, is_error, result = await session.call("edit_note", path="tasks.md", edits=[edit])
    assert not is_error, text
    both = THEIRS.replace("- [ ] call Kuzma", "- [x] call Kuzma")
    assert session.content("tasks.md") == both.encode()
    assert result["contentHash"] == digest(both)
    assert "A colleague's change landed while this call was writing" in text
    assert "by Colleague" in text
    added = [line for line in result["diff"].splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ["+- [x] call Kuzma"]  # the diff shows our change, on top of theirs
    if conditional(session):  # our first PUT was refused: base, theirs, ours on theirs
        assert history(session, "tasks.md")[-2:] == [THEIRS.encode(), both.encode()]
    else:  # nothing of anyone's is lost: base, theirs, ours on the base (replaced at once), ours on theirs
        ours_on_base = NOTE.replace("[ ] call", "[x] call").encode()
        assert history(session, "tasks.md")[-3:] == [THEIRS.encode(), ours_on_base, both.encode()]


async def test_a_colleagues_version_with_our_bytes_does_not_hide_the_version_we_replaced(tmp_path: Path) -> None:
    """Without conditional writes: our first PUT replaced a's line, so our second writes ours on top of a's; just
    before it, a colleague wrote those very bytes (as a colleague's repair in a storm can) and then z appended to
    them and finished. Our second PUT replaces z's version: the history holds our bytes twice and cannot say which
    is ours. Taking the first (as before) lost z's line."""
    async with open_session(tmp_path, vault_options={"conditional_writes": False}) as session:
        base = "# Team log\n\n## Log\n\n## Done\n"

        def log(*entries: str) -> str:
            return base.replace("## Log\n", "## Log\n" + "".join(f"- {entry}\n" for entry in entries))

        session.seed("log.md", base)
        colleague_writes_before_our_put(session, "log.md", log("a"))

        def same_bytes_then_z() -> None:
            session.colleague_writes("log.md", log("w", "a"))  # what our next PUT writes, byte for byte
            session.colleague_writes("log.md", log("z", "w", "a"))

        session.vault.faults.add("PUT", FILE, Fault.first(same_bytes_then_z))  # our second PUT
        edit = {"oldText": "## Log\n", "newText": "## Log\n- w\n"}
        text, is_error, _ = await session.call("edit_note", path="log.md", edits=[edit])
        assert not is_error, text
        final = session.text("log.md")
        assert all(f"- {entry}\n" in final for entry in "awz"), final
        assert len(final.splitlines()) == len(log("a", "w", "z").splitlines()), final  # each line once


async def test_a_rebase_conflicts_instruction_follows_its_diff_on_a_line_of_its_own(tmp_path: Path) -> None:
    # Without conditional writes ours is written and then put back: that conflict shows their version against ours.
    async with open_session(tmp_path, vault_options={"conditional_writes": False}) as session:
        await session.ok_text("write_note", path="tasks.md", content=NOTE)
        colleague_writes_before_our_put(session, "tasks.md", NOTE.replace("call Kuzma", "call Pozharsky"))
        edit = {"oldText": "call Kuzma", "newText": "call Minin"}
        text, is_error = await session.texts("edit_note", path="tasks.md", edits=[edit])
    assert is_error and "Their version against yours:\n" in text, text
    diff = text.split("Their version against yours:\n", 1)[1]
    assert diff.endswith("\n+- [ ] call Minin\n - [ ] send the report\nRead the note again and redo your change."), diff
    assert all(line[:1] in "-+@ …" for line in diff.splitlines()[:-1]), diff  # nothing but the diff before it


async def test_front_matter_updates_are_made_again_on_a_colleagues_write(session: Session) -> None:
    await session.ok("write_note", path="p.md", content="---\nstatus: draft\n---\nBody\n")
    colleague_writes_before_our_put(session, "p.md", "---\nstatus: draft\n---\nBody, and more\n")
    text, is_error, _ = await session.call("update_frontmatter", path="p.md", set={"status": "done"})
    assert not is_error, text
    assert session.content("p.md") == b"---\nstatus: done\n---\nBody, and more\n"


async def test_an_edit_that_no_longer_applies_puts_their_text_back_and_fails(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    theirs = NOTE.replace("call Kuzma", "call Pozharsky")
    colleague_writes_before_our_put(session, "tasks.md", theirs)
    edit = {"oldText": "call Kuzma", "newText": "call Minin"}
    text, is_error, _ = await session.call("edit_note", path="tasks.md", edits=[edit])
    assert is_error
    assert UNCERTAIN_WRITE_HINT not in text
    assert session.content("tasks.md") == theirs.encode()
    if conditional(session):  # refused before anything of ours was written
        assert text.startswith("Conflict: tasks.md was changed by someone else while this call was writing"), text
        assert "Nothing was written" in text
    else:
        assert text.startswith("Conflict: tasks.md was changed by version")
        assert "Their text is the current version again" in text
        assert "-- [ ] call Pozharsky" in text and "+- [ ] call Minin" in text  # the diff between theirs and ours
        assert NOTE.replace("Kuzma", "Minin").encode() in history(session, "tasks.md")  # ours stays in the history


async def test_with_expected_hash_a_slipped_in_write_is_a_conflict_and_theirs_stays(session: Session) -> None:
    await session.ok("write_note", path="tasks.md", content=NOTE)
    colleague_writes_before_our_put(session, "tasks.md", THEIRS)
    edit = {"oldText": "- [ ] call Kuzma", "newText": "- [x] call Kuzma"}
    text, is_error, _ = await session.call("edit_note", path="tasks.md", edits=[edit], expectedHash=digest(NOTE))
    assert is_error
    assert f"you expected contentHash {digest(NOTE)[:12]}" in text
    assert session.content("tasks.md") == THEIRS.encode()
    if conditional(session):
        assert "Nothing was written" in text and "+- [x] send the report" in text  # what changed since
    else:
        assert "Their text is the current version again" in text and "your text stays in the history" in text
        assert NOTE.replace("[ ] call", "[x] call").encode() in history(session, "tasks.md")


async def test_an_expected_hash_conflict_in_a_storm_says_the_losing_lines_can_come_back(session: Session) -> None:
    """A colleague appended before our PUT and another one right after it (on top of ours): our put-back keeps
    the second one's text, and the conflict says what the README's recipe then needs (§13): others' repairs can
    bring our line back, so check the note after redoing. A conflict with nobody after us does not say it."""
    log = "# Log\n- a\n"
    for storm in (False, True):
        await session.ok("write_note", path="log.md", content=log)
        theirs = "- theirs, in the storm\n" if storm else "- theirs\n"  # (each colleague's text a length of its own)
        colleague_writes_before_our_put(session, "log.md", log + theirs)
        if storm and not conditional(session):  # (with conditional writes, nothing of ours is written to race)
            session.vault.faults.add(
                "GET",
                f"{FILE}/versions",
                Fault.first(lambda: session.colleague_writes("log.md", log + "- mine\n- after\n")),
            )
        edit = {"oldText": "- a\n", "newText": "- a\n- mine\n"}
        text, is_error, _ = await session.call("edit_note", path="log.md", edits=[edit], expectedHash=digest(log))
        assert is_error and text.startswith("Conflict: log.md"), text
        said = "Others wrote this note at the same moment, and their repairs can bring your lines back"
        assert (said in text) == (storm and not conditional(session)), text
        assert theirs in session.text("log.md") and "- mine\n" not in session.text("log.md")
        session.vault.faults.clear()


@pytest.mark.parametrize("tool", ["write_note", "restore_note_version"])
async def test_with_expected_hash_a_whole_note_write_that_replaced_a_colleague_is_undone(
    session: Session, tool: str
) -> None:
    await session.ok("write_note", path="a.md", content="one\n")
    await session.ok("write_note", path="a.md", content="two\n")
    colleague_writes_before_our_put(session, "a.md", "theirs\n")
    arguments = {"content": "mine\n"} if tool == "write_note" else {"version": 1}
    text, is_error, _ = await session.call(tool, path="a.md", expectedHash=digest("two\n"), **arguments)
    assert is_error and text.startswith("Conflict: a.md"), text
    assert session.content("a.md") == b"theirs\n"


async def test_a_plain_write_replaces_by_intent_but_says_what_and_whose(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="one\n")
    colleague_writes_before_our_put(session, "a.md", "theirs\n")
    text, is_error, result = await session.call("write_note", path="a.md", content="mine\n")
    assert not is_error, text
    assert session.content("a.md") == b"mine\n"
    assert "by Colleague" in result["replacedMeanwhile"]
    assert 'restore_note_version(path="a.md", version=2)' in result["replacedMeanwhile"]
    assert f"This replaced a change made meanwhile: {result['replacedMeanwhile']}" in text


async def test_a_delete_with_expected_hash_over_a_colleagues_write_is_undone(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="one\n")
    session.vault.faults.add("DELETE", FILE, Fault.first(lambda: session.colleague_writes("a.md", b"theirs\n")))
    text, is_error, _ = await session.call("delete_note", path="a.md", expectedHash=digest("one\n"))
    assert is_error and text.startswith("Conflict: a.md"), text
    if not conditional(session):
        assert "the delete was undone: their text is back at a.md" in text, text
    assert session.content("a.md") == b"theirs\n"


async def test_a_move_with_expected_hash_over_a_colleagues_write_is_undone(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="one\n")
    session.vault.faults.add("PATCH", FILE, Fault.first(lambda: session.colleague_writes("a.md", b"theirs\n")))
    text, is_error, _ = await session.call("move_note", path="a.md", newPath="b.md", expectedHash=digest("one\n"))
    assert is_error and text.startswith("Conflict: a.md"), text
    if not conditional(session):
        assert "the move was undone: the note is back at a.md" in text, text
    assert session.content("a.md") == b"theirs\n"


async def test_without_a_colleague_the_check_costs_one_request_and_none_where_the_server_checks(
    session: Session,
) -> None:
    """The check is one listing of the versions (none with conditional writes) when nobody wrote meanwhile."""
    await session.ok("write_note", path="tasks.md", content=NOTE)
    before = len(session.vault.faults.seen)
    await session.ok("edit_note", path="tasks.md", edits=[{"oldText": "Kuzma", "newText": "Minin"}])
    methods = [method for method, _ in session.vault.faults.seen[before:]]
    check = [] if conditional(session) else ["GET"]  # the versions
    assert methods == ["GET", "GET", "PUT", *check]  # resolve, download, write


async def test_a_retried_write_refused_by_its_own_first_attempt_is_a_success(tmp_path: Path) -> None:
    """Without idempotency, an applied first attempt whose answer was lost makes the retry's If-Match fail:
    the 412 names our own bytes as current, so the write succeeded (settled, verified), it is no conflict."""
    async with open_session(
        tmp_path, structured_content=True, vault_options={"conditional_writes": True, "idempotency": False}
    ) as session:
        await session.ok("write_note", path="a.md", content="one\n")
        session.vault.faults.add("PUT", FILE, Fault.apply_then_close())
        text, is_error, result = await session.call("write_note", path="a.md", content="two\n")
        assert not is_error, text
        assert result["verified"] is True
        assert session.content("a.md") == b"two\n"


@pytest.fixture
async def old_server(tmp_path: Path) -> AsyncIterator[Session]:
    """The local vault without conditional writes, as today's Team Vault server."""
    async with open_session(tmp_path, structured_content=True, vault_options={"conditional_writes": False}) as running:
        yield running


async def test_in_a_storm_the_put_back_restores_the_first_writer_not_a_later_loser(old_server: Session) -> None:
    """Ten colleagues' versions landed after our read; the first won, the nine after it were written over it.
    Our write with expectedHash loses, and the text it puts back is the first writer's, however many came later."""
    session = old_server
    await session.ok("write_note", path="log.md", content="# Log\n")
    store, project = session.vault.store, session.vault.project_id
    colleague = store.add_user("storm@x", "Colleague")

    def storm() -> None:
        for number in range(1, 11):
            with store.write() as db:
                content = f"# Log\n- entry {number}\n".encode()
                store.replace(Change(db, project, colleague), session.file_id("log.md"), content)

    session.vault.faults.add("PUT", FILE, Fault.first(storm))
    edit = {"oldText": "# Log\n", "newText": "# Log\n- entry 0\n"}
    text, is_error, _ = await session.call("edit_note", path="log.md", edits=[edit], expectedHash=digest("# Log\n"))
    assert is_error and text.startswith("Conflict: log.md"), text
    assert session.content("log.md") == b"# Log\n- entry 1\n"


async def test_an_append_with_expected_hash_over_a_colleagues_change_puts_back_exactly_their_text(
    session: Session,
) -> None:
    """Nobody wrote after us: putting theirs back is undoing ours, byte for byte (a blank line of theirs stays)."""
    note = "# Log\n\n## Today\n\nFriday.\n"
    await session.ok("write_note", path="log.md", content=note)
    theirs = note.replace("Friday.", "Thursday.")
    colleague_writes_before_our_put(session, "log.md", theirs)
    edit = {"oldText": "Friday.\n", "newText": "Friday.\n\nmine\n"}
    text, is_error, _ = await session.call("edit_note", path="log.md", edits=[edit], expectedHash=digest(note))
    assert is_error and text.startswith("Conflict: log.md"), text
    assert session.content("log.md") == theirs.encode()
