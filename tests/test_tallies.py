"""list_tags, list_tasks and query_notes count from tallies kept between calls (``text/tally.py``), and the link
tools from a graph kept with a reused listing (``vault/listings.py``): the same answers as a server counting afresh,
whatever came, changed and went; an unchanged vault reads no note's facts again, and list_tasks reads only the
notes whose tasks it shows."""

from __future__ import annotations

import gc
import random
import weakref
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client
from support.fakes import FakeClock
from support.seeding import deletes_as, put
from support.sessions import open_session, runner_on

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.text.noteindex import FactsIndex
from teamvault_mcp.text.tally import TagShare, TagTally, TaskShare

pytestmark = pytest.mark.anyio

TAGS = ["Plan", "plan", "area/eng", "area/Ops", "Área", "x/y/z", "2024", "ops"]
STATUSES = [" ", "x", "-", "/"]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_tags", {}),
    ("list_tags", {"prefix": "a/"}),
    ("list_tags", {"tag": "area"}),
    ("list_tags", {"tag": "#PLAN", "prefix": "b"}),
    ("list_tasks", {"limit": 7}),
    ("list_tasks", {"status": "done", "limit": 3}),
    ("list_tasks", {"status": "all", "prefix": "b/"}),
    ("query_notes", {"where": {"status": "open"}}),
    ("query_notes", {"where": {"due": {"gte": "2024-03-01"}}, "sort": ["-due", "status"], "fields": ["tags"]}),
    ("query_notes", {"where": {"tags": "area"}, "prefix": "b/", "sort": "status"}),
    ("note_links", {"path": "a/n0.md"}),
    ("note_links", {"path": "b/c/n1.md", "direction": "in"}),
    ("broken_links", {}),
    ("broken_links", {"prefix": "b/"}),
]
PATHS = [f"{folder}/n{number}.md" for folder in ("a", "b", "b/c") for number in range(4)]


def note_text(rng: random.Random) -> str:
    tags = rng.sample(TAGS, rng.randint(0, 3))
    fields = [f"tags: [{', '.join(tags[:1] + ['not a tag'] * rng.randint(0, 1))}]"] if tags else []
    fields += [f"status: {rng.choice(['open', 'Open', 'done'])}"] * (rng.random() < 0.6)
    fields += [f"due: 2024-0{rng.randint(1, 6)}-1{rng.randint(0, 9)}"] * (rng.random() < 0.6)
    fields += ["broken: [unclosed"] * (rng.random() < 0.1)
    front = "---\n" + "".join(field + "\n" for field in fields) + "---\n" if fields else ""
    inline = " ".join(f"#{tag}" for tag in tags[1:])
    links = " ".join(f"[[{rng.choice(PATHS)[:-3].rpartition('/')[2]}]]" for _ in range(rng.randint(0, 3)))
    tasks = "".join(f"- [{rng.choice(STATUSES)}] task {rng.randint(0, 99)}\n" for _ in range(rng.randint(0, 4)))
    return f"{front}# Note\n\nSome text {inline} {links} [[gone]]\n\n## Tasks\n{tasks}"


async def answers(runner: Any) -> list[tuple[str, bool, Any]]:
    """Every call of :data:`CALLS`, through one client (a handshake per call made this test a tenth of the suite)."""
    async with Client(build_server(runner), mode="legacy") as client:
        results = [await client.call_tool(tool, arguments) for tool, arguments in CALLS]
    return [(result.content[0].text, result.is_error, result.structured_content) for result in results]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("reused", [False, True], ids=["listed", "reused"])
async def test_a_kept_tally_answers_as_a_fresh_count_as_notes_come_change_and_go(
    vault: LocalVault, seed: int, reused: bool
) -> None:
    """``reused``: the kept server counts its vault as big and its clock stands still, so every call of a step
    answers from one listing, and what is worked out of it once (notes, paths, the link graph) is reused; the
    listing is forgotten when the vault changes, as the window's end or a write of its own would."""
    rng = random.Random(seed)
    paths = PATHS
    live: set[str] = set()
    kept = runner_on(vault, prefetch=False, structured_content=True, clock=FakeClock())
    if reused:
        kept.workspace.kept_listings.min_files = 1
    try:
        for step in range(8):
            kept.workspace.kept_listings.forget()
            for _ in range(rng.randint(1, 3)):
                path = rng.choice(paths)
                if path in live and rng.random() < 0.3:
                    deletes_as(vault, vault.store.owner_of(vault.project_id), path)
                    live.discard(path)
                else:
                    put(vault, path, note_text(rng))
                    live.add(path)
            fresh = runner_on(vault, prefetch=False, structured_content=True)
            try:
                said = await answers(kept)
                assert all(structured is not None for _, error, structured in said if not error)
                assert said == await answers(fresh), (seed, step)
                assert (await answers(kept)) == said  # asked again on the same listing
            finally:
                fresh.close()
    finally:
        kept.close()


async def test_an_unchanged_vault_reads_no_notes_facts_again(tmp_path: Path) -> None:
    async with open_session(tmp_path, prefetch=False) as session:
        for number in range(30):
            session.seed(f"n{number:02}.md", f"# N\n#t{number % 3} #all\n- [ ] task {number}\n- [x] done {number}\n")
        first = [await session.ok_text("list_tags"), await session.ok_text("list_tasks", limit=5)]
        index = session.runner.workspace.note_index
        index.facts = FactsIndex()  # memory forgets every note's facts (no store: the cache is off)
        again = [await session.ok_text("list_tags"), await session.ok_text("list_tasks", limit=5)]
        assert again == first
        assert index.facts.parsed == 5  # the five notes whose tasks are shown; no note's tags
        assert first[0].splitlines()[0] == "4 tags in 30 notes (of 30 notes; a nested tag counts at each level):"
        assert first[1].splitlines()[0] == "30 open tasks in 30 notes (of 30):"


async def test_a_note_changed_or_gone_is_counted_anew(tmp_path: Path) -> None:
    async with open_session(tmp_path, prefetch=False, structured_content=True) as session:
        session.seed("a.md", "#one\n- [ ] a\n")
        session.seed("b.md", "#one #two\n- [ ] b\n")
        assert (await session.ok("list_tags"))["tags"] == [{"tag": "one", "notes": 2}, {"tag": "two", "notes": 1}]
        session.colleague_writes("b.md", "#two\n- [x] b\n")
        assert (await session.ok("list_tags"))["tags"] == [{"tag": "one", "notes": 1}, {"tag": "two", "notes": 1}]
        deletes_as(session.vault, session.vault.store.owner_of(session.vault.project_id), "a.md")
        assert (await session.ok("list_tags"))["tags"] == [{"tag": "two", "notes": 1}]
        tasks = await session.ok("list_tasks", status="all")
        assert (tasks["total"], [task["path"] for task in tasks["tasks"]]) == (1, ["b.md"])
        tally = session.runner.workspace.note_index.tallies(session.vault.project_id)
        assert tally.tasks.shares() == {"b.md": TaskShare(0, 1, len(b"#two\n- [x] b\n"))}


def test_a_tally_brought_up_to_date_with_a_listing_stays_true_of_it_until_a_share_comes_or_goes() -> None:
    """A big vault's listing is reused for a moment: the calls in that moment skip the walk over it."""
    tally = TagTally()
    listing = Listing([SimpleNamespace(path="a.md", content_hash="h1")])
    assert tally.stale(listing) == listing
    tally.take("a.md", "h1", TagShare.of(None, 3))
    tally.checked(listing, None, 1)
    assert tally.still(listing, None) == 1
    assert tally.still(Listing(listing), None) is None  # another listing, even of the same files
    assert tally.still(list(listing), None) is None
    assert tally.still(listing, "a/") is None
    tally.take("a.md", "h2", TagShare.of(None, 4))  # the warm-up, say, with a listing of its own
    assert tally.still(listing, None) is None
    assert tally.stale(listing) == listing and len(tally) == 0  # h2 is not what this listing has


class Listing(list[Any]):
    """A listing as the client returns one (``VaultListing``): a list that can be referenced weakly."""

    __slots__ = ("__weakref__",)


def test_a_tally_keeps_no_listing_alive_and_a_plain_list_is_never_the_same_again() -> None:
    # Each tally held its last listing: at 20,000 notes five listings of 12 MB were alive where one was in use.
    tally = TagTally()
    listing = Listing([SimpleNamespace(path="a.md", content_hash="h1")])
    tally.take("a.md", "h1", TagShare.of(None, 3))
    tally.checked(listing, None, 1)
    gone = weakref.ref(listing)
    del listing
    gc.collect()
    assert gone() is None
    plain = [SimpleNamespace(path="a.md", content_hash="h1")]
    tally.checked(plain, None, 1)
    assert tally.still(plain, None) is None  # cannot be remembered weakly: walked again, never wrongly reused
