"""The background warm-up: connections opened ahead, the default project synced, calls never kept waiting.

Observed through the runner's :class:`WarmUp` report (events and counters) and the requests the
local vault saw, never through timings.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from support.fakes import FakeClock
from support.seeding import digest, seed
from support.sessions import call_once, runner_on
from support.waiting import await_until, wait_until
from support.warming import archive_requests, hold_archives_until, search_beside_the_warm_up

from teamvault_mcp.config import load_config
from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.tools import gathering, search

pytestmark = pytest.mark.anyio

ARCHIVE = "/api/projects/*/folders/download"


def note(number: int) -> bytes:
    return f"# Note {number}\n\nThe needle is in note {number}.\n".encode()


@pytest.fixture
def vault(vault: LocalVault) -> LocalVault:
    """The test's vault, seeded with ten notes under ``a/`` and ten under ``b/``."""
    for number in range(10):
        seed(vault, f"a/n{number}.md", note(number))
        seed(vault, f"b/n{number}.md", note(number + 10))
    return vault


def warmed(runner: ToolRunner) -> None:
    report = runner.start_warm_up()
    wait_until(report.done.is_set, "the warm-up ending")


def requests(vault: LocalVault, since: int = 0) -> list[str]:
    """What the vault was asked since ``since``, by kind: listing, archive, download, other."""
    kinds = []
    for _, path in vault.faults.seen[since:]:
        if path.endswith("/files"):
            kinds.append("listing")
        elif path.endswith("/folders/download"):
            kinds.append("archive")
        elif "/files/" in path:
            kinds.append("download")
        else:
            kinds.append(path)
    return kinds


async def test_the_warm_up_syncs_the_default_project_and_the_first_search_costs_one_listing(
    vault: LocalVault, tmp_path: Path
) -> None:
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    try:
        warmed(runner)
        report = runner.workspace.warm_up
        assert report is not None and report.stopped is None
        assert (report.notes, report.fetched, report.from_cache) == (20, 20, 0)
        assert report.connections >= 1
        assert sorted(requests(vault)) == ["archive", "archive", "listing"]
        before = len(vault.faults.seen)
        _, _, result = await call_once(runner, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (20, False)
        assert requests(vault, before) == ["listing"]
    finally:
        runner.close()


async def test_a_restart_with_the_disk_cache_costs_one_listing(vault: LocalVault, tmp_path: Path) -> None:
    first = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    warmed(first)
    first.close()
    before = len(vault.faults.seen)
    again = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    try:
        warmed(again)
        assert again.workspace.warm_up is not None
        assert (again.workspace.warm_up.from_cache, again.workspace.warm_up.fetched) == (0, 0)
        assert requests(vault, before) == ["listing"]
        assert len(again.workspace.index) == 0  # nothing read: their words are on disk (the search reads its hits)
        _, _, result = await call_once(again, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (20, False)
        assert requests(vault, before) == ["listing", "listing"]
    finally:
        again.close()


def test_prefetch_off_opens_connections_and_asks_the_vault_nothing(vault: LocalVault, tmp_path: Path) -> None:
    config = load_config(
        {
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": vault.project_id,
            "TEAM_VAULT_CACHE_DIR": str(tmp_path / "cache"),
            "TEAM_VAULT_PREFETCH": "off",
        }
    )
    assert config.prefetch is False
    runner = ToolRunner(config)
    try:
        warmed(runner)
        assert runner.workspace.warm_up is not None and runner.workspace.warm_up.connections >= 1
        assert not runner.workspace.warm_up.listed.is_set() and runner.workspace.warm_up.notes == 0
        assert vault.faults.seen == []  # connections are opened, no request is made
    finally:
        runner.close()


def test_prefetch_is_on_unless_turned_off_and_a_bad_value_is_refused() -> None:
    base = {"TEAM_VAULT_URL": "https://vault.example.com", "TEAM_VAULT_API_KEY": "osync_x"}
    assert load_config(base).prefetch is True
    assert load_config({**base, "TEAM_VAULT_PREFETCH": "on"}).prefetch is True
    with pytest.raises(Exception, match="TEAM_VAULT_PREFETCH='later' is not a yes/no value"):
        load_config({**base, "TEAM_VAULT_PREFETCH": "later"})


async def test_a_call_during_the_warm_up_is_served_while_the_warm_up_s_downloads_are_held(
    vault: LocalVault, tmp_path: Path
) -> None:
    vault.faults.add("GET", ARCHIVE, Fault.hang(at_most=60), times=2)
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    try:
        report = runner.start_warm_up()
        await await_until(lambda: len(vault.faults.injected) == 2, "both archives held by the vault")
        text, is_error, _ = await call_once(runner, "read_note", path="a/n1.md")
        assert not is_error and "The needle is in note 1." in text
        assert vault.faults.hang_ended == []  # the warm-up's downloads are still held: the call did not wait
        assert not report.done.is_set()
    finally:
        runner.close()  # cancels the warm-up: its archives are dropped
    await await_until(lambda: len(vault.faults.hang_ended) == 2, "the vault seeing both archives dropped")
    await await_until(report.done.is_set, "the warm-up ending")
    cached = {p.name for p in (tmp_path / "cache").rglob("*") if p.is_file() and len(p.name) == 64}
    assert cached <= {digest(note(number)) for number in range(20)}  # nothing half-made, nothing unchecked


async def test_the_warm_up_starts_no_download_while_a_call_runs(vault: LocalVault, tmp_path: Path) -> None:
    vault.faults.add("GET", "/api/auth/me", Fault.hang(at_most=60))
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    try:
        async with Client(build_server(runner), mode="legacy") as client:
            async with anyio.create_task_group() as group:

                async def whoami() -> None:
                    await client.call_tool("whoami", {})

                group.start_soon(whoami)
                await await_until(lambda: vault.faults.injected, "the call held by the vault")
                report = runner.start_warm_up()
                await await_until(lambda: runner.foreground.stepped_aside >= 1, "the warm-up stepping aside")
                assert requests(vault) == ["/api/auth/me", "listing"]  # its listing, then nothing
                group.cancel_scope.cancel()
            await await_until(report.done.is_set, "the warm-up ending once the call is gone")
        assert report.stopped is None and report.fetched == 20
        assert sorted(requests(vault)) == ["/api/auth/me", "archive", "archive", "listing"]
    finally:
        runner.close()


async def test_a_search_during_the_warm_up_waits_for_the_notes_in_flight_and_reports_progress(
    vault: LocalVault, tmp_path: Path
) -> None:
    searching = threading.Event()
    hold_archives_until(vault, searching, refuse=False)  # the warm-up's archives land once the search waits
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    try:
        report = runner.start_warm_up()
        await await_until(lambda: archive_requests(vault) == 2, "both archives on their way")
        result = await search_beside_the_warm_up(runner, vault, searching)
        assert (result.get("totalNotes"), result.get("partial")) == (20, False), result
        assert sorted(requests(vault)) == ["archive", "archive", "listing", "listing"]  # nothing fetched twice
        assert result["progress"] and result["progress"][-1] == 20
        await await_until(report.done.is_set, "the warm-up ending")
    finally:
        runner.close()


# -- the warm-up's index: every note's links, tags, tasks and front matter -----------------------------------


def linked_note(number: int) -> bytes:
    front_matter = f"---\nstatus: s{number % 3}\n---\n"
    return f"{front_matter}# Note {number}\n\n#topic/{number % 4} [[n{number + 1}]]\n- [ ] t{number}\n".encode()


async def test_after_the_warm_up_the_first_graph_calls_parse_nothing(vault: LocalVault, tmp_path: Path) -> None:
    for number in range(10):
        seed(vault, f"c/n{number}.md", linked_note(number))
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0)
    try:
        warmed(runner)
        report = runner.workspace.warm_up
        assert report is not None and (report.to_index, report.indexed, report.stopped) == (30, 30, None)
        facts = runner.workspace.note_index.facts
        parsed = facts.parsed
        assert parsed == 30 * 4  # links, tags, tasks, front matter: each note's every part, once
        tallies = runner.workspace.note_index.tallies(vault.project_id)  # list_tags' and list_tasks' counts
        assert len(tallies.tags) == len(tallies.tasks) == 30
        assert tallies.tasks.shares()["c/n3.md"].open == 1
        assert tallies.tags.shares()["c/n3.md"].names == ("topic/3",)
        index = runner.workspace.note_index
        assert report.resolved and index.resolved == 10  # the vault's links too: one per seeded note
        for tool, arguments in [
            ("list_tags", {}),
            ("list_tasks", {}),
            ("note_links", {"path": "c/n3.md"}),
            ("broken_links", {}),
            ("query_notes", {"where": {"status": "s1"}}),
        ]:
            text, is_error, _ = await call_once(runner, tool, **arguments)
            assert not is_error, text
        assert (facts.parsed, index.resolved) == (parsed, 10)
    finally:
        runner.close()


async def test_a_restart_after_the_warm_up_indexes_from_the_store_not_by_parsing(
    vault: LocalVault, tmp_path: Path
) -> None:
    for number in range(10):
        seed(vault, f"c/n{number}.md", linked_note(number))
    first = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0)
    warmed(first)
    first.close()
    again = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0)
    try:
        warmed(again)
        report = again.workspace.warm_up
        assert report is not None and report.indexed == 30
        assert again.workspace.note_index.facts.parsed == 0
    finally:
        again.close()


def test_without_a_cache_directory_the_warm_up_indexes_nothing(vault: LocalVault) -> None:
    runner = runner_on(vault, cache_dir=None, call_budget=30.0)
    try:
        warmed(runner)
        report = runner.workspace.warm_up
        assert report is not None and (report.to_index, report.indexed) == (0, 0)
        assert runner.workspace.note_index.facts.parsed == 0
    finally:
        runner.close()


def test_the_warm_ups_index_waits_while_a_call_runs(vault: LocalVault, tmp_path: Path) -> None:
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0)
    foreground = runner.workspace.foreground
    foreground.enter()  # a call runs
    try:
        report = runner.start_warm_up()
        wait_until(lambda: foreground.stepped_aside > 0, "the warm-up stepping aside")
        assert report.indexed == 0 and runner.workspace.note_index.facts.parsed == 0
    finally:
        foreground.leave()
    try:
        wait_until(report.done.is_set, "the warm-up ending")
        assert report.indexed == 20
    finally:
        runner.close()


def test_a_vault_bigger_than_the_cache_s_bound_is_said_on_stderr(
    vault: LocalVault, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runner = runner_on(vault, cache_dir=tmp_path / "cache", cache_max_bytes=500, call_budget=30.0)
    try:
        with caplog.at_level("WARNING", logger="teamvault_mcp.tools.gathering"):
            warmed(runner)
    finally:
        runner.close()
    said = [record.getMessage() for record in caplog.records if "TEAM_VAULT_CACHE_MAX_MB" in record.getMessage()]
    assert len(said) == 1 and "20 notes take" in said[0], caplog.text


def test_a_vault_that_fits_says_nothing_of_the_cache(
    vault: LocalVault, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0)
    try:
        with caplog.at_level("WARNING", logger="teamvault_mcp.tools.gathering"):
            warmed(runner)
    finally:
        runner.close()
    assert "TEAM_VAULT_CACHE_MAX_MB" not in caplog.text


async def test_a_search_that_reads_the_cache_past_its_budget_answers_partial_in_time(
    vault: LocalVault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading thousands of notes back from the disk cache takes time no request's limit covers: the search looks
    at its budget every few notes, and answers with what it read (at 50,000 notes a call read every note and
    overran its budget: no answer at all)."""
    clock = FakeClock()
    options = {"cache_dir": tmp_path / "cache", "call_budget": 4.0, "prefetch": False, "structured_content": True}
    runner = runner_on(vault, clock=clock, **options)
    try:
        _, is_error, _ = await call_once(runner, "search_notes", query="needle")  # every note in the cache
        assert not is_error
        # as though the index of words on disk did not hold them (a cache filled by an older version): read back
        monkeypatch.setattr(search, "term_index", lambda ctx, project_id: None)
        read = gathering.known

        def slow_read(*arguments: Any) -> Any:
            clock.advance(0.25)  # each note a quarter of a second: the 4 s budget lasts for some of the 20
            return read(*arguments)

        monkeypatch.setattr(gathering, "known", slow_read)
        monkeypatch.setattr(gathering, "LOOK_EVERY", 1)
        text, is_error, result = await call_once(runner, "search_notes", query="needle")
        assert not is_error, text
        assert "(the call's time budget ran out)" in text
        assert 0 < result["notesNotSearched"] < 20 and result["hits"], result  # it searched what it read
    finally:
        runner.close()


def test_the_warm_up_hands_its_freed_memory_back_when_it_ends(
    vault: LocalVault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from teamvault_mcp.server import workspace

    trims: list[int] = []

    class Libc:
        def malloc_trim(self, pad: int) -> int:
            trims.append(pad)
            return 1

    monkeypatch.setattr(workspace.ctypes, "CDLL", lambda name: Libc())
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0)
    try:
        warmed(runner)
        assert trims == [0] and runner.workspace.warm_up is not None and runner.workspace.warm_up.indexed == 20
    finally:
        runner.close()


def test_releasing_freed_memory_is_nothing_where_the_c_library_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    from teamvault_mcp.server import workspace

    assert workspace.release_freed_memory() is (hasattr(workspace.ctypes.CDLL(None), "malloc_trim"))
    monkeypatch.setattr(workspace.ctypes, "CDLL", lambda name: object())  # musl, macOS: no malloc_trim
    assert workspace.release_freed_memory() is False
