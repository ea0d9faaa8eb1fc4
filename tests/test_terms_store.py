"""The index of words on disk (``vault/terms_db.py``), by itself: its counts are ``str.count``'s, two processes
adding at once leave it sound and right, a prune spares what is newer than its listing and tells other
processes, and a note of too many distinct words keeps none (issue 29)."""

from __future__ import annotations

import hashlib
import multiprocessing
import random
import threading
from pathlib import Path

import pytest

from teamvault_mcp.text.folding import fold
from teamvault_mcp.text.noteindex import FACTS_VERSION
from teamvault_mcp.text.terms import WORD, WORDS_PER_NOTE_MAX
from teamvault_mcp.vault.index_db import IndexStore

SYLLABLES = ["bud", "get", "re", "view", "ca", "fé", "ё", "лка", "x", "q3", "_", "straße", "日本", "e"]


def texts(seed: int, count: int) -> dict[str, str]:
    """``count`` folded texts by content hash, of words made of syllables (so words hold one another)."""
    rng = random.Random(seed)
    found = {}
    for _ in range(count):
        words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 30))]
        separators = [rng.choice([" ", "\n", "-", ", ", ".", " (", "] "]) for _ in words]
        raw = "".join(word + separator for word, separator in zip(words, separators, strict=True))
        found[hashlib.sha256(raw.encode()).hexdigest()] = fold(raw)
    return found


def expected_counts(contents: dict[str, str], rows: dict[str, int], term: str) -> dict[int, int]:
    return {rows[h]: text.count(term) for h, text in contents.items() if text.count(term)}


@pytest.mark.parametrize("fts", [True, False])
def test_every_count_is_what_str_count_finds(tmp_path: Path, fts: bool) -> None:
    store = IndexStore(tmp_path / "ns", FACTS_VERSION)
    contents = texts(7, 120)
    items = list(contents.items())
    store.terms.add(items[:50])
    store.terms.add(items[40:])  # some twice: added once
    assert store.has_fts  # this build has FTS5 (test_index_store checks the probe)
    store.has_fts = fts  # without it, the words holding a term are found by a scan: the same counts
    rows = {h: text.id for h, text in store.terms.texts(list(contents)).items()}
    assert len(rows) == len(contents) == len(set(rows.values()))
    terms = {word for text in contents.values() for word in WORD.findall(text)}
    terms |= {word[i : i + n] for word in list(terms)[:40] for i in range(len(word)) for n in (1, 2, 3, 5)}
    for term in sorted(t for t in terms if WORD.fullmatch(t)):
        assert store.terms.occurrences(term) == expected_counts(contents, rows, term), term
    assert store.terms.occurrences("zzz") == {}


def _add_many(directory: str, seed: int) -> None:
    """A second writer: the same texts as the others (and some of its own), added in small batches."""
    store = IndexStore(Path(directory), FACTS_VERSION)
    items = list(texts(1, 150).items()) + list(texts(seed, 50).items())
    random.Random(seed).shuffle(items)
    for start in range(0, len(items), 7):
        store.terms.add(items[start : start + 7])
    store.close()


def test_two_processes_adding_at_once_leave_the_index_sound_and_right(tmp_path: Path) -> None:
    directory = tmp_path / "ns"
    child = multiprocessing.get_context("spawn").Process(target=_add_many, args=(str(directory), 100))
    child.start()
    errors: list[BaseException] = []

    def thread_adds(seed: int) -> None:
        try:
            _add_many(str(directory), seed)
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=thread_adds, args=(seed,)) for seed in (200, 300)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    child.join(timeout=120)
    assert child.exitcode == 0 and not errors
    store = IndexStore(directory, FACTS_VERSION)
    assert store.integrity() == "ok" and store.rebuilt == 0
    contents = texts(1, 150) | texts(100, 50) | texts(200, 50) | texts(300, 50)
    rows = {h: text.id for h, text in store.terms.texts(list(contents)).items()}
    assert len(rows) == len(contents)  # each once
    for term in ("bud", "budget", "view", "e", "лка", "q3", "日本"):
        assert store.terms.occurrences(term) == expected_counts(contents, rows, term), term


def test_a_prune_spares_what_is_newer_than_its_listing_and_other_processes_see_it(tmp_path: Path) -> None:
    one = IndexStore(tmp_path / "ns", FACTS_VERSION)
    other = IndexStore(tmp_path / "ns", FACTS_VERSION)  # another process on the same file
    contents = texts(3, 40)
    items = list(contents.items())
    one.terms.add(items[:30])
    up_to = one.terms.last_row()  # read before the listing
    other.terms.add(items[30:])  # a newer note, indexed meanwhile by the other process
    assert len(other.terms.texts(list(contents))) == 40  # its map of contents is read now
    live = {h for h, _ in items[:5]}  # the listing: only 5 of the first 30 are still notes
    assert one.terms.prune(live, up_to) == 25
    left = other.terms.texts(list(contents))
    assert set(left) == live | {h for h, _ in items[30:]}  # the other process reads the map again
    rows = {h: text.id for h, text in left.items()}
    kept = {h: contents[h] for h in left}
    assert other.terms.occurrences("bud") == expected_counts(kept, rows, "bud")
    assert one.terms.prune(live, up_to) == 0  # nothing more of its listing's age


def test_a_prune_waits_until_a_quarter_is_dead(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "ns", FACTS_VERSION)
    items = list(texts(4, 20).items())
    store.terms.add(items)
    assert store.terms.prune({h for h, _ in items[5:]}, store.terms.last_row()) == 0  # 5 of 20: not yet
    assert store.terms.prune({h for h, _ in items[6:]}, store.terms.last_row()) == 6


def test_a_note_of_too_many_distinct_words_keeps_none(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "ns", FACTS_VERSION)
    many = " ".join(f"w{n}" for n in range(WORDS_PER_NOTE_MAX + 1)) + " budget"
    few = "budget review"
    store.terms.add([("many", many), ("few", few)])
    found = store.terms.texts(["many", "few"])
    assert (found["many"].kept, found["few"].kept) == (False, True)
    assert found["many"].chars == len(many)
    assert store.terms.occurrences("budget") == {found["few"].id: 1}  # the other is counted in its text
