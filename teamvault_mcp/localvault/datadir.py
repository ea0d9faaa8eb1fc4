"""The local vault's data directory made private and tidy at start, and the lock that says a vault uses it.

The database holds note paths, key prefixes and key hashes; the blobs hold the notes.
At every start, even when the directory already existed (made by an earlier version,
or by hand with a loose umask), the directory and ``blobs/`` become 0700 and the
vault's own files 0600 — the database with its ``-wal`` and ``-shm`` files, the key
file, every blob. Files that are not the vault's are left alone, and links are not
followed.

A write's temp file (``.incoming-*``) that is still there at start was left by a crash
mid-write; it is removed — but only when no other vault runs on the directory (a vault
holds a shared ``flock`` on ``.lock`` while it runs), since a running one may be
writing it right now.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
from pathlib import Path

from teamvault_mcp.localvault.blobs import INCOMING_PREFIX
from teamvault_mcp.localvault.database import DATABASE_FILE

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
#: The vault's own files at the top of the data directory (SQLite may leave a -journal after a crash).
OWN_FILES = (
    DATABASE_FILE,
    DATABASE_FILE + "-wal",
    DATABASE_FILE + "-shm",
    DATABASE_FILE + "-journal",
    "api-key",
    LOCK_FILE,
)


class DataDirLock:
    """A shared lock on ``DATA/.lock`` for as long as a vault runs on the directory."""

    def __init__(self, data_dir: Path) -> None:
        self._handle = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.alone = True
        except BlockingIOError:
            self.alone = False  # another vault runs on this directory
        fcntl.flock(self._handle, fcntl.LOCK_SH)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._handle)


def open_data_dir(data_dir: Path) -> DataDirLock:
    """Create or open the data directory: private modes, leftovers removed, and the lock held."""
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    _make_private(data_dir.resolve(), 0o700)  # the directory named, even through a link
    lock = DataDirLock(data_dir)
    for name in OWN_FILES:
        _make_private(data_dir / name, 0o600)
    blobs = data_dir / "blobs"
    if blobs.is_dir() and not blobs.is_symlink():
        removed = _tidy_blobs(blobs, remove_leftovers=lock.alone)
        if removed:
            log.info("removed %d temp file(s) left by an interrupted write in %s", removed, blobs)
    return lock


def _tidy_blobs(directory: Path, *, remove_leftovers: bool) -> int:
    """Blob directories 0700 and blob files 0600, recursively; returns how many leftovers were removed."""
    _make_private(directory, 0o700)
    removed = 0
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                removed += _tidy_blobs(Path(entry.path), remove_leftovers=remove_leftovers)
            elif entry.is_file(follow_symlinks=False):
                if entry.name.startswith(INCOMING_PREFIX):
                    if remove_leftovers:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(entry.path)
                            removed += 1
                    continue
                _make_private(Path(entry.path), 0o600, entry.stat(follow_symlinks=False).st_mode)
    return removed


def _make_private(path: Path, mode: int, current: int | None = None) -> None:
    """``chmod`` ``path`` to ``mode`` if it exists, is no link and has another mode; warn if that fails."""
    try:
        if current is None:
            current = os.lstat(path).st_mode
        if stat.S_ISLNK(current) or stat.S_IMODE(current) == mode:
            return
        os.chmod(path, mode)
    except FileNotFoundError:
        return
    except OSError as error:
        log.warning("cannot make %s private (mode %o): %s", path, mode, error)
