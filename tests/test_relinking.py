"""move_note keeps links right (issue 17): updateLinks (default true) and dryRun, through a real MCP client.

A local vault on loopback (with and without conditional writes where a colleague's write matters).
The rewrite of one link is table-tested in ``test_links.py``; here: that a rename rewrites exactly
the links that resolved to the moved note, in every note, and nothing else; that a colleague's edit
in between costs that one note (reported, nothing of theirs lost); that a dry run writes nothing;
that write scopes are kept; and that the old calls answer as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.sessions import Session, open_session

from teamvault_mcp.localvault import Fault

pytestmark = pytest.mark.anyio

ADA = """---
related: "[[grace]]"
---
# Ada

## Bio
Born 1815. ^b1
Works with [[./grace|Grace]] and [Grace H.](grace.md).
"""
GRACE = """---
mentor: "[[ada]]"
aliases: [Grace]
---
# Grace

See [[ada]], [[ada|Ada L.]], [[Ada#Bio]], [[ada#^b1|born]] and ![[ada]].
By path: [[people/ada]] and [[people/ada.md|the note]]; Markdown: [her](ada.md#Bio).
In code: `[[ada]]` and

```
[[ada]] stays
```
Not her: [[grace]], [[nobody]].
"""
PLAN = """# Plan

Owner: [Ada](../people/ada.md). Also [[ada]] and [the bio](<../people/ada.md#Bio>).
| who | link |
|-----|------|
| Ada | [[ada\\|Ada]] |
"""
OTHER = "# Other\n\nNo links to her: [[grace]], [[plan]].\n"

GRACE_AFTER = """---
mentor: "[[ada-lovelace]]"
aliases: [Grace]
---
# Grace

See [[ada-lovelace]], [[ada-lovelace|Ada L.]], [[ada-lovelace#Bio]], [[ada-lovelace#^b1|born]] and ![[ada-lovelace]].
By path: [[team/ada-lovelace]] and [[team/ada-lovelace.md|the note]]; Markdown: [her](../team/ada-lovelace.md#Bio).
In code: `[[ada]]` and

```
[[ada]] stays
```
Not her: [[grace]], [[nobody]].
"""
PLAN_AFTER = """# Plan

Owner: [Ada](../team/ada-lovelace.md). Also [[ada-lovelace]] and [the bio](<../team/ada-lovelace.md#Bio>).
| who | link |
|-----|------|
| Ada | [[ada-lovelace\\|Ada]] |
"""
#: The moved note's own relative wikilink would point elsewhere from team/: it is kept on grace.
ADA_AFTER = ADA.replace("[[./grace|Grace]]", "[[../people/grace|Grace]]")

FILE = "/api/projects/*/files/"


@pytest.fixture(params=[True, False], ids=["conditional", "history"])
async def vault(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Session]:
    async with open_session(
        tmp_path, structured_content=True, vault_options={"conditional_writes": request.param}
    ) as session:
        seed(session)
        yield session


def seed(session: Session) -> None:
    session.seed("people/ada.md", ADA)
    session.seed("people/grace.md", GRACE)
    session.seed("projects/plan.md", PLAN)
    session.seed("other.md", OTHER)
    session.seed("people/ada.png", b"\x89PNG not a note", "image/png")


def snapshot(session: Session) -> dict[str, bytes]:
    paths = ("people/ada.md", "team/ada-lovelace.md", "people/grace.md", "projects/plan.md", "other.md")
    found = {}
    for path in paths:
        try:
            found[path] = session.content(path)
        except (IndexError, LookupError):
            continue
    return found


async def test_a_rename_rewrites_every_kind_of_link_to_the_note_and_not_one_other_byte(vault: Session) -> None:
    before = await vault.ok("note_links", path="people/ada.md", direction="in")
    result = await vault.ok("move_note", path="people/ada.md", newPath="team/ada-lovelace.md")
    assert result["path"] == "team/ada-lovelace.md"
    assert [(entry["path"], entry["links"]) for entry in result["links"]["updated"]] == [
        ("people/grace.md", 9),
        ("projects/plan.md", 4),
        ("team/ada-lovelace.md", 1),
    ]
    assert result["links"]["notUpdated"] == []
    assert vault.text("people/grace.md") == GRACE_AFTER
    assert vault.text("projects/plan.md") == PLAN_AFTER
    assert vault.text("team/ada-lovelace.md") == ADA_AFTER
    assert vault.text("other.md") == OTHER
    # Every link that resolved to the note still does, and nothing links to the old path.
    after = await vault.ok("note_links", path="team/ada-lovelace.md", direction="in")
    assert after["in"] == before["in"] == 13
    broken = await vault.ok_text("broken_links")
    assert "ada" not in broken.lower().replace("ada.png", "")


async def test_the_result_says_which_notes_were_updated_in_a_few_lines(vault: Session) -> None:
    text = await vault.ok_text("move_note", path="people/ada.md", newPath="team/ada-lovelace.md")
    assert "Links: 14 links in 3 notes updated to team/ada-lovelace.md:" in text
    lines = [line.split("; its contentHash is now ")[0] for line in text.splitlines()]
    assert lines[2:5] == ["people/grace.md (9)", "projects/plan.md (4)", "team/ada-lovelace.md (1)"]
    notes = ("people/grace.md", "projects/plan.md", "team/ada-lovelace.md")
    for line, path in zip(text.splitlines()[2:5], notes, strict=True):
        new_hash = hashlib.sha256(vault.content(path)).hexdigest()[:12]
        assert line.endswith(f"; its contentHash is now {new_hash}"), line  # what its next edit of it takes
    assert "NOT updated" not in text


async def test_a_dry_run_lists_each_link_that_would_change_and_writes_nothing(vault: Session) -> None:
    contents = snapshot(vault)
    text, is_error, result = await vault.call(
        "move_note", path="people/ada.md", newPath="team/ada-lovelace.md", dryRun=True
    )
    assert not is_error, text
    assert vault.writes_sent() == []
    assert snapshot(vault) == contents
    lines = text.splitlines()
    assert lines[:6] == [
        "Dry run: nothing was written. people/ada.md would move to team/ada-lovelace.md.",
        "14 links in 3 notes would be rewritten.",
        "Where (note:lines):",
        "people/grace.md:2,7,8",
        "projects/plan.md:3,6",
        "team/ada-lovelace.md:8",
    ]
    assert lines[6] == "What (link → new link):"
    assert lines[7] == "[[ada]] → [[ada-lovelace]]  ×2"  # the most frequent first
    assert '"[[ada]]" → "[[ada-lovelace]]"' in lines  # the front matter link, in its quotes
    assert "[her](ada.md#Bio) → [her](../team/ada-lovelace.md#Bio)" in lines
    assert "[[ada\\|Ada]] → [[ada-lovelace\\|Ada]]" in lines
    assert "[and 1 more rewrite; the lines above show where]" in lines  # 13 distinct, 12 shown
    assert lines[-1] == "To do it: the same move_note call without dryRun."
    assert result["dryRun"] is True
    assert [entry["path"] for entry in result["links"]["updated"]] == [
        "people/grace.md",
        "projects/plan.md",
        "team/ada-lovelace.md",
    ]
    # And what it listed is what the move does.
    moved = await vault.ok("move_note", path="people/ada.md", newPath="team/ada-lovelace.md")
    assert moved["links"]["updated"][0]["links"] == result["links"]["updated"][0]["links"]
    assert vault.text("people/grace.md") == GRACE_AFTER


async def test_a_dry_run_onto_a_taken_path_fails_as_the_move_would_and_writes_nothing(vault: Session) -> None:
    text, is_error, _ = await vault.call("move_note", path="people/ada.md", newPath="other.md", dryRun=True)
    assert is_error
    assert "a note already exists at other.md" in text
    assert vault.writes_sent() == []


async def test_a_colleague_editing_a_linking_note_meanwhile_keeps_their_text_and_that_note_is_reported(
    vault: Session,
) -> None:
    theirs = PLAN + "\nA line of the colleague's, written while the links were being updated.\n"
    plan_id = vault.file_id("projects/plan.md")
    vault.vault.faults.add(
        "PUT", f"{FILE}{plan_id}*", Fault.first(lambda: vault.colleague_writes("projects/plan.md", theirs))
    )
    text, is_error, result = await vault.call("move_note", path="people/ada.md", newPath="team/ada-lovelace.md")
    assert not is_error, text
    assert vault.vault.faults.injected, "the colleague's write did not run: the test tested nothing"
    assert vault.text("projects/plan.md") == theirs  # nothing of theirs lost
    assert vault.text("people/grace.md") == GRACE_AFTER  # the others are written all the same
    assert [entry["path"] for entry in result["links"]["updated"]] == ["people/grace.md", "team/ada-lovelace.md"]
    [refused] = result["links"]["notUpdated"]
    assert refused["path"] == "projects/plan.md"
    assert "someone changed it" in refused["why"]
    assert refused["retry"].startswith("read_note, then edit_note(path='projects/plan.md', replaceAll) with ")
    assert "[Ada](../people/ada.md) → [Ada](../team/ada-lovelace.md)" in refused["retry"]
    assert "1 note NOT updated; their links still name the old path:\nprojects/plan.md  (someone changed it" in text


async def test_write_scopes_that_forbid_a_linking_note_leave_it_unwritten_and_say_so(tmp_path: Path) -> None:
    async with open_session(tmp_path, structured_content=True, write_prefixes=("people/", "team/")) as session:
        seed(session)
        dry = await session.ok_text("move_note", path="people/ada.md", newPath="team/ada-lovelace.md", dryRun=True)
        assert "1 note would not be updated:\nprojects/plan.md  (it is outside the write scopes)" in dry
        result = await session.ok("move_note", path="people/ada.md", newPath="team/ada-lovelace.md")
        assert session.text("projects/plan.md") == PLAN
        assert session.text("people/grace.md") == GRACE_AFTER
        assert [entry["path"] for entry in result["links"]["notUpdated"]] == ["projects/plan.md"]
        assert result["links"]["notUpdated"][0]["why"] == "it is outside the write scopes"
        assert not any(path.endswith(session.file_id("projects/plan.md")) for _, path in session.writes_sent())


async def test_old_calls_keep_working_and_update_links_false_touches_no_other_note(vault: Session) -> None:
    contents = snapshot(vault)
    result = await vault.ok("move_note", path="people/ada.md", newPath="team/ada-lovelace.md", updateLinks=False)
    content_hash = hashlib.sha256(contents["people/ada.md"]).hexdigest()
    summary = result.pop("summary")  # the text, which also says how to find the links left as they were
    assert result == {"path": "team/ada-lovelace.md", "previousPath": "people/ada.md", "contentHash": content_hash}
    assert summary.startswith(
        f"Moved people/ada.md to team/ada-lovelace.md; its contentHash stays {content_hash[:12]}. Links to it in "
        "other notes are not changed; search_notes(query="
    )
    assert vault.text("people/grace.md") == GRACE
    assert vault.content("team/ada-lovelace.md") == contents["people/ada.md"]
    # A note nothing links to moves as it always did, with an empty list of updates.
    plain = await vault.ok("move_note", path="other.md", newPath="archive/other.md")
    assert plain["path"] == "archive/other.md" and vault.file_id("archive/other.md")
    assert plain["links"] == {
        "summary": "Links: none to change (no link resolved to the note, or each still does).",
        "updated": [],
        "notUpdated": [],
    }
    text = await vault.ok_text("move_note", path="archive/other.md", newPath="other.md")
    assert text.endswith("\nLinks: none to change (no link resolved to the note, or each still does).")


async def test_links_that_will_resolve_to_the_moved_note_are_left_and_told(tmp_path: Path) -> None:
    async with open_session(tmp_path, structured_content=True) as session:
        session.seed("people/ada.md", "# Ada\n")
        session.seed("notes/x.md", "Broken so far: [[lovelace]].\n")
        text = await session.ok_text("move_note", path="people/ada.md", newPath="people/lovelace.md")
        assert "[1 link that pointed elsewhere will resolve to the moved note, e.g. notes/x.md:1 [[lovelace]]" in text
        assert session.text("notes/x.md") == "Broken so far: [[lovelace]].\n"


async def test_a_listing_that_fails_after_the_move_reports_the_move_done_and_the_links_left(vault: Session) -> None:
    def listing_fails() -> None:  # from the move on, the vault answers no listing
        vault.vault.faults.add("GET", "/api/projects/*/files", Fault.answer(400), times=50)

    vault.vault.faults.add("PATCH", f"{FILE}*", Fault.first(listing_fails))
    text, is_error, result = await vault.call("move_note", path="people/ada.md", newPath="team/ada-lovelace.md")
    vault.vault.faults.clear()
    assert not is_error, text
    assert result["path"] == "team/ada-lovelace.md"
    assert vault.text("team/ada-lovelace.md") == ADA  # moved
    assert vault.text("people/grace.md") == GRACE  # and nothing else written
    assert result["links"]["problem"].startswith("The move is done, but the links to it were not updated: ")
    assert "Links: NOT updated. The move is done" in text
    assert "broken_links() lists the links left pointing at people/ada.md" in text
