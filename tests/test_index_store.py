"""The persistent index (``vault/index_db.py``): facts parsed once, ever, kept across restarts, never trusted blindly.

Through a real MCP client on a local vault (``support/sessions.py``): a restart answers its first
``list_tags`` / ``note_links`` without parsing or downloading a note; a corrupt file and a file of
another version are made again and the answer is the same; TEAM_VAULT_CACHE_DIR=off keeps no file.
And the store itself: what it keeps reads back equal, two processes writing one file at once leave
it sound.
"""

from __future__ import annotations

import gc
import multiprocessing
import sqlite3
import stat
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest
from support import seeding
from support.env import env_for
from support.fakes import FakeClock
from support.policies import FAST
from support.sessions import session_on

from teamvault_mcp.doctor import Doctor
from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.text.noteindex import FACTS_VERSION, PARTS, FactsIndex, NoteFacts, decode_part, encode_part
from teamvault_mcp.tools import indexing
from teamvault_mcp.vault.index_db import INDEX_FILE, SCHEMA_VERSION, IndexStore, fts5_available
from teamvault_mcp.vault.records import VaultFile, VaultListing

pytestmark = pytest.mark.anyio

NOTES = {
    "people/ada.md": "---\ntags: [people, Team/Eng]\nstatus: active\n---\n# Ada\n\n"
    "Works with [[grace|Grace H.]]. #lead\n- [ ] call [[grace]]\n- [x] ship it\n",
    "people/grace.md": "# Grace\n\nSee [[ada]], [[people/ada#Ada|her]] and [[nobody]].\n\n"
    "## Plan\n- [ ] review [[Ada]]\n",
    "plan.md": "---\nowner: [Ada]\ntags: project\n---\n# Plan\n\nOwner: [Ada](people/ada.md). #eng/backend\n",
}


@pytest.fixture
def seeded(tmp_path: Path):
    with LocalVault(tmp_path / "vault") as vault:
        for path, text in NOTES.items():
            seeding.seed(vault, path, text)
        yield vault


def index_files(cache: Path) -> list[Path]:
    return sorted(cache.glob(f"*/{INDEX_FILE}"))


def downloads(vault: LocalVault) -> list[str]:
    """The requests for a note's content or a folder archive (not listings)."""
    return [path for _, path in vault.faults.seen if "content" in path or "download" in path]


async def first_answers(vault: LocalVault, cache: Path) -> tuple[str, str, str]:
    async with session_on(vault, cache_dir=cache) as session:
        tags = await session.ok_text("list_tags")
        links = await session.ok_text("note_links", path="people/ada.md")
        tasks = await session.ok_text("list_tasks")
        assert session.runner.workspace.note_index.facts.parsed > 0
    return tags, links, tasks


async def test_a_restart_parses_and_downloads_nothing_it_has_indexed(seeded: LocalVault, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = await first_answers(seeded, cache)
    seen = len(downloads(seeded))
    async with session_on(seeded, cache_dir=cache) as session:  # a new server: nothing in memory
        tags = await session.ok_text("list_tags")
        links = await session.ok_text("note_links", path="people/ada.md")
        tasks = await session.ok_text("list_tasks")
        facts = session.runner.workspace.note_index.facts
        assert (facts.parsed, facts.loaded > 0) == (0, True)
    assert (tags, links, tasks) == before
    assert len(downloads(seeded)) == seen


async def test_only_a_changed_note_is_parsed_after_a_restart(seeded: LocalVault, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    await first_answers(seeded, cache)
    seeding.colleague_writes(seeded, "plan.md", NOTES["plan.md"] + "#fresh\n")
    async with session_on(seeded, cache_dir=cache) as session:
        assert "#fresh" in await session.ok_text("list_tags")
        assert session.runner.workspace.note_index.facts.parsed == 1  # the new content's tags (its YAML with them)


async def test_a_vault_larger_than_the_memory_bound_is_not_parsed_again_warm(
    seeded: LocalVault, tmp_path: Path
) -> None:
    # Issue 29's list_tasks, as slow warm as cold at 50,000 notes: the facts outgrew the memory LRU, and a call
    # that walks every note evicts each note's facts before the next call reaches it. The store holds them all.
    async with session_on(seeded, cache_dir=tmp_path / "cache") as session:
        facts = session.runner.workspace.note_index.facts
        facts.max_bytes = 1  # room for one note's facts: every other note is evicted on the way
        first = await session.ok_text("list_tasks")
        parsed, fetched = facts.parsed, len(downloads(seeded))
        assert await session.ok_text("list_tasks") == first
        assert (facts.parsed, len(downloads(seeded))) == (parsed, fetched)


async def test_the_index_is_private_beside_the_content_cache(seeded: LocalVault, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    await first_answers(seeded, cache)
    (found,) = index_files(cache)
    assert stat.S_IMODE(found.stat().st_mode) == 0o600
    assert stat.S_IMODE(found.parent.stat().st_mode) == 0o700
    with sqlite3.connect(found) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        paths = [row[0] for row in connection.execute("SELECT path FROM notes ORDER BY path")]
    assert paths == sorted(NOTES)  # the listing snapshot


async def test_a_corrupt_index_is_made_again_and_the_answer_is_the_same(seeded: LocalVault, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = await first_answers(seeded, cache)
    (found,) = index_files(cache)
    for side in found.parent.glob(f"{INDEX_FILE}-*"):
        side.unlink()
    found.write_bytes(b"this is no database \x00\xff" * 400)
    async with session_on(seeded, cache_dir=cache) as session:
        assert await session.ok_text("list_tags") == before[0]
        assert await session.ok_text("note_links", path="people/ada.md") == before[1]
        store = session.runner.workspace.index_store_for(seeded.project_id)
        assert store is not None and store.rebuilt == 1 and store.integrity() == "ok"
    async with session_on(seeded, cache_dir=cache) as session:  # and what was rebuilt serves the next restart
        assert await session.ok_text("list_tags") == before[0]
        assert session.runner.workspace.note_index.facts.parsed == 0


async def test_an_index_of_another_version_is_made_again(seeded: LocalVault, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = await first_answers(seeded, cache)
    (found,) = index_files(cache)
    with sqlite3.connect(found) as connection:
        connection.execute("UPDATE facts SET value = '[[\"forged\",0,1,\"[[forged]]\",1]]' WHERE part = 'links'")
        connection.execute("PRAGMA user_version = 999")
    async with session_on(seeded, cache_dir=cache) as session:
        assert await session.ok_text("note_links", path="people/ada.md") == before[1]  # no forged link trusted
        assert session.runner.workspace.note_index.facts.parsed > 0
    with sqlite3.connect(found) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION * 1000 + FACTS_VERSION


async def test_a_stored_part_this_version_cannot_read_is_parsed_again(seeded: LocalVault, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = await first_answers(seeded, cache)
    (found,) = index_files(cache)
    with sqlite3.connect(found) as connection:
        connection.execute("UPDATE facts SET value = '[[1, \"x\"]]' WHERE part = 'tasks'")
    async with session_on(seeded, cache_dir=cache) as session:
        assert await session.ok_text("list_tasks") == before[2]
        assert session.runner.workspace.note_index.facts.parsed == len(NOTES)


async def test_with_the_cache_off_there_is_no_index(seeded: LocalVault, tmp_path: Path) -> None:
    async with session_on(seeded, cache_dir=None) as session:
        await session.ok_text("list_tags")
        assert session.runner.workspace.index_store_for(seeded.project_id) is None
    assert not list(tmp_path.rglob(f"*{INDEX_FILE}*"))


# -- the store itself --------------------------------------------------------------------------------------------


def parsed_facts() -> dict[str, NoteFacts]:
    found = {}
    for number, text in enumerate([*NOTES.values(), "---\n: [broken\n---\nno front matter [[x]]\n- [ ] t\n"]):
        facts = NoteFacts()
        facts.parse(text, PARTS)
        found[f"{number:064x}"] = facts
    return found


def test_each_part_reads_back_as_it_was_parsed() -> None:
    for facts in parsed_facts().values():
        for part in PARTS:
            kept = decode_part(part, encode_part(facts, part))
            assert kept == getattr(facts, "front_matter" if part == "fields" else part), part


def _write_many(directory: str, start: int, count: int) -> None:
    """A second process's writes: ``count`` batches of facts, each its own transaction, read back as it goes."""
    store = IndexStore(Path(directory), FACTS_VERSION)
    rows = [
        (content_hash, part, value) for content_hash, facts in parsed_facts().items() for part, value in facts.encoded()
    ]
    for batch in range(start, start + count):
        store.save([(f"{batch:08d}{content_hash[8:]}", part, value) for content_hash, part, value in rows])
        assert store.load([f"{batch:08d}{rows[0][0][8:]}"], PARTS)
    store.close()


def test_two_processes_writing_one_index_leave_it_sound(tmp_path: Path) -> None:
    directory = tmp_path / "ns"
    child = multiprocessing.get_context("spawn").Process(target=_write_many, args=(str(directory), 0, 150))
    child.start()
    errors: list[BaseException] = []

    def thread_writes(start: int) -> None:
        try:
            _write_many(str(directory), start, 150)
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=thread_writes, args=(start,)) for start in (1000, 2000)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    child.join(timeout=120)
    assert child.exitcode == 0 and not errors
    store = IndexStore(directory, FACTS_VERSION)
    assert store.integrity() == "ok"
    expected = {content_hash[8:]: dict(facts.encoded()) for content_hash, facts in parsed_facts().items()}
    for start in (0, 1000, 2000):
        for batch in (start, start + 149):
            hashes = [f"{batch:08d}{rest}" for rest in expected]
            loaded = store.load(hashes, PARTS)
            assert {content_hash[8:]: parts for content_hash, parts in loaded.items()} == expected
    assert store.rebuilt == 0


def test_the_fts5_probe_agrees_with_the_build() -> None:
    with sqlite3.connect(":memory:") as connection:
        options = {row[0] for row in connection.execute("PRAGMA compile_options")}
    assert fts5_available() == ("ENABLE_FTS5" in options)


@pytest.mark.parametrize(
    ("cache_dir", "said"), [("", "index beside the cache in"), ("off", "no index on disk (TEAM_VAULT_CACHE_DIR=off")]
)
def test_check_says_where_the_index_is_and_whether_sqlite_has_fts5(
    seeded: LocalVault, tmp_path: Path, cache_dir: str, said: str
) -> None:
    environ = env_for(seeded, CACHE_DIR=cache_dir or str(tmp_path / "cache"))
    checks = {check.name: check for check in Doctor(environ, policy=FAST).run()}
    assert said in checks["config"].detail
    if not cache_dir:
        assert ("with FTS5" if fts5_available() else "without FTS5") in checks["config"].detail


def test_an_index_another_process_holds_locked_is_kept_not_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'database is locked' is an OperationalError, which sqlite3 makes a DatabaseError too: a writer holding the
    file past the busy timeout must cost this batch only, never the file (deleting it lost everyone's facts)."""
    monkeypatch.setattr("teamvault_mcp.vault.index_db.BUSY_TIMEOUT_MS", 50)
    directory = tmp_path / "ns"
    store = IndexStore(directory, FACTS_VERSION)
    store.save([("a" * 64, "links", "[]")])
    holder = sqlite3.connect(directory / INDEX_FILE, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process's long write
    try:
        store.save([("b" * 64, "links", "[]")])  # busy past the timeout: this batch goes without
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.rebuilt == 0
    assert store.load(["a" * 64], ["links"]) == {"a" * 64: {"links": "[]"}}  # the file and its facts are still there
    fresh = IndexStore(directory, FACTS_VERSION)
    assert fresh.load(["a" * 64], ["links"]) == {"a" * 64: {"links": "[]"}} and fresh.rebuilt == 0


async def test_the_links_of_unchanged_notes_are_not_read_again(seeded: LocalVault, tmp_path: Path) -> None:
    """Memory keeps a bounded part of a big vault's facts: once the graph is made, note_links and broken_links read
    the links of new and changed notes only (all were read back from the store on every call), and answer the
    same."""
    async with session_on(seeded, cache_dir=tmp_path / "cache") as session:
        links = await session.ok_text("note_links", path="people/ada.md", direction="in")
        broken = await session.ok_text("broken_links")
        facts = session.runner.workspace.note_index.facts
        facts._entries.clear()  # as if evicted: the vault is bigger than memory's bound
        seen = (facts.parsed, facts.loaded)
        assert await session.ok_text("note_links", path="people/ada.md", direction="in") == links
        assert await session.ok_text("broken_links") == broken
        assert (facts.parsed, facts.loaded) == seen
        seeding.colleague_writes(seeded, "plan.md", "# Plan\n\nNow with [[people/grace]].\n")
        changed = await session.ok_text("note_links", path="people/grace.md", direction="in")
        assert "plan.md:3" in changed
        assert (facts.parsed, facts.loaded) == (seen[0] + 1, seen[1])  # the changed note's links, and no other


async def test_reading_facts_back_from_the_store_stops_with_the_budget(
    seeded: LocalVault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """100,000 notes' facts take longer to read back than a call has: they are read back a chunk at a time while
    the budget lasts, and the answer says what it lacks."""
    cache = tmp_path / "cache"
    await first_answers(seeded, cache)  # the store holds every note's facts
    clock = FakeClock()
    recall = FactsIndex.recall

    def slow_recall(self: FactsIndex, *arguments: Any) -> Any:
        clock.advance(2.0)  # each chunk two seconds of a 4.5 s budget
        return recall(self, *arguments)

    monkeypatch.setattr(FactsIndex, "recall", slow_recall)
    monkeypatch.setattr(indexing, "RECALL_CHUNK", 1)
    async with session_on(seeded, cache_dir=cache, clock=clock, call_budget=4.5, prefetch=False) as session:
        text = await session.ok_text("list_tags")
    assert "[Partial: 1 of 3 notes were not read (the call's time budget ran out)" in text


async def test_parsed_facts_go_to_the_store_in_batches_as_they_come(
    seeded: LocalVault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One write per batch of notes parsed, not one for the whole call at its end: at 50,000 notes that last write
    came after the budget's end (the call overran it)."""
    monkeypatch.setattr(indexing, "SAVE_EVERY", 2)
    batches: list[int] = []
    save = IndexStore.save

    def counted(self: IndexStore, rows: Any) -> None:
        batches.append(len({row[0] for row in rows}))
        save(self, rows)

    monkeypatch.setattr(IndexStore, "save", counted)
    async with session_on(seeded, cache_dir=tmp_path / "cache", prefetch=False) as session:
        await session.ok_text("list_tags")
    assert batches == [2, 1]


def test_the_store_saves_a_listing_once_and_keeps_none_alive(tmp_path: Path) -> None:
    # It held the last listing it saved, to know it again: one more listing alive (12 MB at 20,000 notes).
    store = IndexStore(tmp_path / "ns", FACTS_VERSION)
    try:
        listing = VaultListing([VaultFile("f1", "a.md", "TEXT", 3, "a" * 64, "text/markdown", None, "2026-12-01")])
        store.save_listing(listing)
        assert [row[0] for row in store.listing()] == ["a.md"]
        store.save_listing(listing)  # the same listing again: seen, not written again
        gone = weakref.ref(listing)
        del listing
        gc.collect()
        assert gone() is None
        moved = VaultListing([VaultFile("f1", "b.md", "TEXT", 3, "a" * 64, "text/markdown", None, "2026-12-01")])
        store.save_listing(moved)
        assert [row[0] for row in store.listing()] == ["b.md"]
    finally:
        store.close()
