"""The resolved links on disk (``text/linkdb.py`` in the project's ``index.sqlite``): a restart resolves nothing
and answers the same, a file that comes after a restart resolves only the links to its name again, two processes
on one file leave it sound and right, and paths no UTF-8 encoder takes survive the trip.

What the graph answers is ``test_graph.py``'s and ``test_incremental_resolution.py``'s (both run on the in-memory
table); here, what the file adds.
"""

from __future__ import annotations

import multiprocessing
import random
from pathlib import Path

import pytest
from support import seeding
from support.sessions import session_on
from test_incremental_resolution import links_of, random_path, seen, vault_step

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.text import linkdb
from teamvault_mcp.text.noteindex import FACTS_VERSION, LinkFact, NoteIndex
from teamvault_mcp.vault.index_db import IndexStore

pytestmark = pytest.mark.anyio

NOTES = {
    "people/ada.md": "# Ada\n\nWorks with [[grace]] and [[nobody]].\n",
    "people/grace.md": "# Grace\n\nSee [[ada]], [[people/ada#Ada|her]] and [[nobody]].\n",
    "plan.md": "# Plan\n\nOwner: [Ada](people/ada.md), [[elsewhere]].\n",
}


@pytest.fixture
def seeded(tmp_path: Path):
    with LocalVault(tmp_path / "vault") as vault:
        for path, text in NOTES.items():
            seeding.seed(vault, path, text)
        yield vault


async def graph_answers(vault: LocalVault, cache: Path) -> tuple[tuple[str, ...], int]:
    async with session_on(vault, cache_dir=cache) as session:
        answers = (
            await session.ok_text("note_links", path="people/ada.md"),
            await session.ok_text("broken_links"),
            await session.ok_text("note_links", path="plan.md", direction="in"),
        )
        return answers, session.runner.workspace.note_index.resolved


async def test_a_restart_resolves_no_link_and_answers_the_same(seeded: LocalVault, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before, resolved = await graph_answers(seeded, cache)
    assert resolved == 7 and "3 broken links" in before[1]
    after, resolved = await graph_answers(seeded, cache)
    assert (after, resolved) == (before, 0)


async def test_a_file_that_came_while_the_server_was_down_resolves_only_the_links_to_its_name(
    seeded: LocalVault, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    await graph_answers(seeded, cache)
    seeding.seed(seeded, "nobody.md", "# Nobody\n")
    answers, resolved = await graph_answers(seeded, cache)
    assert "1 broken link in 1 note" in answers[1] and "[[elsewhere]]" in answers[1]
    assert resolved == 5  # ada's 2 links and grace's 3: the notes that name "nobody"; plan's are kept as they were


def test_lone_surrogates_and_odd_characters_in_paths_survive_the_file(tmp_path: Path) -> None:
    odd = ["a\udc80b.md", "日本/ノート.md", "x y/%20#?.md", "e\u0301.md", "z.md"]
    notes = {
        path: (f"h{n}", (LinkFact(odd[(n + 1) % len(odd)][:-3], False, 1, "[[x]]", 1),)) for n, path in enumerate(odd)
    }
    store = IndexStore(tmp_path / "ns", FACTS_VERSION)
    on_disk = NoteIndex(stores=lambda project: store).graph("p", odd, notes)
    in_memory = NoteIndex().graph("p", odd, notes)
    assert seen(on_disk, sorted(notes)) == seen(in_memory, sorted(notes))
    assert [backlink.source for backlink in on_disk.incoming("日本/ノート.md")] == ["a\udc80b.md"]
    again = NoteIndex(stores=lambda project: IndexStore(tmp_path / "ns", FACTS_VERSION))
    assert seen(again.graph("p", odd, notes), sorted(notes)) == seen(in_memory, sorted(notes))
    assert again.resolved == 0


def test_a_store_that_fails_under_a_call_is_asked_once_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = IndexStore(tmp_path / "ns", FACTS_VERSION)
    index = NoteIndex(stores=lambda project: store)
    notes = {"a.md": ("h1", (LinkFact("b", False, 1, "[[b]]", 1),)), "b.md": ("h2", ())}
    failures = [linkdb.LinksUnavailable("disk I/O error")]
    real = linkdb.LinkTable.hashes

    def failing_once(table: linkdb.LinkTable) -> dict[str, tuple[str, int]]:
        if failures:
            raise failures.pop()
        return real(table)

    monkeypatch.setattr(linkdb.LinkTable, "hashes", failing_once)
    graph = index.graph("p", ["a.md", "b.md"], notes)
    assert [backlink.source for backlink in graph.incoming("b.md")] == ["a.md"] and not failures
    failures += [linkdb.LinksUnavailable("1"), linkdb.LinksUnavailable("2")]
    with pytest.raises(linkdb.LinksUnavailable):
        index.graph("p", ["a.md", "b.md", "c.md"], notes)


def _notes(rng: random.Random, seed: int, paths: set[str], links: dict[str, tuple[str, tuple[LinkFact, ...]]]) -> dict:
    """The notes among ``paths`` with their (content hash, links): a content of its own in each walk (``seed``)."""
    return {
        path: links.setdefault(path, (f"hash-{seed}-{path}", links_of(rng)))
        for path in sorted(paths)
        if path.endswith(".md")
    }


def _walk(directory: str, seed: int, steps: int) -> None:
    """A process's random walk over a vault of its own, on the shared file, reading each step's graph."""
    rng = random.Random(seed)
    paths: set[str] = {random_path(rng) for _ in range(30)}
    links: dict[str, tuple[str, tuple[LinkFact, ...]]] = {}
    index = NoteIndex(stores=lambda project: IndexStore(Path(directory), FACTS_VERSION))
    for _ in range(steps):  # each process's paths differ from the other's: every step changes the file's
        vault_step(rng, paths, links, f"hash-{rng.random()}")
        notes = _notes(rng, seed, paths, links)
        graph = index.graph("p", paths, notes)
        seen(graph, sorted(notes))


def test_two_processes_resolving_on_one_file_leave_it_sound_and_right(tmp_path: Path) -> None:
    directory = tmp_path / "ns"
    child = multiprocessing.get_context("spawn").Process(target=_walk, args=(str(directory), 1, 60))
    child.start()
    _walk(str(directory), 2, 60)
    child.join(timeout=120)
    assert child.exitcode == 0
    store = IndexStore(directory, FACTS_VERSION)
    assert store.integrity() == "ok" and store.rebuilt == 0
    rng = random.Random(3)
    paths = {random_path(rng) for _ in range(30)}
    notes = _notes(rng, 3, paths, {})
    graph = NoteIndex(stores=lambda project: store).graph("p", paths, notes)
    assert seen(graph, sorted(notes)) == seen(NoteIndex().graph("p", paths, notes), sorted(notes))


def test_links_resolved_against_paths_another_process_replaced_meanwhile_are_not_written(tmp_path: Path) -> None:
    notes = {
        f"n{number:04d}.md": (f"h{number}", (LinkFact("target", False, 1, "[[target]]", 1),)) for number in range(400)
    }
    before, after = set(notes), {*notes, "target.md"}
    first = NoteIndex(stores=lambda project: IndexStore(tmp_path / "ns", FACTS_VERSION))
    second = NoteIndex(stores=lambda project: IndexStore(tmp_path / "ns", FACTS_VERSION))

    def other_process_lists_the_new_file() -> bool:  # between two of the first one's batches
        second.graph("p", after, {**notes, "target.md": ("ht", ())})
        return False

    stale = first.graph("p", before, notes, stop=other_process_lists_the_new_file)
    assert len(stale) < len(notes)  # its batches after the change were refused
    graph = second.graph("p", after, {**notes, "target.md": ("ht", ())})
    assert graph.broken() == [] and len(graph.incoming("target.md")) == len(notes)


def test_what_was_read_of_a_file_made_again_since_is_not_trusted(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "ns", FACTS_VERSION)
    index = NoteIndex(stores=lambda project: store)
    notes = {"a.md": ("h1", (LinkFact("b", False, 1, "[[b]]", 1),)), "b.md": ("h2", ())}
    index.graph("p", notes, notes)
    known = index.link_hashes("p", notes)
    assert set(known) == set(notes)
    with store.session():
        store._discard()  # what a corrupt page found by another call does
    graph = index.graph("p", notes, {}, unchanged=list(notes), known=known)
    assert len(graph) == 0 and graph.incoming("b.md") == []  # the notes are to be read and resolved again
    again = index.graph("p", notes, notes)
    assert [backlink.source for backlink in again.incoming("b.md")] == ["a.md"]


async def test_broken_links_work_out_new_closest_hints_for_a_second_and_then_only_reuse_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At 100,000 files each new hint is a walk of every name (0.2 s): 50 broken links shown took 9 s.
    from support.fakes import FakeClock

    from teamvault_mcp.text import resolution

    clock = FakeClock()
    real = resolution._closest

    def slow_closest(*args: object) -> str | None:
        clock.advance(0.6)  # the call's budget sees this much spent on each new name
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(resolution, "_closest", slow_closest)
    with LocalVault(tmp_path / "vault") as vault:
        for name in ("alpha", "bravo", "charlie"):
            seeding.seed(vault, f"{name}.md", f"# {name}\n")
        seeding.seed(vault, "links.md", "[[alphaa]]\n[[bravoo]]\n[[charliee]]\n")
        cache = tmp_path / "cache"
        async with session_on(vault, clock=clock, cache_dir=cache, structured_content=True) as session:
            text, _, data = await session.call("broken_links")
            assert text.splitlines()[1:4] == [
                "links.md:1  [[alphaa]]  → closest: alpha.md",
                "links.md:2  [[bravoo]]  → closest: bravo.md",
                "links.md:3  [[charliee]]",  # past the second: no new walk
            ]
            said = "[1 link shown without a closest note: not worked out in this call's time. Calling again adds them.]"
            assert said in text.splitlines() and said in data["notices"]  # both halves say so
            assert [row["closest"] for row in data["links"]] == ["alpha.md", "bravo.md", None]
            again = await session.ok("broken_links")
            assert [row["closest"] for row in again["links"]] == ["alpha.md", "bravo.md", "charlie.md"]
            assert not any("without a closest note" in notice for notice in again.get("notices", []))


def test_every_lookup_of_a_graph_is_led_by_an_index_not_a_walk_of_the_table() -> None:
    # The ambiguous links' query walked every path and every link (63 ms for none at 20,000 notes) until the
    # links were put first. Each query a graph's answers run is planned from an index, whatever the vault's size.
    memory = linkdb.MemoryLinks()
    table = linkdb.LinkTable(memory)
    index = NoteIndex()
    index._memory_links["p"] = table
    notes = {f"n{k}.md": (f"h{k}", (LinkFact(f"n{k + 1}", False, 1, "[[x]]", 1),)) for k in range(50)}
    graph = index.graph("p", [*notes, "a/n3.md"], notes)
    statements: list[str] = []
    with memory.session() as connection:
        assert connection is not None
        connection.set_trace_callback(statements.append)
    graph.outgoing("n1.md"), graph.incoming("n2.md"), graph.broken(), graph.ambiguous(), graph.named(["n3"])
    with memory.session() as connection:
        assert connection is not None
        connection.set_trace_callback(None)
        plans = {sql: [row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}")] for sql in statements}
    assert len(plans) == 5
    for sql, plan in plans.items():
        walks = [step for step in plan if step.startswith("SCAN") and "USING INDEX links_ambiguous" not in step]
        assert walks == [], sql


def test_a_store_that_cannot_be_opened_keeps_the_links_in_memory(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where the index's folder would be\n")
    store = IndexStore(tmp_path / "taken" / "ns", FACTS_VERSION)
    index = NoteIndex(stores=lambda project: store)
    notes = {"a.md": ("h1", (LinkFact("b", False, 1, "[[b]]", 1),)), "b.md": ("h2", ())}
    graph = index.graph("p", notes, notes)
    assert [backlink.source for backlink in graph.incoming("b.md")] == ["a.md"]
    assert index.graph("p", notes, notes) is graph and index.resolved == 1  # kept, not resolved again
    assert store.integrity() == "off"
