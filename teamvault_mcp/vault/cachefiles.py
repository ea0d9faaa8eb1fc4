"""The content cache's files: opened below its root without following links, blocking or reading without bound.

Everything here works on directory descriptors (``dir_fd``), so a symlink planted as a
namespace or bucket directory is never crossed, and a FIFO, a device, a socket or a
directory where an entry belongs is seen for what it is before a byte is read. What does
not belong is removed: unlinked (which never follows a link), or, for a directory, only
when it is empty. ``cache.py`` decides what to read, keep and evict; this module only
touches the disk.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

TEMP_PREFIX = ".incoming-"
#: A temp file this old is a crashed writer's leftover (a live write takes milliseconds).
STALE_TEMP_SECONDS = 3600.0
#: Never follow a symlink, never wait for a FIFO's writer, never inherit a descriptor.
SAFE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | SAFE
_NAMESPACE = re.compile(r"[0-9a-f]{32}")
_BUCKET = re.compile(r"[0-9a-f]{2}")
_HASH = re.compile(r"[0-9a-f]{64}")


@contextlib.contextmanager
def directories(root: Path, name: str, content_hash: str, *, create: bool) -> Iterator[int | None]:
    """The entry's bucket directory, opened without following links; None if absent (and not ``create``).

    Something else where a directory belongs (a symlink, a file, a FIFO) is removed.
    """
    opened: list[int] = []
    try:
        yield _open_bucket(root, (name, content_hash[:2]), opened, create=create)
    finally:
        for handle in opened:
            os.close(handle)


def _open_bucket(root: Path, parts: tuple[str, str], opened: list[int], *, create: bool) -> int | None:
    try:
        opened.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))  # the root may be a link
        for part in parts:
            handle = _open_directory(opened[-1], part, create=create)
            if handle is None:
                return None
            opened.append(handle)
    except FileNotFoundError:
        if create:
            raise
        return None
    return opened[-1]


def _open_directory(parent: int, name: str, *, create: bool) -> int | None:
    for _ in range(2):
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=parent)
        try:
            return os.open(name, _DIRECTORY, dir_fd=parent)
        except FileNotFoundError:
            if create:
                raise
            return None
        except OSError as error:
            if error.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            log.warning("the cache's %s is not a directory (a symlink?); it is removed", name)
            remove(parent, name)
            if not create:
                return None
    raise OSError(errno.ENOTDIR, "cannot make a cache directory", name)


class Writer:
    """Writes entries of one namespace, its directories opened once for all of them (a synced folder's notes).

    Each directory is opened as :func:`directories` opens it; one removed meanwhile by another
    process's rescan is made and opened again, once per entry.
    """

    def __init__(self, root: Path, name: str) -> None:
        self._root = root
        self._name = name
        self._namespace: list[int] = []  # root, namespace
        self._buckets: dict[str, int] = {}

    def write(self, content_hash: str, data: bytes) -> None:
        for attempt in range(2):
            try:
                write_into(self._bucket(content_hash[:2]), content_hash, data)
                return
            except FileNotFoundError:  # a directory just emptied and removed by another process's rescan
                self.close()
                if attempt:
                    raise

    def _bucket(self, prefix: str) -> int:
        if not self._namespace:
            self._namespace.append(os.open(self._root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            namespace = _open_directory(self._namespace[0], self._name, create=True)
            assert namespace is not None
            self._namespace.append(namespace)
        bucket = self._buckets.get(prefix)
        if bucket is None:
            opened = _open_directory(self._namespace[1], prefix, create=True)
            assert opened is not None
            bucket = self._buckets[prefix] = opened
        return bucket

    def close(self) -> None:
        for handle in [*self._buckets.values(), *self._namespace]:
            os.close(handle)
        self._buckets.clear()
        self._namespace.clear()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_regular(bucket: int, content_hash: str, limit: int) -> tuple[bytes | None, str | None]:
    """At most ``limit`` bytes of a regular file; (None, None) when absent, (None, why) when unfit."""
    try:
        handle = os.open(content_hash, os.O_RDONLY | SAFE, dir_fd=bucket)
    except FileNotFoundError:
        return None, None
    except OSError:  # a symlink (ELOOP), a socket (ENXIO), ...: unfit; a regular file we may not read: raised
        if stat.S_ISREG(os.stat(content_hash, dir_fd=bucket, follow_symlinks=False).st_mode):
            raise
        return None, "is not a regular file"
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            return None, "is not a regular file"
        if info.st_size > limit:
            return None, f"is larger than expected ({info.st_size} bytes, at most {limit})"
        parts: list[bytes] = []
        left = info.st_size
        while left > 0:
            part = os.read(handle, left)
            if not part:
                break
            parts.append(part)
            left -= len(part)
        return b"".join(parts), None
    finally:
        os.close(handle)


def write_into(bucket: int, content_hash: str, data: bytes) -> None:
    """Write ``data`` as the entry: a private temp file renamed into place (a directory there, if empty, goes)."""
    temp = f"{TEMP_PREFIX}{secrets.token_hex(8)}"
    handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | SAFE, 0o600, dir_fd=bucket)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(handle, view) :]
        finally:
            os.close(handle)
        try:
            os.replace(temp, content_hash, src_dir_fd=bucket, dst_dir_fd=bucket)
        except OSError as error:
            if error.errno not in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                raise
            remove(bucket, content_hash)  # a directory in the entry's place: removed if empty
            os.replace(temp, content_hash, src_dir_fd=bucket, dst_dir_fd=bucket)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=bucket)
        raise


def remove(parent: int | None, name: str) -> None:
    """Remove ``name`` without following it: unlinked, or if a directory, removed when empty."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            os.rmdir(name, dir_fd=parent)
        else:
            os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        pass
    except OSError as error:
        log.warning("cannot remove %s from the cache: %s", name, error)


def remove_unless_used(root: Path, key: str, stamp: int | None) -> int | None:
    """Remove the entry, unless its mtime is later than ``stamp`` (another process read it): then that mtime."""
    name, content_hash = key.split("/")
    try:
        with directories(root, name, content_hash, create=False) as bucket:
            if bucket is None:
                return None
            if stamp is not None:
                mtime = os.stat(content_hash, dir_fd=bucket, follow_symlinks=False).st_mtime_ns
                if mtime > stamp:
                    return mtime
            remove(bucket, content_hash)
    except OSError:  # gone already, or not ours to remove: either way no longer counted
        pass
    return None


def scan(root: Path, max_entry_bytes: int) -> list[tuple[int, str, int]]:
    """(mtime, key, size) of every entry under ``root``; what does not belong is removed on the way.

    Also removed: what is not a directory where one belongs, unfit entries, a crashed writer's temp
    files, and directories left empty by evictions (an old port's folder, say).
    """
    found: list[tuple[int, str, int]] = []
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return found
    try:
        for name in _tidy_listing(top):
            if _NAMESPACE.fullmatch(name):
                _scan_directory(top, name, found, max_entry_bytes)
    finally:
        os.close(top)
    return found


def _scan_directory(parent: int, name: str, found: list[tuple[int, str, int]], max_entry_bytes: int) -> None:
    """Add the entries of a namespace (or, with ``name`` "<namespace>/<bucket>", of a bucket) to ``found``."""
    namespace, _, bucket = name.partition("/")
    try:
        handle = _open_directory(parent, bucket or namespace, create=False)
        if handle is None:
            return
        try:
            kept = False
            for item in _tidy_listing(handle):
                if not bucket and _BUCKET.fullmatch(item):
                    _scan_directory(handle, f"{namespace}/{item}", found, max_entry_bytes)
                elif bucket and _HASH.fullmatch(item) and item.startswith(bucket):
                    info = os.stat(item, dir_fd=handle, follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode) and info.st_size <= max_entry_bytes:
                        found.append((info.st_mtime_ns, f"{namespace}/{item}", info.st_size))
                        kept = True
                    else:
                        remove(handle, item)
                else:
                    kept = True  # not ours to judge
        finally:
            os.close(handle)
        if not kept:  # empty, or holding only buckets: removed if it is empty now
            with contextlib.suppress(OSError):
                os.rmdir(bucket or namespace, dir_fd=parent)
    except OSError as error:  # one unreadable directory does not stop the count of the rest
        log.debug("cannot scan %s in the cache: %s", name, error)


def _tidy_listing(directory: int) -> list[str]:
    """The names in ``directory``, less the temp files of crashed writers (removed)."""
    with os.scandir(directory) as listing:
        names = [item.name for item in listing]
    cutoff = time.time() - STALE_TEMP_SECONDS
    for name in names:
        if name.startswith(TEMP_PREFIX):
            with contextlib.suppress(OSError):
                if os.stat(name, dir_fd=directory, follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(name, dir_fd=directory)
    return [name for name in names if not name.startswith(TEMP_PREFIX)]
