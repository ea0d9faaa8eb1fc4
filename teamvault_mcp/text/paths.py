"""Vault paths, client side: the Team Vault server's normaliser, mirrored exactly.

``stored_path_of`` reduces any spelling of a path (``./a.md``, ``dir\\a.md``,
``x/../dir/a.md``) to the form the server stores, and refuses what the server
would refuse, with the server's own wording, before any request is sent. It
mirrors ``normalizeVaultPath`` of the latest server (docs/teamvault-api.md §2, V3):

- ``incoming=True`` is the full gate used for create and move targets;
- ``incoming=False`` is the gate for paths that already live on the server
  (lookups, sources of moves, deletes), so notes stored before a rule existed
  stay reachable.

Pure functions only; no I/O.
"""

from __future__ import annotations

import re
import unicodedata

from teamvault_mcp.errors import InvalidPathError

MAX_SEGMENT_UTF16_UNITS = 255
RESERVED_STORAGE_NAMES = frozenset({".versions", ".staging"})
RESERVED_CLIENT_NAMES = frozenset({".obsidian", ".trash", ".git"})

# JavaScript's \s and \d, spelled out: Python's classes differ (\ufeff, \x1c-\x1f, other digits).
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_SHORT_NAME = re.compile(rf"^([^.{_JS_SPACE}]*~[0-9]+)(?:\.[^.{_JS_SPACE}]{{1,3}})?$")
_WINDOWS_FORBIDDEN = re.compile('[*?<>"|\u0001-\u001f]')
_HFS_IGNORABLE = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")


def stored_path_of(path: str, *, incoming: bool = False) -> str:
    """The stored form of ``path``; raise :class:`InvalidPathError` where the server would refuse it."""
    if "\0" in path:
        raise InvalidPathError("Path contains NUL byte", path)
    if path.startswith("/"):
        raise InvalidPathError("Absolute paths are not allowed", path)
    # POSIX normalisation first, backslashes only after: `x/../a` is `a`, but `x\..\a` is refused.
    normalized = _posix_normalize(path).replace("\\", "/")
    if normalized.startswith("/"):
        raise InvalidPathError("Absolute paths are not allowed", path)
    segments = [segment for segment in normalized.split("/") if segment]
    for segment in segments:
        _check_segment(segment, path, incoming=incoming)
    if not segments:
        raise InvalidPathError("Empty path", path)
    return "/".join(segments)


def name_key(segment: str) -> str:
    """The key under which client file systems treat two names as the same (server's ``nameKey``)."""
    key = unicodedata.normalize("NFKC", segment)
    key = unicodedata.normalize("NFD", key).lower().upper().lower()
    return unicodedata.normalize("NFC", _HFS_IGNORABLE.sub("", key))


def is_windows_alias(segment: str) -> bool:
    """A name Windows opens as another file: any ``:``, or an 8.3 short name such as ``OBSIDI~1``."""
    if ":" in segment:
        return True
    match = _SHORT_NAME.match(segment)
    return match is not None and len(match.group(1)) <= 8


def is_unsafe_for_windows(segment: str) -> bool:
    return is_windows_alias(segment) or _WINDOWS_FORBIDDEN.search(segment) is not None or segment.endswith((".", " "))


def utf16_length(text: str) -> int:
    """Length as JavaScript counts it: an astral character is two code units."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _check_segment(segment: str, path: str, *, incoming: bool) -> None:
    if segment == "..":
        raise InvalidPathError("Parent traversal is not allowed", path)
    if segment == ".":
        raise InvalidPathError("Single-dot segments are not allowed", path)
    if segment.lower() in RESERVED_STORAGE_NAMES:
        raise InvalidPathError(f"Reserved folder name: {segment}", path)
    if incoming:
        key = name_key(segment)
        if key == "":
            raise InvalidPathError("Empty path segment", path)
        if key in RESERVED_STORAGE_NAMES or key in RESERVED_CLIENT_NAMES:
            raise InvalidPathError(f"Reserved folder name: {segment}", path)
        if is_unsafe_for_windows(segment):
            raise InvalidPathError(f"Name a Windows client can't keep: {segment}", path)
    if utf16_length(segment) > MAX_SEGMENT_UTF16_UNITS:
        raise InvalidPathError("Path segment too long", path)


def folder_prefix(raw: str | None) -> str | None:
    """The server-side prefix filter of a listing: the stored spelling of ``raw``, keeping a trailing ``/``;
    None for the whole vault."""
    if raw is None or raw in ("", ".", "./", ".\\", "/", "\\"):
        return None  # the whole vault
    folder = raw.endswith(("/", "\\"))
    stored = stored_path_of(raw)
    return stored + "/" if folder else stored


def _posix_normalize(path: str) -> str:
    """Node's ``path.posix.normalize``: collapse ``//``, drop ``.``, resolve ``x/..``, keep a trailing ``/``."""
    if path == "":
        return "."
    absolute = path.startswith("/")
    trailing = path.endswith("/")
    out: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if out and out[-1] != "..":
                out.pop()
            elif not absolute:
                out.append("..")
            continue
        out.append(segment)
    result = "/".join(out)
    if not result:
        if absolute:
            return "/"
        return "./" if trailing else "."
    if trailing:
        result += "/"
    return "/" + result if absolute else result
