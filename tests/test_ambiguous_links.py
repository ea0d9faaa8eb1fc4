"""Links that name a file only by a name several files share, through a real MCP client: note_links and
broken_links resolve them as Obsidian does, and say they are ambiguous, naming the other files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.sessions import Session, open_session

from teamvault_mcp.text.resolution import VaultPaths

pytestmark = pytest.mark.anyio


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path) as running:
        running.seed("meetings/Retro.md", "# Retro\n")
        running.seed("projects/Retro.md", "# Retro of the project\n")
        running.seed("ada.md", "# Ada\n")
        running.seed(
            "notes/today.md",
            "See [[Retro]] and [[projects/Retro]] and [[ada]].\nAlso [the retro](../meetings/Retro.md).\n",
        )
        yield running


async def test_note_links_marks_a_link_by_a_shared_name_as_ambiguous_and_names_the_others(session: Session) -> None:
    text = await session.ok_text("note_links", path="notes/today.md", direction="out")
    out = text.splitlines()[2:6]
    assert out == [
        "1  [[Retro]] → meetings/Retro.md (ambiguous: also projects/Retro.md)",
        "1  [[projects/Retro]] → projects/Retro.md",
        "1  [[ada]] → ada.md",
        "2  [the retro](../meetings/Retro.md) → meetings/Retro.md",
    ]


async def test_broken_links_lists_the_ambiguous_links_after_the_broken_ones(session: Session) -> None:
    session.seed("plan.md", "[[Gone]] and [[Retro]]\n")
    text = await session.ok_text("broken_links")
    lines = text.splitlines()
    assert lines[1] == "plan.md:1  [[Gone]]"
    at = lines.index(
        "2 ambiguous links: each names a file several share; it resolves to the first (Obsidian's pick), the "
        "others are listed:"
    )
    assert lines[at + 1 : at + 3] == [
        "notes/today.md:1  [[Retro]] → meetings/Retro.md (ambiguous: also projects/Retro.md)",
        "plan.md:1  [[Retro]] → meetings/Retro.md (ambiguous: also projects/Retro.md)",
    ]
    assert lines[at + 3] == "To pick one file, write its path in the link: [[projects/Retro]]."  # one of them


async def test_the_way_to_pick_one_file_names_a_file_of_this_vault(session: Session) -> None:
    """The example is one of the files the first ambiguous link could mean, not a fixed one."""
    session.seed("p/Standup.md", "# S\n")
    session.seed("q/Standup.md", "# S2\n")
    session.seed("a.md", "[[Standup]]\n")
    text = await session.ok_text("broken_links", prefix="a")
    assert "To pick one file, write its path in the link: [[q/Standup]]." in text, text


async def test_no_ambiguous_links_no_word_of_them(session: Session) -> None:
    text = await session.ok_text("broken_links", prefix="meetings/")
    assert "ambiguous" not in text


def test_a_link_by_path_or_relative_to_its_note_is_not_ambiguous() -> None:
    vault = VaultPaths(["meetings/Retro.md", "projects/Retro.md", "Retro.md", "a/notes/x.md", "b/notes/x.md"])
    assert vault.alternatives("Retro", "today.md") == ["meetings/Retro.md", "projects/Retro.md"]
    assert vault.alternatives("/Retro", "today.md") == []
    assert vault.alternatives("projects/Retro", "today.md") == []
    assert vault.alternatives("./Retro.md", "meetings/today.md") == []
    assert vault.alternatives("Retro.md", "meetings/today.md", markdown=True) == []
    assert vault.alternatives("notes/x", "today.md") == ["b/notes/x.md"]
    assert vault.alternatives("Nothing", "today.md") == []
