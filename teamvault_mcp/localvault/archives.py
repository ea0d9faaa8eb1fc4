"""Folder archives: ``GET /api/projects/:pid/folders/download?path=<folder>`` (teamvault-api.md §5.3).

:func:`folder_archive` makes the checks that come before the answer, in the real
server's order — ``missing_path`` (no ``path``, or an empty one), the stored gate's
``invalid_path``, ``not_found`` for a folder without live files,
``files_missing_on_disk`` when not one of their blobs is there — and returns the
archive to send. :meth:`FolderArchive.write_to` then writes the zip as it reads the
blobs: each entry is deflated at level 1 (as the real server does: throughput over
ratio) into a data-descriptor entry, which needs no seek, so the standard library's
``zipfile`` writes straight to the chunked body (streaming.py). Memory holds one chunk,
zlib's state, the listing and the central directory (about 1 KB per entry together),
never the archive: a 5,000-note folder costs about 5 MB, whatever the notes' size.

Entry names are relative to the folder's parent (``team/people/ada.md`` of folder
``team/people`` is ``people/ada.md``), so the archive unpacks into a directory named
after the folder; nested folders are included, tombstones are not, and a file whose
blob is missing is skipped (logged as the anomaly it is). An entry's time is the
note's ``updatedAt`` in UTC. The archive is a snapshot of the listing made before
the first byte: blobs are content-addressed and never change, so a note written
meanwhile keeps the content it had then.

The folder is the whole path as the gate stores it (a trailing ``/`` goes): the
gate refuses ``.`` and ``/``, so there is no archive of the whole vault, as on the
real server; a client downloads each top-level folder and reads the root's own
notes one by one.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import NamedTuple, Protocol
from urllib.parse import quote

from teamvault_mcp.localvault.records import VaultError, gate, not_found
from teamvault_mcp.localvault.store import Store
from teamvault_mcp.localvault.streaming import CHUNK_SIZE, StreamBroken

log = logging.getLogger(__name__)

#: zlib level 1, as the real server's archiver: vault folders hold many images, already compressed.
COMPRESS_LEVEL = 1
#: The range of times a zip entry can hold (MS-DOS date and time fields).
_EARLIEST, _LATEST = (1980, 1, 1, 0, 0, 0), (2107, 12, 31, 23, 59, 58)
#: Left alone by JavaScript's encodeURIComponent, which the real server uses for ``filename*``.
_URI_COMPONENT_SAFE = "!'()*"


class Sink(Protocol):
    """Where an archive is written: a chunked body (streaming.py), or a file."""

    def write(self, data: bytes, /) -> int: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class ArchiveEntry(NamedTuple):
    """A live file of the folder, as listed (a row of :meth:`Store.contents_under`)."""

    path: str
    content_hash: str
    updated_at: str  # ISO 8601, UTC


@dataclass(frozen=True)
class FolderArchive:
    """The zip of one folder's live files, as listed before the answer starts."""

    folder: str
    entries: list[ArchiveEntry]
    blob_path: Callable[[str], Path]  # a content hash's blob (Store.blob_path)

    def entry_name(self, path: str) -> str:
        """``path`` relative to the folder's parent: ``team/people/ada.md`` of ``team/people`` is ``people/ada.md``."""
        parent = self.folder.rpartition("/")[0]
        return path[len(parent) + 1 :] if parent else path

    @property
    def content_disposition(self) -> str:
        """``attachment``, with the folder's last segment as the file name (RFC 6266 ``filename*``)."""
        name = self.folder.rsplit("/", 1)[-1] + ".zip"
        return f"attachment; filename=\"folder.zip\"; filename*=UTF-8''{quote(name, safe=_URI_COMPONENT_SAFE)}"

    def write_to(self, out: Sink) -> int:
        """Write the zip to ``out`` as it is made; return how many entries it holds.

        A blob that went missing since the listing is skipped. :class:`StreamBroken`
        (the client went away, the vault is stopping) ends it where it is.
        """
        archive = zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESS_LEVEL)
        written = 0
        try:
            for entry in self.entries:
                try:
                    source = self.blob_path(entry.content_hash).open("rb")
                except FileNotFoundError:
                    log.error("folder archive of %s: the blob of %s is gone; skipped", self.folder, entry.path)
                    continue
                with source:
                    info = _entry_info(self.entry_name(entry.path), entry.updated_at, source.fileno())
                    with archive.open(info, "w") as target:
                        shutil.copyfileobj(source, target, CHUNK_SIZE)
                written += 1
            archive.close()  # the central directory
        except StreamBroken as broken:
            total = len(self.entries)
            log.info("folder archive of %s ended after %d of %d files: %s", self.folder, written, total, broken)
            raise
        return written


def folder_archive(store: Store, project_id: str, raw_path: str | None) -> FolderArchive:
    """The archive of folder ``raw_path``, or the VaultError the real server answers instead."""
    if not raw_path:
        raise VaultError(400, "missing_path", "No folder given")
    folder = gate(raw_path, incoming=False)  # 400 invalid_path with the gate's own message
    listed = store.contents_under(project_id, folder)
    if not listed:
        raise not_found("Folder is empty or not found")
    entries, missing = [], []
    for entry in map(ArchiveEntry._make, listed):
        if store.blob_path(entry.content_hash).is_file():
            entries.append(entry)
        else:
            missing.append(entry.path)
    del listed  # the rows are the entries' fields: hold them once
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        log.error("folder archive of %s: %d files have no blob on disk, left out: %s", folder, len(missing), shown)
    if not entries:
        raise not_found("The folder's files are missing from storage", "files_missing_on_disk")
    return FolderArchive(folder, entries, store.blob_path)


def _entry_info(name: str, updated_at: str, handle: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, _zip_time(updated_at))
    info.compress_type = zipfile.ZIP_DEFLATED
    # The level has a public name only from Python 3.13 on; before, zipfile itself sets the private one.
    setattr(info, "compress_level" if sys.version_info >= (3, 13) else "_compresslevel", COMPRESS_LEVEL)
    # The size on disk, so that zipfile chooses ZIP64 for a blob of 4 GiB or more before it writes the header.
    info.file_size = os.fstat(handle).st_size
    return info


def _zip_time(updated_at: str) -> tuple[int, int, int, int, int, int]:
    """``updatedAt`` as a zip entry's (UTC) date and time, kept within what the format can hold."""
    moment = datetime.fromisoformat(updated_at)
    fields = (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)
    return min(max(fields, _EARLIEST), _LATEST)
