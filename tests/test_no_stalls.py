"""Background work never holds a foreground call (issue 26, part 1).

The server's warm-up syncs the default project in the background and steps aside while tool calls run. A
search that arrives meanwhile waits only for the notes the warm-up has in flight. It used to wait for more:
a warm-up worker whose archive was refused (a server without folder archives answers 404) stepped aside
*before* putting that archive's notes back in the queue, so the search waited for notes nobody was fetching,
until its budget ran out ("[Partial: 40 of 40 notes were not searched …]", no progress).

Here the vault answers the warm-up's archive request only once the search waits in the warm-up's sync, which makes that
moment certain instead of lucky; the warm-up is on in every test (``TEAM_VAULT_PREFETCH`` as by default).
Checked by what the search answers and the requests the vault saw, never by timings.
"""

from __future__ import annotations

import fnmatch
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from support.seeding import colleague_writes, seed
from support.sessions import runner_on
from support.waiting import GENEROUS, await_until
from support.warming import hold_archives_until, search_beside_the_warm_up, sync_of

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.protocol import build_server

pytestmark = pytest.mark.anyio

ARCHIVE = "/api/projects/*/folders/download"
NOTES = 40
#: Far longer than the search needs (well under a second here), far shorter than a stall lasts (all of it).
BUDGET = 15.0
#: Repetitions of each race; the gated one below is certain, these meet it at whatever moment they meet.
REPEATS = 6


@pytest.fixture
def vault(vault: LocalVault) -> LocalVault:
    """The test's vault, seeded with ``NOTES`` notes under ``a/``, each holding the needle."""
    for number in range(NOTES):
        seed(vault, f"a/n{number}.md", f"# Note {number}\n\nThe needle is in note {number}.\n")
    return vault


@pytest.mark.parametrize("refuse", [True, False], ids=["no archive route", "archives"])
async def test_a_search_meeting_the_warm_ups_archive_is_complete_and_reports_progress(
    vault: LocalVault, tmp_path: Path, refuse: bool
) -> None:
    searching = threading.Event()
    hold_archives_until(vault, searching, refuse=refuse)
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=BUDGET, structured_content=True)
    try:
        runner.start_warm_up()
        await await_until(lambda: ("GET", ARCHIVE) in _kinds(vault), "the warm-up asking for the archive")
        result = await search_beside_the_warm_up(runner, vault, searching)
    finally:
        runner.close()
    assert (result.get("totalNotes"), result.get("partial")) == (NOTES, False), result
    assert result["progress"] and result["progress"][-1] == NOTES  # progress flowed, to the end
    downloads = [path for method, path in vault.faults.seen if method == "GET" and "/files/" in path]
    assert len(downloads) == (NOTES if refuse else 0)  # each note once: the search waited for them, or took them
    assert len(set(downloads)) == len(downloads)


@pytest.mark.parametrize("refuse", [True, False], ids=["no archive route", "archives"])
async def test_searches_sent_at_start_up_are_never_held_by_the_warm_up(
    vault: LocalVault, tmp_path: Path, refuse: bool
) -> None:
    """The race as a host makes it, at whatever moment it falls: a search the moment the server is up."""
    if refuse:
        vault.faults.chooser = lambda method, path: Fault.answer(404) if fnmatch.fnmatchcase(path, ARCHIVE) else None
    for attempt in range(REPEATS):
        # One note new each time (a colleague of their own each time: the vault names them by the text's length).
        colleague_writes(vault, "a/n0.md", f"# Note 0\n\nThe needle, changed{'!' * attempt}\n")
        runner = runner_on(vault, cache_dir=tmp_path / f"cache{attempt}", call_budget=BUDGET, structured_content=True)
        try:
            runner.start_warm_up()
            result = await search_beside_the_warm_up(runner, vault)
        finally:
            runner.close()
        assert (result.get("totalNotes"), result.get("partial")) == (NOTES, False), (attempt, result)


def _kinds(vault: LocalVault) -> set[tuple[str, str]]:
    return {(method, ARCHIVE if fnmatch.fnmatchcase(path, ARCHIVE) else path) for method, path in vault.faults.seen}


async def test_a_note_changed_between_the_two_listings_is_downloaded_once(tmp_path: Path) -> None:
    """The warm-up listed a note before a colleague changed it, the search after: two hashes, one note. The
    search rides on the warm-up's download of it (single flight by note), which brings the new text."""
    with LocalVault(tmp_path / "vault") as vault:
        for number in range(3):
            seed(vault, f"b/n{number}.md", f"# Note {number}\n\nThe needle is in note {number}.\n")
        first = vault.store.list_files(vault.project_id, path="b/n0.md", prefix=None, include_deleted=False)[0]
        held = f"/api/projects/{vault.project_id}/files/{first.id}"
        release = threading.Event()
        asked: list[str] = []

        def chooser(method: str, path: str) -> Fault | None:
            if path == held:
                asked.append(path)
                if len(asked) == 1:  # the warm-up's download of it waits until the search wants the note too
                    assert release.wait(GENEROUS), "the search never joined the sync (or the machine is too slow)"
            return None

        vault.faults.chooser = chooser
        runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=BUDGET, structured_content=True)
        try:
            runner.start_warm_up()
            await await_until(lambda: asked, "the warm-up downloading b/n0.md")
            colleague_writes(vault, "b/n0.md", "# Note 0\n\nThe needle, changed by a colleague.\n")
            found: list[Any] = []
            async with Client(build_server(runner), mode="legacy") as client, anyio.create_task_group() as group:

                async def search() -> None:
                    found.append(await client.call_tool("search_notes", {"query": "needle changed"}))

                group.start_soon(search)
                sync = await sync_of(runner, vault)
                await await_until(lambda: sync.participants() == 2, "the search joining the warm-up's sync")
                release.set()
        finally:
            runner.close()
    result = found[0].structured_content
    assert (result["totalNotes"], result["partial"], result["hits"][0]["path"]) == (1, False, "b/n0.md")
    assert len(asked) == 1  # one download of the note, for both
