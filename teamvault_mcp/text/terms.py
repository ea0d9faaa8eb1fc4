"""The words of a note's folded text, as the search index on disk keeps them; and which query terms it can count.

A *word* is a run of word characters (``\\w+``, as :func:`vocabulary` counts them for close words: the
vault's words nearest one no note holds, ``failovr`` → ``failover``, also here). A query term made of word
characters only (``budget``, ``q3``) lies inside one word wherever it occurs, so its occurrences in a note
are the sum, over the note's words that hold it, of how often each word occurs times how often it holds the
term: exactly what ``str.count`` finds in the whole text. Such a term is *counted* from the index alone. Any
other term (``e-mail``, a phrase) is *checked*: only the notes holding each of its word parts can hold it,
and those are counted in their text. No I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from teamvault_mcp.text.deadlines import Deadline

if TYPE_CHECKING:
    from teamvault_mcp.text.search import Indexed

#: What a word is: the same pattern the vocabulary of close words counts.
WORD = re.compile(r"\w+")
#: A note with more distinct words than this keeps none in the index: it is counted in its text at each search
#: (a note of 100,000 distinct words would otherwise be 100,000 rows).
WORDS_PER_NOTE_MAX = 20_000


def words_of_text(folded: str) -> Counter[str] | None:
    """How often each word occurs in a folded text; None when it has more than :data:`WORDS_PER_NOTE_MAX`."""
    words = Counter(WORD.findall(folded))
    return words if len(words) <= WORDS_PER_NOTE_MAX else None


@dataclass(frozen=True)
class Term:
    """One query term as the index sees it: counted from the words alone (``parts`` is the term itself), or
    checked in the text of the notes that hold every one of ``parts`` (none: every note must be read)."""

    text: str
    counted: bool
    parts: tuple[str, ...]

    @classmethod
    def of(cls, term: str) -> Term:
        if WORD.fullmatch(term):
            return cls(term, True, (term,))
        return cls(term, False, tuple(dict.fromkeys(WORD.findall(term))))


# -- close words: the vault's words nearest a word no note holds ---------------------------------------

#: Close words are looked for among words of this many letters or more (shorter ones have too many neighbours).
CLOSE_WORD_MIN = 4


def vocabulary(entries: Iterable[Indexed], deadline: Deadline | None = None) -> Counter[str]:
    """How many of ``entries`` hold each word; stops counting at ``deadline``."""
    counts: Counter[str] = Counter()
    for entry in entries:
        if deadline is not None and deadline.passed():
            break
        counts.update(frozenset(WORD.findall(entry.folded)))
    return counts


def close_words(word: str, counts: Counter[str], limit: int = 3) -> list[tuple[str, int]]:
    """The vault's words closest to ``word`` (a folded query word that no note holds), with how many notes
    hold each: at most 1 edit away for words of up to 7 letters, 2 for longer ones; nearest first, then the
    most used."""
    if len(word) < CLOSE_WORD_MIN:
        return []
    most = 1 if len(word) <= 7 else 2
    found = []
    for other, notes in counts.items():
        if abs(len(other) - len(word)) > most or other == word:
            continue
        if other[0] != word[0] and other[1:2] != word[1:2]:
            continue  # a typo seldom changes both of the first two letters: most of the vocabulary goes here
        distance = _edits(word, other, most)
        if distance <= most:
            found.append((distance, -notes, other))
    return [(other, -notes) for _, notes, other in sorted(found)[:limit]]


def _edits(one: str, other: str, most: int) -> int:
    """The edit distance (insert, delete, substitute, swap two neighbours) of two words, or ``most + 1`` once
    it is clearly more than ``most``."""
    previous2: list[int] | None = None
    previous = list(range(len(other) + 1))
    for i, char in enumerate(one, start=1):
        current = [i] + [0] * len(other)
        for j, other_char in enumerate(other, start=1):
            cost = 0 if char == other_char else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if previous2 is not None and i > 1 and j > 1 and char == other[j - 2] and one[i - 2] == other_char:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > most:
            return most + 1
        previous2, previous = previous, current
    return previous[-1]
