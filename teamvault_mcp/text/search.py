"""Search inside notes: matching, ranking, snippets, breadcrumbs. No I/O.

- ``text`` mode: every query word must be in the note (or its path); case and accents
  are ignored (``Ёлка`` finds ``ёлка``, ``cafe`` finds ``Café``). A line holding every
  word ranks above every line holding only some (:func:`rank`); then, in a note, a line of
  its body before a heading and a heading before a front matter line (``tags: [pricing]``
  names the words, a sentence says something about them: ``Line.place``); then lines holding
  more of the words, whole words, headings and notes whose path names the words rank higher.
  A hit carries its note's front matter ``status`` when it has one (``superseded``), so an
  answer shows which decision still holds.
- ``phrase`` mode: the words in this order, within one line.
- ``regex`` mode: a regular expression from the safe subset (``regex_subset.py``),
  matched line by line (the first 1,000 characters of each) on the ``regex`` package,
  which lets other threads run while it matches. A line whose worst case is more than
  about a million steps gets 0.2 s of CPU time; a slower one is skipped and counted
  (see :class:`Matcher`).

The :class:`SearchIndex` keeps each note's folded text in memory, by content hash,
so a search repeated over an unchanged vault does no Unicode work at all. It keeps the raw
text only when the caller has nowhere else to keep it: with a disk cache, the raw text of
the few notes whose hits are shown is loaded again (:class:`NoteText`), and a vault costs
its folded text and little more. A search that finds nothing can ask for the vault's own
words closest to a query word (``terms.py``'s ``close_words``). Finding notes by name is ``fuzzy.py``;
folding text (case and accents) is ``folding.py``.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from teamvault_mcp.text import frontmatter
from teamvault_mcp.text.deadlines import Deadline
from teamvault_mcp.text.folding import fold
from teamvault_mcp.text.markdown import Document, Heading, parse, split_lines
from teamvault_mcp.text.properties import MISSING, field_value
from teamvault_mcp.text.regex_subset import REGEX_LINE_CHARS, SafeRegex, safe_regex

SNIPPET_CHARS = 160
HITS_PER_NOTE = 3
#: CPU seconds one line may take to match. The regex package measures process CPU time (C ``clock()``), so
#: under load a limit takes longer in wall time: a short one keeps that overrun small. Slower lines are skipped.
REGEX_LINE_SECONDS = 0.2
#: Text kept in memory for searching (raw + folded characters), least recently used first out.
INDEX_CHARS = 256 * 1024 * 1024
#: The same with a cache directory, whose index of words on disk counts a text search (``vault/terms_db.py``): the
#: texts read lately, for the hits shown, phrases, regexes and replacements.
INDEX_CHARS_BESIDE_STORE = 32 * 1024 * 1024
#: Characters of recently shown notes kept with their lines and outline, so a search asked again is as cheap.
SHOWN_CHARS = 4 * 1024 * 1024


_FOLDED_PATHS: dict[str, str] = {}  # a path folded once per process (bounded below)
_FOLDED_PATHS_MAX = 200_000


def folded_path_of(path: str) -> str:
    """``path`` folded, as the words of a query are looked for in it; made once per path."""
    folded = _FOLDED_PATHS.get(path)
    if folded is None:
        if len(_FOLDED_PATHS) >= _FOLDED_PATHS_MAX:  # a process that has seen very many paths starts afresh
            _FOLDED_PATHS.clear()
        folded = _FOLDED_PATHS[path] = fold(path)
    return folded


def words_of(query: str) -> list[str]:
    """The folded words of a query, outer punctuation stripped (``"budget,"`` → ``budget``)."""
    words = [word.strip(".,;:!?\"'()[]{}<>") for word in fold(query).split()]
    return list(dict.fromkeys(word for word in words if word))


# -- the in-memory index ----------------------------------------------------------------------------


class NoteText:
    """One note's text, ready to match lines in and show hits from: raw and folded, their lines and the
    outline, each made when first needed. Made for the notes a search shows; the index keeps less."""

    __slots__ = ("_folded_lines", "_front_matter_lines", "_lines", "_outline", "_status", "folded", "lock", "raw")

    def __init__(self, raw: str, folded: str | None = None) -> None:
        self.raw = raw
        self.folded = fold(raw) if folded is None else folded
        self._lines: list[str] | None = None
        self._folded_lines: list[str] | None = None
        self._outline: Document | None = None
        self._front_matter_lines: int | None = None
        self._status: str | bool | None = False  # False: not read yet
        self.lock = threading.Lock()  # the outline is built once, by whichever thread gets there first

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
    def front_matter_lines(self) -> int:
        """How many lines the front matter takes at the top, its ``---`` lines included (0 without one)."""
        if self._front_matter_lines is None:
            parts = frontmatter.split(self.raw) if self.raw.lstrip("\ufeff").startswith("---") else None
            lines = 0
            if parts is not None and parts.present:
                lines = (parts.opening + parts.yaml + parts.closing).count("\n") + (not parts.closing.endswith("\n"))
            self._front_matter_lines = lines
        return self._front_matter_lines

    @property
    def status(self) -> str | None:
        """The front matter's ``status``, as text (cut to :data:`STATUS_CHARS`); None when there is none."""
        if self._status is False:
            self._status = _status_of(self.raw) if self.front_matter_lines else None
        return self._status if isinstance(self._status, str) else None

    def place(self, index: int) -> int:
        """Where line ``index`` (0-based) is: 0 the body, 1 a heading, 2 the front matter (see ``Line.place``)."""
        if index < self.front_matter_lines:
            return FRONT_MATTER
        return HEADING if _HEADING.match(self.lines[index]) else BODY

    @property
    def outline(self) -> Document:
        if self._outline is None:
            self._outline = parse(self.raw)
        return self._outline


#: Where a line is, in the order lines that match alike are shown: the body says things, a heading or a front
#: matter line only names them.
BODY, HEADING, FRONT_MATTER = 0, 1, 2
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
STATUS_CHARS = 40


def _status_of(raw: str) -> str | None:
    try:
        fields, _ = frontmatter.read(raw, "the note")
    except frontmatter.FrontMatterError:
        return None  # unreadable YAML: no status to show
    value = field_value(fields, "status")
    if value is MISSING or value is None or value == "" or value == []:
        return None
    if isinstance(value, list):
        value = ", ".join(str(item) for item in value)
    text = " ".join(str(value).split())
    return text if len(text) <= STATUS_CHARS else text[: STATUS_CHARS - 1] + "…"


class Indexed:
    """What the index keeps of one content: its folded text, which every search counts words in, and its raw
    text only when nothing else keeps it (``kept_raw`` is None when the disk cache has it: ``load`` reads it back).
    """

    __slots__ = ("folded", "kept_raw", "key", "load")

    def __init__(self, key: str, folded: str, kept_raw: str | None, load: Callable[[str], str | None] | None) -> None:
        self.key = key
        self.folded = folded
        self.kept_raw = kept_raw
        self.load = load

    @property
    def raw(self) -> str:
        """The raw text: kept, or read back (from the disk cache); :class:`TextGone` when it is not there."""
        if self.kept_raw is not None:
            return self.kept_raw
        text = self.load(self.key) if self.load is not None else None
        if text is None:
            raise TextGone(self.key)
        return text

    def __repr__(self) -> str:
        return f"Indexed({self.key[:12]!r}, {len(self.folded)} chars{'' if self.kept_raw is None else ', raw kept'})"


class TextGone(LookupError):
    """A note's raw text was not kept and its cache no longer has it (another process evicted it)."""


class SearchIndex:
    """Folded note texts by content hash, bounded by total size; and the last shown notes' texts. Thread-safe."""

    def __init__(self, max_chars: int = INDEX_CHARS, shown_chars: int = SHOWN_CHARS) -> None:
        self.max_chars = max_chars
        self.shown_chars = shown_chars
        self._entries: OrderedDict[str, Indexed] = OrderedDict()
        self._chars = 0
        self._shown: OrderedDict[str, NoteText] = OrderedDict()
        self._shown_chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, content_hash: str) -> Indexed | None:
        with self._lock:
            entry = self._entries.get(content_hash)
            if entry is not None:
                self._entries.move_to_end(content_hash)
            return entry

    def add(self, content_hash: str, text: str, *, load: Callable[[str], str | None] | None = None) -> Indexed:
        """Index ``text`` under its hash; with ``load`` (a cache that gives the raw text back), it is not kept."""
        folded = fold(text)
        if folded == text:
            entry = Indexed(content_hash, text, text, None)  # one string serves both, for free
        else:
            entry = Indexed(content_hash, folded, text if load is None else None, load)
        with self._lock:
            old = self._entries.pop(content_hash, None)
            if old is not None:
                self._chars -= _chars(old)
            self._entries[content_hash] = entry
            self._chars += _chars(entry)
            while self._chars > self.max_chars and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self._chars -= _chars(dropped)
        return entry

    def text(self, entry: Indexed, raw: str | None = None) -> NoteText | None:
        """The note's :class:`NoteText`: a recently shown one, else made from the kept raw text or ``raw``;
        None when neither has it."""
        with self._lock:
            shown = self._shown.get(entry.key)
            if shown is not None:
                self._shown.move_to_end(entry.key)
                return shown
        raw = entry.kept_raw if entry.kept_raw is not None else raw
        if raw is None:
            return None
        note = NoteText(raw, entry.folded)
        with self._lock:
            if entry.key not in self._shown and len(raw) <= self.shown_chars // 4:
                self._shown[entry.key] = note
                self._shown_chars += len(raw)
                while self._shown_chars > self.shown_chars:
                    _, dropped = self._shown.popitem(last=False)
                    self._shown_chars -= len(dropped.raw)
        return note


def _chars(entry: Indexed) -> int:
    kept = entry.kept_raw
    return len(entry.folded) + (len(kept) if kept is not None and kept is not entry.folded else 0)


# -- searching notes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    snippet: str
    breadcrumb: str
    toc_path: tuple[str, ...]
    score: float
    status: str | None = None  # the note's front matter status

    def as_json(self) -> dict[str, object]:
        status = {"status": self.status} if self.status is not None else {}
        return {
            "path": self.path,
            "line": self.line,
            "snippet": self.snippet,
            "breadcrumb": self.breadcrumb,
            "tocPath": list(self.toc_path),
            "score": round(self.score, 2),
            **status,
        }


class TimeUp(Exception):
    """A search passed its deadline in the middle of a note."""


@dataclass(frozen=True)
class LineMatch:
    """A matching line (0-based), its score, whether it holds every query word (or the phrase, or a regex
    match) and, for a regex, where the match starts. Hits are made of the lines shown only."""

    index: int
    score: float
    start: int = -1  # known for a regex match; a word's place is looked up when the hit is made
    complete: bool = True
    place: int = BODY  # BODY, HEADING or FRONT_MATTER: in a note, lines that match alike are shown in this order


class Matcher:
    """One query: finds and scores the matching lines of a note, then makes hits of the best ones.

    In regex mode, a line that takes longer than :data:`REGEX_LINE_SECONDS` to match is skipped;
    ``slow_lines`` counts them by note path. A matcher serves one search, in one thread.
    """

    def __init__(self, query: str, mode: str) -> None:
        self.mode = mode
        self.words: list[str] = []
        self.phrase = ""
        self.regex: SafeRegex | None = None
        self.slow_lines: dict[str, int] = {}
        if mode == "regex":
            self.regex = safe_regex(query)
        elif mode == "phrase":
            self.phrase = " ".join(fold(query).split())
        else:
            self.words = words_of(query)

    @property
    def empty(self) -> bool:
        return not (self.words or self.phrase or self.regex)

    @property
    def terms(self) -> list[str]:
        """What is counted per note: the words, or the phrase as one term (none for a regex)."""
        return self.words or ([self.phrase] if self.phrase else [])

    def counts(self, path: str, entry: Indexed | NoteText) -> list[int]:
        """How often each term occurs in the note (its path counts once); the note matches if none is 0.

        Runs on every note of a text or phrase search, so it only uses ``str.count``.
        """
        folded_path = folded_path_of(path)
        return [entry.folded.count(term) + (term in folded_path) for term in self.terms]

    def lines(self, path: str, entry: NoteText, deadline: Deadline | None = None) -> list[LineMatch]:
        """The matching lines of a note, scored; [] when the note does not match.

        Cheap on purpose: it runs on every note. A regex search checks ``deadline``
        between lines and raises :class:`TimeUp`.
        """
        if self.regex is not None:
            return self._regex_lines(path, entry, deadline)
        if self.phrase:
            if self.phrase not in entry.folded:
                return []
            return [
                LineMatch(index, 10.0 + _heading_bonus(entry.lines[index]) + _early(index), place=entry.place(index))
                for index, folded in enumerate(entry.folded_lines)
                if self.phrase in folded
            ]
        folded_path = folded_path_of(path)
        if not all(word in entry.folded or word in folded_path for word in self.words):
            return []
        path_bonus = 2.0 * sum(1 for word in self.words if word in folded_path)
        found = []
        for index, folded in enumerate(entry.folded_lines):
            present = [word for word in self.words if word in folded]
            if present:
                whole = sum(1 for word in present if _whole_word(folded, word))
                score = 10.0 * len(present) / len(self.words) + whole + _heading_bonus(entry.lines[index])
                complete = len(present) == len(self.words)
                place = entry.place(index)
                found.append(LineMatch(index, score + path_bonus + _early(index), complete=complete, place=place))
        if not found:  # the words are in the path only: point at the top of the note
            first = next((i for i, line in enumerate(entry.lines) if line.strip()), 0)
            found.append(LineMatch(first, path_bonus, complete=False))
        return found

    def has_complete_line(self, text: str) -> bool:
        """Whether a line of the note (its folded ``text``) holds every query word (always, for a phrase, a regex
        or one word).

        Cheap, as :func:`rank` asks it of the matching notes: only the lines holding the rarest
        word of the query are looked at, each found with ``str.find``.
        """
        if len(self.words) < 2:
            return True
        rare = min(self.words, key=text.count)
        others = [word for word in self.words if word != rare]
        at = text.find(rare)
        while at >= 0:
            start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
            ends = [end for end in (text.find("\n", at), text.find("\r", at)) if end >= 0]
            end = min(ends) if ends else len(text)
            line = text[start:end]
            if all(word in line for word in others):
                return True
            at = text.find(rare, end)
        return False

    def _regex_lines(self, path: str, entry: NoteText, deadline: Deadline | None) -> list[LineMatch]:
        assert self.regex is not None
        compiled, untimed = self.regex.compiled, self.regex.untimed_chars
        found = []
        for index, line in enumerate(entry.lines):
            if deadline is not None and deadline.passed():
                raise TimeUp()
            if min(len(line), REGEX_LINE_CHARS) <= untimed:
                match = compiled.search(line, 0, REGEX_LINE_CHARS)
            else:
                seconds = REGEX_LINE_SECONDS
                if deadline is not None:
                    seconds = min(seconds, deadline.left())
                if seconds <= 0:
                    raise TimeUp()
                try:
                    match = compiled.search(line, 0, REGEX_LINE_CHARS, timeout=seconds)
                except TimeoutError:
                    if seconds < REGEX_LINE_SECONDS:
                        raise TimeUp() from None  # the search's own time ran out, not the line's
                    self.slow_lines[path] = self.slow_lines.get(path, 0) + 1
                    continue
            if match is not None:
                found.append(LineMatch(index, 10.0 + _early(index), match.start()))
        return found

    def hit(self, path: str, entry: NoteText, match: LineMatch) -> Hit:
        """The hit to show for a matching line: snippet around the match, breadcrumb, tocPath."""
        line = entry.lines[match.index]
        start = max(match.start, 0)
        if self.regex is None:
            folded = entry.folded_lines[match.index]
            first = min(
                (at for at in (folded.find(word) for word in self.words or [self.phrase]) if at >= 0), default=0
            )
            start = _raw_offset(line, first)
        with entry.lock:  # the outline is built once, by whichever thread gets there first
            chain = _sections_at(entry.outline.headings, match.index + 1)
        breadcrumb = " > ".join(heading.title for heading in chain)
        toc_path = chain[-1].path if chain else ()
        return Hit(path, match.index + 1, snippet(line, start), breadcrumb, toc_path, match.score, entry.status)


@dataclass(frozen=True)
class Candidate:
    """A note that matches, with its score as a whole; ``entry`` is None for a note counted in the index on disk
    (its text is read when it is ranked)."""

    path: str
    entry: Indexed | None
    score: float
    lines: list[LineMatch] | None = None  # known already for a regex search
    text: NoteText | None = None  # known already for a regex search


class BM25:
    """Okapi BM25 over the notes searched: frequent terms help, less with each repeat; rare terms weigh more."""

    K1, B = 1.2, 0.75

    def __init__(self, notes: int, holding: list[int], average_chars: float) -> None:
        """``holding[i]``: how many of the ``notes`` hold term ``i``."""
        self.weights = [math.log(1 + (notes - held + 0.5) / (held + 0.5)) for held in holding]
        self.average_chars = max(average_chars, 1.0)

    def score(self, counts: Sequence[int], note_chars: int) -> float:
        norm = self.K1 * (1 - self.B + self.B * note_chars / self.average_chars)
        return sum(w * c * (self.K1 + 1) / (c + norm) for w, c in zip(self.weights, counts, strict=True))

    def scores(self, rows: Iterable[tuple[Sequence[int], int]]) -> list[float]:
        """:meth:`score` of each (counts, note_chars), the same floats, at a fraction of the cost (100,000 notes
        matching a search are scored in one go: the same operations in the same order, without a call each)."""
        k1, b, average, weights = self.K1, self.B, self.average_chars, self.weights
        k1_plus = k1 + 1
        found = []
        for counts, note_chars in rows:
            norm = k1 * (1 - b + b * note_chars / average)
            total = 0.0
            for w, c in zip(weights, counts, strict=True):
                total += w * c * k1_plus / (c + norm)
            found.append(total)
        return found


def rank(
    candidates: Iterable[Candidate],
    matcher: Matcher,
    limit: int,
    text_of: Callable[[Candidate], NoteText | None] | None = None,
    *,
    ordered: bool = False,
) -> tuple[list[Hit], int]:
    """The hits to show and how many notes they come from.

    A line holding every query word ranks above every line holding only some, whatever its note's
    score: first the notes that have such a line, best first, then the others; of each note its 3
    best lines (those holding every word first; in each group, body lines, then headings, then front
    matter); and then all the lines holding every word go before the rest, each group in that order.
    ``text_of`` gives a candidate's text when the index did not keep it (None: it could not be had, and
    the note is passed over); by default the kept raw text. ``ordered``: the candidates come best first
    already (score, then path), and are taken only as far as the hits need.

    Notes are looked at best first, and whether one has a line with every word is asked only of
    those looked at: a note counted on disk is read only then, so a search that matches 100,000
    notes reads about as many as it shows.
    """
    full: list[Hit] = []
    partial: list[Hit] = []
    without_full: list[tuple[Candidate, NoteText | None]] = []

    def text_for(candidate: Candidate) -> NoteText | None:
        if candidate.text is not None:
            return candidate.text
        if text_of is not None:
            return text_of(candidate)
        return _kept_text(candidate.entry) if candidate.entry is not None else None

    def show(candidate: Candidate, text: NoteText) -> None:
        matches = candidate.lines if candidate.lines is not None else matcher.lines(candidate.path, text)
        best = sorted(matches, key=lambda m: (not m.complete, m.place, -m.score, m.index))[:HITS_PER_NOTE]
        for match in best:
            (full if match.complete else partial).append(matcher.hit(candidate.path, text, match))

    for candidate in candidates if ordered else sorted(candidates, key=lambda c: (-c.score, c.path)):
        if len(full) >= limit:
            break
        if candidate.entry is not None:
            text, folded = None, candidate.entry.folded
        else:
            text = text_for(candidate)
            if text is None:
                continue  # could not be read: passed over
            folded = text.folded
        if not matcher.has_complete_line(folded):
            without_full.append((candidate, text))  # shown after every note that has such a line
            continue
        text = text or text_for(candidate)
        if text is not None:
            show(candidate, text)
    for candidate, text in without_full:
        if len(full) >= limit or len(full) + len(partial) >= limit:
            break
        text = text or text_for(candidate)
        if text is not None:
            show(candidate, text)
    shown = (full + partial)[:limit]
    return shown, len({hit.path for hit in shown})


def _kept_text(entry: Indexed) -> NoteText | None:
    return NoteText(entry.kept_raw, entry.folded) if entry.kept_raw is not None else None


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
