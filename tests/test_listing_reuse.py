"""A big vault's listing reused for a moment (``vault/listings.py``), through a real MCP client on a local vault.

The vault here is small, so each test lowers the size from which a listing is kept
(``kept_listings.min_files``) instead of seeding 10,000 notes; time is a fake clock. The warm-up
is off (``prefetch=False``): the tests count the vault's listing requests.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest
from support import seeding
from support.fakes import FakeClock
from support.sessions import Session, session_on

from teamvault_mcp.config import ConfigError, load_config
from teamvault_mcp.localvault import LocalVault

pytestmark = pytest.mark.anyio

NOTES = {
    "people/ada.md": "# Ada\n\n#lead [[grace]]\n- [ ] call grace\n",
    "people/grace.md": "# Grace\n\nSee [[ada]].\n",
    "plan.md": "# Plan\n\nbudget review #eng\n",
}


@pytest.fixture
def vault(tmp_path: Path):
    with LocalVault(tmp_path / "vault") as vault:
        for path, text in NOTES.items():
            seeding.seed(vault, path, text)
        yield vault


def listings(vault: LocalVault) -> int:
    """The whole-vault and folder listings the vault has answered (not a one-path lookup)."""
    return sum(1 for method, path in vault.faults.seen if method == "GET" and path.endswith("/files"))


def big(session: Session, files: int = 3) -> None:
    """Make this session's vault count as big: a listing of ``files`` files or more is kept."""
    session.runner.workspace.kept_listings.min_files = files


async def test_calls_inside_the_window_share_one_listing_and_a_later_call_lists_again(
    vault: LocalVault, tmp_path: Path
) -> None:
    clock = FakeClock()
    async with session_on(vault, clock=clock, cache_dir=tmp_path / "cache", prefetch=False) as session:
        big(session)
        before = listings(vault)
        first = await session.ok_text("list_tags")
        assert "#lead" in first
        await session.ok_text("note_links", path="people/ada.md")
        await session.ok_text("search_notes", query="budget")
        await session.ok_text("list_tasks", prefix="people/")
        await session.ok_text("find_notes", query="grace")
        assert listings(vault) - before == 1
        clock.advance(2.5)  # past the default 2 s
        assert await session.ok_text("list_tags") == first
        assert listings(vault) - before == 2


async def test_a_colleagues_change_shows_once_the_window_ends(vault: LocalVault, tmp_path: Path) -> None:
    clock = FakeClock()
    async with session_on(vault, clock=clock, cache_dir=tmp_path / "cache", prefetch=False) as session:
        big(session)
        await session.ok_text("list_tags")
        seeding.colleague_writes(vault, "plan.md", "# Plan\n\n#roadmap now\n")
        clock.advance(1.0)
        assert "#roadmap" not in await session.ok_text("list_tags")  # the listing of a second ago
        clock.advance(1.5)
        assert "#roadmap" in await session.ok_text("list_tags")


async def test_this_servers_own_write_is_seen_by_the_very_next_call(vault: LocalVault, tmp_path: Path) -> None:
    clock = FakeClock()
    async with session_on(vault, clock=clock, cache_dir=tmp_path / "cache", prefetch=False) as session:
        big(session)
        assert "#roadmap" not in await session.ok_text("list_tags")
        await session.ok_text("write_note", path="ideas.md", content="# Ideas\n\n#roadmap\n")
        assert "#roadmap" in await session.ok_text("list_tags")  # no time has passed on the clock
        await session.ok_text("edit_note", path="ideas.md", edits=[{"oldText": "#roadmap", "newText": "#later"}])
        tags = await session.ok_text("list_tags")
        assert "#later" in tags and "#roadmap" not in tags


async def test_a_small_vault_is_listed_by_every_call(vault: LocalVault, tmp_path: Path) -> None:
    async with session_on(vault, clock=FakeClock(), cache_dir=tmp_path / "cache", prefetch=False) as session:
        before = listings(vault)  # the default size (10,000 files): these three are far below it
        await session.ok_text("list_tags")
        await session.ok_text("list_tags")
        assert listings(vault) - before == 2
        assert session.runner.workspace.kept_listings.reused == 0


async def test_reuse_off_lists_every_time(vault: LocalVault, tmp_path: Path) -> None:
    options = {"cache_dir": tmp_path / "cache", "prefetch": False, "listing_reuse_seconds": 0.0}
    async with session_on(vault, clock=FakeClock(), **options) as session:
        big(session)
        before = listings(vault)
        await session.ok_text("list_tags")
        await session.ok_text("list_tags")
        assert listings(vault) - before == 2


@pytest.mark.parametrize("value", ["-1", "61", "soon", "nan", "inf"])
def test_a_bad_reuse_setting_is_refused_by_name(value: str) -> None:
    environ = {"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "k", "TEAM_VAULT_LISTING_REUSE": value}
    with pytest.raises(ConfigError) as refused:
        load_config(environ)
    assert "TEAM_VAULT_LISTING_REUSE" in str(refused.value) and "from 0 (always list) to 60" in str(refused.value)


@pytest.mark.parametrize(("value", "seconds"), [("0", 0.0), ("0.5", 0.5), ("60", 60.0), ("", 2.0)])
def test_a_reuse_setting_is_read(value: str, seconds: float) -> None:
    environ = {"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "k", "TEAM_VAULT_LISTING_REUSE": value}
    assert load_config(environ).listing_reuse_seconds == seconds


async def test_recent_changes_shares_its_listing_inside_the_window_and_sees_its_own_delete(
    vault: LocalVault, tmp_path: Path
) -> None:
    clock = FakeClock()
    async with session_on(vault, clock=clock, cache_dir=tmp_path / "cache", prefetch=False) as session:
        big(session)
        before = listings(vault)
        first = await session.ok_text("recent_changes")
        assert await session.ok_text("recent_changes") == first
        assert listings(vault) - before == 1  # the listing with its tombstones, kept like the others
        await session.ok_text("delete_note", path="plan.md")
        assert "deleted  plan.md" in await session.ok_text("recent_changes")  # no time has passed on the clock
        clock.advance(2.5)
        seeding.colleague_writes(vault, "people/grace.md", "# Grace\n\nnow\n")
        assert "updated  people/grace.md" in (await session.ok_text("recent_changes")).splitlines()[1]


async def test_find_notes_keeps_a_big_vaults_listing_for_the_calls_after_it(vault: LocalVault, tmp_path: Path) -> None:
    clock = FakeClock()
    async with session_on(vault, clock=clock, cache_dir=tmp_path / "cache", prefetch=False) as session:
        big(session)
        await session.ok_text("list_tags")  # the project's listing is big: the next one is kept
        clock.advance(2.5)
        before = listings(vault)
        assert "people/grace.md" in await session.ok_text("find_notes", query="grace")
        await session.ok_text("note_links", path="people/ada.md")
        await session.ok_text("find_notes", query="ada")
        assert listings(vault) - before == 1


async def test_a_listing_past_its_window_is_let_go_and_nothing_else_keeps_it_alive(
    vault: LocalVault, tmp_path: Path
) -> None:
    # The tallies and the index store each held the last listing they saw: five were alive at 20,000 notes.
    clock = FakeClock()
    async with session_on(vault, clock=clock, cache_dir=tmp_path / "cache", prefetch=False) as session:
        big(session)
        kept = session.runner.workspace.kept_listings
        await session.ok_text("list_tags")
        await session.ok_text("list_tasks")
        await session.ok_text("search_notes", query="budget")
        first = kept.reusable(vault.project_id)
        assert first is not None
        gone = weakref.ref(first)
        del first
        clock.advance(2.5)
        assert kept.reusable(vault.project_id) is None  # past its moment: dropped as soon as that is seen,
        gc.collect()
        assert gone() is None  # before the next listing is made (two big listings were alive at once)
        await session.ok_text("note_links", path="people/ada.md")  # lists again
        assert kept.reusable(vault.project_id) is not None  # the new one is kept for its moment


async def test_listings_alive_at_once_share_the_records_of_unchanged_files(vault: LocalVault, tmp_path: Path) -> None:
    # A listing is ~600 bytes a file of strings; the kept one, the tombstones' and a call's were each a copy.
    clock = FakeClock()
    async with session_on(vault, clock=clock, cache_dir=tmp_path / "cache", prefetch=False) as session:
        big(session)
        kept = session.runner.workspace.kept_listings
        await session.ok_text("list_tags")
        first = kept.reusable(vault.project_id)
        assert first is not None
        await session.ok_text("recent_changes", since="7d")  # the listing with the tombstones, a request of its own
        with_tombstones = kept.reusable(vault.project_id, include_deleted=True)
        assert with_tombstones is not None and with_tombstones is not first
        assert {id(file) for file in first} <= {id(file) for file in with_tombstones}
        clock.advance(2.5)
        seeding.colleague_writes(vault, "plan.md", "# Plan\n\nchanged\n")
        await session.ok_text("list_tags")  # lists again, while `first` is still held (here)
        second = kept.reusable(vault.project_id)
        assert second is not None and second is not first
        by_path = {file.path: file for file in first}
        for file in second:
            assert (file is by_path[file.path]) == (file.path != "plan.md"), file.path
