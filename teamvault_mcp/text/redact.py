"""Keeping the API key out of everything passed on: tool results, error texts, ``check`` output, log lines.

A server (or a proxy in front of it) that echoes request headers puts ``X-API-Key``
into its answers. Every text that leaves the process is passed through a
:class:`Redactor` in exactly one place per way out: the client for server texts in
errors, the call pipeline for tool results, the doctor for its report, a logging
filter for log lines. It replaces the key as sent and its URL-encoded spellings.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from urllib.parse import quote, quote_plus

#: What stands in for the key.
HIDDEN = "***"


#: Shorter keys are not replaced: they would be found inside ordinary words (a Team Vault key has 70 characters).
MIN_KEY_CHARS = 8


@lru_cache(maxsize=64)  # every call's client makes a Redactor: the same few keys, worked out once
def key_spellings(key: str) -> tuple[str, ...]:
    """The key as sent, upper- and lower-cased, and each of those URL-encoded (``%2F`` and ``%2f``, ``+`` for
    a space); longest first. (A search ignoring case would cost a hundred times more on a long note.)"""
    if len(key) < MIN_KEY_CHARS:
        return ()
    forms = set()
    for spelling in (key, key.upper(), key.lower()):
        encoded = quote(spelling, safe="")
        forms |= {spelling, encoded, quote_plus(spelling), _lower_escapes(encoded)}
    return tuple(sorted(forms, key=len, reverse=True))


def _lower_escapes(encoded: str) -> str:
    parts = encoded.split("%")
    return parts[0] + "".join("%" + part[:2].lower() + part[2:] for part in parts[1:])


class Redactor:
    """Replaces the API key (in each of its spellings) in texts."""

    def __init__(self, key: str | None) -> None:
        self._forms = key_spellings(key or "")

    def text(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, HIDDEN)
        return text

    def finds(self, text: str) -> bool:
        return any(form in text for form in self._forms)


class RedactingFilter(logging.Filter):
    """A handler filter: log records leave with the key replaced, in the message and in a traceback."""

    def __init__(self, key: str | None) -> None:
        super().__init__()
        self._redactor = Redactor(key)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self._redactor.finds(message):
            record.msg, record.args = self._redactor.text(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text and self._redactor.finds(record.exc_text):
            record.exc_text = self._redactor.text(record.exc_text)
        return True
