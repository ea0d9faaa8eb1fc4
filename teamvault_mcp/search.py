"""Search inside notes and over paths: matching, ranking, snippets, breadcrumbs. No I/O.

- ``text`` mode: every query word must be in the note (or its path); case and accents
  are ignored (``Ёлка`` finds ``ёлка``, ``cafe`` finds ``Café``). Lines holding more of
  the words, whole words, headings and notes whose path names the words rank higher.
- ``phrase`` mode: the words in this order, within one line.
- ``regex`` mode: a Python regular expression, matched line by line (the first
  1,000 characters of each), from a safe subset: no quantifier or alternation inside
  a quantified group (so nothing exponential), at most two unbounded quantifiers (so
  nothing worse than quadratic in a line), no backreferences.

The :class:`SearchIndex` keeps each note's folded text in memory, by content hash,
so a search repeated over an unchanged vault does no Unicode work at all.
"""

from __future__ import annotations

import math
import re
import re._constants as sre  # type: ignore[import-not-found]  # the stdlib regex parser (Python 3.11+),
import re._parser as sre_parse  # type: ignore[import-not-found]  # to vet a pattern before it runs
import threading
import time
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from teamvault_mcp.markdown import Document, Heading, parse, split_lines

SNIPPET_CHARS = 160
HITS_PER_NOTE = 3
MAX_REGEX_CHARS = 500
REGEX_LINE_CHARS = 1000
MAX_UNBOUNDED_QUANTIFIERS = 2
#: Text kept in memory for searching (raw + folded characters), least recently used first out.
INDEX_CHARS = 256 * 1024 * 1024


@cache
def _combining() -> dict[int, None]:
    """A translate table that drops combining marks (accents after NFKD). Built once, on first use."""
    return {cp: None for cp in range(0x30000) if unicodedata.combining(chr(cp))}


def fold(text: str) -> str:
    """The case- and accent-insensitive form of ``text``: NFKD, combining marks dropped, casefolded."""
    return unicodedata.normalize("NFKD", text).translate(_combining()).casefold()


def words_of(query: str) -> list[str]:
    """The folded words of a query, outer punctuation stripped (``"budget,"`` → ``budget``)."""
    words = [word.strip(".,;:!?\"'()[]{}<>") for word in fold(query).split()]
    return list(dict.fromkeys(word for word in words if word))


# -- the in-memory index ----------------------------------------------------------------------------


@dataclass
class Indexed:
    """One content, ready to search: its text and, computed when first needed, lines and outline."""

    raw: str
    folded: str
    _lines: list[str] | None = None
    _folded_lines: list[str] | None = None
    _outline: Document | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = [line.rstrip("\r\n") for line in split_lines(self.raw)]
        return self._lines

    @property
    def folded_lines(self) -> list[str]:
        if self._folded_lines is None:  # folding never adds or removes a line break: the lines align
            self._folded_lines = [line.rstrip("\r\n") for line in split_lines(self.folded)]
        return self._folded_lines

    @property
    def outline(self) -> Document:
        if self._outline is None:
            self._outline = parse(self.raw)
        return self._outline


class SearchIndex:
    """Folded note texts by content hash, bounded by total size; thread-safe."""

    def __init__(self, max_chars: int = INDEX_CHARS) -> None:
        self.max_chars = max_chars
        self._entries: OrderedDict[str, Indexed] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, content_hash: str) -> Indexed | None:
        with self._lock:
            entry = self._entries.get(content_hash)
            if entry is not None:
                self._entries.move_to_end(content_hash)
            return entry

    def add(self, content_hash: str, text: str) -> Indexed:
        entry = Indexed(text, fold(text))
        with self._lock:
            old = self._entries.pop(content_hash, None)
            if old is not None:
                self._chars -= len(old.raw) + len(old.folded)
            self._entries[content_hash] = entry
            self._chars += len(text) + len(entry.folded)
            while self._chars > self.max_chars and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self._chars -= len(dropped.raw) + len(dropped.folded)
        return entry


# -- searching notes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    snippet: str
    breadcrumb: str
    toc_path: tuple[str, ...]
    score: float

    def as_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "snippet": self.snippet,
            "breadcrumb": self.breadcrumb,
            "tocPath": list(self.toc_path),
            "score": round(self.score, 2),
        }


class TimeUp(Exception):
    """A search passed its deadline in the middle of a note."""


class UnsafeRegexError(ValueError):
    """A pattern outside the safe subset, or not a valid pattern at all; the message says which."""


@dataclass(frozen=True)
class LineMatch:
    """A matching line (0-based) and its score; a :class:`Hit` is made only for the lines shown."""

    index: int
    score: float


class Matcher:
    """One query: finds and scores the matching lines of a note, then makes hits of the best ones."""

    def __init__(self, query: str, mode: str) -> None:
        self.mode = mode
        self.words: list[str] = []
        self.phrase = ""
        self.pattern: re.Pattern[str] | None = None
        if mode == "regex":
            self.pattern = safe_regex(query)
        elif mode == "phrase":
            self.phrase = " ".join(fold(query).split())
        else:
            self.words = words_of(query)

    @property
    def empty(self) -> bool:
        return not (self.words or self.phrase or self.pattern)

    @property
    def terms(self) -> list[str]:
        """What is counted per note: the words, or the phrase as one term (none for a regex)."""
        return self.words or ([self.phrase] if self.phrase else [])

    def counts(self, path: str, entry: Indexed) -> list[int]:
        """How often each term occurs in the note (its path counts once); the note matches if none is 0.

        Runs on every note of a text or phrase search, so it only uses ``str.count``.
        """
        folded_path = _path_key(path).folded
        return [entry.folded.count(term) + (term in folded_path) for term in self.terms]

    def lines(self, path: str, entry: Indexed, deadline: float | None = None) -> list[LineMatch]:
        """The matching lines of a note, scored; [] when the note does not match.

        Cheap on purpose: it runs on every note. A regex search checks ``deadline``
        (monotonic) between lines and raises :class:`TimeUp`.
        """
        if self.pattern is not None:
            return self._regex_lines(entry, deadline)
        if self.phrase:
            if self.phrase not in entry.folded:
                return []
            return [
                LineMatch(index, 10.0 + _heading_bonus(entry.lines[index]) + _early(index))
                for index, folded in enumerate(entry.folded_lines)
                if self.phrase in folded
            ]
        key = _path_key(path)
        if not all(word in entry.folded or word in key.folded for word in self.words):
            return []
        path_bonus = 2.0 * sum(1 for word in self.words if word in key.folded)
        found = []
        for index, folded in enumerate(entry.folded_lines):
            present = [word for word in self.words if word in folded]
            if present:
                whole = sum(1 for word in present if _whole_word(folded, word))
                score = 10.0 * len(present) / len(self.words) + whole + _heading_bonus(entry.lines[index])
                found.append(LineMatch(index, score + path_bonus + _early(index)))
        if not found:  # the words are in the path only: point at the top of the note
            first = next((i for i, line in enumerate(entry.lines) if line.strip()), 0)
            found.append(LineMatch(first, path_bonus))
        return found

    def _regex_lines(self, entry: Indexed, deadline: float | None) -> list[LineMatch]:
        assert self.pattern is not None
        found = []
        for index, line in enumerate(entry.lines):
            if deadline is not None and time.monotonic() > deadline:
                raise TimeUp()
            if self.pattern.search(line, 0, REGEX_LINE_CHARS):
                found.append(LineMatch(index, 10.0 + _early(index)))
        return found

    def hit(self, path: str, entry: Indexed, match: LineMatch) -> Hit:
        """The hit to show for a matching line: snippet around the match, breadcrumb, tocPath."""
        line = entry.lines[match.index]
        start = 0
        if self.pattern is not None:
            found = self.pattern.search(line, 0, REGEX_LINE_CHARS)
            start = found.start() if found else 0
        else:
            folded = entry.folded_lines[match.index]
            first = min(
                (at for at in (folded.find(word) for word in self.words or [self.phrase]) if at >= 0), default=0
            )
            start = _raw_offset(line, first)
        with entry.lock:  # the outline is built once, by whichever thread gets there first
            chain = _sections_at(entry.outline.headings, match.index + 1)
        breadcrumb = " > ".join(heading.title for heading in chain)
        toc_path = chain[-1].path if chain else ()
        return Hit(path, match.index + 1, snippet(line, start), breadcrumb, toc_path, match.score)


@dataclass(frozen=True)
class Candidate:
    """A note that matches, with its score as a whole."""

    path: str
    entry: Indexed
    score: float
    lines: list[LineMatch] | None = None  # known already for a regex search


class BM25:
    """Okapi BM25 over the notes searched: frequent terms help, less with each repeat; rare terms weigh more."""

    K1, B = 1.2, 0.75

    def __init__(self, notes: int, holding: list[int], average_chars: float) -> None:
        """``holding[i]``: how many of the ``notes`` hold term ``i``."""
        self.weights = [math.log(1 + (notes - held + 0.5) / (held + 0.5)) for held in holding]
        self.average_chars = max(average_chars, 1.0)

    def score(self, counts: list[int], note_chars: int) -> float:
        norm = self.K1 * (1 - self.B + self.B * note_chars / self.average_chars)
        return sum(w * c * (self.K1 + 1) / (c + norm) for w, c in zip(self.weights, counts, strict=True))


def rank(candidates: list[Candidate], matcher: Matcher, limit: int) -> tuple[list[Hit], int]:
    """The hits to show — notes best first, at most 3 lines from each — and how many notes they come from."""
    shown: list[Hit] = []
    notes = 0
    for candidate in sorted(candidates, key=lambda c: (-c.score, c.path)):
        matches = candidate.lines if candidate.lines is not None else matcher.lines(candidate.path, candidate.entry)
        best = sorted(matches, key=lambda match: (-match.score, match.index))[:HITS_PER_NOTE]
        shown.extend(matcher.hit(candidate.path, candidate.entry, match) for match in best)
        notes += 1
        if len(shown) >= limit:
            break
    return shown[:limit], notes


def snippet(line: str, start: int, width: int = SNIPPET_CHARS) -> str:
    """The line around ``start``, at most ``width`` characters, never past the line's ends."""
    line = line.strip("\t ") if len(line) <= width else line
    if len(line) <= width:
        return line
    begin = max(0, min(start - width // 3, len(line) - width))
    cut = line[begin : begin + width]
    return ("…" if begin else "") + cut + ("…" if begin + width < len(line) else "")


def _raw_offset(line: str, folded_offset: int) -> int:
    """Where a position in the folded line falls in the raw one (folding can change lengths)."""
    if folded_offset <= 0:
        return 0
    length = 0
    for index, char in enumerate(line):
        length += len(fold(char))
        if length > folded_offset:
            return index
    return len(line)


def _heading_bonus(line: str) -> float:
    return 3.0 if line.lstrip(" ").startswith("#") else 0.0


def _early(index: int) -> float:
    """A little for being near the top of the note."""
    return 1.0 / (1 + index / 50)


def _whole_word(folded: str, word: str) -> bool:
    """Whether the first occurrence of ``word`` stands alone (no letter or digit right before or after)."""
    at = folded.find(word)
    end = at + len(word)
    return (at == 0 or not folded[at - 1].isalnum()) and (end == len(folded) or not folded[end].isalnum())


def _sections_at(headings: list[Heading], line: int) -> list[Heading]:
    """The chain of sections that contain ``line``, outermost first."""
    chain: list[Heading] = []
    level = headings
    while True:
        inside = next((h for h in level if h.start_line <= line <= h.end_line), None)
        if inside is None:
            return chain
        chain.append(inside)
        level = inside.children


def safe_regex(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` if it is in the safe subset; :class:`UnsafeRegexError` otherwise."""
    if len(pattern) > MAX_REGEX_CHARS:
        raise UnsafeRegexError(f"the pattern is {len(pattern)} characters long; at most {MAX_REGEX_CHARS} are allowed")
    try:
        tree = sre_parse.parse(pattern)
    except re.error as error:
        raise UnsafeRegexError(f"not a valid regular expression: {error}") from None
    unbounded = _check_safe(tree, inside_repeat=False)
    if unbounded > MAX_UNBOUNDED_QUANTIFIERS:
        raise UnsafeRegexError(
            f"it has {unbounded} unbounded quantifiers (*, +, {{n,}}); at most {MAX_UNBOUNDED_QUANTIFIERS} are "
            "allowed, as more can take very long on a long line. Use mode=text, or a narrower pattern"
        )
    return re.compile(pattern)


_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)}


def _check_safe(items: Any, *, inside_repeat: bool) -> int:
    """Refuse what can explode; return how many unbounded quantifiers the pattern has."""
    unbounded = 0
    for op, argument in items:
        if op in _REPEATS:
            _, high, body = argument
            if inside_repeat:
                raise UnsafeRegexError(
                    "a quantifier inside a quantified group (like (a+)+ or (ab?)*) can take exponential time"
                )
            unbounded += high is sre.MAXREPEAT or high > 100
            unbounded += _check_safe(body, inside_repeat=True)
        elif op is sre.BRANCH:
            if inside_repeat:
                raise UnsafeRegexError(
                    "an alternation inside a quantified group (like (a|ab)*) can take exponential time"
                )
            unbounded += sum(_check_safe(alternative, inside_repeat=False) for alternative in argument[1])
        elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            raise UnsafeRegexError("backreferences are not allowed")
        elif op is sre.SUBPATTERN:
            unbounded += _check_safe(argument[-1], inside_repeat=inside_repeat)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            unbounded += _check_safe(argument[1], inside_repeat=inside_repeat)
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            unbounded += _check_safe(argument, inside_repeat=inside_repeat)
    return unbounded


# -- finding notes by path -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PathKey:
    folded: str  # the whole path, folded
    name: str  # the file name without its extension, folded
    compact: str  # the path folded, without separators
    trigrams: frozenset[str]  # of the name
    word_trigrams: tuple[frozenset[str], ...]  # of each word of the path (folders and name)
    mask: int  # every word's trigrams as bits (see _bits): a quick first sieve


_PATH_KEYS: dict[str, _PathKey] = {}  # computed once per path; see find_paths for the bound


def _path_key(path: str) -> _PathKey:
    key = _PATH_KEYS.get(path)
    if key is None:
        key = _PATH_KEYS[path] = _make_path_key(path)
    return key


def _make_path_key(path: str) -> _PathKey:
    folded = fold(path)
    name = folded.rsplit("/", 1)[-1]
    name = name.rsplit(".", 1)[0] if "." in name[1:] else name
    words = [word for word in _SEPARATORS.split(folded.rsplit(".", 1)[0]) if word]
    word_trigrams = tuple(_trigrams(word) for word in words)
    return _PathKey(
        folded, name, _compact(folded), _trigrams(name), word_trigrams, _bits(frozenset().union(*word_trigrams))
    )


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
        key = keys.get(path) or _path_key(path)
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
        key = _path_key(path)
        typos = sum(max((_dice(w, t) for t in key.word_trigrams), default=0.0) for w in word_grams) / len(words)
        score = max(_subsequence(compact, key.compact), 70 * _dice(grams, key.trigrams), 70 * typos)
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
