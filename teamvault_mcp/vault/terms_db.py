"""The search index on disk: each content's words and how often it holds each, in the project's store.

Three tables of the project's ``index.sqlite`` (``index_db.py``), all by content hash, so a
row is true as long as it exists: ``texts`` (a content: its folded length, and whether its
words are kept: a note of more than ``WORDS_PER_NOTE_MAX`` distinct words keeps none and is
counted in its text), ``words`` (the vocabulary, with an FTS5 trigram index when the build has
FTS5, so the words holding a query term are found without a scan), and ``postings`` (word,
content, occurrences). :meth:`TermIndex.occurrences` counts a term of word characters in every
content from these alone (``text/terms.py`` says why that is exact). Contents no note has any
more are dropped by :meth:`TermIndex.prune`, which the warm-up runs. The map of content hash
to row is kept in memory (about 150 bytes a content), read once and refreshed for hashes it
lacks (another process may have added them).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol

from teamvault_mcp.text.terms import WORD, words_of_text

SCHEMA: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS texts (id INTEGER PRIMARY KEY AUTOINCREMENT, hash TEXT NOT NULL UNIQUE,"
    " chars INTEGER NOT NULL, kept INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS words (id INTEGER PRIMARY KEY, word TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS postings (word INTEGER NOT NULL, text INTEGER NOT NULL, count INTEGER NOT NULL,"
    " PRIMARY KEY (word, text)) WITHOUT ROWID",
    # how many prunes the file has seen: a process whose map of contents is older reads it again
    "CREATE TABLE IF NOT EXISTS prunes (id INTEGER PRIMARY KEY CHECK (id = 1), count INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO prunes (id, count) VALUES (1, 0)",
)
#: With FTS5: the words by trigram, kept in step with ``words`` (words are never deleted).
FTS_SCHEMA: tuple[str, ...] = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS words_fts USING fts5(word, content='words', content_rowid='id',"
    " tokenize='trigram case_sensitive 1')",
    "CREATE TRIGGER IF NOT EXISTS words_in AFTER INSERT ON words BEGIN"
    " INSERT INTO words_fts (rowid, word) VALUES (new.id, new.word); END",
)
_CHUNK = 500  # hashes per SELECT … IN (…)
#: A prune runs when contents no note has make up more than this share of the index.
PRUNE_SHARE = 0.25


class IndexedText(NamedTuple):
    """A content in the index: its row, its folded length, and whether its words are kept."""

    id: int
    chars: int
    kept: bool


class Store(Protocol):
    """What the index needs of its file (``index_db.IndexStore``)."""

    generation: int  # which file the connection is on (counted up each time it is made again)
    has_fts: bool

    def session(self) -> AbstractContextManager[sqlite3.Connection | None]: ...

    def transaction(self, connection: sqlite3.Connection) -> AbstractContextManager[None]: ...


class TermIndex:
    """The words of one project's contents (see the module docstring); thread-safe, through its store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._texts: dict[str, IndexedText] | None = None
        self._generation = -1  # the store's file this map was read from
        self._prunes = -1  # and the prunes it had seen

    def texts(self, hashes: Collection[str]) -> dict[str, IndexedText]:
        """Those of ``hashes`` in the index."""
        with self._store.session() as connection:
            if connection is None:
                return {}
            known = self._map(connection)
            missing = [content_hash for content_hash in hashes if content_hash not in known]
            for start in range(0, len(missing), _CHUNK):  # added by another process since the map was read
                chunk = missing[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for content_hash, *row in connection.execute(
                    f"SELECT hash, id, chars, kept FROM texts WHERE hash IN ({marks})", chunk
                ):
                    known[content_hash] = IndexedText(row[0], row[1], bool(row[2]))
            return {content_hash: known[content_hash] for content_hash in hashes if content_hash in known}

    def add(self, contents: Sequence[tuple[str, str]]) -> None:
        """Index (content hash, folded text) pairs not indexed yet, in one transaction."""
        if not contents:
            return
        with self._store.session() as connection:
            if connection is None:
                return
            known = self._map(connection)
            fresh = {content_hash: folded for content_hash, folded in contents if content_hash not in known}
            if not fresh:
                return
            counted = {content_hash: words_of_text(folded) for content_hash, folded in fresh.items()}
            vocabulary = sorted({word for words in counted.values() if words is not None for word in words})
            with self._store.transaction(connection):
                connection.executemany("INSERT OR IGNORE INTO words (word) VALUES (?)", ((w,) for w in vocabulary))
                ids = self._word_ids(connection, vocabulary)
                added: dict[str, IndexedText] = {}
                for content_hash, words in counted.items():
                    row = connection.execute(
                        "INSERT OR IGNORE INTO texts (hash, chars, kept) VALUES (?, ?, ?) RETURNING id",
                        (content_hash, len(fresh[content_hash]), words is not None),
                    ).fetchone()
                    if row is None:  # another process indexed it meanwhile
                        continue
                    added[content_hash] = IndexedText(row[0], len(fresh[content_hash]), words is not None)
                    if words is not None:
                        connection.executemany(
                            "INSERT INTO postings (word, text, count) VALUES (?, ?, ?)",
                            ((ids[word], row[0], count) for word, count in words.items()),
                        )
            known.update(added)

    def occurrences(self, term: str) -> dict[int, int]:
        """How often ``term`` (word characters only) occurs in each content whose words are kept, by row; those
        that do not hold it are left out."""
        found: dict[int, int] = {}
        with self._store.session() as connection:
            if connection is None:
                return found
            words = self._words_holding(connection, term)
            for word_id, word in words:
                times = word.count(term)
                rows = connection.execute("SELECT text, count FROM postings WHERE word = ?", (word_id,))
                if len(words) == 1 and times == 1:
                    return dict(rows)  # the usual case, a word of its own: read at C speed
                for text, count in rows:
                    found[text] = found.get(text, 0) + count * times
        return found

    def holders(self, words: Iterable[str], within: Mapping[int, int]) -> dict[str, int]:
        """How many notes hold each of ``words`` (whole words), for close words: ``within`` gives the notes of
        each content, by row; a word no note of those holds is left out."""
        counts: dict[str, int] = {}
        with self._store.session() as connection:
            if connection is None:
                return counts
            for word in words:
                row = connection.execute("SELECT id FROM words WHERE word = ?", (word,)).fetchone()
                if row is not None:
                    texts = connection.execute("SELECT text FROM postings WHERE word = ?", (row[0],))
                    notes = sum(within.get(text, 0) for (text,) in texts)
                    if notes:
                        counts[word] = notes
        return counts

    def vocabulary(self) -> list[str]:
        """Every word of the index (of every content it holds)."""
        with self._store.session() as connection:
            if connection is None:
                return []
            return [word for (word,) in connection.execute("SELECT word FROM words")]

    def last_row(self) -> int:
        """The newest content's row: a prune after a listing spares every content added since (:meth:`prune`)."""
        with self._store.session() as connection:
            if connection is None:
                return 0
            return int(connection.execute("SELECT coalesce(max(id), 0) FROM texts").fetchone()[0])

    def prune(self, live: Collection[str], up_to: int) -> int:
        """Drop the contents not in ``live`` (the hashes of the project's whole listing) and not newer than row
        ``up_to`` (read before that listing: another process may have indexed a newer note since), once they are
        more than :data:`PRUNE_SHARE` of the index; how many were dropped."""
        with self._store.session() as connection:
            if connection is None:
                return 0
            known = self._map(connection)
            dead = [
                (content_hash, text)
                for content_hash, text in known.items()
                if content_hash not in live and text.id <= up_to
            ]
            if not dead or len(dead) <= PRUNE_SHARE * len(known):
                return 0
            with self._store.transaction(connection):
                connection.execute("CREATE TEMP TABLE IF NOT EXISTS dead (id INTEGER PRIMARY KEY)")
                connection.execute("DELETE FROM dead")
                connection.executemany("INSERT INTO dead (id) VALUES (?)", ((text.id,) for _, text in dead))
                connection.execute("DELETE FROM postings WHERE text IN (SELECT id FROM dead)")
                connection.execute("DELETE FROM texts WHERE id IN (SELECT id FROM dead)")
                connection.execute("DELETE FROM dead")
                connection.execute("UPDATE prunes SET count = count + 1")
            with self._lock:
                self._texts = None  # read again, with the new count of prunes
            return len(dead)

    def _map(self, connection: sqlite3.Connection) -> dict[str, IndexedText]:
        prunes = int(connection.execute("SELECT count FROM prunes").fetchone()[0])
        with self._lock:
            if self._texts is None or self._generation != self._store.generation or self._prunes != prunes:
                self._texts = {
                    content_hash: IndexedText(text_id, chars, bool(kept))
                    for content_hash, text_id, chars, kept in connection.execute(
                        "SELECT hash, id, chars, kept FROM texts"
                    )
                }
                self._generation = self._store.generation
                self._prunes = prunes
            return self._texts

    def _words_holding(self, connection: sqlite3.Connection, term: str) -> list[tuple[int, str]]:
        if self._store.has_fts and len(term) >= 3:  # a trigram finds a word of three letters or more
            rows = connection.execute(
                "SELECT words.id, words.word FROM words_fts JOIN words ON words.id = words_fts.rowid"
                " WHERE words_fts MATCH ?",
                (f'"{term}"',),
            )
        else:
            rows = connection.execute("SELECT id, word FROM words WHERE instr(word, ?) > 0", (term,))
        return [(word_id, word) for word_id, word in rows if term in word]

    @staticmethod
    def _word_ids(connection: sqlite3.Connection, words: list[str]) -> dict[str, int]:
        ids: dict[str, int] = {}
        for start in range(0, len(words), _CHUNK):
            chunk = words[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            ids.update(connection.execute(f"SELECT word, id FROM words WHERE word IN ({marks})", chunk).fetchall())
        return ids


def is_word(term: str) -> bool:
    """Whether ``term`` is made of word characters only (so :meth:`TermIndex.occurrences` counts it)."""
    return WORD.fullmatch(term) is not None
