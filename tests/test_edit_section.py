"""edit_section through a real MCP client against a local vault: where content goes, and the write path it takes.

The blank-line rules are table-tested in ``test_sections.py`` (pure); here, the tool's wiring:
sections named by tocPath and breadcrumb, the messages, the write rules of edit_note (expectedHash,
a colleague's write meanwhile, settled outcomes), create, dry runs checked at the vault, scopes,
the audit log and read-only mode.
"""

from __future__ import annotations

import json
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
FILES = "/api/projects/*/files"

MEETING = """# Weekly sync

## Notes

We talked about the launch.

## Action items

- [ ] Ada: send the report

## Next meeting

Friday.
"""


@pytest.fixture(params=[True, False], ids=["conditional", "history"])
async def session(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Session]:
    async with open_session(
        tmp_path, structured_content=True, vault_options={"conditional_writes": request.param}
    ) as running:
        yield running


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, structured_content=True) as running:
        yield running


async def edited(session: Session, path: str, **arguments: Any) -> str:
    """The note's text after an edit_section that must succeed."""
    await session.ok_text("edit_section", path=path, **arguments)
    return session.text(path)


# -- one call, no prior read ----------------------------------------------------------------------------------


async def test_an_action_item_goes_under_action_items_in_one_call(session: Session) -> None:
    session.seed("meetings/sync.md", MEETING)
    text, is_error, result = await session.call(
        "edit_section",
        path="meetings/sync.md",
        section=["Weekly sync", "Action items"],
        content="- [ ] Bob: book the room",
    )
    assert not is_error, text
    assert session.text("meetings/sync.md") == MEETING.replace(
        "- [ ] Ada: send the report\n", "- [ ] Ada: send the report\n- [ ] Bob: book the room\n"
    )
    assert result["contentHash"] == digest(session.content("meetings/sync.md"))
    assert result["previousHash"] == digest(MEETING)
    assert text.startswith(
        'Appended to "Weekly sync > Action items" in meetings/sync.md; its contentHash is now '
        f"{result['contentHash'][:12]}."
    )
    assert "+- [ ] Bob: book the room" in text  # the diff is in the text, for hosts that show only the text
    assert session.writes_sent() == [
        ("PUT", f"/api/projects/{session.vault.project_id}/files/{session.file_id('meetings/sync.md')}")
    ]


async def test_the_breadcrumb_a_search_hit_shows_names_the_section_too(plain: Session) -> None:
    plain.seed("m.md", MEETING)
    hit = (await plain.ok("search_notes", query="Ada report"))["hits"][0]
    assert hit["breadcrumb"] == "Weekly sync > Action items"
    after = await edited(plain, "m.md", section=hit["breadcrumb"], content="- [ ] Cleo: call the venue")
    assert "- [ ] Ada: send the report\n- [ ] Cleo: call the venue\n\n## Next meeting" in after
    after = await edited(plain, "m.md", section=hit["tocPath"], content="- [ ] Dan: order food")
    assert "- [ ] Cleo: call the venue\n- [ ] Dan: order food\n\n## Next" in after


# -- which section ------------------------------------------------------------------------------------------------

DUPLICATES = """# Project

## Notes

First notes.

## Notes

Second notes.
"""


async def test_a_repeated_title_is_named_by_its_suffix_and_a_breadcrumb_to_it_is_refused(plain: Session) -> None:
    plain.seed("p.md", DUPLICATES)
    after = await edited(plain, "p.md", section=["Project", "Notes [2]"], content="More.")
    assert after == DUPLICATES.replace("Second notes.\n", "Second notes.\n\nMore.\n")
    before = plain.operations()
    text, is_error, _ = await plain.call("edit_section", path="p.md", section="Project > Notes", content="x")
    assert is_error
    assert 'The breadcrumb "Project > Notes" is ambiguous: 2 headings under Project are titled "Notes".' in text
    assert '["Project", "Notes"] or ["Project", "Notes [2]"]' in text
    assert plain.operations() == before


NESTED = """# Handbook

## Money

Intro to money.

### Travel

Book early.

### Equipment

Ask first.

## People

Be kind.
"""


async def test_append_goes_after_the_last_subsection_and_prepend_right_under_the_heading(plain: Session) -> None:
    plain.seed("h.md", NESTED)
    after = await edited(plain, "h.md", section=["Handbook", "Money"], content="Receipts within a month.")
    assert "### Equipment\n\nAsk first.\n\nReceipts within a month.\n\n## People" in after
    after = await edited(plain, "h.md", section=["Handbook", "Money"], content="Read this first.", mode="prepend")
    assert "## Money\n\nRead this first.\n\nIntro to money.\n" in after
    after = await edited(plain, "h.md", section=["Handbook", "Money", "Travel"], content="Economy.", mode="replace")
    assert "### Travel\n\nEconomy.\n\n### Equipment" in after
    assert "Book early." not in after


async def test_the_last_section_keeps_the_end_of_the_note(plain: Session) -> None:
    plain.seed("h.md", NESTED)
    after = await edited(plain, "h.md", section=["Handbook", "People"], content="Say thanks.")
    assert after.endswith("## People\n\nBe kind.\n\nSay thanks.\n")
    plain.seed("no-break.md", "# Log\n\n- one")
    assert await edited(plain, "no-break.md", section=["Log"], content="- two") == "# Log\n\n- one\n- two"


async def test_a_note_without_headings_takes_the_whole_note_and_says_it_has_none(plain: Session) -> None:
    plain.seed("plain.md", "first line\nsecond line\n")
    assert await edited(plain, "plain.md", section=[], content="last line") == "first line\nsecond line\nlast line\n"
    # the note is a log (a run of plain lines): a line put at its top joins it
    assert await edited(plain, "plain.md", section="", content="top", mode="prepend") == (
        "top\nfirst line\nsecond line\nlast line\n"
    )
    text, is_error, _ = await plain.call("edit_section", path="plain.md", section=["Intro"], content="x")
    assert is_error and text.startswith("plain.md has no headings")


async def test_a_crlf_note_gets_crlf_lines(plain: Session) -> None:
    plain.seed("win.md", MEETING.replace("\n", "\r\n"))
    after = await edited(plain, "win.md", section=["Weekly sync", "Action items"], content="- [ ] Bob\n- [ ] Cleo\n")
    assert "- [ ] Ada: send the report\r\n- [ ] Bob\r\n- [ ] Cleo\r\n\r\n## Next meeting" in after
    assert "\n" not in after.replace("\r\n", "")


async def test_the_whole_note_starts_after_its_front_matter(plain: Session) -> None:
    plain.seed("fm.md", "---\nstatus: draft\n---\n# Title\n\nBody.\n")
    after = await edited(plain, "fm.md", section=[], content="> Read me first.", mode="prepend")
    assert after == "---\nstatus: draft\n---\n> Read me first.\n\n# Title\n\nBody.\n"
    after = await edited(plain, "fm.md", section=[], content="Only this.", mode="replace")
    assert after == "---\nstatus: draft\n---\nOnly this.\n"


CODE = """# Setup

```sh
# install
make
```

## Run

Go.
"""


async def test_hash_lines_in_code_blocks_are_not_sections(plain: Session) -> None:
    plain.seed("c.md", CODE)
    text, is_error, _ = await plain.call("edit_section", path="c.md", section=["Setup", "install"], content="x")
    assert is_error and 'Section not found: "install" under Setup in c.md. Headings there: "Run".' in text
    after = await edited(plain, "c.md", section=["Setup"], content="Done.", mode="prepend")
    assert after.startswith("# Setup\n\nDone.\n\n```sh\n# install\n")
    text, is_error, _ = await plain.call("edit_section", path="c.md", section=["Setup"], content="```\nopen")
    assert is_error and "that it does not close" in text and "Nothing was changed." in text


async def test_a_missing_section_lists_the_headings_there_as_a_section_read_does(plain: Session) -> None:
    plain.seed("m.md", MEETING)
    before = plain.operations()
    text, is_error, _ = await plain.call("edit_section", path="m.md", section=["Weekly sync", "Actions"], content="x")
    read, read_error, _ = await plain.call("read_note", path="m.md", section=["Weekly sync", "Actions"])
    assert is_error and read_error and text == read
    assert 'Headings there: "Notes", "Action items", "Next meeting"' in text
    text, is_error, _ = await plain.call("edit_section", path="m.md", section="Weekly sync > Actions", content="x")
    assert is_error and text == read
    assert plain.operations() == before


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"section": 3}, "must be a tocPath (an array of heading names, [] for the whole note) or a breadcrumb"),
        ({"section": ["A", 1]}, "Item 1 of 'section' must be a string"),
        ({"mode": "insert"}, "must be one of append, append_body, prepend, replace, not 'insert'"),
        ({"content": ""}, "content is empty: there is nothing to append"),
        ({"expectedHash": "abc"}, "must be a contentHash"),
    ],
)
async def test_bad_arguments_are_refused_and_nothing_is_written(
    plain: Session, arguments: dict[str, Any], message: str
) -> None:
    plain.seed("m.md", MEETING)
    before = plain.operations()
    text, is_error, _ = await plain.call(
        "edit_section", **{"path": "m.md", "section": ["Weekly sync"], "content": "x", **arguments}
    )
    assert is_error and message in text, text
    assert plain.operations() == before


# -- dry runs -------------------------------------------------------------------------------------------------------


async def test_a_dry_run_writes_nothing_and_gives_the_call_that_applies_it(plain: Session) -> None:
    plain.seed("m.md", MEETING)
    before = plain.operations()
    arguments = {"path": "m.md", "section": ["Weekly sync", "Notes"], "content": "Budget approved.", "mode": "prepend"}
    text, is_error, result = await plain.call("edit_section", dryRun=True, **arguments)
    assert not is_error, text
    assert plain.operations() == before and plain.text("m.md") == MEETING
    assert result["dryRun"] is True and result["previousHash"] == digest(MEETING)
    assert f"(it is {digest(MEETING)[:12]} now)" in text and "+Budget approved." in text
    call = text.split("Apply it with: ", 1)[1].split("\n", 1)[0]
    assert call == (
        'edit_section(path="m.md", section=["Weekly sync", "Notes"], content="Budget approved.", mode="prepend", '
        f'expectedHash="{digest(MEETING)[:12]}")'
    )
    applied = await plain.ok("edit_section", expectedHash=digest(MEETING)[:12], **arguments)  # the call as shown
    assert applied["contentHash"] == result["contentHash"] == digest(plain.content("m.md"))


# -- the write path of edit_note -------------------------------------------------------------------------------------


async def test_a_stale_hash_is_a_conflict_and_writes_nothing(session: Session) -> None:
    session.seed("m.md", MEETING)
    session.colleague_writes("m.md", MEETING + "\nPostscript.\n")
    before = session.operations()
    text, is_error, _ = await session.call(
        "edit_section", path="m.md", section=["Weekly sync"], content="x", expectedHash=digest(MEETING)
    )
    assert is_error and text.startswith(
        f"Conflict: m.md has changed since you read it: you expected contentHash {digest(MEETING)[:12]},"
    )
    assert session.operations() == before


async def test_a_colleagues_write_at_the_same_moment_is_kept_and_the_content_goes_into_it(session: Session) -> None:
    session.seed("m.md", MEETING)
    theirs = MEETING.replace("Friday.", "Thursday.")
    session.vault.faults.add("PUT", FILE, Fault.first(lambda: session.colleague_writes("m.md", theirs)))
    text, is_error, _ = await session.call(
        "edit_section", path="m.md", section=["Weekly sync", "Action items"], content="- [ ] Bob"
    )
    assert not is_error, text
    assert session.text("m.md") == theirs.replace("send the report\n", "send the report\n- [ ] Bob\n")
    assert "A colleague's change landed while this call was writing" in text


async def test_with_expected_hash_a_colleagues_write_at_the_same_moment_is_a_conflict(session: Session) -> None:
    session.seed("m.md", MEETING)
    theirs = MEETING.replace("Friday.", "Thursday.")
    session.vault.faults.add("PUT", FILE, Fault.first(lambda: session.colleague_writes("m.md", theirs)))
    text, is_error, _ = await session.call(
        "edit_section", path="m.md", section=["Weekly sync"], content="x", expectedHash=digest(MEETING)
    )
    assert is_error and text.startswith("Conflict: m.md"), text
    assert session.text("m.md") == theirs  # theirs stands (never replaced, or put back)


async def test_a_colleague_removing_the_section_meanwhile_loses_nothing(session: Session) -> None:
    session.seed("m.md", MEETING)
    theirs = MEETING.replace("## Action items\n\n- [ ] Ada: send the report\n\n", "")
    session.vault.faults.add("PUT", FILE, Fault.first(lambda: session.colleague_writes("m.md", theirs)))
    text, is_error, _ = await session.call(
        "edit_section", path="m.md", section=["Weekly sync", "Action items"], content="- [ ] Bob"
    )
    assert UNCERTAIN_WRITE_HINT not in text
    if session.vault.state.conditional_writes:  # refused before it replaced theirs: the append no longer applies
        assert is_error and text.startswith("Conflict: m.md"), text
        assert 'the section "Weekly sync > Action items" is not in their text' in text
        assert session.text("m.md") == theirs
    else:  # written over theirs; an append merges by adding lines only (no_lost_updates.py): theirs is in history
        assert not is_error, text
        assert "- [ ] Bob" in session.text("m.md")
        assert "A colleague's change landed while this call was writing" in text


async def test_an_unanswered_write_found_applied_is_a_verified_success(plain: Session) -> None:
    plain.seed("m.md", MEETING)
    plain.vault.faults.add("PUT", FILE, Fault.apply_then_close(), times=4)  # 3 attempts + the free resend
    text, is_error, result = await plain.call("edit_section", path="m.md", section=["Weekly sync"], content="End.")
    assert not is_error, text
    assert result["verified"] is True
    assert plain.text("m.md").endswith("Friday.\n\nEnd.\n")
    assert plain.operations().count("UPDATE") == 1


# -- create ----------------------------------------------------------------------------------------------------------


async def test_a_missing_note_says_create_true_makes_it(plain: Session) -> None:
    text, is_error, _ = await plain.call("edit_section", path="log.md", section=["Log"], content="- started")
    assert is_error and text == "Note not found: log.md (create=true makes it, with this section.)"
    assert plain.operations() == []


async def test_create_makes_the_note_with_its_headings_and_a_dry_run_writes_nothing(plain: Session) -> None:
    arguments = {"path": "daily/2026-12-01.md", "section": ["2026-12-01", "Log"], "content": "- 09:00 standup"}
    text, is_error, result = await plain.call("edit_section", create=True, dryRun=True, **arguments)
    assert not is_error, text
    assert plain.operations() == []
    assert 'Apply it with: edit_section(path="daily/2026-12-01.md", section=["2026-12-01", "Log"], ' in text
    assert result["created"] is True and result["previousHash"] is None
    text, is_error, result = await plain.call("edit_section", create=True, **arguments)
    assert not is_error, text
    assert text.startswith('Created daily/2026-12-01.md with the section "2026-12-01 > Log"; its contentHash is')
    assert plain.text("daily/2026-12-01.md") == "# 2026-12-01\n\n## Log\n\n- 09:00 standup\n"
    assert result["contentHash"] == digest(plain.content("daily/2026-12-01.md"))
    after = await edited(
        plain, "daily/2026-12-01.md", create=True, section="2026-12-01 > Log", content="- 10:00 review"
    )
    assert after.endswith("- 09:00 standup\n- 10:00 review\n")  # it exists now: an append like any other


async def test_a_note_created_by_someone_at_the_same_moment_gets_the_content(plain: Session) -> None:
    theirs = "# Log\n\n- theirs\n"
    plain.vault.faults.add("POST", FILES, Fault.first(lambda: plain.colleague_writes("log.md", theirs)))
    text, is_error, _ = await plain.call("edit_section", path="log.md", section=["Log"], content="- mine", create=True)
    assert not is_error, text
    assert "Someone created the note at the same moment; the content went into their text." in text
    assert plain.text("log.md") == "# Log\n\n- theirs\n- mine\n"


async def test_create_with_a_hash_of_a_note_that_is_gone_is_a_conflict(plain: Session) -> None:
    text, is_error, _ = await plain.call(
        "edit_section", path="gone.md", section=[], content="x", create=True, expectedHash=digest("x")
    )
    assert is_error and text.startswith("Conflict: gone.md no longer exists")
    assert plain.operations() == []


async def test_create_refuses_a_path_the_server_would_refuse(plain: Session) -> None:
    text, is_error, _ = await plain.call("edit_section", path=".obsidian/x.md", section=[], content="x", create=True)
    assert is_error and "Reserved folder name: .obsidian" in text
    assert plain.operations() == []


# -- scopes, audit, read-only -----------------------------------------------------------------------------------------


async def test_the_write_scope_audit_log_and_read_only_mode_apply_as_to_edit_note(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    async with open_session(tmp_path, structured_content=True, audit_log=log, write_prefixes=("agents/",)) as session:
        session.seed("meetings/m.md", MEETING)
        session.seed("agents/m.md", MEETING)
        text, is_error, _ = await session.call("edit_section", path="meetings/m.md", section=[], content="x")
        assert is_error and "edit_section refused: path 'meetings/m.md' is outside the folders" in text
        await session.ok("edit_section", path="agents/m.md", section=["Weekly sync"], content="End.")
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        assert [(line["tool"], line["paths"], line["outcome"]) for line in lines] == [
            ("edit_section", ["meetings/m.md"], "failed"),
            ("edit_section", ["agents/m.md"], "applied"),
        ]
        assert lines[1]["hashBefore"] == digest(MEETING) and lines[1]["hashAfter"] == digest(
            session.content("agents/m.md")
        )
    async with open_session(tmp_path / "ro", read_only=True) as session:
        names = await session.tool_names()
        assert "edit_section" not in names and "replace_in_notes" not in names and "read_note" in names


async def test_the_description_says_exactly_where_append_puts_the_content(plain: Session) -> None:
    tools = {tool.name: tool for tool in (await plain.client.list_tools()).tools}
    description = tools["edit_section"].description or ""
    assert (
        "at the section's end, subsections included, before the next heading of the same or a higher level"
        in description
    )
    assert tools["edit_section"].annotations.destructive_hint and not tools["edit_section"].annotations.idempotent_hint


# -- where an append lands, and sections named by one heading name (issue 30) -------------------------------

PLANNING = """# Planning

Goals for the quarter.

## Next steps

- [ ] Ada: draft the plan

### Parking lot

- a rooftop party

## Risks

None yet.
"""


async def test_an_append_that_lands_in_the_last_subsection_says_so_in_the_answer_and_the_dry_run(
    plain: Session,
) -> None:
    plain.seed("plan.md", PLANNING)
    where = '(after the last line of "### Parking lot"; mode=append_body writes before the first subheading)'
    call = {"path": "plan.md", "section": ["Planning", "Next steps"], "content": "- [ ] Bob: book the room"}
    text, is_error = await plain.texts("edit_section", **call, dryRun=True)
    assert not is_error and f'This would append the content to "Planning > Next steps" {where} in plan.md' in text
    text = await plain.text_ok("edit_section", **call)
    assert text.startswith(f'Appended to "Planning > Next steps" {where} in plan.md; its contentHash is now '), text
    assert "- a rooftop party\n- [ ] Bob: book the room\n\n## Risks" in plain.text("plan.md")


async def test_append_body_puts_the_content_before_the_first_subheading_and_says_so(plain: Session) -> None:
    plain.seed("plan.md", PLANNING)
    call = {"path": "plan.md", "section": ["Planning", "Next steps"], "content": "- [ ] Bob: book the room"}
    text = await plain.text_ok("edit_section", **call, mode="append_body", dryRun=True)
    assert text.startswith(
        'Dry run: nothing was written. This would append the content to "Planning > Next steps" (before its first '
        'subheading "### Parking lot") in plan.md, making its contentHash '
    ), text
    assert 'mode="append_body"' in text  # the call that applies it keeps the mode
    text = await plain.text_ok("edit_section", **call, mode="append_body")
    assert text.startswith(
        'Appended to "Planning > Next steps" (before its first subheading "### Parking lot") in plan.md; '
    ), text
    assert "- [ ] Ada: draft the plan\n- [ ] Bob: book the room\n\n### Parking lot\n\n- a rooftop party\n" in (
        plain.text("plan.md")
    )
    # without a subheading it is append, and says nothing more
    text = await plain.text_ok(
        "edit_section", path="plan.md", section="Planning > Risks", content="Rain.", mode="append_body"
    )
    assert text.startswith('Appended to "Planning > Risks" in plan.md; its contentHash is now '), text
    assert plain.text("plan.md").endswith("## Risks\n\nNone yet.\n\nRain.\n")


async def test_the_description_of_mode_names_append_body(plain: Session) -> None:
    tools = {tool.name: tool for tool in (await plain.client.list_tools()).tools}
    mode = tools["edit_section"].input_schema["properties"]["mode"]
    assert mode["enum"] == ["append", "append_body", "prepend", "replace"]
    assert mode["description"] == "append_body: before the first subheading."


@pytest.mark.parametrize("section", ["Next steps", ["Next steps"], "next  STEPS"], ids=["breadcrumb", "list", "loose"])
async def test_a_heading_name_unique_at_any_depth_names_its_section_and_the_answer_gives_its_path(
    plain: Session, section: Any
) -> None:
    plain.seed("plan.md", PLANNING)
    text = await plain.text_ok("edit_section", path="plan.md", section=section, content="- [ ] Bob", mode="append_body")
    assert text.startswith('Appended to "Planning > Next steps" (before its first subheading "### Parking lot") in'), (
        text
    )
    assert "- [ ] Ada: draft the plan\n- [ ] Bob\n" in plain.text("plan.md")


async def test_a_heading_name_at_two_depths_or_none_is_refused_with_the_paths_that_match_or_come_closest(
    plain: Session,
) -> None:
    plain.seed("plan.md", PLANNING + "\n# Retro\n\n## Next steps\n\n- more tests\n")
    text, is_error = await plain.texts("edit_section", path="plan.md", section="Next steps", content="- x")
    assert is_error and '["Planning", "Next steps"] and ["Retro", "Next steps"]' in text, text
    text, is_error = await plain.texts("edit_section", path="plan.md", section=["Parking lots"], content="- x")
    assert is_error, text
    assert 'Closest headings, as section: ["Planning", "Next steps", "Parking lot"].' in text, text
    assert plain.text("plan.md") == PLANNING + "\n# Retro\n\n## Next steps\n\n- more tests\n"


async def test_read_note_finds_a_section_by_one_heading_name_at_any_depth_as_edit_section_does(plain: Session) -> None:
    plain.seed("plan.md", PLANNING)
    assert await plain.read("plan.md", section="Parking lot") == "### Parking lot\n\n- a rooftop party\n\n"
    assert await plain.read("plan.md", section=["Next steps"]) == (
        "## Next steps\n\n- [ ] Ada: draft the plan\n\n### Parking lot\n\n- a rooftop party\n\n"
    )
    text, is_error = await plain.texts("read_note", path="plan.md", section="Nxt steps")
    assert is_error and 'Closest headings, as section: ["Planning", "Next steps"].' in text, text
