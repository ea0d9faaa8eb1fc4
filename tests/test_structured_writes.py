"""The write tools' two halves, through a real MCP client with TEAM_VAULT_STRUCTURED_CONTENT=on.

Some hosts show the model only a result's text, others only its ``structuredContent``; so the data of each write
holds every fact its text says: the headline as ``summary``, a dry run's call as ``applyWith``, every hash the
text shortens in full, every path it names. The client checks each result against the tool's ``outputSchema``
(it raises on a mismatch), and :func:`assert_declared` checks that every field sent is one the schema declares.

And the text a write takes (write_note's content, edit_section's content, an edit's newText) may not start with
the line read_note puts above a note's text: a text copied from a read whole, header included, is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.seeding import digest, seed
from support.sessions import Session, open_session, session_on

from teamvault_mcp.localvault import Fault, LocalVault

pytestmark = pytest.mark.anyio

ADA = "# Ada\n\n## Bio\nBorn 1815.\n\n## Action items\n- [ ] write to Babbage\n"
GRACE = "# Grace\n\nWorks with [[ada]] and [Ada](ada.md).\n"
PLAN = "# Plan\n\nOwner: [[people/ada|Ada]]. Client: Acme.\n"

#: A shortened or full contentHash as texts show it; a note path as these tests name them.
HASH = re.compile(r"(?<![0-9a-f])[0-9a-f]{12}(?:[0-9a-f]{52})?(?![0-9a-f])")
PATH = re.compile(r"[\w-]+(?:/[\w.-]+)*\.md")


@pytest.fixture(params=[True, False], ids=["conditional", "history"])
async def session(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Session]:
    vault = {"conditional_writes": request.param}
    async with open_session(tmp_path, structured_content=True, vault_options=vault) as running:
        running.seed("people/ada.md", ADA)
        running.seed("people/grace.md", GRACE)
        running.seed("projects/plan.md", PLAN)
        yield running


# -- what every write's two halves have in common ----------------------------------------------------------------


def strings_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [string for item in value.values() for string in strings_of(item)]
    if isinstance(value, list):
        return [string for item in value for string in strings_of(item)]
    return []


def assert_holds_the_text(text: str, structured: dict[str, Any]) -> None:
    """Every hash the text shows is the start of a full hash in the data; every path it names is in the data."""
    strings = strings_of(structured)
    full = [string for string in strings if re.fullmatch(r"[0-9a-f]{64}", string)]
    for shown in HASH.findall(text):
        assert any(whole.startswith(shown) for whole in full), (shown, text, structured)
    for path in PATH.findall(text):
        assert any(path in string for string in strings), (path, text, structured)
    assert "structured" not in text  # the text never sends the model to a half its host may not show


async def assert_declared(session: Session, tool: str, structured: dict[str, Any]) -> None:
    """Every field of ``structured`` is one the tool's output schema declares (the client checked the rest)."""
    [listed] = [listed for listed in (await session.client.list_tools()).tools if listed.name == tool]
    assert listed.output_schema is not None

    def check(value: Any, schema: dict[str, Any], where: str) -> None:
        if isinstance(value, dict) and "properties" in schema:
            for key, item in value.items():
                assert key in schema["properties"], f"{tool}: {where}{key} is not in the output schema"
                check(item, schema["properties"][key], f"{where}{key}.")
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for item in value:
                check(item, schema["items"], where)

    check(structured, listed.output_schema, "")


async def both(session: Session, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """The text and the data of a call that must succeed, the data checked against the text and the schema."""
    text, is_error, structured = await session.call(tool, **arguments)
    assert not is_error, text
    assert isinstance(structured, dict), structured
    assert_holds_the_text(text, structured)
    await assert_declared(session, tool, structured)
    return text, structured


def parse_call(call: str) -> tuple[str, dict[str, Any]]:
    """``tool(name=<JSON>, …)`` as a dry run's text writes it: the tool and its arguments."""
    tool, _, rest = call.partition("(")
    assert rest.endswith(")"), call
    rest, arguments, decoder = rest[:-1], {}, json.JSONDecoder()
    while rest:
        name, _, rest = rest.partition("=")
        arguments[name], end = decoder.raw_decode(rest)
        rest = rest[end:].removeprefix(", ")
    return tool, arguments


async def applying(session: Session, call: str) -> tuple[str, dict[str, Any]]:
    """What the call a dry run's text gives does, checked as :func:`both` checks it."""
    tool, arguments = parse_call(call)
    return await both(session, tool, **arguments)


def headline_and_hunks(text: str) -> tuple[str, str]:
    headline, _, hunks = text.partition("\n")
    return headline, hunks


# -- write_note, delete_note --------------------------------------------------------------------------------------


async def test_write_note_says_in_its_data_what_its_text_says(session: Session) -> None:
    text, created = await both(session, "write_note", path="notes/new", content="one\n")
    assert created["summary"] == text and text.startswith("Created notes/new.md (4 bytes); its contentHash is ")
    assert (created["path"], created["givenPath"], created["contentHash"]) == (
        "notes/new.md",
        "notes/new",
        digest("one\n"),
    )
    text, updated = await both(session, "write_note", path="notes/new.md", content="two\n")
    assert updated["summary"] == text and text.startswith("Updated notes/new.md (4 bytes); its contentHash is now ")
    assert (updated["action"], updated["contentHash"]) == ("updated", digest("two\n"))


async def test_delete_note_names_the_hash_it_deleted_in_both(session: Session) -> None:
    text, deleted = await both(session, "delete_note", path="projects/plan.md", expectedHash=digest(PLAN)[:12])
    assert deleted["summary"] == text and f"(contentHash {digest(PLAN)[:12]})" in text
    assert (deleted["action"], deleted["contentHash"]) == ("deleted", digest(PLAN))


async def test_what_a_write_found_on_the_way_is_in_its_summary_with_the_versions_in_full(session: Session) -> None:
    """A colleague's write that slipped in: the text's story sentences name their version; so does the data."""
    theirs = ADA.replace("Born 1815.", "Born 1815 in London.")
    session.vault.faults.add(
        "PUT", "/api/projects/*/files/*", Fault.first(lambda: session.colleague_writes("people/ada.md", theirs))
    )
    edit = {"oldText": "- [ ] write to Babbage", "newText": "- [x] write to Babbage"}
    text, edited = await both(session, "edit_note", path="people/ada.md", edits=[edit])
    headline, _ = headline_and_hunks(text)
    assert headline == edited["summary"] and "A colleague's change landed while this call was writing" in headline
    assert [version["contentHash"] for version in edited["rebasedOntoVersions"]] == [digest(theirs)]
    assert session.text("people/ada.md") == theirs.replace("[ ] write", "[x] write")

    session.vault.faults.add(
        "PUT", "/api/projects/*/files/*", Fault.first(lambda: session.colleague_writes("people/grace.md", "Theirs.\n"))
    )
    text, written = await both(session, "write_note", path="people/grace.md", content="Mine.\n")
    assert written["summary"] == text and "This replaced a change made meanwhile: version " in text
    assert written["replacedVersion"]["contentHash"] == digest("Theirs.\n")
    assert 'restore_note_version(path="people/grace.md", version=' in written["replacedMeanwhile"]


# -- edit_note, update_frontmatter ----------------------------------------------------------------------------


async def test_edit_note_dry_run_and_apply_carry_the_headline_the_call_and_the_diff(session: Session) -> None:
    edit = {"oldText": "- [ ] write to Babbage", "newText": "- [x] write to Babbage"}
    text, preview = await both(session, "edit_note", path="people/ada.md", edits=[edit], dryRun=True)
    headline, hunks = headline_and_hunks(text)
    assert headline == f"{preview['summary']} Apply with: {preview['applyWith']}"
    assert preview["diff"].endswith(hunks) and session.text("people/ada.md") == ADA
    tool, arguments = parse_call(preview["applyWith"])
    assert (tool, arguments["expectedHash"]) == ("edit_note", digest(ADA)[:12])

    text, applied = await both(session, tool, **arguments)  # the call the dry run gave applies it
    headline, hunks = headline_and_hunks(text)
    assert headline == applied["summary"] and applied["diff"].endswith(hunks)
    assert applied["contentHash"] == preview["contentHash"] == digest(session.text("people/ada.md"))
    assert "applyWith" not in applied

    text, unchanged = await both(session, "edit_note", path="people/ada.md", edits=[{"oldText": "x]", "newText": "x]"}])
    assert unchanged["summary"] == text and text.startswith("No change: ")


async def test_update_frontmatter_says_the_same_in_both(session: Session) -> None:
    text, preview = await both(
        session, "update_frontmatter", path="people/grace.md", set={"status": "done"}, dryRun=True
    )
    headline, hunks = headline_and_hunks(text)
    assert headline == f"{preview['summary']} Apply with: {preview['applyWith']}"
    tool, arguments = parse_call(preview["applyWith"])
    text, applied = await both(session, tool, **arguments)
    headline, hunks = headline_and_hunks(text)
    assert headline == applied["summary"] and applied["diff"].endswith(hunks)
    assert applied["frontmatter"] == {"status": "done"} and applied["contentHash"] == preview["contentHash"]


# -- edit_section ---------------------------------------------------------------------------------------------


async def test_edit_section_dry_run_append_and_create(session: Session) -> None:
    arguments = {"path": "people/ada.md", "section": "Ada > Action items", "content": "- [ ] call Grace"}
    text, preview = await both(session, "edit_section", **arguments, dryRun=True)
    headline, hunks = headline_and_hunks(text)
    assert headline == f"{preview['summary']} Apply it with: {preview['applyWith']}"
    assert preview["diff"].endswith(hunks) and session.text("people/ada.md") == ADA
    tool, call = parse_call(preview["applyWith"])
    assert call == {**arguments, "expectedHash": digest(ADA)[:12]}

    text, applied = await both(session, tool, **call)
    headline, hunks = headline_and_hunks(text)
    assert headline == applied["summary"] and applied["diff"].endswith(hunks)
    assert headline.startswith('Appended to "Ada > Action items" in people/ada.md; its contentHash is now ')
    assert applied["contentHash"] == preview["contentHash"] == digest(session.text("people/ada.md"))

    new = {"path": "inbox/today.md", "section": ["Today", "Calls"], "content": "- Ada", "create": True}
    text, preview = await both(session, "edit_section", **new, dryRun=True)
    headline, _ = headline_and_hunks(text)
    assert headline == f"{preview['summary']} Apply it with: {preview['applyWith']}"
    assert preview["created"] is True and preview["previousHash"] is None
    text, created = await applying(session, preview["applyWith"])
    headline, hunks = headline_and_hunks(text)
    assert headline == created["summary"] and created["diff"].endswith(hunks)
    assert headline.startswith('Created inbox/today.md with the section "Today > Calls"; its contentHash is ')
    assert created["contentHash"] == digest(session.text("inbox/today.md"))


# -- replace_in_notes ----------------------------------------------------------------------------------------


async def test_replace_in_notes_preview_gives_each_notes_diff_and_the_call(session: Session) -> None:
    session.seed("clients/acme.md", "# Acme\n\nAcme signed. Call Acme.\n")
    text, preview = await both(session, "replace_in_notes", find="Acme", replace="Globex")
    lines = text.split("\n")
    assert lines[0] == preview["summary"]
    assert lines[-1] == f"Apply with: {preview['applyWith']}"
    for note in preview["notes"]:  # each note's line, then its diff, as the text shows them
        assert f"\n{note['path']} ({note['matches']})\n{note['diff']}\n" in text
    assert preview["matches"] == 4 and [note["path"] for note in preview["notes"]] == [
        "clients/acme.md",
        "projects/plan.md",
    ]

    text, applied = await applying(session, preview["applyWith"])
    lines = text.split("\n")
    assert lines[0] == applied["summary"] == 'Replaced "Acme" → "Globex" in 2 of 2 notes (4 of 4 matches).'
    for note in applied["notes"]:  # the text names every note's new contentHash itself
        assert note["contentHash"] == digest(session.text(note["path"]))
        line = f"Applied: {note['path']} ({note['matches']}); its contentHash is now {note['contentHash'][:12]}."
        assert line in lines


async def test_replace_in_notes_notices_are_in_both(tmp_path: Path) -> None:
    async with open_session(tmp_path, structured_content=True, write_prefixes=("people/",)) as session:
        session.seed("people/ada.md", "Acme\n")
        session.seed("clients/acme.md", "Acme\n")
        text, preview = await both(session, "replace_in_notes", find="Acme", replace="Globex")
        assert preview["notices"] == ["[Outside the folders this server may write to, left alone: clients/acme.md (1)]"]
        assert all(notice in text.split("\n") for notice in preview["notices"])
        text, applied = await applying(session, preview["applyWith"])
        assert applied["notices"] == preview["notices"] and preview["notices"][0] in text.split("\n")


# -- move_note -------------------------------------------------------------------------------------------------


async def test_move_note_dry_run_and_move_list_each_note_in_both(session: Session) -> None:
    text, preview = await both(session, "move_note", path="people/ada.md", newPath="team/ada-lovelace.md", dryRun=True)
    lines = text.split("\n")
    assert (
        lines[0]
        == preview["summary"]
        == "Dry run: nothing was written. people/ada.md would move to team/ada-lovelace.md."
    )
    assert lines[1] == preview["links"]["summary"] == "3 links in 2 notes would be rewritten."
    for note in preview["links"]["updated"]:
        assert f"{note['path']}:{','.join(str(line) for line in note['lines'])}" in lines
    for rewrite in preview["links"]["rewrites"]:
        assert any(line.startswith(f"{rewrite['link']} → {rewrite['newLink']}") for line in lines)
    assert preview["notices"][-1] == lines[-1] == "To do it: the same move_note call without dryRun."
    assert session.text("people/grace.md") == GRACE

    text, moved = await both(session, "move_note", path="people/ada.md", newPath="team/ada-lovelace.md")
    lines = text.split("\n")
    assert lines[0] == moved["summary"] and lines[1] == moved["links"]["summary"]
    assert lines[1] == "Links: 3 links in 2 notes updated to team/ada-lovelace.md:"
    for note in moved["links"]["updated"]:
        assert f"{note['path']} ({note['links']}); its contentHash is now {note['contentHash'][:12]}" in lines
        assert note["contentHash"] == digest(session.text(note["path"]))


async def test_a_note_left_with_its_links_is_a_row_in_both(tmp_path: Path) -> None:
    async with open_session(tmp_path, structured_content=True, write_prefixes=("people/",)) as session:
        session.seed("people/ada.md", ADA)
        session.seed("projects/plan.md", PLAN)
        text, moved = await both(session, "move_note", path="people/ada.md", newPath="people/lovelace.md")
        [left] = moved["links"]["notUpdated"]
        assert f"{left['path']}  ({left['why']}) → {left['retry']}" in text.split("\n")
        assert left["path"] == "projects/plan.md" and session.text("projects/plan.md") == PLAN


# -- upsert_<schema> ---------------------------------------------------------------------------------------------

PERSON = """# Person schema

```yaml schema
metadata:
  schemaName: person
  identifierField: slug
  pathTemplate: People/${slug}.md
  pathComponents: [slug]
fields:
  slug: {type: string}
  role: {type: string, optional: true}
```
"""


async def test_an_upsert_says_in_its_data_what_its_text_says(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        seed(vault, "schemas/person.md", PERSON)
        async with session_on(vault, schema_dir="schemas/", structured_content=True) as session:
            text, created = await both(session, "upsert_person", slug="ada", role="analyst")
            assert text.split("\n")[0] == created["summary"] and created["diff"] in text
            assert created["contentHash"] == digest(session.text("People/ada.md"))
            text, updated = await both(session, "upsert_person", slug="ada", role="countess")
            headline, hunks = headline_and_hunks(text)
            assert headline == updated["summary"] and updated["diff"].endswith(hunks)
            assert updated["action"] == "updated" and updated["frontmatter"] == {"slug": "ada", "role": "countess"}
            listed = await session.ok("list_schemas")  # its text is the JSON itself; the schema holds it too
            await assert_declared(session, "list_schemas", listed)


async def test_the_text_is_the_same_with_structured_content_off(tmp_path: Path) -> None:
    texts = []
    for structured in (True, False):
        async with open_session(tmp_path / str(structured), structured_content=structured) as session:
            session.seed("people/ada.md", ADA)
            edit = {"oldText": "Born 1815.", "newText": "Born 10 December 1815."}
            text, is_error, data = await session.call("edit_note", path="people/ada.md", edits=[edit], dryRun=True)
            assert not is_error and (data is not None) == structured
            texts.append(text)
    assert texts[0] == texts[1]


# -- a note's text never starts with read_note's hash line ----------------------------------------------------


async def test_a_text_copied_whole_from_a_read_is_refused_and_nothing_is_written(session: Session) -> None:
    read = await session.ok_text("read_note", path="people/grace.md")
    assert read.startswith(f"[contentHash: {digest(GRACE)[:12]}]\n")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write_note", {"path": "people/grace.md", "content": read}),
        ("write_note", {"path": "people/new.md", "content": read}),
        ("edit_section", {"path": "people/grace.md", "section": [], "content": read, "mode": "replace"}),
        ("edit_section", {"path": "people/new.md", "section": "New", "content": read, "create": True}),
        ("edit_note", {"path": "people/grace.md", "edits": [{"oldText": "# Grace\n", "newText": read}]}),
    ]
    for tool, arguments in calls:
        text, is_error, _ = await session.call(tool, **arguments)
        assert is_error and "which read_note puts above a note's text" in text, (tool, text)
        assert "Nothing was written" in text
    assert session.writes_sent() == []
    assert session.text("people/grace.md") == GRACE


async def test_the_hash_line_later_in_a_text_is_just_text(session: Session) -> None:
    later = "# Log\n\n[contentHash: 0123456789ab]\n"
    await session.ok("write_note", path="notes/log.md", content=later)
    await session.ok("edit_section", path="notes/log.md", section="Log", content="[contentHash: 0123456789ab] again")
    edit = {"oldText": "# Log\n", "newText": "# Log\n[contentHash: 0123456789ab]\n"}
    await session.ok("edit_note", path="notes/log.md", edits=[edit])
    stored = session.text("notes/log.md")
    assert (
        stored.startswith("# Log\n[contentHash: 0123456789ab]\n") and stored.count("[contentHash: 0123456789ab]") == 3
    )
