"""A downloaded folder archive, read entry by entry, and nothing of it taken unchecked.

The server's ``GET …/folders/download?path=<folder>`` (docs/teamvault-api.md §5.3) answers a zip
of every live file under the folder, its entry names relative to the folder's parent
(``team/people/ada.md`` of folder ``team/people`` is ``people/ada.md``). The zip arrives in a
temp file (``sync.py`` streams it there); here it is read, and only what the listing vouches
for comes out:

- an entry is taken only for a note the caller wants, found by its expected name; anything
  else — a file the listing does not know, a name that climbs out of the folder, a
  duplicate, a directory — is skipped;
- its declared size must not pass the note's listed size, its bytes are read no further than
  that, and their SHA-256 must be the listing's ``contentHash``; a mismatch, an unsupported
  method, encryption or a broken entry leaves the note to be fetched on its own;
- the archive as a whole is refused (:class:`ArchiveRefused`) when its end record is missing,
  its zip64 end record is not the one ``zipfile`` reads (just before the locator) or not where
  the locator points, it says it holds more entries than the folder can have, its central directory is larger
  than such entries need, or its entries would come to more than ``max_total`` bytes (the
  cache's bound). These are the zip bombs: a few kilobytes that claim millions of entries or
  gigabytes.

So memory holds the central directory (bounded by the entry count) and one entry at a time;
the disk holds the archive, no more than the download's own limit.
"""

from __future__ import annotations

import hashlib
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile

#: Entries an archive may hold beyond the files and folders listed: files created since the listing.
SLACK_ENTRIES = 64
#: Central directory bytes an entry may take beyond its name (46 fixed, extra fields: zip64, timestamps).
CENTRAL_ENTRY_BYTES = 46 + 256

_END = b"PK\x05\x06"
_END64_LOCATOR = b"PK\x06\x07"
_END64 = b"PK\x06\x06"
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


class ArchiveRefused(Exception):
    """The archive is not read at all; the message says why (for the log)."""


@dataclass
class Expected:
    """What the listing says the archive of ``folder`` holds, and the notes wanted from it."""

    folder: str
    #: Live files of every type under the folder, and its subfolders (an archiver may add an entry for each).
    files: int
    folders: int
    #: Entry name (relative to the folder's parent) → the note wanted under it.
    wanted: dict[str, VaultFile] = field(default_factory=dict)
    #: Bytes of every entry name under the folder, for the central directory's bound.
    name_bytes: int = 0

    @property
    def max_entries(self) -> int:
        return self.files + self.folders + SLACK_ENTRIES

    @property
    def max_directory_bytes(self) -> int:
        return self.name_bytes + self.max_entries * CENTRAL_ENTRY_BYTES


def entry_name(folder: str, path: str) -> str:
    """The name ``path`` has in the archive of ``folder``: relative to the folder's parent."""
    parent = folder.rpartition("/")[0]
    return path[len(parent) + 1 :] if parent else path


@dataclass
class Skipped:
    """Why wanted notes were not taken from an archive (counted for the log and the tests)."""

    absent: int = 0  # the archive has no entry for it
    oversize: int = 0  # its entry declares more bytes than the listing's size
    mismatch: int = 0  # its bytes are not the listed contentHash
    unreadable: int = 0  # a broken entry, an unsupported method, encryption
    unknown: int = 0  # entries no wanted note has: other files, new ones, escaping names, duplicates

    def total(self) -> int:
        return self.absent + self.oversize + self.mismatch + self.unreadable


def verified_entries(
    spool: IO[bytes], expected: Expected, *, max_total: int, skipped: Skipped
) -> Iterator[tuple[VaultFile, bytes]]:
    """Each wanted note whose entry checks out, with its bytes; what is not taken is counted in ``skipped``.

    Raises :class:`ArchiveRefused` before reading an entry when the archive as a whole is unfit.
    """
    count, directory_bytes = _end_record(spool)
    if count > expected.max_entries:
        raise ArchiveRefused(
            f"it says it holds {count:,} entries; the folder has {expected.files:,} files in {expected.folders:,} "
            "folders"
        )
    if directory_bytes > expected.max_directory_bytes:
        raise ArchiveRefused(f"its central directory is {directory_bytes:,} bytes, more than {count:,} entries need")
    spool.seek(0)
    try:
        archive = zipfile.ZipFile(spool)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as error:
        raise ArchiveRefused(f"it is not a readable zip ({error})") from None
    with archive:
        declared = sum(info.file_size for info in archive.infolist())
        if declared > max_total:
            raise ArchiveRefused(f"its entries would come to {declared:,} bytes, more than the {max_total:,} allowed")
        chosen: dict[str, zipfile.ZipInfo] = {}
        for info in archive.infolist():
            if info.filename in expected.wanted and info.filename not in chosen:
                chosen[info.filename] = info
            else:
                skipped.unknown += 1
        skipped.absent += len(expected.wanted) - len(chosen)
        for name, info in chosen.items():
            file = expected.wanted[name]
            data = _entry(archive, info, file, skipped)
            if data is not None:
                yield file, data


def _entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, file: VaultFile, skipped: Skipped) -> bytes | None:
    """The entry's bytes if they are the note's: declared and read within its listed size, with its hash."""
    if info.flag_bits & 0x1 or info.compress_type not in _METHODS or info.is_dir():
        skipped.unreadable += 1
        return None
    limit = file.size if file.size is not None else info.file_size
    if info.file_size > limit:
        skipped.oversize += 1
        return None
    try:
        with archive.open(info) as entry:
            data = entry.read(limit + 1)  # zipfile stops at the declared size and checks the CRC at the end
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError, RuntimeError):
        skipped.unreadable += 1
        return None
    if len(data) > limit:
        skipped.oversize += 1
        return None
    if hashlib.sha256(data).hexdigest() != file.content_hash:
        skipped.mismatch += 1
        return None
    return data


def _end_record(spool: IO[bytes]) -> tuple[int, int]:
    """(entries, central directory bytes) from the zip's end record (zip64's when it has one).

    Read before ``zipfile`` parses the central directory, so that a claim of millions of
    entries is refused without building an object per entry. The records read are the ones
    ``zipfile`` reads: the last end record in the final 64 KiB (and 22 bytes), and the zip64 end
    record just before its locator (``zipfile._EndRecData64``), which must also be where the
    locator says: an archive whose locator points at a small decoy elsewhere is refused.
    """
    end = spool.seek(0, 2)
    tail_start = max(0, end - (22 + (1 << 16)))  # the record, after a comment of at most 64 KiB
    spool.seek(tail_start)
    tail = spool.read()
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < 22:
        raise ArchiveRefused("it has no zip end record (cut short, or not a zip)")
    _, _, _, _, count, size, _, _ = struct.unpack("<4s4H2LH", tail[at : at + 22])
    locator = tail_start + at - 20
    if locator < 0:
        return count, size
    spool.seek(locator)
    found = spool.read(20)
    if found[:4] != _END64_LOCATOR:
        return count, size
    (offset,) = struct.unpack("<Q", found[8:16])
    record_at = locator - 56  # zipfile assumes no zip64 extensible data, and so do we
    if offset > end - 56 or record_at < 0:
        raise ArchiveRefused("its zip64 end record is out of place")
    if offset != record_at:
        raise ArchiveRefused(
            f"its zip64 end record is not where its locator points (at {offset:,}; zipfile would read {record_at:,})"
        )
    spool.seek(record_at)
    record = spool.read(56)
    if record[:4] != _END64:
        raise ArchiveRefused("its zip64 end record is missing")
    count, size = struct.unpack("<2Q", record[32:48])
    return count, size
