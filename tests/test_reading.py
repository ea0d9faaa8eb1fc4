"""The token-frugal reading tools through a real MCP client: outline, sections, lines, batches, pages."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest
import responses
from mcp import Client
from responses import matchers
from support.fakes import BASE, FILES, FakeClock, file_record, make_config
from support.loopback import Exchange, hang, json_answer, loopback_server
from support.seeding import digest
from support.sessions import call_once as call
from support.waiting import GENEROUS, assert_within, await_until

from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.vault.retry import SystemClock

pytestmark = pytest.mark.anyio

NOTE = """\
---
tags: [demo]
---
Intro line.
# Chapter 1
One.
## Intro
Intro text.
## Details
Details text.
# Chapter 2
Two.
"""


def header(text: str) -> str:
    """The line read_note puts above what it read of a note with this content."""
    return f"[contentHash: {digest(text)[:12]}]\n"


@pytest.fixture
def runner(clock: FakeClock) -> ToolRunner:
    return ToolRunner(make_config(structured_content=True), clock=clock)


def serve_note(mock: responses.RequestsMock, path: str, body: str | bytes, file_id: str = "f1", **record: Any) -> None:
    mock.get(
        FILES,
        match=[matchers.query_param_matcher({"path": path})],
        json={"files": [file_record(path, file_id, **record)]},
    )
    mock.get(f"{FILES}/{file_id}", body=body.encode() if isinstance(body, str) else body)


# -- note_outline ---------------------------------------------------------------------------------


async def test_outline_gives_the_top_level_with_lines_sizes_and_the_preamble(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, is_error, outline = await call(runner, "note_outline", path="book.md")
    assert not is_error
    assert [(h["title"], h["hasChildren"], h["startLine"], h["endLine"]) for h in outline["headings"]] == [
        ("Chapter 1", True, 5, 10),
        ("Chapter 2", False, 11, 12),
    ]
    assert text.splitlines()[1:] == [
        "Lines 1–4 come before the first heading (33 chars).",
        f"# Chapter 1  (lines 5–10, {outline['headings'][0]['chars']} chars, has subheadings)",
        f"# Chapter 2  (lines 11–12, {outline['headings'][1]['chars']} chars)",
        'Read a heading with read_note(path="book.md", section="Chapter 1"); note_outline with its tocPath goes one '
        "level down.",
    ]
    assert outline["preamble"] == {"startLine": 1, "endLine": 4, "chars": len("---\ntags: [demo]\n---\nIntro line.\n")}
    assert (outline["totalLines"], outline["totalChars"]) == (12, len(NOTE))


async def test_outline_goes_one_level_down_with_toc_path(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    serve_note(http_mock, "book.md", NOTE)
    _, _, outline = await call(runner, "note_outline", path="book.md", tocPath=["Chapter 1"])
    assert outline["tocPath"] == ["Chapter 1"]
    assert [h["title"] for h in outline["headings"]] == ["Intro", "Details"]
    assert all("path" not in h for h in outline["headings"])  # it is tocPath + [title]: not repeated
    assert "preamble" not in outline


async def test_outline_of_an_unknown_heading_lists_the_top_level(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, is_error, _ = await call(runner, "note_outline", path="book.md", tocPath=["Chapter 3"])
    assert is_error
    assert text == (
        'Section not found: "Chapter 3" at the top level of book.md. Top-level headings: "Chapter 1", "Chapter 2". '
        "Call note_outline to see the structure."
    )


async def test_outline_of_a_note_without_headings_says_how_to_read_it(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    serve_note(http_mock, "plain.md", "just\ntext\n")
    _, _, outline = await call(runner, "note_outline", path="plain.md")
    assert outline["headings"] == []
    assert "startLine" in outline["note"]


async def test_an_outline_of_a_huge_flat_level_is_cut_with_the_call_that_reads_on(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    flat = "# a\n" * 150_000  # 0.6 MB of one-line headings: a 40 MB answer before the cap
    serve_note(http_mock, "flat.md", flat)
    text, is_error, outline = await call(runner, "note_outline", path="flat.md")
    assert not is_error
    assert len(text) < 60_000  # 200 headings, not 150,000
    assert [h.get("name", h["title"]) for h in outline["headings"][:3]] == ["a", "a [2]", "a [3]"]
    assert all(part + "]" in text.splitlines() for part in outline["note"][:-1].split("] "))
    assert (len(outline["headings"]), outline["totalHeadings"], outline["next"]) == (200, 20_000, {"offset": 200})
    assert outline["outlinedLines"] == 20_000
    assert outline["note"] == (
        '[Cut: headings 1–200 of the 20,000 at this level are shown. Read on with: note_outline(path="flat.md", '
        "offset=200)] [This note has more than 20,000 headings: the outline covers lines 1–20,000 of 150,000. "
        'Read the rest with read_note(path="flat.md", startLine=20001)]'
    )

    _, _, page = await call(runner, "note_outline", path="flat.md", offset=200)
    assert [h["name"] for h in page["headings"][:2]] == ["a [201]", "a [202]"]  # names count the whole level
    assert (page["offset"], page["next"]) == (200, {"offset": 400})
    _, _, last = await call(runner, "note_outline", path="flat.md", offset=19_990)
    assert len(last["headings"]) == 10 and "next" not in last
    assert "[Cut:" not in last["note"]
    text, is_error, _ = await call(runner, "note_outline", path="flat.md", offset=20_000)
    assert is_error and text.startswith("offset 20,000 is past the end: this level of flat.md has 20,000 headings.")


async def test_a_long_level_under_a_toc_path_is_paged_with_that_toc_path(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    serve_note(http_mock, "log.md", "# Log\n" + "".join(f"## Day {n}\nok\n" for n in range(500)))
    _, _, outline = await call(runner, "note_outline", path="log.md", tocPath=["Log"])
    assert (len(outline["headings"]), outline["totalHeadings"]) == (200, 500)
    assert 'note_outline(path="log.md", tocPath="Log", offset=200)' in outline["note"]
    _, _, rest = await call(runner, "note_outline", path="log.md", tocPath=["Log"], offset=400)
    assert [h["title"] for h in rest["headings"]] == [f"Day {n}" for n in range(400, 500)]
    assert "next" not in rest and "note" not in rest


async def test_long_titles_keep_an_outline_answer_small(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    # A heading's tocPath is not repeated per child (with a 4,000-character parent that was paid per child), but
    # titles of 2,000 characters still fill an answer: its 60,000 characters are reached before 200 headings.
    note = "# " + "P" * 4_000 + "\n" + "".join(f"## {n} " + "c" * 2_000 + "\n" for n in range(300))
    serve_note(http_mock, "titles.md", note)
    text, _, outline = await call(runner, "note_outline", path="titles.md", tocPath=["P" * 4_000])
    assert 1 <= len(outline["headings"]) < 40
    assert len(text) < 70_000
    assert text.count("P" * 4_000) == 2  # the level's tocPath, and the call that reads a heading
    assert outline["next"] == {"offset": len(outline["headings"])}


async def test_a_missing_section_lists_at_most_50_names(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    serve_note(http_mock, "many.md", "".join(f"# h{n}\n" for n in range(1000)))
    text, is_error, _ = await call(runner, "read_note", path="many.md", section=["zzz"])
    assert is_error
    assert '"h48", "… 951 more".' in text and '"h49"' not in text


# -- read_note: sections, lines, maxChars ------------------------------------------------------------


async def test_plain_read_note_is_unchanged(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, is_error, structured = await call(runner, "read_note", path="book.md")
    assert (text, is_error) == (header(NOTE) + NOTE, False)  # the text exactly as stored, under its hash
    assert structured == {"path": "book.md", "contentHash": digest(NOTE), "text": NOTE}


async def test_a_section_read_returns_exactly_the_section(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, is_error, meta = await call(runner, "read_note", path="book.md", section=["Chapter 1", "Intro"])
    assert (text, is_error) == (header(NOTE) + "## Intro\nIntro text.\n", False)
    assert meta == {
        "text": "## Intro\nIntro text.\n",
        "path": "book.md",
        "startLine": 7,
        "endLine": 8,
        "totalLines": 12,
        "chars": 21,
        "truncated": False,
        "section": ["Chapter 1", "Intro"],
        "contentHash": digest(NOTE),
    }


async def test_a_missing_section_lists_the_top_level_headings(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, is_error, _ = await call(runner, "read_note", path="book.md", section=["Epilogue"])
    assert is_error
    assert 'Top-level headings: "Chapter 1", "Chapter 2".' in text


async def test_a_missing_subsection_names_its_siblings_and_the_top_level(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, is_error, _ = await call(runner, "read_note", path="book.md", section=["Chapter 1", "Outro"])
    assert is_error
    assert text == (
        'Section not found: "Outro" under Chapter 1 in book.md. Headings there: "Intro", "Details". '
        'Top-level headings: "Chapter 1", "Chapter 2". Call note_outline to see the structure.'
    )


async def test_a_line_range_is_1_based_and_inclusive(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, _, meta = await call(runner, "read_note", path="book.md", startLine=5, endLine=6)
    assert text == header(NOTE) + "# Chapter 1\nOne.\n"
    assert (meta["startLine"], meta["endLine"], meta["truncated"]) == (5, 6, False)


async def test_an_end_line_past_the_end_stops_at_the_end(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, _, meta = await call(runner, "read_note", path="book.md", startLine=11, endLine=999)
    assert text == header(NOTE) + "# Chapter 2\nTwo.\n"
    assert meta["endLine"] == 12


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"startLine": 13}, "startLine 13 is past the end: book.md has 12 lines."),
        ({"startLine": 6, "endLine": 5}, "endLine (5) is before startLine (6)."),
        ({"startLine": 0}, "Argument 'startLine' must be at least 1, not 0."),
        ({"section": ["Chapter 1"], "startLine": 2}, "Give either section or startLine/endLine, not both."),
        ({"section": []}, "Argument 'section' must name at least one heading"),
        ({"section": 5}, "Argument 'section' must be a list of heading names or one string, got number."),
        ({"section": [5]}, "Item 0 of 'section' must be a string, got number."),
        ({"maxChars": "10"}, "Argument 'maxChars' must be an integer, got str."),
    ],
)
async def test_bad_slices_are_tool_errors(
    runner: ToolRunner, http_mock: responses.RequestsMock, arguments: dict[str, Any], message: str
) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, is_error, _ = await call(runner, "read_note", path="book.md", **arguments)
    assert is_error
    assert text.startswith(message), text


async def test_max_chars_cuts_at_a_line_boundary_and_says_how_to_read_on(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    serve_note(http_mock, "book.md", NOTE)
    text, is_error, meta = await call(runner, "read_note", path="book.md", section=["Chapter 1"], maxChars=30)
    assert not is_error
    body, notice = text.removeprefix(header(NOTE)).split("\n\n[", 1)
    assert body + "\n" == "# Chapter 1\nOne.\n## Intro\n"  # 26 characters; the next line would pass 30
    assert notice == (
        "Cut at maxChars=30: this is lines 5–7 of the 5–10 asked for. "
        'Read on with: read_note(path="book.md", startLine=8, endLine=10)]'
    )
    assert meta["truncated"] and meta["next"] == {"startLine": 8, "endLine": 10}
    text, _, _ = await call(runner, "read_note", path="book.md", startLine=8, endLine=10)
    assert text == header(NOTE) + "Intro text.\n## Details\nDetails text.\n"


async def test_a_line_longer_than_max_chars_shows_its_start(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    long = "x" * 50 + "\nnext\n"
    serve_note(http_mock, "long.md", long)
    text, _, meta = await call(runner, "read_note", path="long.md", maxChars=10)
    assert text.startswith(header(long) + "x" * 10 + "\n\n[Cut: line 1 alone is longer than maxChars=10")
    assert meta["truncated"] and "next" not in meta


# -- read_notes -----------------------------------------------------------------------------------


async def test_a_batch_keeps_each_notes_result_and_one_failure_fails_no_other(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    serve_note(http_mock, "a.md", "alpha\n", "fa")
    serve_note(http_mock, "b.md", "beta\n", "fb")
    http_mock.get(FILES, match=[matchers.query_param_matcher({"path": "missing.md"})], json={"files": []})
    http_mock.get(
        FILES,
        match=[matchers.query_param_matcher({"path": "pic.png"})],
        json={"files": [file_record("pic.png", "fp", fileType="BINARY", mimeType="image/png")]},
    )
    listing = [file_record("a.md", "fa"), file_record("b.md", "fb"), file_record("Missing.md", "fm")]
    http_mock.get(FILES, match=[matchers.query_param_matcher({"includeDeleted": "true"})], json={"files": listing})
    paths = ["a.md", "missing.md", "../escape.md", "pic.png", "./b.md"]
    text, is_error, result = await call(runner, "read_notes", paths=paths)
    assert not is_error
    missing = "Note not found: missing.md — did you mean Missing.md? Paths are case-sensitive."
    assert result["notes"] == [
        {"path": "a.md", "contentHash": digest("alpha\n"), "chars": 6, "text": "alpha\n"},
        {"path": "missing.md", "error": missing},
        {"path": "../escape.md", "error": "Parent traversal is not allowed: ../escape.md"},
        {"path": "pic.png", "error": "Not a text file: pic.png (image/png)."},
        {"path": "b.md", "contentHash": digest("beta\n"), "chars": 5, "text": "beta\n"},
    ]
    assert "content" not in text.split("===")[0]  # the texts are in the text content only, not twice
    alpha = digest("alpha\n")[:12]  # the contentHash as texts show it
    assert text.startswith(f"Read 2 of 5 notes; 3 failed.\n\n=== a.md · {alpha} ===\nalpha\n")
    assert f"=== missing.md: error ===\n{missing}" in text


async def test_a_batch_where_every_note_failed_is_an_error(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    http_mock.get(FILES, json={"files": []})
    _, is_error, result = await call(runner, "read_notes", paths=["x.md", "y.md"])
    assert is_error
    assert [note["error"] for note in result["notes"]] == ["Note not found: x.md", "Note not found: y.md"]


@pytest.mark.parametrize(("count", "ok"), [(0, False), (1, True), (20, True), (21, False)])
async def test_a_batch_holds_1_to_20_paths(
    runner: ToolRunner, http_mock: responses.RequestsMock, count: int, ok: bool
) -> None:
    http_mock.get(FILES, json={"files": []})
    text, is_error, _ = await call(runner, "read_notes", paths=[f"n{i}.md" for i in range(count)])
    if ok:
        assert text.startswith(f"Read 0 of {count} notes")
    else:
        assert is_error and text == f"Argument 'paths' must hold 1 to 20 paths, not {count}."


async def test_a_batch_shares_the_calls_one_budget() -> None:
    clock = FakeClock()
    # The lookups take 1.5 s of the call's clock, all at once: answered once all 8 are at the server.
    at_once = threading.Barrier(8, action=lambda: clock.advance(1.5), timeout=GENEROUS)

    def slow_lookup(exchange: Exchange) -> None:
        at_once.wait()
        exchange.answer(200, b'{"files": []}')

    with loopback_server() as server:
        server.route("GET", "/api/projects/proj1/files", slow_lookup)
        config = make_config(base_url=server.url, call_budget=3.0, structured_content=True)
        runner = ToolRunner(config, clock=clock)
        _, _, result = await call(runner, "read_notes", paths=[f"n{i}.md" for i in range(12)])
        lookups = server.requests_to("GET", "/api/projects/proj1/files")
    errors = [note["error"] for note in result["notes"]]
    # 8 lookups run at once and take 1.5 s of the 3 s budget; the last 4 cannot start with 1.5 s left,
    # and are never sent (however slow the machine: it only leaves less time).
    assert errors[:8] == [f"Note not found: n{i}.md" for i in range(8)]
    assert all(error.startswith("Out of time before GET") for error in errors[8:])
    assert len(lookups) == 8


async def test_cancelling_a_batch_stops_every_read_at_once() -> None:
    with loopback_server() as server:
        server.route("GET", "/api/projects/proj1/files", hang(seconds=60.0))
        server.route("GET", "/api/auth/me", json_answer(200, {"user": {"id": "u1", "email": None, "name": None}}))
        runner = ToolRunner(make_config(base_url=server.url), clock=SystemClock())
        async with Client(build_server(runner), mode="legacy") as client:
            async with anyio.create_task_group() as group:  # cancel once all three lookups are in flight

                async def read() -> None:
                    await client.call_tool("read_notes", {"paths": ["a.md", "b.md", "c.md"]})

                group.start_soon(read)
                await await_until(lambda: len(server.requests_to("GET", "/api/projects/proj1/files")) == 3, "3 lookups")
                group.cancel_scope.cancel()
            cancelled_at = time.monotonic()
            await await_until(lambda: not runner.active_calls(), "the cancelled reads stopping")
            stopped_after = time.monotonic() - cancelled_at
            after = await client.call_tool("whoami", {})
        lookups = server.requests_to("GET", "/api/projects/proj1/files")
    assert_within(stopped_after, GENEROUS, "stopping 3 reads held by a 60 s hang")
    assert len(lookups) == 3  # one attempt each, no retry after the cancel
    assert all(lookup.disconnected_at is not None for lookup in lookups)
    assert not after.is_error


# -- list_notes: depth, limit, cursor ------------------------------------------------------------------


def vault_files(count: int) -> list[dict[str, Any]]:
    return [file_record(f"notes/n{i:04d}.md", f"f{i}", size=str(i)) for i in range(count)]


async def test_without_new_arguments_list_notes_answers_as_before(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    http_mock.get(FILES, json={"files": vault_files(3)})
    text, is_error, result = await call(runner, "list_notes")
    notes = [{"path": f"notes/n{i:04d}.md", "type": "TEXT", "size": i} for i in range(3)]
    assert (is_error, result) == (False, {"notes": notes})
    assert text == "notes/n0000.md  0 B\nnotes/n0001.md  1 B\nnotes/n0002.md  2 B"  # one line per entry


async def test_a_listing_over_the_limit_is_cut_and_continues_with_the_cursor(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    http_mock.get(FILES, json={"files": vault_files(1203)})
    seen: list[str] = []
    text, _, result = await call(runner, "list_notes")
    assert text.splitlines()[-1].startswith("[Cut: 500 entries shown, 703 more. Continue with list_notes(cursor=")
    seen += [note["path"] for note in result["notes"]]
    while "nextCursor" in result:
        text, is_error, result = await call(runner, "list_notes", cursor=result["nextCursor"])
        assert not is_error
        seen += [note["path"] for note in result["notes"]]
    assert text.endswith("\n[Last page: the listing is complete.]")
    assert seen == [f"notes/n{i:04d}.md" for i in range(1203)]  # every note once, in order


async def test_depth_summarises_deeper_folders_as_counts(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    paths = ["root.md", "people/a.md", "people/b.md", "people/old/c.md", "projects/x/y/z.md"]
    http_mock.get(FILES, json={"files": [file_record(p, f"f{i}") for i, p in enumerate(paths)]})
    text, _, result = await call(runner, "list_notes", depth=1)
    assert result["notes"] == [
        {"folder": "people/", "notes": 3},
        {"folder": "projects/", "notes": 1},
        {"path": "root.md", "type": "TEXT", "size": 5},
    ]
    assert text.splitlines() == [
        "people/  (3 notes)",
        "projects/  (1 note)",
        "root.md  5 B",
        '[list_notes(prefix="<folder>") lists a folder.]',
    ]


async def test_depth_counts_from_the_prefix_folder(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    paths = ["people/a.md", "people/old/c.md", "people/old/d.md"]
    http_mock.get(
        FILES,
        match=[matchers.query_param_matcher({"prefix": "people/"})],
        json={"files": [file_record(p, f"f{i}") for i, p in enumerate(paths)]},
    )
    _, _, result = await call(runner, "list_notes", prefix="people/", depth=1)
    assert result["notes"] == [
        {"path": "people/a.md", "type": "TEXT", "size": 5},
        {"folder": "people/old/", "notes": 2},
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"cursor": "not-a-cursor"}, "This cursor is not one list_notes gave out"),
        ({"limit": 0}, "Argument 'limit' must be at least 1 and at most 5,000, not 0."),
        ({"limit": 5001}, "Argument 'limit' must be at least 1 and at most 5,000, not 5001."),
        ({"depth": True}, "Argument 'depth' must be an integer, got boolean."),
    ],
)
async def test_bad_listing_arguments(
    runner: ToolRunner, http_mock: responses.RequestsMock, arguments: dict[str, Any], message: str
) -> None:
    http_mock.get(FILES, json={"files": vault_files(3)})
    text, is_error, _ = await call(runner, "list_notes", **arguments)
    assert is_error and text.startswith(message), text


async def test_a_cursor_only_continues_its_own_listing(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    http_mock.get(FILES, json={"files": vault_files(30)})
    _, _, first = await call(runner, "list_notes", limit=10)
    text, is_error, _ = await call(runner, "list_notes", cursor=first["nextCursor"], depth=1)
    assert is_error
    assert "continues a listing with prefix=null and depth=None" in text
    assert BASE  # the listing above went to the mocked server only
