"""Links kept pointing at a note that moves: the rewrite of one link, and of one note's links. Pure.

:func:`rewrite_link` writes a link anew so that it names another file, changing only its target:
the alias, heading, block, the ``!`` of an embed, a Markdown link's text and title, a table's
escaped ``\\|`` all stay as written. The new target is written in the link's own style:

- a wikilink with a bare name stays bare while that name is unique in the vault, otherwise
  it gains the full path; one with a folder part gets the full path; one with ``./``/``../``
  stays relative; ``.md`` is written if it was;
- a Markdown link gets the path relative to the linking note's folder (from the vault's root
  if it started with ``/``), percent-encoded where the path needs it (spaces, ``#``, ``%``,
  brackets …), non-ASCII letters encoded only if the link had encoded ones; ``<…>`` stays;
- a front matter link is quoted as it was (``"`` or ``'``).

Whatever the style gives is checked by resolving it again; if it would resolve elsewhere, the
full path is written instead. A name that a wikilink cannot hold (``#``, ``|``, ``[[``, ``]]``)
is a :class:`~teamvault_mcp.errors.ToolInputError`.

:func:`rewrite_note_links` applies this to the links of one note that resolved to the moved note
(or, for the moved note itself, to each link the move would break), and to nothing else: not
links in code, not links that resolved elsewhere, not one other byte. It also reports links that
resolved elsewhere (or nowhere) and will resolve to the moved note at its new path: they are
left as they are, for the caller to show.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from teamvault_mcp.errors import Suggest, ToolInputError
from teamvault_mcp.text.frontmatter import FrontMatterError
from teamvault_mcp.text.links import MARKDOWN_EXTENSION, Link, parse_links
from teamvault_mcp.text.prose import NoteText
from teamvault_mcp.text.resolution import VaultPaths, as_vault

#: Characters a Markdown destination keeps as they are: what a path needs, unreserved and sub-delimiters.
_SAFE_IN_DESTINATION = "/!$&'*+,;=:@-._~"
_ENCODED_NON_ASCII = re.compile(r"%[89A-Fa-f][0-9A-Fa-f]")
_NOT_IN_WIKILINK = ("#", "|", "[[", "]]", "\n", "\r")


@dataclass(frozen=True)
class LinkChange:
    """One link rewritten: where it was, and its text before and after."""

    link: Link
    new: str

    @property
    def line(self) -> int:
        return self.link.line


@dataclass(frozen=True)
class Relinked:
    """A note's text with its links rewritten; ``text`` is the input when ``changes`` is empty.

    ``captured``: links left alone that resolved elsewhere (or nowhere) and will resolve to the moved
    note at its new path.
    """

    text: str
    changes: tuple[LinkChange, ...]
    captured: tuple[Link, ...]


def rewrite_link(link: Link, new_target_path: str, vault_paths: VaultPaths | Collection[str], source_path: str) -> str:
    """The text of ``link``, in the note at ``source_path``, made to resolve to ``new_target_path``.

    ``vault_paths`` are the vault's paths as they are once the move is done (``new_target_path`` among
    them); ``source_path`` is where the linking note is then. A front matter link's text is the YAML
    scalar, quotes included.
    """
    vault = as_vault(vault_paths)
    if new_target_path not in vault:
        vault = VaultPaths(vault.paths | {new_target_path})
    if link.syntax == "markdown":
        written = _markdown_target(link, new_target_path, vault, source_path)
    else:
        written = _wiki_target(link, new_target_path, vault, source_path)
    text = link.raw[: link.target_start] + written + link.raw[link.target_end :]
    return _yaml_quoted(text, link.quote) if link.in_front_matter else text


def rewrite_note_links(
    text: str | NoteText,
    source_path: str,
    old_path: str,
    new_path: str,
    vault_paths: VaultPaths | Collection[str],
) -> Relinked:
    """The note at ``source_path`` with its links kept right when ``old_path`` moves to ``new_path``.

    ``vault_paths`` are the vault's paths before the move. In another note, exactly the links that
    resolved to ``old_path`` are rewritten. In the moved note itself (``source_path == old_path``),
    each link that would resolve differently from ``new_path``'s folder is rewritten to its old
    target (its links to itself to ``new_path``).
    """
    note = text if isinstance(text, NoteText) else NoteText(text, source_path)
    before = as_vault(vault_paths)
    after = before.moved(old_path, new_path)
    moving_itself = source_path == old_path
    new_source = new_path if moving_itself else source_path
    changes: list[LinkChange] = []
    captured: list[Link] = []
    for link in parse_links(note, limit=None):  # a move misses none
        if not link.target:
            continue  # [[#Heading]]: the note's own heading, wherever the note is
        was = before.resolve_link(link, source_path)
        now = after.resolve_link(link, new_source)
        if was == old_path:
            wanted = new_path
        elif moving_itself and was is not None and now != was:
            wanted = was  # a link of the moved note that its new folder would turn elsewhere
        else:
            if now == new_path and was != new_path:
                captured.append(link)
            continue
        new = rewrite_link(link, wanted, after, new_source)
        if new != _as_written(note, link):
            changes.append(LinkChange(link, new))
    if not changes:
        return Relinked(note.text, (), tuple(captured))
    relinked = _applied(note.text, changes)
    if any(change.link.in_front_matter for change in changes):
        _check_front_matter(note, relinked, changes)
    return Relinked(relinked, tuple(changes), tuple(captured))


# -- the new target, in the link's style -------------------------------------------------------------------


def _wiki_target(link: Link, new_path: str, vault: VaultPaths, source_path: str) -> str:
    written = link.target
    keep_extension = written.lower().endswith(MARKDOWN_EXTENSION)
    full = _without_md(new_path, keep_extension)
    folder = posixpath.dirname(source_path)
    if written.startswith(("./", "../")) or written in (".", ".."):
        relative = posixpath.relpath(new_path, folder or ".")
        candidate = _without_md(relative if relative.startswith("../") else "./" + relative, keep_extension)
    elif written.startswith("/"):
        candidate = "/" + full
    elif "/" in written:
        candidate = full
    else:
        name = posixpath.basename(new_path)
        candidate = _without_md(name, keep_extension) if len(vault.named(name)) == 1 else full
    if vault.resolve(candidate, source_path) != new_path:
        candidate = full
    if vault.resolve(candidate, source_path) != new_path:
        candidate = new_path  # a file named like the note without .md: only the extension tells them apart
    unsafe = [piece for piece in _NOT_IN_WIKILINK if piece in candidate]
    if unsafe:
        raise ToolInputError(
            f"{new_path} cannot be named by a [[wikilink]]: its path holds {' and '.join(map(repr, unsafe))}, "
            f"which a wikilink reads as a heading, an alias or the link's end (the link {link.raw!r} on line "
            f"{link.line} of {source_path} points at it). Choose a name without # | [[ ]], or keep the old name."
        )
    return candidate


def _markdown_target(link: Link, new_path: str, vault: VaultPaths, source_path: str) -> str:
    written = link.raw[link.target_start : link.target_end]
    last = link.target.rpartition("/")[2]
    keep_extension = "." in last or not new_path.lower().endswith(MARKDOWN_EXTENSION)
    if link.target.startswith("/"):
        path = "/" + new_path
    else:
        path = posixpath.relpath(new_path, posixpath.dirname(source_path) or ".")
    candidate = _without_md(path, keep_extension)
    if vault.resolve(candidate, source_path, markdown=True) != new_path:
        candidate = path
    if link.raw[link.target_start - 1 : link.target_start] == "<":
        return candidate.replace("<", "%3C").replace(">", "%3E")
    return _percent_encoded(candidate, keep_non_ascii=not _ENCODED_NON_ASCII.search(written))


def _percent_encoded(path: str, *, keep_non_ascii: bool) -> str:
    """``path`` with each character a bare Markdown destination cannot hold as it is percent-encoded (UTF-8)."""
    return "".join(
        char
        if (char.isascii() and (char.isalnum() or char in _SAFE_IN_DESTINATION))
        or (keep_non_ascii and not char.isascii() and char.isprintable() and not char.isspace())
        else quote(char, safe="")
        for char in path
    )


def _without_md(path: str, keep_extension: bool) -> str:
    if keep_extension or not path.lower().endswith(MARKDOWN_EXTENSION):
        return path
    return path[: -len(MARKDOWN_EXTENSION)]


# -- applying ------------------------------------------------------------------------------------------------


def _as_written(note: NoteText, link: Link) -> str:
    """The link's text as the note holds it (a front matter link: the quoted scalar)."""
    if link.in_front_matter:
        return note.text[link.start - 1 : link.end + 1]
    return note.text[link.start : link.end]


def _applied(text: str, changes: list[LinkChange]) -> str:
    pieces: list[str] = []
    done = 0
    for change in sorted(changes, key=lambda change: change.link.start):
        start, end = change.link.start, change.link.end
        if change.link.in_front_matter:  # the scalar's quotes are part of what is replaced
            start, end = start - 1, end + 1
        pieces += [text[done:start], change.new]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _yaml_quoted(value: str, quote_char: str) -> str:
    if quote_char == "'":
        return "'" + value.replace("'", "''") + "'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _check_front_matter(note: NoteText, relinked: str, changes: list[LinkChange]) -> None:
    """The rewritten front matter must read as the old one with the changed links replaced, and nothing else."""
    replaced = {change.link.raw: _unquoted(change.new) for change in changes if change.link.in_front_matter}
    expected = _replaced(note.fields, replaced)
    written = NoteText(relinked, note.path)
    if written.front_matter_problem or written.fields != expected:
        raise FrontMatterError(
            f"The links in the front matter of {note.path} cannot be rewritten safely: the front matter would "
            "not read back as intended. Nothing was written",
            Suggest(("edit_note",), "; change those links with edit_note.", "."),
        )


def _unquoted(scalar: str) -> str:
    inner = scalar[1:-1]
    if scalar.startswith("'"):
        return inner.replace("''", "'")
    return inner.replace('\\"', '"').replace("\\\\", "\\")


def _replaced(value: Any, replaced: dict[str, str]) -> Any:
    if isinstance(value, str):
        return replaced.get(value, value)
    if isinstance(value, list):
        return [_replaced(item, replaced) for item in value]
    if isinstance(value, dict):
        return {key: _replaced(item, replaced) for key, item in value.items()}
    return value
