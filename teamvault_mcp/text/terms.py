"""The words of a note's folded text, as the search index on disk keeps them; and which query terms it can count.

A *word* is a run of word characters (``\\w+``, as :func:`~teamvault_mcp.text.search.vocabulary`
counts them). A query term made of word characters only (``budget``, ``q3``) lies inside one
word wherever it occurs, so its occurrences in a note are the sum, over the note's words that
hold it, of how often each word occurs times how often it holds the term: exactly what
``str.count`` finds in the whole text. Such a term is *counted* from the index alone. Any other
term (``e-mail``, a phrase) is *checked*: only the notes holding each of its word parts can
hold it, and those are counted in their text. No I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

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
