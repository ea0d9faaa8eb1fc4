"""Finding notes by path or name, forgiving typos and missing letters (``find_notes``). No I/O.

A path is folded as searched text is (case and accents ignored, ``folding.py``) and
compared by name, by the words of its folders, by letter triples, by the query's letters
in order, and by edits: a query word a letter or two off a path word (a letter added, dropped,
changed, or two neighbours swapped: ``grcae`` for ``grace`` is one edit, the optimal string
alignment distance); each path's key is computed once per process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from teamvault_mcp.text.folding import fold


@dataclass(frozen=True, slots=True)
class PathKey:
    """A path as the sieve of :func:`find_paths` compares it, kept per path: every path is looked at on every call."""

    folded: str  # the whole path, folded
    name: str  # the file name without its extension, folded
    mask: int  # every word's trigrams as bits (see _bits): a quick first sieve


@dataclass(frozen=True)
class _Spelling:
    """A path's spelling as the detailed comparison reads it: made for the few candidates only, never kept (the
    trigram sets of 100,000 paths took 500 MB)."""

    compact: str  # the path folded, without separators
    trigrams: frozenset[str]  # of the name
    word_trigrams: tuple[frozenset[str], ...]  # of each word of the path (folders and name)
    words: tuple[str, ...]  # the words of the path (folders and name), folded


_PATH_KEYS: dict[str, PathKey] = {}  # computed once per path; see find_paths for the bound


def path_key(path: str) -> PathKey:
    """The key of ``path``, made once per path (the memo is bounded by :func:`find_paths`)."""
    key = _PATH_KEYS.get(path)
    if key is None:
        key = _PATH_KEYS[path] = _make_path_key(path)
    return key


def _make_path_key(path: str) -> PathKey:
    folded = fold(path)
    name = folded.rsplit("/", 1)[-1]
    name = name.rsplit(".", 1)[0] if "." in name[1:] else name
    return PathKey(folded, name, _bits(frozenset().union(*_spelling_of(folded).word_trigrams)))


def _spelling_of(folded: str) -> _Spelling:
    name = folded.rsplit("/", 1)[-1]
    name = name.rsplit(".", 1)[0] if "." in name[1:] else name
    words = [word for word in _SEPARATORS.split(folded.rsplit(".", 1)[0]) if word]
    return _Spelling(_compact(folded), _trigrams(name), tuple(_trigrams(word) for word in words), tuple(words))


_TRIGRAM_BITS: dict[str, int] = {}  # each trigram ever seen gets a bit: shared trigrams become `a & b`


def _bits(trigrams: frozenset[str]) -> int:
    mask = 0
    for gram in trigrams:
        bit = _TRIGRAM_BITS.get(gram)
        if bit is None:
            bit = _TRIGRAM_BITS[gram] = len(_TRIGRAM_BITS)
        mask |= 1 << bit
    return mask


_SEPARATORS = re.compile(r"[\s_\-./]+")


def _compact(text: str) -> str:
    return _SEPARATORS.sub("", text)


def _trigrams(text: str) -> frozenset[str]:
    padded = f"  {_compact(text)} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


#: Paths whose spelling is compared in detail, after the quick sieve by shared letter triples.
FUZZY_CANDIDATES = 300


def find_paths(query: str, paths: list[str], limit: int) -> list[tuple[str, float]]:
    """Paths ranked by how well they answer ``query``: exact and partial names first, then typos."""
    if len(_PATH_KEYS) > 200_000:  # a process that has seen very many paths starts its memo afresh
        _PATH_KEYS.clear()
        _TRIGRAM_BITS.clear()
    wanted = " ".join(fold(query).split())
    compact = _compact(wanted)
    if not compact:
        return []
    words = wanted.split()
    grams = _trigrams(wanted)
    word_grams = [_trigrams(word) for word in words]
    every_gram = _bits(frozenset().union(*word_grams))
    scored: list[tuple[float, str]] = []
    fuzzy: list[tuple[int, str]] = []
    keys = _PATH_KEYS
    for path in paths:  # the hot loop of find_notes: plain statements, no calls where a lookup will do
        key = keys.get(path) or path_key(path)
        if wanted in key.name:
            scored.append((100 - min(20, len(key.name) - len(wanted)), path))
        elif wanted in key.folded:
            scored.append((85 - min(20, len(key.folded) - len(wanted)) / 2, path))
        else:
            for word in words:
                if word not in key.folded:
                    fuzzy.append(((every_gram & key.mask).bit_count(), path))
                    break
            else:
                scored.append((75.0, path))
    fuzzy.sort(key=lambda pair: -pair[0])
    for _, path in fuzzy[:FUZZY_CANDIDATES]:  # spelling compared in detail only for the likeliest
        spelling = _spelling_of(path_key(path).folded)
        typos = sum(max((_dice(w, t) for t in spelling.word_trigrams), default=0.0) for w in word_grams) / len(words)
        edits = sum(max((_edit_likeness(w, t) for t in spelling.words), default=0.0) for w in words) / len(words)
        score = max(
            _subsequence(compact, spelling.compact), 70 * _dice(grams, spelling.trigrams), 70 * typos, 70 * edits
        )
        if score >= 30:
            scored.append((score, path))
    scored.sort(key=lambda pair: (-pair[0], len(pair[1]), pair[1]))
    return [(path, round(score, 1)) for score, path in scored[:limit]]


def _subsequence(wanted: str, text: str) -> float:
    """50–65 when the letters of ``wanted`` occur in order in ``text`` (tighter is better), else 0."""
    position = start = -1
    for index, char in enumerate(wanted):
        position = text.find(char, position + 1)
        if position < 0:
            return 0.0
        if index == 0:
            start = position
    span = position - start + 1
    return 50 + 15 * len(wanted) / span


def _dice(one: frozenset[str], other: frozenset[str]) -> float:
    return 2 * len(one & other) / (len(one) + len(other)) if one and other else 0.0


def _edit_likeness(word: str, other: str) -> float:
    """1 less the share of the two words' letters an edit touches, when they are at most an edit apart (two from
    5 letters: ``gacre`` is two swaps from ``grace``); 0 otherwise and for words under 4 letters, where one edit
    makes another word. At one distance the longer word is likelier (``rgace``: ``grace`` before ``race``)."""
    if len(word) < 4:
        return 0.0
    allowed = 1 if len(word) < 5 else 2
    if abs(len(word) - len(other)) > allowed:
        return 0.0
    distance = edit_distance(word, other, allowed)
    return 1 - 2 * distance / (len(word) + len(other)) if distance <= allowed else 0.0


def edit_distance(one: str, other: str, limit: int) -> int:
    """The optimal string alignment distance (insert, delete, substitute, swap two neighbours: one edit each),
    or ``limit + 1`` once it must exceed ``limit``."""
    if one == other:
        return 0
    before: list[int] = []
    previous = list(range(len(other) + 1))
    for i, char in enumerate(one, 1):
        current = [i] + [0] * len(other)
        for j, theirs in enumerate(other, 1):
            cost = char != theirs
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char == other[j - 2] and one[i - 2] == theirs:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return min(previous[-1], limit + 1)
