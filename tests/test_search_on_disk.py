"""search_notes counted on the index on disk answers exactly what the search in memory answers (issue 29).

Random vaults (3 seeds) of notes made of a small vocabulary with case, accents, other scripts, words with
inner punctuation and words that hold other words (``budget`` in ``budgetary``), paths that name words, two
notes of one text, front matter ``status``, and notes of many distinct words (more than the index keeps of a
note, the bound lowered for the test: they are counted in their text). Each query — words, parts of words, a
single letter, a word with a hyphen, a phrase, a typo, under a prefix or not — is asked of a server without a
cache directory (everything in memory: the reference) and of servers on one cache directory: the first, whose
search gathers the notes (counted in memory) and indexes them; the same again (now counted on disk); and a
second server on that directory (a restart: all on disk, nothing in memory). Every answer — text and
structured — is the same. No warm-up (``prefetch=False``): the searches index what they gather.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from support.seeding import seed
from support.sessions import session_on

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.text import terms
from teamvault_mcp.tools import search
from teamvault_mcp.tools.search_scoring import count_on_disk

pytestmark = pytest.mark.anyio

VOCABULARY = [
    *("budget", "Budget", "budgetary", "review", "reviews", "preview", "Café", "cafe", "CAFÉ", "straße"),
    *("Ёлка", "ёлка", "e-mail", "email", "mail", "q3", "Q3", "plan", "plans", "x", "naïve", "über"),
    *("budget,", "(review)", "[[plan]]", "#budget/q3", "a.b", "über-plan", "日本語", "ok"),
]
FOLDERS = ["", "plans/", "Café/", "reviews/"]
QUERIES: list[dict[str, Any]] = [
    {"query": "budget review"},
    {"query": "budget"},
    {"query": "bud"},
    {"query": "e"},
    {"query": "cafe"},
    {"query": "ЁЛКА plan"},
    {"query": "e-mail"},
    {"query": "über-plan review"},
    {"query": "a.b"},
    {"query": "q3 budget review", "limit": 5},
    {"query": "review", "limit": 200},
    {"query": "plan", "prefix": "plans/"},
    {"query": "budget review", "mode": "phrase"},
    {"query": "review budget", "mode": "phrase"},
    {"query": "budgte"},
    {"query": "zzzz budget"},
    {"query": "日本"},
    {"query": "reviews", "prefix": "Café/"},
]


def note(rng: random.Random, many: bool) -> str:
    lines = ["---", f"status: {rng.choice(['active', 'superseded', 'draft'])}", "---"] if rng.random() < 0.5 else []
    for _ in range(rng.randint(1, 8)):
        start = "## " if rng.random() < 0.2 else ""
        lines.append(start + " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(1, 9))))
    if many:  # more distinct words than the index keeps of one note
        lines.append(" ".join(f"w{rng.randint(0, 10**6)}" for _ in range(40)) + " budget review")
    return "\n".join(lines) + "\n"


def make_vault(vault: LocalVault, seed_number: int) -> None:
    rng = random.Random(seed_number)
    texts = []
    for index in range(40):
        text = note(rng, many=index % 9 == 0)
        if index % 13 == 5 and texts:
            text = texts[-1]  # two notes of one text
        texts.append(text)
        name = rng.choice(["note", "budget", "review", "cafe", "plan"]) + f"-{index}"
        seed(vault, f"{rng.choice(FOLDERS)}{name}.md", text)
    seed(vault, "plans/notes.txt", "a plain text: budget review e-mail\n")


async def answers(vault: LocalVault, **options: Any) -> list[tuple[str, Any]]:
    found = []
    async with session_on(vault, prefetch=False, structured_content=True, **options) as session:
        for query in QUERIES:
            text, is_error, data = await session.call("search_notes", **query)
            assert not is_error, text
            found.append((text, data))
    return found


@pytest.mark.parametrize("seed_number", [1, 2, 3])
async def test_counted_on_disk_the_answers_are_those_of_memory(
    tmp_path: Path, seed_number: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(terms, "WORDS_PER_NOTE_MAX", 30)
    on_disk: list[int] = []  # how many notes each search counted on disk

    def counting(ctx: Any, matcher: Any, notes: Any, texts: Any, deadline: Any) -> Any:
        on_disk.append(len(notes.notes))
        return count_on_disk(ctx, matcher, notes, texts, deadline)

    monkeypatch.setattr(search, "count_on_disk", counting)
    with LocalVault(tmp_path / "vault") as vault:
        make_vault(vault, seed_number)
        in_memory = await answers(vault, cache_dir=None)
        assert on_disk == []
        cache = tmp_path / "cache"
        async with session_on(vault, prefetch=False, structured_content=True, cache_dir=cache) as session:
            for round_number in range(2):  # gathered and indexed, then counted on disk
                for query, (text, data) in zip(QUERIES, in_memory, strict=True):
                    got_text, is_error, got = await session.call("search_notes", **query)
                    assert not is_error, got_text
                    assert (got_text, got) == (text, data), (round_number, query)
        assert on_disk[0] == 0 and on_disk[-1] > 0
        restarted = await answers(vault, cache_dir=cache)
    for query, mine, theirs in zip(QUERIES, restarted, in_memory, strict=True):
        assert mine == theirs, query
    phrase = QUERIES.index({"query": "budget review", "mode": "phrase"})
    assert on_disk[-len(QUERIES) + phrase] == in_memory[phrase][1]["notesSearched"]  # every note, after a restart
    assert any(data["totalNotes"] > 1 for _, data in in_memory)  # the queries find things
    assert any("correctedQuery" in data for _, data in in_memory)
