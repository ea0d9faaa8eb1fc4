"""One request for an unchanged note: reads take the content from the hash-keyed cache when the resolve allows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.sessions import Session, open_session, session_on

from teamvault_mcp.localvault import LocalVault

pytestmark = pytest.mark.anyio

NOTE = "# Handbook\n## Money\nThe travel budget.\n## People\nAda.\n"


#: The production budget: these tests count requests, not seconds.
BUDGET = 45.0


async def requests_of(session: Session, tool: str, **arguments: Any) -> tuple[int, int]:
    """(resolves, downloads) the call sent."""
    before = len(session.vault.faults.seen)
    await session.ok_text(tool, **arguments)
    seen = [path for method, path in session.vault.faults.seen[before:] if method == "GET"]
    downloads = sum(1 for path in seen if path.count("/") == 5)
    return len(seen) - downloads, downloads


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, cache_dir=tmp_path / "cache", call_budget=BUDGET) as running:
        yield running


async def test_an_unchanged_note_is_read_with_one_request(session: Session) -> None:
    session.colleague_writes("handbook.md", NOTE)
    assert await requests_of(session, "read_note", path="handbook.md") == (1, 1)  # unseen: downloaded
    for tool, arguments in [
        ("read_note", {"path": "handbook.md"}),
        ("read_note", {"path": "handbook.md", "section": ["Handbook", "Money"]}),
        ("read_note", {"path": "handbook.md", "startLine": 2, "endLine": 3}),
        ("note_outline", {"path": "handbook.md"}),
        ("read_notes", {"paths": ["handbook.md"]}),
        ("read_frontmatter", {"path": "handbook.md"}),
    ]:
        assert await requests_of(session, tool, **arguments) == (1, 0), tool


async def test_a_changed_note_is_downloaded_and_never_served_stale(session: Session) -> None:
    session.colleague_writes("n.md", "first\n")
    assert await session.read("n.md") == "first\n"
    session.colleague_writes("n.md", "second\n")
    assert await requests_of(session, "read_note", path="n.md") == (1, 1)
    assert await session.read("n.md") == "second\n"


async def test_a_note_this_server_wrote_is_read_with_one_request(session: Session) -> None:
    await session.ok_text("write_note", path="n.md", content="mine\n")
    assert await requests_of(session, "read_note", path="n.md") == (1, 0)
    await session.ok_text("edit_note", path="n.md", edits=[{"oldText": "mine", "newText": "ours"}])
    assert await requests_of(session, "read_note", path="n.md") == (1, 0)
    assert await session.read("n.md") == "ours\n"


async def test_a_corrupted_cache_entry_is_downloaded_again(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        async with session_on(vault, cache_dir=tmp_path / "cache", call_budget=BUDGET) as first:
            first.colleague_writes("n.md", "the real text\n")
            await first.ok_text("read_note", path="n.md")
            [entry] = [path for path in (tmp_path / "cache").rglob("*") if path.is_file() and len(path.name) == 64]
            entry.write_bytes(b"the fake text\n")
            assert await requests_of(first, "read_note", path="n.md") == (1, 0)  # from memory, checked when kept
            assert await first.read("n.md") == "the real text\n"
        # A new server on the same cache: the disk entry is checked, found corrupt, fetched again.
        async with session_on(vault, cache_dir=tmp_path / "cache", call_budget=BUDGET) as fresh:
            assert await requests_of(fresh, "read_note", path="n.md") == (1, 1)
            assert await fresh.read("n.md") == "the real text\n"
        assert entry.read_bytes() == b"the real text\n"  # stored again


async def test_with_the_cache_off_every_read_downloads(tmp_path: Path) -> None:
    async with open_session(tmp_path, cache_dir=None, call_budget=BUDGET) as session:
        session.colleague_writes("n.md", "text\n")
        for _ in range(2):
            assert await requests_of(session, "read_note", path="n.md") == (1, 1)
