"""With TEAM_VAULT_STRUCTURED_CONTENT=on, the structured half of a read says all its text says (README: Hosts and
the two halves): search_notes, find_notes, note_outline, list_note_versions, diff_note_versions,
restore_note_version, recent_changes and read_frontmatter, through a real MCP client (which checks each result
against the tool's output schema).

Each test rebuilds every line of the text from the data alone (the summary, each row from its record, each
notice), so a fact the text shows and the data lacks fails it; a cut or partial answer carries the same notice
in both halves. The text is the same with structured content off.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.sessions import Session, open_session, session_on

from teamvault_mcp.localvault import Fault
from teamvault_mcp.text.markdown import toc_argument

pytestmark = pytest.mark.anyio

RUNBOOK = """---
owner: Ada
---
# Runbook

Intro.

## Failover

Switch the ledger to the standby.

### Drill

Run the failover drill every quarter.

## Contacts

- Ada
"""

Row = Callable[[dict[str, Any]], str]


def assert_halves(
    text: str, data: dict[str, Any], key: str | None = None, row: Row | None = None, labels: tuple[str, ...] = ()
) -> None:
    """Every line of ``text`` is the data's summary, one of its notices (in their order), a row made from one of
    its records under ``key`` (in their order), or one of ``labels`` (text-only lines, rebuilt from the data by
    the caller); and each of those is a line of the text."""
    assert isinstance(data["summary"], str) and data["summary"]
    lines = text.split("\n")
    notices = data.get("notices", [])
    rows = [row(record) for record in data[key]] if key is not None and row is not None else []
    assert sorted(lines) == sorted([data["summary"], *notices, *rows, *labels]), text
    assert [line for line in lines if line in notices] == notices  # in the text's order
    assert [line for line in lines if line in rows] == rows


async def same_text_without_structured(session: Session, tool: str, text: str, **arguments: Any) -> None:
    """The text of the same read is byte for byte the same with structured content off, and comes alone."""
    async with session_on(session.vault) as plain:
        again, is_error, structured = await plain.call(tool, **arguments)
    assert (again, is_error, structured) == (text, False, None)


async def ok(session: Session, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    text, is_error, data = await session.call(tool, **arguments)
    assert not is_error, text
    assert isinstance(data, dict), text
    return text, data


@pytest.fixture
async def vault(tmp_path: Path) -> Any:
    async with open_session(tmp_path, structured_content=True) as session:
        session.seed("ops/runbook.md", RUNBOOK)
        session.seed("people/ada.md", "# Ada\n\nOn call for the ledger.\n")
        yield session


# -- search_notes ---------------------------------------------------------------------------------------------


def hit_line(hit: dict[str, Any]) -> str:
    where = f" section={toc_argument(tuple(hit['tocPath']))}" if hit["tocPath"] else ""
    return f"{hit['path']}:{hit['line']}{where} · {hit['snippet']}"


async def test_search_hits_summary_and_hint_are_in_both_halves(vault: Session) -> None:
    text, data = await ok(vault, "search_notes", query="ledger")
    assert data["summary"] == "2 hits in 2 notes:" == text.split("\n")[0]
    assert data["notices"] == ["read_note(path, section=...) reads a hit's section."]
    assert {hit["path"] for hit in data["hits"]} == {"ops/runbook.md", "people/ada.md"}
    assert_halves(text, data, "hits", hit_line)
    await same_text_without_structured(vault, "search_notes", text, query="ledger")


async def test_a_corrected_query_and_a_search_without_hits_say_so_in_the_summary(vault: Session) -> None:
    text, data = await ok(vault, "search_notes", query="ledgr standby")
    assert data["correctedQuery"] == "ledger standby"
    assert data["summary"].startswith('No note holds "ledgr standby"; "ledgr" is not in it but "ledger" is')
    assert data["summary"].endswith('Hits for "ledger standby":')
    assert_halves(text, data, "hits", hit_line)

    text, data = await ok(vault, "search_notes", query="zebra quagga")
    assert (data["hits"], data["totalNotes"]) == ([], 0)
    assert data["summary"] == text  # one line: what it lacks, and what to try
    assert 'Notes holding each word: "zebra" in no note, "quagga" in no note. Try fewer words' in text
    assert "notices" not in data
    await same_text_without_structured(vault, "search_notes", text, query="zebra quagga")


async def test_a_search_cut_by_its_limit_has_the_same_notice_in_both_halves(vault: Session) -> None:
    for number in range(5):
        vault.seed(f"many/n{number}.md", f"alpha line {number}\n")
    text, data = await ok(vault, "search_notes", query="alpha", limit=2)
    cut = "[3 more matching notes not shown: narrow with prefix or more words, or raise limit.]"
    assert data["notices"] == [cut] and cut in text.split("\n")
    assert (len(data["hits"]), data["totalNotes"], data["moreNotes"]) == (2, 5, 3)
    assert_halves(text, data, "hits", hit_line)


async def test_a_partial_search_opens_both_halves_with_its_notice(tmp_path: Path) -> None:
    # A budget shorter than the downloads' reserve: only the note already in the cache can be searched.
    async with open_session(
        tmp_path, structured_content=True, call_budget=2.0, cache_dir=tmp_path / "cache"
    ) as session:
        for number in range(3):
            session.seed(f"n{number}.md", f"# N{number}\n\nalpha beta {number}\n")
        await session.ok("read_note", path="n0.md")
        text, data = await ok(session, "search_notes", query="alpha")
    partial = (
        "[Partial: 2 of 3 notes were not searched (the call's time budget ran out). The notes read so far are "
        "cached: searching again continues where this stopped.]"
    )
    assert text.split("\n")[0] == partial == data["notices"][0]
    assert (data["partial"], data["notesNotSearched"], data["notesSearched"]) == (True, 2, 1)
    assert_halves(text, data, "hits", hit_line)


async def test_lines_skipped_by_a_slow_regex_are_a_notice_in_both_halves(vault: Session) -> None:
    vault.seed("slow.md", ("a" * 1000 + "\n") * 5)  # `\w*(?=\w*x)` backtracks on each line past its time limit
    text, data = await ok(vault, "search_notes", query=r"\w*(?=\w*x)", mode="regex")
    (notice,) = data["notices"]
    assert notice.startswith("[Partial: 5 lines (in slow.md) took longer than 0.2 s each to match and were skipped")
    assert text.split("\n")[0] == notice
    assert (data["slowLines"], data["partial"]) == (5, True)
    assert_halves(text, data, "hits", hit_line)


# -- find_notes -----------------------------------------------------------------------------------------------


async def test_find_notes_rows_and_summary(vault: Session) -> None:
    text, data = await ok(vault, "find_notes", query="runbok")
    assert data["summary"] == '1 path like "runbok":'
    assert data["notes"][0]["path"] == "ops/runbook.md" and data["notes"][0]["type"] == "TEXT"
    assert_halves(text, data, "notes", lambda note: f"{note['path']}  ({note['score']})")
    await same_text_without_structured(vault, "find_notes", text, query="runbok")

    text, data = await ok(vault, "find_notes", query="qqqqqqqq")
    assert (data["notes"], data["summary"]) == ([], text)
    assert text == 'No path like "qqqqqqqq". Try fewer letters, or search_notes.'


# -- note_outline -----------------------------------------------------------------------------------------------


def heading_line(heading: dict[str, Any], children: bool | None = None) -> str:
    span = heading["startLine"], heading["endLine"]
    lines = f"line {span[0]:,}" if span[0] == span[1] else f"lines {span[0]:,}–{span[1]:,}"
    below = ", has subheadings" if (heading["hasChildren"] if children is None else children) else ""
    name = heading.get("name", heading["title"])
    return f"{'#' * heading['level']} {name}  ({lines}, {heading['chars']:,} chars{below})"


def preamble_line(preamble: dict[str, Any]) -> str:
    start, end, chars = preamble["startLine"], preamble["endLine"], preamble["chars"]
    return f"Lines {start:,}–{end:,} come before the first heading ({chars:,} chars)."


async def test_an_outline_says_its_headline_headings_and_how_to_read_in_both_halves(vault: Session) -> None:
    text, data = await ok(vault, "note_outline", path="ops/runbook.md")
    digest = hashlib.sha256(RUNBOOK.encode()).hexdigest()
    assert data["contentHash"] == digest
    assert data["summary"] == text.split("\n")[0]
    assert data["summary"] == f"ops/runbook.md: 18 lines, {len(RUNBOOK)} chars, contentHash {digest[:12]}"
    assert (data["tocPath"], data["descended"]) == (["Runbook"], True)
    assert data["notices"] == [
        'Read a heading with read_note(path="ops/runbook.md", section="Runbook > Failover"); note_outline with its '
        "tocPath goes one level down."
    ]
    labels = (
        preamble_line(data["preamble"]),
        f"{heading_line(data['section'], children=True)}, the note's only top heading; under it:",
    )
    assert_halves(text, data, "headings", heading_line, labels)
    assert "note" not in data
    await same_text_without_structured(vault, "note_outline", text, path="ops/runbook.md")

    text, data = await ok(vault, "note_outline", path="ops/runbook.md", tocPath=["Runbook", "Failover"])
    assert "descended" not in data and "preamble" not in data
    assert_halves(text, data, "headings", heading_line, ('Under "Runbook > Failover":',))


async def test_a_cut_outline_has_the_same_notices_in_both_halves(vault: Session) -> None:
    vault.seed("flat.md", "".join(f"# h{number}\n" for number in range(250)))
    text, data = await ok(vault, "note_outline", path="flat.md")
    cut = (
        "[Cut: headings 1–200 of the 250 at this level are shown. Read on with: "
        'note_outline(path="flat.md", offset=200)]'
    )
    assert data["notices"] == [cut, 'Read a heading with read_note(path="flat.md", section="h0").']
    assert (data["note"], data["next"]) == (cut, {"offset": 200})
    assert (len(data["headings"]), data["totalHeadings"]) == (200, 250)
    assert_halves(text, data, "headings", heading_line)

    text, data = await ok(vault, "note_outline", path="flat.md", offset=200)
    assert data["notices"] == ['Read a heading with read_note(path="flat.md", section="h200").']
    assert_halves(text, data, "headings", heading_line)


async def test_an_outline_without_headings_says_how_to_read_in_both_halves(vault: Session) -> None:
    vault.seed("plain.md", "just\ntext\n")
    text, data = await ok(vault, "note_outline", path="plain.md")
    hint = "This note has no headings; read it by lines with read_note(startLine=…, endLine=…)."
    assert (data["notices"], data["note"], data["headings"]) == ([hint], hint, [])
    assert_halves(text, data, "headings", heading_line, (preamble_line(data["preamble"]),))  # all of it is preamble


# -- the history --------------------------------------------------------------------------------------------------


def version_line(version: dict[str, Any]) -> str:
    created = version["createdAt"]
    return " · ".join(
        [f"v{version['versionNumber']}", f"{created[:10]} {created[11:16]}", version["by"], version["contentHash"][:8]]
    )


async def test_versions_are_rows_with_who_the_line_names_and_the_full_hash(vault: Session) -> None:
    vault.colleague_writes("people/ada.md", "# Ada\n\nOff call for the ledger.\n")
    text, data = await ok(vault, "list_note_versions", path="people/ada.md")
    legend = "(number · time UTC · author · contentHash start)"
    assert data["summary"] == f"people/ada.md: 2 versions, newest first {legend}:"
    assert [(v["versionNumber"], v["by"]) for v in data["versions"]] == [(2, "Colleague"), (1, "Local user")]
    assert data["versions"][0]["contentHash"] == hashlib.sha256(vault.content("people/ada.md")).hexdigest()
    assert data["versions"][0]["author"]["name"] == "Colleague"  # the server's record, whole
    assert_halves(text, data, "versions", version_line)
    await same_text_without_structured(vault, "list_note_versions", text, path="people/ada.md")


async def test_a_diff_of_versions_is_its_headline_and_its_diff(vault: Session) -> None:
    vault.colleague_writes("people/ada.md", "# Ada\n\nOff call for the ledger.\n")
    text, data = await ok(vault, "diff_note_versions", path="people/ada.md", **{"from": 1})
    assert data["summary"] == "people/ada.md: from version 1 to the current content"
    assert text == f"{data['summary']}\n{data['diff']}"
    assert "-On call for the ledger.\n+Off call for the ledger." in data["diff"]
    await same_text_without_structured(vault, "diff_note_versions", text, path="people/ada.md", **{"from": 1})

    text, data = await ok(vault, "diff_note_versions", path="people/ada.md", **{"from": 2})
    assert (text, data["summary"], data["diff"], data["changed"]) == (
        "people/ada.md: from version 2 to the current content: no differences.",
        text,
        "",
        False,
    )


async def test_a_restore_says_its_headline_and_diff_in_both_halves(vault: Session) -> None:
    vault.colleague_writes("people/ada.md", "# Ada\n\nOff call for the ledger.\n")
    old = hashlib.sha256(b"# Ada\n\nOn call for the ledger.\n").hexdigest()
    text, data = await ok(vault, "restore_note_version", path="people/ada.md", version=1)
    headline, diff = text.split("\n", 1)
    assert data["summary"] == headline
    assert headline == (
        f"Restored people/ada.md to the content of version 1 as a new version (contentHash {old[:12]}); the "
        "content it replaces stays in the history."
    )
    assert (data["diff"], data["contentHash"], data["action"]) == (diff, old, "restored")
    assert "-Off call for the ledger.\n+On call for the ledger." in data["diff"]

    text, data = await ok(vault, "restore_note_version", path="people/ada.md", version=1)
    assert (data["summary"], data["action"]) == (text, "unchanged")
    assert text == f"people/ada.md already has the content of version 1 (contentHash {old[:12]}): nothing was written."


async def test_a_restore_found_applied_after_a_lost_answer_says_so_in_its_summary(vault: Session) -> None:
    vault.colleague_writes("people/ada.md", "# Ada\n\nOff call for the ledger.\n")
    vault.vault.faults.add("PUT", "/api/projects/*/files/*", Fault.apply_then_close(), times=4)
    text, data = await ok(vault, "restore_note_version", path="people/ada.md", version=1)
    headline, diff = text.split("\n", 1)
    assert data["summary"] == headline and data["diff"] == diff
    assert data["verified"] is True and headline.endswith(f" {data['note']}")  # the story sentence, in both


# -- recent_changes -----------------------------------------------------------------------------------------------


def change_line(change: dict[str, Any]) -> str:
    def joined(names: list[str]) -> str:
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"

    authors = change["authors"]
    if change["kind"] in ("deleted", "moved"):
        who = "(the server does not say by whom)"
    elif change["kind"] == "created":
        who = f"by {authors[0]}" + (f", then updated by {joined(authors[1:])}" if authors[1:] else "")
    else:
        who = f"by {joined(authors)}"
    return f"{change['when']}  {change['kind']}  {change['path']}  {who}"


async def test_changes_are_rows_with_when_kind_path_and_who(vault: Session) -> None:
    await vault.ok("write_note", path="inbox/idea.md", content="# Idea\n")
    vault.colleague_writes("people/ada.md", "# Ada\n\nOff call.\n")
    text, data = await ok(vault, "recent_changes")
    assert (data["total"], data["shown"]) == (3, 3)
    kinds = [change["kind"] for change in data["changes"]]
    counts = ", ".join(f"{kinds.count(kind)} {kind}" for kind in ("created", "updated", "deleted") if kind in kinds)
    assert data["summary"] == f"3 changes ({counts}); newest first:"
    me = (await vault.ok("whoami"))["id"]
    ada = next(change for change in data["changes"] if change["path"] == "people/ada.md")
    assert ada["byYou"] is False and ada["by"] not in (None, me)  # the colleague
    idea = next(change for change in data["changes"] if change["path"] == "inbox/idea.md")
    assert (idea["kind"], idea["by"], idea["byYou"]) == ("created", me, True)
    assert all(change["when"].endswith("Z") and "T" in change["when"] for change in data["changes"])
    assert data["notices"] == [
        "What changed in a note: diff_note_versions(path, since=…) or (path, from=…); who wrote each version: "
        "list_note_versions."
    ]
    assert_halves(text, data, "changes", change_line)
    await same_text_without_structured(vault, "recent_changes", text)


async def test_a_cut_list_of_changes_has_the_same_notice_in_both_halves(vault: Session) -> None:
    text, data = await ok(vault, "recent_changes", limit=1)
    cut = "[Cut: the newest 1 of 2 shown. Narrow with since or prefix, or raise limit (at most 500).]"
    assert data["notices"][0] == cut and cut in text.split("\n")
    assert (len(data["changes"]), data["total"], data["shown"]) == (1, 2, 1)
    assert_halves(text, data, "changes", change_line)

    text, data = await ok(vault, "recent_changes", since="2000-01-01", prefix="nowhere/")
    assert (data["changes"], data["total"], data["shown"], data["summary"]) == ([], 0, 0, text)
    assert text == "0 changes since 2000-01-01T00:00:00Z under nowhere/."


# -- read_frontmatter -----------------------------------------------------------------------------------------------


async def test_read_frontmatter_holds_the_fields_and_the_whole_hash(vault: Session) -> None:
    text, data = await ok(vault, "read_frontmatter", path="ops/runbook.md")
    digest = hashlib.sha256(RUNBOOK.encode()).hexdigest()
    assert text == f'{{"owner": "Ada"}}\n[contentHash: {digest[:12]}]'
    assert (data["frontmatter"], data["hasFrontmatter"], data["contentHash"]) == ({"owner": "Ada"}, True, digest)
    await same_text_without_structured(vault, "read_frontmatter", text, path="ops/runbook.md")

    vault.seed("open.md", "---\nowner: Ada\n# no closing line\n")
    text, data = await ok(vault, "read_frontmatter", path="open.md")
    assert (data["frontmatter"], data["hasFrontmatter"]) == ({}, False)
    assert data["note"] in text.split("\n")[0]
    assert text.split("\n")[0] == f"{{}} (open.md has no front matter) {data['note']}"
