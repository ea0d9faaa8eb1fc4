"""search_notes and find_notes against a real local vault: cache validity, corruption, partial results, progress."""

from __future__ import annotations

import dataclasses
import itertools
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from support.policies import FAST
from support.sessions import call_once, runner_on
from support.waiting import GENEROUS, assert_within, await_until

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.vault.retry import SystemClock

pytestmark = pytest.mark.anyio

DOWNLOAD = "/api/projects/*/files/*"

HANDBOOK = """\
# Handbook
## Onboarding
New people get a laptop and a key card.
## Budget
The travel budget is reviewed every quarter.
"""


class Vault:
    """A local vault with a runner on top; ``runner()`` makes a fresh one (an empty in-memory index)."""

    def __init__(self, vault: LocalVault, cache_dir: Path | None) -> None:
        self.vault = vault
        self.cache_dir = cache_dir

    def runner(self, budget: float = 10.0) -> ToolRunner:
        return runner_on(self.vault, call_budget=budget, cache_dir=self.cache_dir, structured_content=True)


@pytest.fixture
def vault(vault: LocalVault, tmp_path: Path) -> Vault:
    """The test's vault, with runners on it that cache in ``tmp_path / "cache"``."""
    return Vault(vault, tmp_path / "cache")


async def write(runner: ToolRunner, path: str, content: str) -> None:
    """Write a note as someone else would: through a server without this cache (writes fill the cache)."""
    other = ToolRunner(dataclasses.replace(runner.config, cache_dir=None), clock=SystemClock(), policy=FAST)
    _, is_error, _ = await call_once(other, "write_note", path=path, content=content)
    assert not is_error


async def test_a_hit_points_at_a_section_read_note_accepts(vault: Vault) -> None:
    runner = vault.runner()
    await write(runner, "handbook.md", HANDBOOK)
    text, is_error, result = await call_once(runner, "search_notes", query="quarter budget")
    assert not is_error
    hit = result["hits"][0]
    assert (hit["path"], hit["line"], hit["breadcrumb"]) == ("handbook.md", 5, "Handbook > Budget")
    assert 'handbook.md:5 section="Handbook > Budget" · The travel budget is reviewed every quarter.' in text
    for shown in (hit["tocPath"], "Handbook > Budget"):  # the structured tocPath, and the text's form of it
        section, _, _ = await call_once(runner, "read_note", path=hit["path"], section=shown)
        assert section.split("\n", 1)[1] == "## Budget\nThe travel budget is reviewed every quarter.\n"


async def test_the_old_text_is_never_found_after_an_update(vault: Vault) -> None:
    runner = vault.runner()
    await write(runner, "n.md", "the old wording\n")
    assert (await call_once(runner, "search_notes", query="old wording"))[2]["totalNotes"] == 1
    await write(runner, "n.md", "the new wording\n")
    for fresh in (runner, vault.runner()):  # the same process, and a new one on the same disk cache
        assert (await call_once(fresh, "search_notes", query="old wording"))[2]["totalNotes"] == 0
        assert (await call_once(fresh, "search_notes", query="new wording"))[2]["totalNotes"] == 1


async def test_notes_are_downloaded_once_then_served_from_the_cache(vault: Vault) -> None:
    writer = vault.runner()
    for i in range(5):
        await write(writer, f"n{i}.md", f"note number {i}\n")

    async def downloads_of_a_search(runner: ToolRunner) -> int:
        before = len(vault.vault.faults.seen)
        _, _, result = await call_once(runner, "search_notes", query="number")
        assert result["totalNotes"] == 5
        return sum(1 for _, path in vault.vault.faults.seen[before:] if path.count("/") == 5)

    first = vault.runner()
    assert await downloads_of_a_search(first) == 5  # cold: every note is fetched once
    assert await downloads_of_a_search(vault.runner()) == 0  # a new process: from the disk cache
    assert await downloads_of_a_search(first) == 0  # the same process: from memory


async def test_a_corrupted_cache_entry_is_refetched_not_returned(vault: Vault) -> None:
    runner = vault.runner()
    await write(runner, "n.md", "the real text\n")
    await call_once(runner, "search_notes", query="real")
    assert vault.cache_dir is not None
    entries = [path for path in vault.cache_dir.rglob("*") if path.is_file() and len(path.name) == 64]
    assert len(entries) == 1
    entries[0].write_bytes(b"the fake text\n")
    fresh = vault.runner()
    assert (await call_once(fresh, "search_notes", query="fake"))[2]["totalNotes"] == 0
    assert (await call_once(fresh, "search_notes", query="real"))[2]["totalNotes"] == 1
    assert entries[0].read_bytes() == b"the real text\n"  # refetched and stored again


async def test_search_works_with_the_cache_off(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as running:
        plain = Vault(running, None)
        runner = plain.runner()
        await write(runner, "n.md", "findable\n")
        assert (await call_once(runner, "search_notes", query="findable"))[2]["totalNotes"] == 1
    assert not (tmp_path / "cache").exists()


async def test_the_budget_ending_gives_partial_results_not_a_timeout(vault: Vault) -> None:
    runner = vault.runner()
    for i in range(24):
        await write(runner, f"n{i:02d}.md", f"common word {i}\n")
    vault.vault.faults.chooser = lambda method, path: Fault.delay(0.5) if path.count("/") == 5 else None
    started = time.monotonic()
    text, is_error, result = await call_once(vault.runner(budget=3.5), "search_notes", query="common")
    elapsed = time.monotonic() - started
    vault.vault.faults.chooser = None
    assert not is_error
    assert result["partial"] is True and result["notesNotSearched"] > 0
    assert result["notesSearched"] + result["notesNotSearched"] == 24
    assert result["totalNotes"] == result["notesSearched"]  # every note searched matches: none is lost
    assert text.startswith(f"[Partial: {result['notesNotSearched']} of 24 notes were not searched")
    assert_within(elapsed, 3.5 + GENEROUS, "a search with a 3.5 s budget")  # `partial` says the budget ended it


async def test_a_cancelled_search_stops_at_once_and_reports_no_progress_after(vault: Vault) -> None:
    runner = vault.runner()
    for i in range(16):
        await write(runner, f"n{i:02d}.md", f"slow word {i}\n")
    downloads = itertools.count()
    # The first 4 downloads are quick, so progress comes at once; the others take 60 s, so only the cancel
    # can end the search well within GENEROUS (the attempt limit, 30 s, would end it later).
    vault.vault.faults.chooser = lambda method, path: (
        Fault.delay(60) if path.count("/") == 5 and next(downloads) >= 4 else None
    )
    fresh = vault.runner(budget=45)
    updates: list[tuple[float, float]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((time.monotonic(), progress))

    async with Client(build_server(fresh), mode="legacy") as client:
        async with anyio.create_task_group() as group:  # cancel once downloads are under way

            async def search() -> None:
                await client.call_tool("search_notes", {"query": "slow"}, progress_callback=on_progress)

            group.start_soon(search)
            await await_until(lambda: updates, "the first progress notification")
            group.cancel_scope.cancel()
        cancelled_at = time.monotonic()
        await await_until(lambda: not fresh.active_calls(), "the cancelled search stopping")
        stopped_after = time.monotonic() - cancelled_at
        # Everything the server sent before this ping's answer has arrived (one ordered stream): what arrives
        # later was sent after the search had stopped.
        await client.session.send_ping()
        received = len(updates)
        await anyio.sleep(0.5)
    vault.vault.faults.chooser = None
    assert updates and [progress for _, progress in updates] == sorted(progress for _, progress in updates)
    assert len(updates) == received  # nothing after the cancel
    assert_within(stopped_after, GENEROUS, "stopping a search")  # in-flight downloads are aborted at once
    assert updates[-1][1] < 16  # the slow ones never finished


async def test_progress_is_reported_only_when_asked_for(vault: Vault) -> None:
    runner = vault.runner()
    for i in range(6):
        await write(runner, f"n{i}.md", f"word {i}\n")
    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)

    async with Client(build_server(vault.runner()), mode="legacy") as client:
        await client.call_tool("search_notes", {"query": "word"}, progress_callback=on_progress)
    assert updates and updates[-1] == 6


async def test_a_slow_regex_stops_within_the_budget_with_partial_results(vault: Vault) -> None:
    runner = vault.runner()
    slow_lines = ("a" * 1000 + "\n") * 5  # `\w*(?=\w*x)` backtracks on each for about a second: 0.2 s, then skipped
    for i in range(12):
        await write(runner, f"n{i:02d}.md", slow_lines)
    started = time.monotonic()
    text, is_error, result = await call_once(
        vault.runner(budget=3.0), "search_notes", query=r"\w*(?=\w*x)", mode="regex"
    )
    elapsed = time.monotonic() - started
    assert not is_error
    assert result["partial"] is True and result["notesNotSearched"] > 0 and result["slowLines"] > 0
    assert "the call's time budget ran out" in text
    assert_within(elapsed, 3.0 + GENEROUS, "a regex search with a 3 s budget")


async def test_a_pathological_regex_is_refused_before_it_runs(vault: Vault) -> None:
    text, is_error, _ = await call_once(vault.runner(), "search_notes", query="(a+)+$", mode="regex")
    assert is_error and text.startswith("The regex is refused: a quantifier inside a quantified group")


async def test_prefix_limits_the_search(vault: Vault) -> None:
    runner = vault.runner()
    await write(runner, "a/x.md", "shared\n")
    await write(runner, "b/y.md", "shared\n")
    _, _, result = await call_once(runner, "search_notes", query="shared", prefix="b/")
    assert [hit["path"] for hit in result["hits"]] == ["b/y.md"]


async def test_find_notes_by_a_misspelt_name(vault: Vault) -> None:
    runner = vault.runner()
    await write(runner, "people/kuzma-minin.md", "x\n")
    await write(runner, "people/dmitry-pozharsky.md", "y\n")
    text, is_error, result = await call_once(runner, "find_notes", query="pozharksy")
    assert not is_error
    assert result["notes"][0]["path"] == "people/dmitry-pozharsky.md"
    assert text.startswith('1 path like "pozharksy":') or text.startswith("2 paths")


async def test_search_arguments_are_checked(vault: Vault) -> None:
    runner = vault.runner()
    for arguments, message in [
        ({"query": "   "}, "Argument 'query' must not be empty."),
        ({"query": "x", "mode": "fuzzy"}, "must be one of text, phrase, regex"),
        ({"query": "x", "limit": 500}, "at most 200"),
        ({"query": ".,;"}, "The query has nothing to search for"),
    ]:
        text, is_error, _ = await call_once(runner, "search_notes", **arguments)
        assert is_error and message in text, text


def test_a_cancel_mid_search_leaves_a_partial_answer_not_an_exception(vault: Vault) -> None:
    # Over MCP the SDK drops the answer to a cancelled call; the `call` command and any other caller keep it.
    from teamvault_mcp.tools.search import search_notes
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.interrupt import CancelToken
    from teamvault_mcp.vault.retry import Budget

    runner = vault.runner()
    for i in range(12):
        anyio.run(write, runner, f"n{i:02d}.md", f"needle {i}\n")
    token, budget = CancelToken(), Budget(30, SystemClock())

    def slow_downloads(method: str, path: str) -> Fault | None:
        if path.count("/") != 5:
            return None
        token.cancel()  # a download has reached the vault: the search is under way
        return Fault.delay(0.3)

    vault.vault.faults.chooser = slow_downloads
    client = TeamVaultClient(
        vault.vault.url, vault.vault.api_key, budget=budget, token=token, clock=SystemClock(), policy=FAST
    )
    context = runner.workspace.context(client, budget, token)
    output = search_notes(context, {"query": "needle"})
    client.close()
    vault.vault.faults.chooser = None
    assert output.structured is not None and output.structured["partial"] is True
    assert "the call was cancelled" in output.text
    assert 0 < output.structured["notesNotSearched"] <= 12


@pytest.mark.filterwarnings("ignore:ping is removed")  # the SDK's ping is the legacy era's; hosts still send it
async def test_pings_are_answered_while_the_regex_engine_is_inside_a_long_match(vault: Vault) -> None:
    # Five lines of 1,000 word characters: `\w*(?=\w*x)` (in the safe subset) backtracks on each for about a
    # second, in one call into the engine per line. Python's `re` holds the GIL through each call, so the
    # event loop only gets the short gaps between lines (a few pings each); the `regex` package lets go
    # of the GIL while it matches (hundreds of pings per line) and stops each line at its time limit.
    runner = vault.runner(budget=30)
    await write(runner, "slow.md", ("a" * 1000 + "\n") * 5)
    await call_once(runner, "search_notes", query="aaaa")  # the note is now in memory: the search only lists
    events: list[str] = []
    result: Any = None
    async with Client(build_server(runner), mode="legacy") as client:

        async def search() -> None:
            nonlocal result
            result = await client.call_tool("search_notes", {"query": r"\w*(?=\w*x)", "mode": "regex"})
            events.append("search answered")

        requests_before = len(vault.vault.faults.seen)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(search)
            # Pinging from when the search has asked for the listing.
            await await_until(lambda: len(vault.vault.faults.seen) > requests_before, "the search's listing")
            while "search answered" not in events:
                await client.send_ping()
                events.append("ping answered")
    pings = events.index("search answered")
    assert pings >= 600, f"only {pings} pings were answered while the search ran: the engine held the GIL"
    assert result.structured_content["slowLines"] == 5 and result.structured_content["partial"] is True
    assert "5 lines (in slow.md) took longer than 0.2 s each to match and were skipped" in result.content[0].text
