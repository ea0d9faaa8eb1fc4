"""Paths as agents write them: a note's name without ``.md`` (as links write it), a folder as a move's target.

Obsidian names a note by its file name without ``.md``, so agents often leave it out; and
``archive/`` as a move's target means "into that folder". These functions say what such a
spelling means. Pure; the server's own path rules are ``paths.py``.
"""

from __future__ import annotations

import re

from teamvault_mcp.text.paths import stored_path_of

#: An extension: a dot and 1–8 letters or digits, at least one a letter (``.md``, ``.txt``, ``.mp3``), after a
#: name. ``2026.11.30``, ``v1.2 release`` and ``Dr. Who`` have none: they are names with dots in them.
_EXTENSION = re.compile(r"[^/]\.(?=[0-9]*[A-Za-z])[A-Za-z0-9]{1,8}$")

#: What a note's file name ends in, for Obsidian.
NOTE_EXTENSION = ".md"


def has_extension(path: str) -> bool:
    """Whether the last segment of ``path`` ends with a file extension (see :data:`_EXTENSION`)."""
    return _EXTENSION.search(path.rsplit("/", 1)[-1]) is not None


def extension_of(path: str) -> str:
    """The extension of the last segment, with its dot (``.md``), or ""."""
    name = path.rsplit("/", 1)[-1]
    return name[name.rindex(".") :] if has_extension(name) else ""


def names_folder(raw: str) -> bool:
    """Whether a path as given ends with a separator (``archive/``, ``archive\\``): it names a folder."""
    return raw.endswith(("/", "\\"))


def name_of(path: str) -> str:
    """The last segment of a stored path: ``people/ada.md`` → ``ada.md``."""
    return path.rsplit("/", 1)[-1]


def move_target(raw: str, source: str) -> str:
    """Where ``move_note(path=source, newPath=raw)`` moves a note, in the server's spelling (full gate):

    ``archive/`` → ``archive/<source's name>`` (into that folder; ``./`` is the top of the vault); a last
    segment without an extension gets the source's (``archive/ada`` → ``archive/ada.md``); else ``raw``.
    Whether an extension-less target is an existing folder is the caller's to ask (it needs a listing).
    """
    if names_folder(raw):
        folder = raw.rstrip("/\\")
        if folder in ("", "."):
            return stored_path_of(name_of(source), incoming=True)
        return stored_path_of(f"{folder}/{name_of(source)}", incoming=True)
    target = stored_path_of(raw, incoming=True)
    if not has_extension(target):
        target += extension_of(source)
    return target
