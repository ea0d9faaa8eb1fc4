"""Obsidian's link model, its resolution: the file each link resolves to, in a vault's paths. Pure.

Resolution (:meth:`VaultPaths.resolve`): a target without an extension means ``.md`` (the
target as written is tried first: ``[[v1.2]]`` is ``v1.2`` if such a file exists, else
``v1.2.md``); paths compare case-insensitively (NFC, case folded), an exact-case match
winning over another spelling. In order, the first that names a file wins:

1. Markdown links, and wikilinks starting ``./`` or ``../``: the path relative to the
   linking note's folder (``../`` may not leave the vault). A ``./``/``../`` wikilink stops here.
2. The path from the vault's root (a leading ``/`` says so, and stops the search here).
3. The path relative to the linking note's folder: for a bare name, the note in the same folder.
4. Any file whose path ends with the target, segment by segment (a bare name matches a
   file of that name anywhere; ``[[people/Ada]]`` matches ``team/people/Ada.md``). Among
   several, Obsidian's choice is not documented; ours: the fewest folders deep, then
   alphabetically by path (case folded), so the answer never depends on listing order.

So with ``Ada.md``, ``people/Ada.md`` and ``team/people/Ada.md``, ``[[Ada]]`` is ``Ada.md``
from anywhere (step 2), ``[[people/Ada]]`` is ``people/Ada.md`` (step 2) and, without the
root ``Ada.md``, ``[[Ada]]`` from ``team/people/x.md`` is ``team/people/Ada.md`` (step 3) and
from ``notes/x.md`` is ``people/Ada.md`` (step 4: fewer folders deep). Aliases in front
matter do not resolve links, as in Obsidian.

The syntax (what a note's links are: :class:`~teamvault_mcp.text.links.Link`) is ``links.py``'s.
"""

from __future__ import annotations

import difflib
import posixpath
import re
import unicodedata
from collections.abc import Collection, Iterable, Iterator
from typing import TypeVar

from teamvault_mcp.text.links import MARKDOWN_EXTENSION, Link

K = TypeVar("K")
V = TypeVar("V")

#: Answers one :class:`VaultPaths` keeps of each kind (resolutions, alternatives, closest names): they save work
#: while a vault's links are resolved; the resolved links themselves are kept by ``noteindex.py``.
ANSWERS_KEPT = 100_000

_NAME_NOISE = re.compile(r"[\W_]+")


def path_key(path: str) -> str:
    """The form two spellings of a path share when Obsidian takes them for the same file."""
    if path.isascii():
        return path.lower()  # the same as below, for most paths, and many times faster
    return unicodedata.normalize("NFC", path).casefold()


def name_key(target: str) -> str | None:
    """The last segment of a link target as resolution compares file names (:func:`path_key`): only a file whose
    name is it, or it with ``.md``, can be where the link resolves, or one of its alternatives. None when the
    target ends in ``.``, ``..`` or ``/`` (normalising it changes its last segment): any file may matter."""
    last = path_key(target).rpartition("/")[2]
    return None if last in ("", ".", "..") else last


def names_of(paths: Iterable[str]) -> set[str]:
    """The :func:`name_key` values of the link targets these files could be where they resolve."""
    found: set[str] = set()
    for path in paths:
        last = path_key(path).rpartition("/")[2]
        found.add(last)
        if last.endswith(MARKDOWN_EXTENSION):
            found.add(last[: -len(MARKDOWN_EXTENSION)])
    return found


class VaultPaths:
    """The vault's file paths, indexed once for link resolution (and :func:`closest_note`).

    Answers are cached per instance: build a new one when the vault's paths change.
    """

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = frozenset(paths)
        self._by_key: dict[str, list[str]] = {}
        self._by_name: dict[str, list[tuple[str, str]]] = {}  # name key → (path key, path), best first
        for path in sorted(self.paths, key=_depth_then_name):
            key = path_key(path)
            self._by_key.setdefault(key, []).append(path)
            self._by_name.setdefault(key.rpartition("/")[2], []).append((key, path))
        self._cache: dict[tuple[str, str, bool], str | None] = {}
        self._alternatives: dict[tuple[str, str, bool], tuple[str, ...]] = {}
        self._by_target: dict[str, tuple[str | None, str | None]] = {}
        self._names: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None
        self._closest: dict[str, str | None] = {}
        self._moved: dict[tuple[str, str], VaultPaths] = {}

    def __contains__(self, path: object) -> bool:
        return path in self.paths

    def __len__(self) -> int:
        return len(self.paths)

    def changed(self, paths: Iterable[str]) -> VaultPaths:
        """The vault with ``paths`` instead of these: a new instance that keeps the answers a file added or
        removed cannot change (those of link targets of another name: see :func:`name_key`)."""
        after = VaultPaths(paths)
        touched = names_of(self.paths ^ after.paths)

        def kept(target: str) -> bool:
            key = name_key(target)
            return key is not None and key not in touched

        after._cache = {key: found for key, found in self._cache.items() if kept(key[0])}
        after._by_target = {target: found for target, found in self._by_target.items() if kept(target)}
        after._alternatives = {key: found for key, found in self._alternatives.items() if kept(key[0])}
        return after

    def moved(self, old_path: str, new_path: str) -> VaultPaths:
        """The paths after ``old_path`` became ``new_path`` (one instance per move, so its answers are cached too)."""
        key = (old_path, new_path)
        if key not in self._moved:
            self._moved[key] = self.changed((self.paths - {old_path}) | {new_path})
        return self._moved[key]

    def named(self, name: str) -> list[str]:
        """The files whose name (last segment, extension included) is ``name``, ignoring case."""
        return [path for _, path in self._by_name.get(path_key(name), ())]

    def resolve_link(self, link: Link, source_path: str) -> str | None:
        """The file ``link`` (in the note at ``source_path``) resolves to; None when it resolves to none."""
        return self.resolve(link.target, source_path, markdown=link.syntax == "markdown")

    def resolve(self, target: str, source_path: str, *, markdown: bool = False) -> str | None:
        """The file the link target ``target`` names from the note at ``source_path`` (see the module docstring)."""
        if not target:
            return source_path
        folder = source_path.rpartition("/")[0]
        key = (target, folder, markdown)
        if key in self._cache:
            return self._cache[key]
        found = _remember(self._cache, key, self._resolve(target, folder, markdown))
        return found

    def _resolve(self, target: str, folder: str, markdown: bool) -> str | None:
        absolute = target.startswith("/")
        target = target.lstrip("/")
        explicit = target in (".", "..") or target.startswith(("./", "../"))
        names = [target] if target.lower().endswith(MARKDOWN_EXTENSION) else [target, target + MARKDOWN_EXTENSION]
        if (markdown and not absolute) or explicit:
            found = self._first(folder, names)
            if found or explicit:
                return found
        from_root, by_suffix = self._anywhere(target, names)
        if from_root or absolute:
            return from_root
        return (self._first(folder, names) if folder else None) or by_suffix

    def alternatives(self, target: str, source_path: str, *, markdown: bool = False) -> list[str]:
        """The other files a link could mean: those that share the name it gives, when it names a file by name
        rather than by a path that picks one out; [] when it names one file (or none). ``resolve`` still says
        which one Obsidian takes."""
        if not target:
            return []
        key = (target, source_path.rpartition("/")[0], markdown)  # what the answer depends on: as ``resolve``
        known = self._alternatives.get(key)
        if known is None:
            known = _remember(self._alternatives, key, tuple(self._alternatives_of(target, source_path, markdown)))
        return list(known)

    def _alternatives_of(self, target: str, source_path: str, markdown: bool) -> list[str]:
        name = name_key(target)
        if name is not None and self._sharing(name) < 2:
            return []  # no two files have a name it could mean: most links
        found = self.resolve(target, source_path, markdown=markdown)
        bare = target.lstrip("/")
        if found is None or not target or target.startswith("/"):
            return []
        if bare in (".", "..") or bare.startswith(("./", "../")):
            return []  # a relative path names one file
        names = [bare] if bare.lower().endswith(MARKDOWN_EXTENSION) else [bare, bare + MARKDOWN_EXTENSION]
        if markdown and self._first(source_path.rpartition("/")[0], names) == found:
            return []  # a Markdown link's path is relative to its note: it picked that file out
        matches = self._suffix_matches(names)
        return [path for path in matches if path != found] if found in matches else []

    def _sharing(self, name: str) -> int:
        """How many files a target of this :func:`name_key` could name (its name, or its name with ``.md``)."""
        count = len(self._by_name.get(name, ()))
        return (
            count
            if name.endswith(MARKDOWN_EXTENSION)
            else count + len(self._by_name.get(name + MARKDOWN_EXTENSION, ()))
        )

    def _suffix_matches(self, names: list[str]) -> list[str]:
        """Every file whose path ends with one of ``names`` (a whole segment at least), best first."""
        return list(dict.fromkeys(self._suffix_paths(names)))

    def _suffix_paths(self, names: list[str]) -> Iterator[str]:
        """The files whose path ends with one of ``names``, best first: for each name, fewest folders deep, then
        alphabetical (the order of ``_by_name``)."""
        for name in names:
            normal = _joined("", name)
            if normal is None:
                continue
            ending = path_key(normal)
            suffix = "/" + ending
            for key, path in self._by_name.get(ending.rpartition("/")[2], ()):
                if key == ending or key.endswith(suffix):
                    yield path

    def _anywhere(self, target: str, names: list[str]) -> tuple[str | None, str | None]:
        """What ``target`` names wherever the linking note is: the path from the root, and the best suffix match."""
        found = self._by_target.get(target)
        if found is None:
            found = _remember(self._by_target, target, (self._first("", names), self._suffix_match(names)))
        return found

    def _suffix_match(self, names: list[str]) -> str | None:
        return next(self._suffix_paths(names), None)

    def _first(self, folder: str, names: list[str]) -> str | None:
        """The first of ``names``, relative to ``folder``, that is a file."""
        for name in names:
            found = self._exact(_joined(folder, name))
            if found:
                return found
        return None

    def _exact(self, path: str | None) -> str | None:
        if path is None:
            return None
        spellings = self._by_key.get(path_key(path))
        if not spellings:
            return None
        return path if path in spellings else spellings[0]

    def closest(self, name: str, *, known_only: bool = False) -> str | None:
        """:func:`closest_note` in this vault, cached per name; ``known_only``: None unless cached already."""
        wanted = path_key(_display_name(name.strip()))
        if wanted in self._closest:
            return self._closest[wanted]
        if known_only:
            return None
        return _remember(self._closest, wanted, _closest(wanted, *self.display_names()) if wanted else None)

    def closest_known(self, name: str) -> bool:
        """Whether :meth:`closest` has worked ``name`` out already (so ``known_only`` gives its answer)."""
        return path_key(_display_name(name.strip())) in self._closest

    def display_names(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Each file's name as a link shows it (a note without ``.md``), case folded → its files, best first;
        and the same with spaces and punctuation left out."""
        if self._names is None:
            names: dict[str, list[str]] = {}
            squeezed: dict[str, list[str]] = {}
            for path in sorted(self.paths, key=_depth_then_name):
                name = path_key(_display_name(path))
                names.setdefault(name, []).append(path)
                squeezed.setdefault(_NAME_NOISE.sub("", name), []).append(path)
            self._names = (names, squeezed)
        return self._names


def _remember(cache: dict[K, V], key: K, value: V) -> V:
    """``cache[key] = value``, the cache emptied first once it holds :data:`ANSWERS_KEPT` answers."""
    if len(cache) >= ANSWERS_KEPT:
        cache.clear()
    cache[key] = value
    return value


def as_vault(vault_paths: VaultPaths | Collection[str]) -> VaultPaths:
    return vault_paths if isinstance(vault_paths, VaultPaths) else VaultPaths(vault_paths)


def resolve_links(
    links: Iterable[Link], source_path: str, vault_paths: VaultPaths | Collection[str]
) -> list[tuple[Link, str | None]]:
    """Each link with the file it resolves to (None: broken)."""
    vault = as_vault(vault_paths)
    return [(link, vault.resolve_link(link, source_path)) for link in links]


def closest_note(name: str, vault_paths: VaultPaths | Collection[str]) -> str | None:
    """The file a broken link to ``name`` most likely meant; None when nothing is close.

    The same name ignoring case, spaces and punctuation (``ada-lovelace`` for ``Ada Lovelace``)
    comes first, then the most similar name (difflib's ratio, at least 0.6); the target's
    folders do not count, so a note moved to another folder is found by its name. Among files
    of that name: the fewest folders deep, then alphabetically.
    """
    return as_vault(vault_paths).closest(name)


def _closest(wanted: str, names: dict[str, list[str]], squeezed: dict[str, list[str]]) -> str | None:
    for key, index in ((wanted, names), (_NAME_NOISE.sub("", wanted), squeezed)):
        if key in index:
            return index[key][0]
    close = difflib.get_close_matches(wanted, names, n=1, cutoff=0.6)
    return names[close[0]][0] if close else None


def _display_name(path: str) -> str:
    name = path.rpartition("/")[2]
    return name[: -len(MARKDOWN_EXTENSION)] if name.lower().endswith(MARKDOWN_EXTENSION) else name


def _depth_then_name(path: str) -> tuple[int, str, str]:
    return path.count("/"), path_key(path), path


def _joined(folder: str, name: str) -> str | None:
    """``name`` relative to ``folder``, normalised; None when it leaves the vault."""
    if not (name.startswith(".") or "/." in name or "//" in name or name.endswith("/")):
        return f"{folder}/{name}" if folder else name  # nothing to normalise: most names
    joined = posixpath.normpath(posixpath.join(folder, name)) if folder else posixpath.normpath(name)
    if joined == ".." or joined.startswith("../") or joined in (".", "") or joined.startswith("/"):
        return None
    return joined
