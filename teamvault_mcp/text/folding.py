"""Text folded for searching: case and accents ignored (``Ёлка`` finds ``ёлка``, ``cafe`` finds ``Café``). Pure."""

from __future__ import annotations

import unicodedata
from functools import cache

#: Longest piece of text one string operation of ``fold`` gets: about 5 ms holding the GIL, so that
#: the event loop (and every other thread) gets a turn in between, even on a 5 MB note.
FOLD_PIECE_CHARS = 64 * 1024


@cache
def _combining() -> dict[int, None]:
    """A translate table that drops combining marks (accents after NFKD). Built once, on first use."""
    return {cp: None for cp in range(0x30000) if unicodedata.combining(chr(cp))}


def fold(text: str, piece_chars: int = FOLD_PIECE_CHARS) -> str:
    """The case- and accent-insensitive form of ``text``: NFKD, combining marks dropped, casefolded.

    A long text is folded piece by piece, as each of the three steps holds the GIL throughout.
    Any cut gives the same result: NFKD only reorders combining marks across it, which are all
    dropped, and casefolding goes character by character.
    """
    if len(text) <= piece_chars:
        return _fold(text)
    return "".join(_fold(text[start : start + piece_chars]) for start in range(0, len(text), piece_chars))


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).translate(_combining()).casefold()
