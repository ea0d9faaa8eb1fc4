"""A 5,000-note vault through the index (issue 29's smoke, the part of its growth bench CI can afford).

5,000 small notes (front matter, a link to one of three hubs and one to the next note, an inline tag, two
tasks; a few with the words searched for or a broken link) are put straight into a local vault's store in one
transaction, their blobs not fsynced (seeding only). A server with a cache directory of its own and the default
call budget answers search_notes, find_notes, note_links on a hub, broken_links, list_tags, query_notes and
list_tasks: each answer whole (never partial) and right, counted from how the notes were made; then a second
server on the same cache directory, as after a restart, answers each the same, word for word. Correctness
only: no timing is asserted (``bench/index_bench.py`` measures).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.sessions import Session, session_on

from teamvault_mcp.config import DEFAULT_CALL_BUDGET
from teamvault_mcp.localvault import LocalVault, blobs
from teamvault_mcp.localvault.store import Change

pytestmark = pytest.mark.anyio

HUBS = 3
#: Notes besides the hubs: 5,000 in all.
NOTES = 5000 - HUBS
BROKEN_EVERY = 500
BUDGET_EVERY = 100
ZEBRA = 4321


def note_path(index: int) -> str:
    return f"notes/n{index:04d}.md"


def note_text(index: int) -> str:
    lines = [
        "---",
        f"status: {'active' if index % 2 == 0 else 'done'}",
        f"rank: {index}",
        f"tags: [fm{index % 10}]",
        "---",
        f"# Note {index}",
        f"Filed under [[hub-{index % HUBS}]]; next: [[n{(index + 1) % NOTES:04d}]]. #topic{index % 7}",
        f"- [ ] task {index}",
        f"- [x] done {index}",
    ]
    if index % BUDGET_EVERY == 0:
        lines.append("The quarterly budget review.")
    if index % BROKEN_EVERY == 0:
        lines.append(f"Also [[nowhere-{index}]].")
    if index == ZEBRA:
        lines.append("A zebra crossing.")
    return "\n".join(lines) + "\n"


def seed_quickly(vault: LocalVault, notes: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every note in one transaction, the blobs not fsynced (fsync is put back before any server starts)."""
    store, project = vault.store, vault.project_id
    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", lambda fd: None)
        patched.setattr(blobs, "_fsync_dir", lambda directory: None)
        with store.write() as db:
            change = Change(db, project, store.owner_of(project))
            for path, text in notes.items():
                store.create(change, path, text.encode(), "text/markdown")


@pytest.fixture(scope="module")
def big_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalVault]:
    notes = {f"hubs/hub-{k}.md": f"# Hub {k}\n" for k in range(HUBS)}
    notes.update({note_path(index): note_text(index) for index in range(NOTES)})
    with LocalVault(tmp_path_factory.mktemp("vault")) as running, pytest.MonkeyPatch.context() as monkeypatch:
        seed_quickly(running, notes, monkeypatch)
        yield running


def count(predicate: Any) -> int:
    return sum(1 for index in range(NOTES) if predicate(index))


#: Each call of the smoke, and what its structured answer must hold (beyond not being partial).
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_notes", {"query": "quarterly budget", "limit": 100}),
    ("search_notes", {"query": "zebra"}),
    ("find_notes", {"query": f"n{ZEBRA}"}),
    ("note_links", {"path": "hubs/hub-0.md", "direction": "in"}),
    ("broken_links", {"limit": 50}),
    ("list_tags", {}),
    ("query_notes", {"where": {"status": "active"}, "sort": "-rank", "limit": 3}),
    ("list_tasks", {"status": "open", "limit": 5}),
]


async def whole(session: Session, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    """The text and data of a call that succeeded and read every note it needed."""
    text, is_error, data = await session.call(tool, **arguments)
    assert not is_error, text
    assert "[Partial" not in text, text[:400]
    assert data.get("partial", False) is False, (tool, data)
    return text, data


async def test_index_of_5000_notes_answers_every_graph_and_search_tool_whole_right_and_alike_after_a_restart(
    big_vault: LocalVault, tmp_path: Path
) -> None:
    options = {"cache_dir": tmp_path / "cache", "call_budget": DEFAULT_CALL_BUDGET, "structured_content": True}
    async with session_on(big_vault, **options) as session:
        answers = [await whole(session, tool, arguments) for tool, arguments in CALLS]
    budget, zebra, found, hub, broken, tags, active, tasks = (data for _, data in answers)

    assert budget["totalNotes"] == count(lambda index: index % BUDGET_EVERY == 0)
    assert {hit["path"] for hit in budget["hits"]} == {
        note_path(index) for index in range(NOTES) if index % BUDGET_EVERY == 0
    }
    assert [hit["path"] for hit in zebra["hits"]] == [note_path(ZEBRA)]
    assert found["notes"][0]["path"] == note_path(ZEBRA)
    assert hub["in"] == count(lambda index: index % HUBS == 0)
    assert broken["broken"] == count(lambda index: index % BROKEN_EVERY == 0)
    assert {row["link"] for row in broken["links"]} == {
        f"[[nowhere-{index}]]" for index in range(NOTES) if index % BROKEN_EVERY == 0
    }
    expected_tags = {f"fm{k}": count(lambda index, k=k: index % 10 == k) for k in range(10)}
    expected_tags |= {f"topic{k}": count(lambda index, k=k: index % 7 == k) for k in range(7)}
    assert {row["tag"]: row["notes"] for row in tags["tags"]} == expected_tags
    assert active["matches"] == count(lambda index: index % 2 == 0)
    assert [note["path"] for note in active["notes"]] == [note_path(NOTES - 1 - 2 * n) for n in range(3)]
    assert tasks["total"] == NOTES  # one open task in each note, none in the hubs

    async with session_on(big_vault, **options) as restarted:  # on what the first server left on disk
        again = [await whole(restarted, tool, arguments) for tool, arguments in CALLS]
    assert [text for text, _ in again] == [text for text, _ in answers]
