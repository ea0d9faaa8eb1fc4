"""Answers every host can use (issue 15), each checked as a text-only host sees them: a real MCP client that
reads the text blocks and never ``structuredContent`` (:meth:`Session.texts`).

Against a local vault on loopback; every item of the issue has its test here: hashes, tocPaths and the call
that applies a dry run in the text; listings one line per entry; a plain read cut at TEAM_VAULT_MAX_READ_CHARS;
errors that say what to do next; paths as agents write them; ranking; instructions and descriptions that name
only the tools registered; the team's own instructions note; the lighter tool list and TEAM_VAULT_TOOLS.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from support.seeding import digest
from support.sessions import Session, open_session, runner_on, session_on
from support.waiting import GENEROUS, assert_within

from teamvault_mcp.config import load_config
from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.tools import team_note
from teamvault_mcp.tools.table import TOOLS

pytestmark = pytest.mark.anyio

RUNBOOK = """---
owner: Ada
---
# Operations Runbook

Intro line.

## Failover

Switch the ledger database to the standby.

### Drill

Run the failover drill every quarter.

## Inputs > Outputs

What goes in and what comes out.
"""


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, structured_content=True) as opened:  # some tests read the data too
        opened.seed("ops/runbook.md", RUNBOOK)
        opened.seed("people/grace-hopper.md", "# Grace Hopper\n\nCOBOL.\n")
        opened.seed("people/ada.md", "# Ada\n\nOn call. See [[grace-hopper]].\n")
        yield opened


# -- the text carries what the agent needs --------------------------------------------------------------------


async def test_read_note_gives_one_block_its_content_hash_line_then_the_text_unchanged(session: Session) -> None:
    """One block: a host that shows only the first one still shows the hash a write needs (issue 25)."""
    result = await session.client.call_tool("read_note", {"path": "ops/runbook.md"})
    assert [block.text for block in result.content] == [f"[contentHash: {digest(RUNBOOK)[:12]}]\n{RUNBOOK}"]


async def test_every_write_says_the_new_content_hash_in_its_text(session: Session) -> None:
    """As texts show it: its first 12 digits, which every expectedHash takes."""
    text = await session.text_ok("write_note", path="notes/new.md", content="one\n")
    assert digest("one\n")[:12] in text
    text = await session.text_ok(
        "edit_note", path="notes/new.md", edits=[{"oldText": "one", "newText": "two"}], expectedHash=digest("one\n")
    )
    assert digest("two\n")[:12] in text
    text = await session.text_ok("update_frontmatter", path="notes/new.md", set={"status": "done"})
    assert digest(session.text("notes/new.md"))[:12] in text
    text = await session.text_ok("move_note", path="notes/new.md", newPath="notes/renamed.md")
    assert digest(session.text("notes/renamed.md"))[:12] in text
    text = await session.text_ok("restore_note_version", path="notes/renamed.md", version=1)
    assert session.text("notes/renamed.md") == "one\n" and digest("one\n")[:12] in text


async def test_a_search_hit_names_its_section_as_read_note_takes_it(session: Session) -> None:
    text = await session.text_ok("search_notes", query="failover drill")
    hit = next(line for line in text.splitlines() if "Run the failover drill" in line)
    section = re.search(r'section=("[^"]*"|\[[^\]]*\])', hit)
    assert section is not None, hit
    assert json.loads(section.group(1)) == "Operations Runbook > Failover > Drill"
    read = await session.read("ops/runbook.md", section=json.loads(section.group(1)))
    assert read.startswith("### Drill\n\nRun the failover drill every quarter.\n")


async def test_a_title_holding_the_breadcrumb_separator_is_named_as_a_list_and_found_as_a_string(
    session: Session,
) -> None:
    text = await session.text_ok("search_notes", query="what comes out", mode="phrase")
    hit = next(line for line in text.splitlines() if "What goes in" in line)
    assert 'section=["Operations Runbook", "Inputs > Outputs"]' in hit  # a string would read two ways
    for section in (["Operations Runbook", "Inputs > Outputs"], "Operations Runbook > Inputs > Outputs"):
        read = await session.read("ops/runbook.md", section=section)
        assert read.startswith("## Inputs > Outputs\n")
    outline = await session.text_ok("note_outline", path="ops/runbook.md", tocPath="Operations Runbook > Failover")
    assert "### Drill" in outline


async def test_dry_runs_show_the_previous_hash_and_the_exact_call_that_applies_them(session: Session) -> None:
    before = digest(session.text("people/ada.md"))[:12]
    text = await session.text_ok(
        "edit_note", path="people/ada.md", edits=[{"oldText": "On call.", "newText": "Off call."}], dryRun=True
    )
    assert f"previousHash {before}" in text
    call = re.search(r"Apply with: (edit_note\(.*\))", text)
    assert call is not None, text
    assert f'expectedHash="{before}"' in call.group(1) and '"newText": "Off call."' in call.group(1)
    assert "dryRun" not in call.group(1)

    before = digest(RUNBOOK)[:12]
    text = await session.text_ok("update_frontmatter", path="ops/runbook.md", set={"status": "done"}, dryRun=True)
    assert f"previousHash {before}" in text
    assert (
        f'Apply with: update_frontmatter(path="ops/runbook.md", set={{"status": "done"}}, expectedHash="{before}")'
        in text
    )
    assert session.text("ops/runbook.md") == RUNBOOK  # nothing was written


# -- nothing twice, nothing bloated ------------------------------------------------------------------------------


async def test_a_search_does_not_repeat_the_query_and_names_the_cap_only_when_a_note_may_hold_more(
    session: Session,
) -> None:
    text = await session.text_ok("search_notes", query="failover drill every quarter", mode="phrase")
    assert text.splitlines()[0] == "1 hit in 1 note:"
    session.seed("many.md", "".join(f"ledger line {n}\n\n" for n in range(5)))
    text = await session.text_ok("search_notes", query="ledger line", mode="phrase")
    assert text.splitlines()[0] == "3 hits in 1 note (at most 3 per note):"


async def test_an_edit_text_shows_the_hunks_under_its_headline_and_the_structured_diff_stays_whole(
    session: Session,
) -> None:
    edit = {"oldText": "On call.", "newText": "Off call."}
    preview, _, structured = await session.call("edit_note", path="people/ada.md", edits=[edit], dryRun=True)
    applied, _, result = await session.call("edit_note", path="people/ada.md", edits=[edit])
    for text, whole in ((preview, structured["diff"]), (applied, result["diff"])):
        headline, hunks = text.split("\n", 1)
        assert "people/ada.md" in headline and hunks.startswith("@@ -1,3 +1,3 @@\n")
        assert "--- a/" not in text and "+++ b/" not in text
        assert whole == f"--- a/people/ada.md\n+++ b/people/ada.md\n{hunks}"


async def test_read_notes_sends_each_text_once_and_with_structured_content_once_more_as_data(
    session: Session, tmp_path: Path
) -> None:
    result = await session.client.call_tool("read_notes", {"paths": ["ops/runbook.md", "people/ada.md"]})
    text = result.content[0].text
    assert text.count("Switch the ledger database") == 1
    assert f"=== ops/runbook.md · {digest(RUNBOOK)[:12]} ===" in text
    assert [note["text"] for note in result.structured_content["notes"]] == [RUNBOOK, session.text("people/ada.md")]
    async with session_on(session.vault) as default:  # structured content off: the text alone
        result = await default.client.call_tool("read_notes", {"paths": ["ops/runbook.md", "people/ada.md"]})
    assert result.structured_content is None and result.content[0].text == text


async def test_listings_are_one_line_per_entry(session: Session) -> None:
    text = await session.text_ok("list_notes", prefix="people/")
    sizes = [len(session.content(path)) for path in ("people/ada.md", "people/grace-hopper.md")]
    assert text.splitlines() == [f"people/ada.md  {sizes[0]} B", f"people/grace-hopper.md  {sizes[1]} B"]
    text = await session.text_ok("list_notes", depth=1)
    assert text.splitlines()[:2] == ["ops/  (1 note)", "people/  (2 notes)"]
    await session.text_ok("write_note", path="people/ada.md", content="# Ada\n\nOff call.\n", mode="update")
    text = await session.text_ok("list_note_versions", path="people/ada.md")
    lines = text.splitlines()
    assert re.fullmatch(r"v2 · \d{4}-\d\d-\d\d \d\d:\d\d · Local user · [0-9a-f]{8}", lines[1]), lines
    assert lines[2].startswith("v1 · ")
    text = await session.text_ok("find_notes", query="grace")
    assert text.splitlines()[1].startswith("people/grace-hopper.md")
    assert "{" not in text


async def test_an_outline_descends_into_a_single_top_heading_without_repeating_paths(session: Session) -> None:
    text = await session.text_ok("note_outline", path="ops/runbook.md")
    assert "# Operations Runbook  (lines 4–18" in text
    assert "## Failover  (lines" in text and "## Inputs > Outputs  (lines" in text  # one level down, same call
    assert "Operations Runbook > Failover  (" not in text  # a heading's full path is not repeated


# -- no answer a host will reject ----------------------------------------------------------------------------


async def test_a_plain_read_above_the_limit_is_cut_with_the_call_that_reads_on(tmp_path: Path) -> None:
    long = "".join(f"Line {n} of a long note.\n" for n in range(10_000))  # ~250,000 characters
    async with open_session(tmp_path) as session:
        session.seed("big.md", long)
        text = await session.text_ok("read_note", path="big.md")
        assert len(text) < 52_000
        assert 'read_note(path="big.md", startLine=' in text and "note_outline" in text
        description = next(tool for tool in (await session.client.list_tools()).tools if tool.name == "read_note")
        assert "50,000" in (description.description or "")
    async with open_session(tmp_path / "never", max_read_chars=0) as session:
        session.seed("big.md", long)
        assert await session.read("big.md") == long


READ_ON = re.compile(r'Read on with: read_note\(path="big\.md", startLine=(\d+), endLine=(\d+)\)([^\]]*)\]$')


async def test_a_cut_read_reads_on_with_a_range_that_fits_under_the_servers_limit(tmp_path: Path) -> None:
    lines = [f"Line {n} of a long note.\n" for n in range(10_000)]  # ~250,000 characters
    async with open_session(tmp_path) as session:
        session.seed("big.md", "".join(lines))
        first = await session.text_ok("read_note", path="big.md")
        found = READ_ON.search(first)
        assert found is not None, first[-300:]
        start, end = int(found[1]), int(found[2])
        assert found[3].startswith(" (as much as one read returns; the part asked for goes on to line 10000)"), found[0]
        text = await session.text_ok("read_note", path="big.md", startLine=start, endLine=end)
    body = text.partition("\n")[2]
    assert "[Cut" not in text and len(body) <= 50_000, text[-300:]
    assert body == "".join(lines[start - 1 : end]) and len(body) + len(lines[end]) > 50_000  # as much as fits
    assert first.partition("\n")[2].startswith("".join(lines[: start - 1]))


async def test_a_part_read_without_max_chars_is_cut_at_the_servers_limit_and_says_so(tmp_path: Path) -> None:
    long = "# Log\n" + "".join(f"Entry {n} of the log.\n" for n in range(200))  # ~4,300 characters
    async with open_session(tmp_path, max_read_chars=1_000) as session:
        session.seed("log.md", long)
        text = await session.text_ok("read_note", path="log.md", section=["Log"])
    assert "Cut at maxChars" not in text
    assert "\n\n[Cut at 1,000 characters, this server's limit for one read (TEAM_VAULT_MAX_READ_CHARS): " in text


async def test_a_max_chars_above_the_servers_limit_is_capped_and_the_answer_says_so(tmp_path: Path) -> None:
    long = "".join(f"Entry {n} of the log.\n" for n in range(200))
    async with open_session(tmp_path, max_read_chars=1_000) as session:
        session.seed("log.md", long)
        text = await session.text_ok("read_note", path="log.md", maxChars=3_000)
        batch = await session.text_ok("read_notes", paths=["log.md"], maxChars=3_000)
    body, _, notice = text.partition("\n")[2].partition("\n\n[")
    assert len(body) <= 1_000 and long.startswith(body)
    assert notice.startswith(
        "Cut at 1,000 characters, this server's limit for one read (TEAM_VAULT_MAX_READ_CHARS), which caps the "
        "maxChars=3,000 asked for: this is lines 1–"
    ), notice
    assert "which caps the maxChars=3,000 asked for" in batch and len(batch) < 1_400, batch


async def test_a_line_longer_than_the_servers_limit_does_not_ask_for_a_larger_max_chars(tmp_path: Path) -> None:
    async with open_session(tmp_path, max_read_chars=1_000) as session:
        session.seed("wide.md", "x" * 5_000 + "\nnext\n")
        text = await session.text_ok("read_note", path="wide.md", maxChars=9_000)
    assert "larger maxChars" not in text
    assert text.endswith(
        "only its first 1,000 characters are shown, and no read shows more of it. "
        'Read on after it with: read_note(path="wide.md", startLine=2, endLine=2).]'
    ), text[-400:]


def test_max_read_chars_is_read_from_the_environment_and_checked() -> None:
    base = {"TEAM_VAULT_URL": "https://vault.example.com", "TEAM_VAULT_API_KEY": "osync_x"}
    assert load_config(base).max_read_chars == 50_000
    assert load_config({**base, "TEAM_VAULT_MAX_READ_CHARS": "0"}).max_read_chars == 0
    with pytest.raises(Exception, match="TEAM_VAULT_MAX_READ_CHARS='lots' is not a whole number"):
        load_config({**base, "TEAM_VAULT_MAX_READ_CHARS": "lots"})


# -- errors with a next step, in English --------------------------------------------------------------------


async def test_a_move_onto_an_existing_note_says_what_is_in_the_way_in_english(session: Session) -> None:
    text, is_error = await session.texts("move_note", path="people/ada.md", newPath="people/grace-hopper.md")
    assert is_error
    assert "another note already holds people/grace-hopper.md" in text and "choose another newPath" in text
    assert session.vault.project_id not in text and session.file_id("people/ada.md") not in text
    assert not re.search("[\u0400-\u04ff]", text)  # the server's Russian stays out


async def test_writing_a_folder_path_says_to_name_the_note(session: Session) -> None:
    text, is_error = await session.texts("write_note", path="people/", content="x")
    assert is_error and "people/<name>.md" in text and "Nothing was written" in text


async def test_a_note_not_found_suggests_the_note_that_exists(session: Session) -> None:
    text, is_error = await session.texts("read_note", path="people/grace-hopper")
    assert is_error and "did you mean people/grace-hopper.md?" in text
    text, _ = await session.texts("read_note", path="People/Ada.md")
    assert "did you mean people/ada.md? Paths are case-sensitive." in text
    text, _ = await session.texts("read_note", path="ops/runbok.md")
    assert "ops/runbook.md" in text  # the top find_notes hit


async def test_a_deleted_note_says_when_and_how_to_bring_it_back_and_that_works(session: Session) -> None:
    await session.text_ok("delete_note", path="people/ada.md")
    text, is_error = await session.texts("read_note", path="people/ada.md")
    assert is_error
    assert re.search(r"it was deleted on \d{4}-\d\d-\d\d \d\d:\d\d UTC", text), text
    assert 'write_note(path="people/ada.md"' in text and 'restore_note_version(path="people/ada.md", version=1)' in text
    await session.text_ok("write_note", path="people/ada.md", content="placeholder\n")
    await session.text_ok("restore_note_version", path="people/ada.md", version=1)
    assert session.text("people/ada.md") == "# Ada\n\nOn call. See [[grace-hopper]].\n"


async def test_a_search_without_hits_says_what_to_try(session: Session) -> None:
    text, is_error = await session.texts("search_notes", query="zebra ledger")
    assert not is_error
    assert 'Notes holding each word: "zebra" in no note, "ledger" in 1 note.' in text
    assert "Try fewer words" in text and "find_notes(query)" in text
    text, is_error = await session.texts("search_notes", query="zebra ledger", mode="phrase")
    assert not is_error and 'Try mode="text"' in text and "(phrase; 3 notes searched)" in text


async def test_a_query_with_a_typo_is_answered_with_the_vaults_close_word(session: Session) -> None:
    text = await session.text_ok("search_notes", query="ledgr database")
    assert text.startswith('No note holds "ledgr database"; "ledgr" is not in it but "ledger" is')
    assert "ops/runbook.md:10" in text and "Switch the ledger database" in text


# -- paths as agents write them ---------------------------------------------------------------------------


async def test_a_new_path_without_an_extension_gets_md_and_the_answer_says_so(session: Session) -> None:
    text = await session.text_ok("write_note", path="people/bob", content="# Bob\n")
    assert "Created people/bob.md" in text and "'.md' was added" in text
    text = await session.text_ok("move_note", path="people/bob.md", newPath="people/robert")
    assert "to people/robert.md" in text and "'.md' was added" in text
    assert session.text("people/robert.md") == "# Bob\n"


async def test_a_new_path_ending_in_a_slash_moves_into_that_folder_under_the_same_name(session: Session) -> None:
    result = await session.client.call_tool("move_note", {"path": "people/ada.md", "newPath": "archive/"})
    assert "Moved people/ada.md to archive/ada.md" in result.content[0].text
    moved = result.structured_content
    assert (moved["path"], moved["previousPath"]) == ("archive/ada.md", "people/ada.md")
    assert moved["contentHash"] == digest("# Ada\n\nOn call. See [[grace-hopper]].\n")
    assert (moved["links"]["updated"], moved["links"]["notUpdated"]) == ([], [])


async def test_old_move_calls_keep_working(session: Session) -> None:
    session.seed("raw/README", "plain\n")  # an existing note without an extension is found as it is
    text = await session.text_ok("move_note", path="raw/README", newPath="raw/LICENSE.txt")
    assert "to raw/LICENSE.txt" in text and "'.md'" not in text


# -- ranking ------------------------------------------------------------------------------------------------


async def test_a_line_holding_every_query_word_ranks_above_lines_holding_some(tmp_path: Path) -> None:
    async with open_session(tmp_path) as session:
        session.seed("short.md", "# Drill\n\nfailover\n\ndrill ledger\n\ndatabase\n")
        filler = "".join(f"Paragraph {n} about other things.\n\n" for n in range(60))
        session.seed("long.md", f"# Ops\n\n{filler}The failover drill moves the ledger database.\n\n{filler}")
        text = await session.text_ok("search_notes", query="failover drill ledger database")
    hits = [line for line in text.splitlines() if " · " in line]
    assert "The failover drill moves the ledger database." in hits[0], text


# -- read-only mode tells the truth ------------------------------------------------------------------------


TOOL_NAMES = {tool.name for tool in TOOLS}


def named_tools(text: str) -> set[str]:
    return {name for name in TOOL_NAMES if re.search(rf"\b{name}\b", text)}


@pytest.mark.parametrize(
    "config",
    [{"read_only": True}, {"tools_named": frozenset({"read_note", "search_notes"})}, {}],
    ids=["read-only", "TEAM_VAULT_TOOLS", "default"],
)
async def test_instructions_and_descriptions_name_only_registered_tools(tmp_path: Path, config: dict) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault, **config) as session:
            tools = (await session.client.list_tools()).tools
            registered = {tool.name for tool in tools}
            said = [session.client.instructions or ""] + [tool.description or "" for tool in tools]
            said += [json.dumps(tool.input_schema) for tool in tools]
    for text in said:
        assert named_tools(text) <= registered, (named_tools(text) - registered, text)
    if config.get("read_only"):
        assert not registered & {"edit_note", "update_frontmatter", "restore_note_version", "write_note"}


async def test_a_write_tool_on_a_read_only_server_is_said_to_be_not_offered_not_unknown(tmp_path: Path) -> None:
    async with open_session(tmp_path, read_only=True) as session:
        text, is_error = await session.texts("write_note", path="a.md", content="x")
        instructions = session.client.instructions or ""
        assert session.writes_sent() == []
    assert is_error
    assert text.startswith(
        "write_note is not offered: this server is read-only (TEAM_VAULT_READ_ONLY), so it has no write tools "
        "and nothing can be changed through it. Available tools: whoami, "
    ), text
    assert "Unknown tool" not in text and "delete_note" not in text
    assert "expectedHash" not in instructions, instructions


async def test_a_tool_left_out_by_team_vault_tools_is_said_to_be_left_out(tmp_path: Path) -> None:
    async with open_session(tmp_path, tools_named=frozenset({"read_note", "search_notes"})) as session:
        text, is_error = await session.texts("edit_note", path="a.md", edits=[])
        dropped, _ = await session.texts("whoami")
    assert is_error and text == (
        "edit_note is not offered: TEAM_VAULT_TOOLS left it out of this server's tools. "
        "Available tools: search_notes, read_note."
    ), text
    assert dropped.startswith("whoami is not offered: TEAM_VAULT_TOOLS left it out"), dropped


async def test_an_unknown_tool_stays_unknown_and_names_the_closest_offered_one(tmp_path: Path) -> None:
    async with open_session(tmp_path, read_only=True) as session:
        misspelt, misspelt_error = await session.texts("red_note", path="a.md")
        unknown, unknown_error = await session.texts("no_such_tool")
    assert misspelt_error and misspelt.startswith("Unknown tool: red_note (did you mean read_note?). Available tools: ")
    assert unknown_error and unknown.startswith("Unknown tool: no_such_tool. Available tools: whoami, "), unknown


async def test_a_bullet_whose_first_clause_is_left_out_keeps_the_next_tools_name_as_spelled(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault, tools_dropped=frozenset({"query_notes"})) as session:
            instructions = session.client.instructions or ""
    assert "\n- list_tags, and list_tags(tag=...), by tag." in instructions, instructions
    assert "List_tags" not in instructions and "query_notes" not in instructions


EDIT_SECTION_SENTENCE = (
    "edit_section(path, section, content) writes into a section without reading the note: by default at the end of "
    "the whole section, subsections included (mode=append_body: before its first subheading; mode=prepend: under "
    "the heading; mode=replace: its body)."
)


def sentences_of(instructions: str) -> list[str]:
    """The instructions' sentences, bullet by bullet: split after a full stop that a space and a new word follow."""
    found: list[str] = []
    for line in instructions.splitlines():
        found += re.split(r"(?<=\.)\s+(?=[-A-Za-z(])", line.removeprefix("- "))
    return found


def balanced(sentence: str) -> bool:
    depth = {"(": 0, "[": 0, "{": 0}
    closing = {")": "(", "]": "[", "}": "{"}
    for char in sentence.replace("->", ""):
        if char in depth:
            depth[char] += 1
        elif char in closing:
            depth[closing[char]] -= 1
            if depth[closing[char]] < 0:
                return False
    return not any(depth.values())


@pytest.mark.parametrize("config", [{}, {"read_only": True}], ids=["default", "read-only"])
async def test_every_instruction_sentence_names_registered_tools_and_closes_its_parentheses(
    tmp_path: Path, config: dict
) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault, **config) as session:
            registered = {tool.name for tool in (await session.client.list_tools()).tools}
            instructions = session.client.instructions or ""
    sentences = sentences_of(instructions)
    assert len(sentences) > 15, sentences
    for sentence in sentences:
        assert named_tools(sentence) <= registered, (named_tools(sentence) - registered, sentence)
        assert balanced(sentence), f"a dangling parenthesis: {sentence!r}"
        assert sentence.endswith((".", ":")), f"a sentence cut short: {sentence!r}"
        assert "(mode=prepend or replace" not in sentence, sentence
    if config.get("read_only"):
        assert not any("edit_section" in sentence for sentence in sentences), instructions
    else:
        assert EDIT_SECTION_SENTENCE in sentences, instructions
        assert "create=true starts a missing log or daily note." in sentences, instructions


# -- the team's own instructions ---------------------------------------------------------------------------


async def test_the_team_note_is_added_to_the_instructions(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        Session(vault, None, None, []).seed("agents/conventions.md", "Meeting notes go in meetings/YYYY-MM-DD.md.\n")  # type: ignore[arg-type]
        async with session_on(vault, instructions_note="agents/conventions.md") as session:
            instructions = session.client.instructions or ""
    assert instructions.endswith(
        "- The team's own instructions, from agents/conventions.md:\nMeeting notes go in meetings/YYYY-MM-DD.md."
    )


async def test_a_long_team_note_is_cut_at_a_line_with_a_notice(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        rules = "".join(f"Rule {n}: write people notes as people/first-last.md.\n" for n in range(200))
        Session(vault, None, None, []).seed("agents/rules.md", rules)  # type: ignore[arg-type]
        async with session_on(vault, instructions_note="agents/rules.md") as session:
            instructions = session.client.instructions or ""
    added = instructions.split("from agents/rules.md:\n", 1)[1]
    assert len(added) < 4_300 and added.startswith("Rule 0: ")
    assert added.splitlines()[-2].startswith("Rule ") and added.splitlines()[-2].endswith(".md.")  # a whole line
    assert added.splitlines()[-1].startswith(f"[Cut: the note is {len(rules.rstrip()):,} characters")
    assert 'read_note(path="agents/rules.md") reads it all.' in added


async def test_a_missing_team_note_leaves_the_instructions_as_they_are(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault, instructions_note="agents/nothing.md") as session:
            instructions = session.client.instructions or ""
            assert await session.text_ok("whoami")
    assert "team's own instructions" not in instructions and instructions.startswith("Tools for a Team Vault")


async def test_a_hanging_team_note_does_not_hold_start_up_beyond_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(team_note, "TEAM_NOTE_LIMIT", 0.5)
    with LocalVault(tmp_path / "vault") as vault:
        vault.faults.add("GET", "/api/projects/*/files", Fault.hang(at_most=60))
        runner = runner_on(vault, instructions_note="agents/conventions.md")
        started = anyio.current_time()
        async with Client(build_server(runner), mode="legacy") as client:
            waited = anyio.current_time() - started
            instructions = client.instructions or ""
        runner.close()
    assert_within(waited, GENEROUS, "initialize while the team note hangs for 60 s")  # 0.5 s + the grace
    assert "team's own instructions" not in instructions


# -- a lighter tool list -----------------------------------------------------------------------------------


def visible_bytes(tools: list) -> int:
    return sum(len((tool.name + (tool.description or "") + json.dumps(tool.input_schema)).encode()) for tool in tools)


#: The tools the issue counted (19,758 bytes then); every tool added since may carry 650 bytes on average.
FIRST_18 = {"whoami", "list_projects", "list_notes", "search_notes", "find_notes", "note_outline", "read_note"}
FIRST_18 |= {"read_notes", "read_frontmatter", "list_note_versions", "read_note_version", "diff_note_versions"}
FIRST_18 |= {"restore_note_version", "write_note", "edit_note", "update_frontmatter", "move_note", "delete_note"}


async def test_the_tool_list_carries_at_most_12000_model_visible_bytes(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault) as session:
            tools = (await session.client.list_tools()).tools
        async with session_on(vault, single_project=True) as single:
            one_project = (await single.client.list_tools()).tools
            text = await single.text_ok("list_notes", projectId=vault.project_id)  # an old caller's projectId
            assert text
    first = [tool for tool in tools if tool.name in FIRST_18]
    later = [tool for tool in tools if tool.name not in FIRST_18]
    assert len(first) == 18 and visible_bytes(first) <= 12_000, visible_bytes(first)
    assert visible_bytes(later) <= 650 * len(later), (len(later), visible_bytes(later))
    assert any("projectId" in tool.input_schema.get("properties", {}) for tool in tools)
    assert not any("projectId" in tool.input_schema.get("properties", {}) for tool in one_project)
    assert visible_bytes(one_project) < visible_bytes(tools)


def test_team_vault_tools_chooses_a_subset_and_refuses_unknown_names() -> None:
    base = {"TEAM_VAULT_URL": "https://vault.example.com", "TEAM_VAULT_API_KEY": "osync_x"}
    config = load_config({**base, "TEAM_VAULT_TOOLS": "read_note, search_notes"})
    assert config.tools_named == {"read_note", "search_notes"}
    assert load_config({**base, "TEAM_VAULT_TOOLS": "-delete_note"}).tools_dropped == {"delete_note"}
    with pytest.raises(
        Exception,
        match=r"TEAM_VAULT_TOOLS names tools this server does not have: read_nte \(did you mean read_note\?\)",
    ):
        load_config({**base, "TEAM_VAULT_TOOLS": "read_nte"})


async def test_team_vault_tools_registers_the_subset(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault) as everything:
            every_name = set(await everything.tool_names())
        async with session_on(vault, tools_dropped=frozenset({"delete_note"})) as session:
            names = await session.tool_names()
            text, is_error = await session.texts("delete_note", path="a.md")
    assert "delete_note" not in names and "read_note" in names and set(names) == every_name - {"delete_note"}
    assert is_error and "delete_note" in text
