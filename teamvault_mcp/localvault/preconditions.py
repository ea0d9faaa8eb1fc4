"""``If-Match`` for the local vault's conditional writes: the header parsed into a value, and the match rule.

An extension of the Team Vault contract (the public server has none): ``PUT``, ``PATCH``
and ``DELETE`` on ``/files/:id`` go ahead only if the note's current content hash
matches. The entity tag of a note is its content hash in quotes, ``"<64 hex>"``.
Comparison is strong (RFC 9110 §13.1.1): a weak tag ``W/"…"`` never matches. The hex is
compared case-insensitively and a tag without quotes is accepted too; ``*`` matches
any live file; a list matches if any of its tags does. A tombstone matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: A strong entity tag holding a content hash, quoted or not.
_HASH_TAG = re.compile(r'"([0-9A-Fa-f]{64})"|([0-9A-Fa-f]{64})')


@dataclass(frozen=True)
class IfMatch:
    """What an ``If-Match`` header accepts: any live file (``*``), or one of these content hashes."""

    any_live: bool
    hashes: frozenset[str]  # lower-case hex

    def matches(self, current_hash: str | None) -> bool:
        """Whether a file whose content hash is ``current_hash`` (``None``: a tombstone) passes."""
        if current_hash is None:
            return False
        return self.any_live or current_hash.lower() in self.hashes


def parse_if_match(fields: Iterable[str]) -> IfMatch:
    """The ``If-Match`` header fields of a request (all of them: a list may be split over several) as a value.

    Anything that is not a strong tag holding a content hash (a weak tag, another
    string, an empty field, ``*`` inside a list) is kept as a tag that matches nothing,
    so the request fails its precondition rather than being carried out unchecked.
    """
    elements = [element.strip() for field in fields for element in field.split(",")]
    if elements == ["*"]:
        return IfMatch(True, frozenset())
    hashes = set()
    for element in elements:
        match = _HASH_TAG.fullmatch(element)
        if match:
            hashes.add((match.group(1) or match.group(2)).lower())
    return IfMatch(False, frozenset(hashes))


def entity_tag(content_hash: str) -> str:
    """The ``ETag`` value of a note: its content hash as a strong tag."""
    return f'"{content_hash}"'
