"""The server's answers read defensively: JSON, the records in it, and the words of an error answer.

No answer can raise anything here: invalid UTF-8 and escapes of lone surrogates become
U+FFFD, nesting too deep for Python is reported, and each record keeps only the fields
the API contract names (docs/teamvault-api.md §3, §4, §9), in their types — a hash as 64
lowercase hex digits, a size as a non-negative integer, ids and paths as strings;
anything else is dropped, never passed on. ``client.py`` builds its values from these.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

from teamvault_mcp.text.wire import SURROGATE_ESCAPE, fix_strings_in_place


def content_hash(value: Any) -> str | None:
    """A server's ``contentHash`` as we compare hashes: 64 lowercase hex digits; None if it is not one."""
    if not isinstance(value, str):
        return None
    value = value.strip().lower()
    return value if _HASH.fullmatch(value) else None


_HASH = re.compile(r"[0-9a-f]{64}")


def file_type_of(value: Any) -> str:
    """``TEXT`` or ``BINARY``; a record without one is text (older servers), an unknown kind is binary."""
    if value is None or value == "":
        return "TEXT"
    kind = str(value).strip().upper() if isinstance(value, str) else ""
    return kind if kind in ("TEXT", "BINARY") else "BINARY"


def size_of(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        size = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return size if size >= 0 else None


def identifier(value: Any) -> str | None:
    """An id as a non-empty string (a number is taken as its digits); None for anything else."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def timestamp(value: Any) -> str | None:
    """A server's date-time (``createdAt``, ``updatedAt``, ``deletedAt``) as the string it sent; None if it is not a
    short string. Read as a date only where one is needed: a listing holds thousands."""
    return value if isinstance(value, str) and 0 < len(value) <= _TIMESTAMP_CHARS else None


_TIMESTAMP_CHARS = 40


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _scalars(raw: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record that are strings, numbers, booleans or null (nested values, infinities are dropped)."""
    return {
        key: value
        for key, value in raw.items()
        if value is None or isinstance(value, str | int | bool) or (isinstance(value, float) and math.isfinite(value))
    }


def user_record(raw: dict[str, Any]) -> dict[str, Any] | None:
    user = _scalars(raw)
    user["id"] = identifier(raw.get("id"))
    if user["id"] is None:
        return None
    for key in ("email", "name"):
        if key in raw:
            user[key] = _text_or_none(raw[key])
    return user


def project_record(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or identifier(raw.get("id")) is None:
        return None
    project = _scalars(raw)
    project["id"] = identifier(raw["id"])
    for key in ("slug", "name", "role"):
        if key in raw:
            project[key] = _text_or_none(raw[key])
    return project


def version_record(raw: Any) -> dict[str, Any] | None:
    """A version with the fields the contract names in their types (docs/teamvault-api.md §4.1); None without an id."""
    if not isinstance(raw, dict) or identifier(raw.get("id")) is None:
        return None
    version = _scalars(raw)
    version["id"] = identifier(raw["id"])
    if "versionNumber" in raw:
        number = raw["versionNumber"]
        version["versionNumber"] = number if isinstance(number, int) and not isinstance(number, bool) else None
    if "contentHash" in raw:
        version["contentHash"] = content_hash(raw["contentHash"])
    for key in ("authorId", "message", "createdAt"):
        if key in raw:
            version[key] = _text_or_none(raw.get(key))
    if "author" in raw:
        author = raw["author"]
        version["author"] = None
        if isinstance(author, dict):
            version["author"] = {key: _text_or_none(author.get(key)) for key in ("id", "name", "email")}
    return version


def decode_json(body: bytes) -> tuple[Any, str | None]:
    """A server's JSON answer decoded defensively: (value, None), or (None, what is wrong with it).

    Invalid UTF-8 becomes U+FFFD, a byte-order mark is skipped, ``NaN``/``Infinity`` read as
    null, escapes of lone surrogates become U+FFFD (they could not be sent on), and JSON
    nested deeper than Python can read is refused. Never raises.
    """
    text = body.decode("utf-8", errors="replace").removeprefix("\ufeff")
    try:
        value = json.loads(text, parse_constant=lambda name: None)
    except RecursionError:
        return None, "JSON nested too deeply to read"
    except ValueError:
        return None, "not JSON"
    if SURROGATE_ESCAPE.search(text):
        fix_strings_in_place(value)
    return value, None


def server_words(body: bytes, content_type: str) -> tuple[str | None, str]:
    """The error envelope's ``code`` and what the server said: the envelope's message, the title or text of
    an HTML page (a proxy's), or the body as it is."""
    value, _ = decode_json(body)
    if isinstance(value, dict):
        error = value.get("error")
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
            return (code if isinstance(code, str) and code else None), (message if isinstance(message, str) else "")
        for key in ("error", "message"):
            if isinstance(value.get(key), str):
                return None, value[key]
    text = _start_of(body)
    if _HTML.search(text[:1000]) or "html" in content_type.lower():
        title = _HTML_TITLE.search(text)
        text = html.unescape(_HTML_TAG.sub(" ", title.group(1) if title else _HTML_SCRIPT.sub(" ", text)))
    return None, text


def _start_of(body: bytes) -> str:
    """The first 20,000 bytes of a body as text: enough for any message, and a 100 MB page costs nothing."""
    return body[:20000].decode("utf-8", errors="replace")


_HTML = re.compile(r"<(!doctype|html|head|body|title|h1)\b", re.IGNORECASE)
_HTML_TITLE = re.compile(r"<(?:title|h1)\b[^>]*>(.*?)</(?:title|h1)>", re.IGNORECASE | re.DOTALL)
_HTML_SCRIPT = re.compile(r"<(script|style)\b.*?</\1>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<[^>]*>")
