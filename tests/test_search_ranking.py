"""What search_notes and find_notes rank first, read as a text-only host reads it (through a real MCP client)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.sessions import Session, open_session

pytestmark = pytest.mark.anyio


@pytest.fixture
async def vault(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path) as session:
        yield session


# -- find_notes ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["grcae", "rgace", "graec", "gacre"])
async def test_find_notes_forgives_swapped_letters_in_a_short_name(vault: Session, query: str) -> None:
    for path in ("people/grace.md", "people/ada.md", "notes/race.md", "people/craig.md", "projects/plan.md"):
        vault.seed(path, "x\n")
    text = await vault.text_ok("find_notes", query=query)
    lines = text.splitlines()
    assert lines[0].endswith(f'like "{query}":') and lines[1].startswith("people/grace.md  ("), text
