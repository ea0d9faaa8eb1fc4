"""One request for an unchanged note: reads take the content from the hash-keyed cache when the resolve allows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_config
from mcp import Client

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.vault.retry import RetryPolicy, SystemClock

pytestmark = pytest.mark.anyio

#: The production rules with short pauses; a generous attempt limit, so a loaded machine never cuts a plain attempt.
FAST = RetryPolicy(pauses=(0.01, 0.02), jitter=0.0, key_in_use_pause=0.01, min_time_to_start=0.05, attempt_timeout=30)
NOTE = "# Handbook\n## Money\nThe travel budget.\n## People\nAda.\n"


class Session:
    def __init__(self, vault: LocalVault, client: Client) -> None:
        self.vault = vault
        self.client = client

    async def ok(self, tool: str, **arguments: Any) -> str:
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text
        text: str = result.content[0].text
        return text

    async def requests_of(self, tool: str, **arguments: Any) -> tuple[int, int]:
        """(resolves, downloads) the call sent."""
        before = len(self.vault.faults.seen)
        await self.ok(tool, **arguments)
        seen = [path for method, path in self.vault.faults.seen[before:] if method == "GET"]
        downloads = sum(1 for path in seen if path.count("/") == 5)
        return len(seen) - downloads, downloads

    def colleague_writes(self, path: str, text: str) -> None:
        store, project = self.vault.store, self.vault.project_id
        files = store.list_files(project, path=path, prefix=None, include_deleted=False)
        with store.write() as db:
            change = Change(db, project, store.owner_of(project))
            if files:
                store.replace(change, files[0].id, text.encode())
            else:
                store.create(change, path, text.encode(), None)


async def session_with(tmp_path: Path, cache_dir: Path | None) -> AsyncIterator[Session]:
    with LocalVault(tmp_path / "vault") as vault:
        config = make_config(
            base_url=vault.url, api_key=vault.api_key, project_id=vault.project_id, cache_dir=cache_dir
        )
        async with Client(build_server(ToolRunner(config, clock=SystemClock(), policy=FAST)), mode="legacy") as client:
            yield Session(vault, client)


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async for running in session_with(tmp_path, tmp_path / "cache"):
        yield running


async def test_an_unchanged_note_is_read_with_one_request(session: Session) -> None:
    session.colleague_writes("handbook.md", NOTE)
    assert await session.requests_of("read_note", path="handbook.md") == (1, 1)  # unseen: downloaded
    for tool, arguments in [
        ("read_note", {"path": "handbook.md"}),
        ("read_note", {"path": "handbook.md", "section": ["Handbook", "Money"]}),
        ("read_note", {"path": "handbook.md", "startLine": 2, "endLine": 3}),
        ("note_outline", {"path": "handbook.md"}),
        ("read_notes", {"paths": ["handbook.md"]}),
        ("read_frontmatter", {"path": "handbook.md"}),
    ]:
        assert await session.requests_of(tool, **arguments) == (1, 0), tool


async def test_a_changed_note_is_downloaded_and_never_served_stale(session: Session) -> None:
    session.colleague_writes("n.md", "first\n")
    assert await session.ok("read_note", path="n.md") == "first\n"
    session.colleague_writes("n.md", "second\n")
    assert await session.requests_of("read_note", path="n.md") == (1, 1)
    assert await session.ok("read_note", path="n.md") == "second\n"


async def test_a_note_this_server_wrote_is_read_with_one_request(session: Session) -> None:
    await session.ok("write_note", path="n.md", content="mine\n")
    assert await session.requests_of("read_note", path="n.md") == (1, 0)
    await session.ok("edit_note", path="n.md", edits=[{"oldText": "mine", "newText": "ours"}])
    assert await session.requests_of("read_note", path="n.md") == (1, 0)
    assert await session.ok("read_note", path="n.md") == "ours\n"


async def test_a_corrupted_cache_entry_is_downloaded_again(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        config = make_config(
            base_url=vault.url, api_key=vault.api_key, project_id=vault.project_id, cache_dir=tmp_path / "cache"
        )
        first = Session(
            vault, Client(build_server(ToolRunner(config, clock=SystemClock(), policy=FAST)), mode="legacy")
        )
        async with first.client:
            first.colleague_writes("n.md", "the real text\n")
            await first.ok("read_note", path="n.md")
            [entry] = [path for path in (tmp_path / "cache").rglob("*") if path.is_file() and len(path.name) == 64]
            entry.write_bytes(b"the fake text\n")
            assert await first.requests_of("read_note", path="n.md") == (1, 0)  # from memory, checked when kept
            assert await first.ok("read_note", path="n.md") == "the real text\n"
        # A new server on the same cache: the disk entry is checked, found corrupt, fetched again.
        fresh = Session(
            vault, Client(build_server(ToolRunner(config, clock=SystemClock(), policy=FAST)), mode="legacy")
        )
        async with fresh.client:
            assert await fresh.requests_of("read_note", path="n.md") == (1, 1)
            assert await fresh.ok("read_note", path="n.md") == "the real text\n"
        assert entry.read_bytes() == b"the real text\n"  # stored again


async def test_with_the_cache_off_every_read_downloads(tmp_path: Path) -> None:
    async for session in session_with(tmp_path, None):
        session.colleague_writes("n.md", "text\n")
        for _ in range(2):
            assert await session.requests_of("read_note", path="n.md") == (1, 1)
