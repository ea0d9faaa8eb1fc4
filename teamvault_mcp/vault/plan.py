"""What a cold sync fetches how: folder archives where they pay, single notes elsewhere. Pure planning.

One listing gives every file's path, size and ``contentHash``. :func:`plan` groups the notes to
fetch by folder: a folder comes as one archive (``GET …/folders/download``, §5.3) when at least
:data:`ARCHIVE_MIN_NOTES` of its notes are wanted and they are at least :data:`ARCHIVE_MIN_SHARE`
of the bytes the archive brings (it holds every live file under the folder: images, notes
already cached); otherwise its subfolders are looked at the same way, and what is left comes
one note at a time. There is no archive of the whole vault: the notes at its root always come
one by one, and so does a note without a listed hash (its entry could not be checked).
``sync.py`` runs the plan.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from teamvault_mcp.vault.archive import Expected, entry_name
from teamvault_mcp.vault.cache import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile

#: A folder comes as one archive when at least this many of its notes are wanted (bench/sync_bench.py:
#: at 40 ms round trip an archive of 8 notes takes about as long as 8 notes on 8 connections; below,
#: the single downloads win, and on loopback they win up to about 16).
ARCHIVE_MIN_NOTES = 8
#: ... and they are at least this share of the bytes the archive holds (the rest is images, cached notes).
ARCHIVE_MIN_SHARE = 0.5


@dataclass(frozen=True)
class ArchiveJob:
    folder: str
    expected: Expected
    listed_bytes: int  # every file under the folder, as listed: what the archive brings

    @property
    def notes(self) -> list[VaultFile]:
        return list(self.expected.wanted.values())

    @property
    def max_download(self) -> int:
        """The most bytes taken for it: twice what is listed (files can grow meanwhile), and the zip's own."""
        return 2 * self.listed_bytes + 1024 * self.expected.max_entries + (1 << 20)


@dataclass(frozen=True)
class SingleJob:
    note: VaultFile

    @property
    def notes(self) -> list[VaultFile]:
        return [self.note]


@dataclass
class _Folder:
    files: int = 0
    bytes: int = 0
    name_bytes: int = 0
    folders: int = 0
    wanted: list[VaultFile] = field(default_factory=list)
    wanted_bytes: int = 0


def plan(
    listing: Sequence[VaultFile],
    wanted: Sequence[VaultFile],
    *,
    scope: str | None = None,
    archives: bool = True,
    max_archive_bytes: int = DEFAULT_MAX_BYTES,
) -> list[ArchiveJob | SingleJob]:
    """The jobs that fetch ``wanted``: archives of folders where they pay, largest first, then single notes.

    ``listing`` is every live file the listing gave (all types), under ``scope`` (the listing's
    prefix, None: the whole vault): a folder is archived only if all of it was listed.
    """
    if not archives:
        return [SingleJob(note) for note in wanted]
    folders: dict[str, _Folder] = defaultdict(_Folder)
    for file in listing:
        for folder in _ancestors(file.path):
            stats = folders[folder]
            stats.files += 1
            stats.bytes += file.size or 0
            stats.name_bytes += len(entry_name(folder, file.path).encode())
    for folder in list(folders):
        for above in _ancestors(folder + "/"):
            if above != folder:
                folders[above].folders += 1
    singles: list[VaultFile] = []
    children: dict[str, set[str]] = defaultdict(set)
    direct: dict[str, list[VaultFile]] = defaultdict(list)
    for note in wanted:
        chain = _ancestors(note.path)
        if note.content_hash is None:  # an archive entry could not be checked: it comes alone
            singles.append(note)
            continue
        for folder in chain:
            folders[folder].wanted.append(note)
            folders[folder].wanted_bytes += note.size or 0
        for upper, lower in zip(["", *chain], chain, strict=False):
            children[upper].add(lower)
        direct[chain[-1] if chain else ""].append(note)

    jobs: list[ArchiveJob] = []

    def visit(folder: str) -> None:
        stats = folders[folder] if folder else None
        in_scope = scope is None or (folder + "/").startswith(scope)
        if stats is not None and in_scope and _worth_an_archive(stats, max_archive_bytes):
            expected = Expected(folder, stats.files, stats.folders, name_bytes=stats.name_bytes)
            for note in stats.wanted:
                expected.wanted.setdefault(entry_name(folder, note.path), note)
            jobs.append(ArchiveJob(folder, expected, stats.bytes))
            return
        for child in sorted(children[folder]):
            visit(child)
        singles.extend(direct[folder])

    visit("")
    jobs.sort(key=lambda job: -job.listed_bytes)
    return [*jobs, *(SingleJob(note) for note in singles)]


def _worth_an_archive(stats: _Folder, max_bytes: int) -> bool:
    return (
        len(stats.wanted) >= ARCHIVE_MIN_NOTES
        and stats.wanted_bytes >= ARCHIVE_MIN_SHARE * stats.bytes
        and stats.bytes <= max_bytes
    )


def _ancestors(path: str) -> list[str]:
    """The folders above ``path``, outermost first: ``a/b/c.md`` → ``["a", "a/b"]``."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: depth + 1]) for depth in range(len(parts))]
