"""The content cache: notes downloaded once, kept on disk by content hash, never served stale.

The list endpoint gives every note's current ``contentHash``; an entry is looked up by
that hash, so it is valid exactly while the note has it. Entries live under
``<root>/<server and project>/<hh>/<hash>``, files 0600 in directories 0700 (notes can be
private); a write goes to a temp file renamed into place, so another process never reads
half an entry. Every read from disk checks the bytes against their hash: a corrupted entry
is deleted and reported as a miss, never returned.

One size bound holds for the whole root (:class:`CacheRoot`), shared by every server,
project and process that uses it: the least recently used entries go first, whoever wrote
them. Each process keeps an index of the root in memory, read from the disk once; processes
tell each other what they added and removed by appending lines to the root's change log
(``changes``). The log is replaced by a fresh one past :data:`CHANGES_MAX_BYTES`; a process
that finds it replaced reads the directories again. Recency across processes is the
entries' mtime: a read from disk touches it, and an entry about to be evicted is spared if
another process used it since.

Nothing below the root is trusted: directories and entries are opened without following
symlinks, only regular files are read, never more than the note's listed size or
:data:`MAX_ENTRY_BYTES`, and a FIFO cannot block the open. Anything else where an entry or
a directory belongs (a FIFO, a symlink, a device, a directory, an oversized file) is a miss,
never a hang, and is removed (a directory only when empty). The file operations that make
it so live in ``cachefiles.py``.

A download on its way in (a folder archive) is an unnamed temp file in the root, a
:class:`Spool`: while it is open, the most bytes it may take are counted against the bound
beside the entries (older entries are evicted to make room), and a spool that would take the
spools already open past the bound is not opened. So temp files count in the bound as entries
do, within one process; another process's spools are not seen.

Each project's persistent index (``index_db.py``, ``<root>/<server and project>/index.sqlite``)
lives in its directory; its size on disk counts in the root's bound beside the entries (entries
are evicted to make room for it; the index itself holds only the facts of the notes listed).

Recently used entries are also kept in memory (up to :data:`MEMORY_MAX_BYTES` per root),
checked once when they enter it: a read of an unchanged note then costs no disk access.

Thread-safe; several processes may share one root. POSIX only (``O_NOFOLLOW``, ``dir_fd``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import secrets
import stat
import sys
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from teamvault_mcp.vault import cachefiles as files

if TYPE_CHECKING:
    from teamvault_mcp.vault.index_db import IndexStore

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
#: Bytes of entries also kept in memory, most recently used first.
MEMORY_MAX_BYTES = 32 * 1024 * 1024
#: The largest entry stored or read (and never more than the root's bound).
MAX_ENTRY_BYTES = 64 * 1024 * 1024
#: The change log is replaced by an empty one once a process has read this much of it.
CHANGES_MAX_BYTES = 1024 * 1024
CHANGES = "changes"

_HASH = re.compile(r"[0-9a-f]{64}")
_CHANGE = re.compile(rb"([+-])([0-9a-f]{32})/([0-9a-f]{64})(?: ([0-9]{1,18}))?")
_WRITE_CHUNK = 4000  # lines of the change log are appended in writes this small, so they stay whole
_READ_CHUNK = 1024 * 1024


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    """The platform's cache directory for teamvault-mcp."""
    home = Path(environ.get("HOME") or Path.home())
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "teamvault-mcp"
    if os.name == "nt":
        return Path(environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / "teamvault-mcp" / "Cache"
    return Path(environ.get("XDG_CACHE_HOME") or home / ".cache") / "teamvault-mcp"


class ContentCache:
    """Note bytes by content hash for one server and project (``namespace``), in a :class:`CacheRoot`."""

    def __init__(self, root: CacheRoot, namespace: str) -> None:
        self.root = root
        self.name = hashlib.sha256(namespace.encode()).hexdigest()[:32]
        self.directory = root.path / self.name
        self.hits = self.misses = self.corrupt = 0

    def get(self, content_hash: str, size: int | None = None, *, keep_in_memory: bool = True) -> bytes | None:
        """The bytes with this hash, or None: not cached, or found unfit (and then removed).

        ``size``, the note's size from the listing, caps what is read; None: the per-entry maximum.
        ``keep_in_memory=False``: an entry read from disk is not kept in the memory cache (a search
        reading the whole vault into its index must not push out what reads use).
        """
        data = self.root.recall(self.name, content_hash)
        if data is None and not _HASH.fullmatch(content_hash):  # not a hash we could have stored
            self.misses += 1
            return None
        if data is None:
            limit = self.root.max_entry_bytes if size is None or size < 0 else min(size, self.root.max_entry_bytes)
            data, problem = self.root.load(self.name, content_hash, limit, keep_in_memory=keep_in_memory)
            if problem is not None:
                log.warning("cache entry %s %s; it is removed and fetched again", content_hash[:12], problem)
                self.corrupt += 1
        if data is None:
            self.misses += 1
        else:
            self.hits += 1
        return data

    def text(self, content_hash: str) -> str | None:
        """The entry as text (for the search index, which keeps only the folded text of cached notes)."""
        data = self.get(content_hash, keep_in_memory=False)
        return data.decode("utf-8", errors="replace") if data is not None else None

    def put(self, content_hash: str, data: bytes) -> bool:
        """Keep ``data`` under its hash; whether it was stored (a wrong hash or a too large entry is not)."""
        return self.put_many([(content_hash, data)], keep_in_memory=True) == 1

    def put_many(self, entries: list[tuple[str, bytes]], *, keep_in_memory: bool = False) -> int:
        """Keep several entries, logged and bounded at once (a synced folder); how many were stored.

        ``keep_in_memory``: also keep them in the memory cache (a read or a write just saw them);
        a sync does not, so that it does not push out what reads use.
        """
        fit = [
            (content_hash, data)
            for content_hash, data in entries
            if len(data) <= self.root.max_entry_bytes and hashlib.sha256(data).hexdigest() == content_hash
        ]
        return self.root.store_many(self.name, fit, keep_in_memory=keep_in_memory) if fit else 0

    def spool(self, limit: int) -> Spool | None:
        """A temp file under the cache directory for a download of at most ``limit`` bytes, counted in the
        bound; None when the downloads on their way in leave no room for it."""
        return self.root.spool(limit)


class Spool:
    """An unnamed temp file for a download on its way in, its bytes counted in a root's bound until closed.

    ``file`` is the temp file. :meth:`fit` counts only the bytes it holds (the download is done);
    :meth:`close` deletes it and gives its room back.
    """

    def __init__(self, file: IO[bytes], root: CacheRoot | None = None, reserved: int = 0) -> None:
        self.file = file
        self._root = root
        self._reserved = reserved

    def fit(self) -> None:
        """Count what the file holds now, no longer the most it could have taken."""
        self.file.flush()
        held = os.fstat(self.file.fileno()).st_size
        if self._root is not None and held < self._reserved:
            self._root.release(self._reserved - held)
            self._reserved = held

    def close(self) -> None:
        self.file.close()
        if self._root is not None:
            self._root.release(self._reserved)
            self._reserved = 0

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CacheRoot:
    """The cache directory that all servers, projects and processes share: one size bound, one LRU order."""

    def __init__(self, path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_bytes, MAX_ENTRY_BYTES)
        self._memory_lock = threading.Lock()
        self._memory: OrderedDict[str, bytes] = OrderedDict()  # checked entries, least recently used first
        self._memory_bytes = 0
        self._hits: dict[str, None] = {}  # keys read from memory since the last store, in the order read
        # The index and the change log. Reads only ever try it: they never wait for a rescan.
        self._lock = threading.Lock()
        self._index: OrderedDict[str, tuple[int, int]] | None = None  # key → (size, mtime known), LRU first
        self._total = 0
        self._reserved = 0  # bytes the open spools may take, counted in the bound beside the entries
        self._log: int | None = None  # the change log followed (kept open: its inode cannot be reused)
        self._log_read = 0  # how much of it is applied
        self._close_log: Callable[[], object] = lambda: None
        self._stores: list[IndexStore] = []  # the indexes in this root, counted in the bound

    def index_store(self, name: str, facts_version: int) -> IndexStore:
        """The persistent index of the namespace ``name``, counted in this root's bound."""
        from teamvault_mcp.vault.index_db import IndexStore  # sqlite3 is loaded by the first call that needs it

        store = IndexStore(self.path / name, facts_version)
        with self._lock:
            self._stores.append(store)
        return store

    def index_bytes(self) -> int:
        """Bytes the indexes of this process's projects take on disk."""
        return sum(store.size() for store in self._stores)

    def namespace(self, namespace: str) -> ContentCache:
        return ContentCache(self, namespace)

    # -- reads -------------------------------------------------------------------------------------

    def recall(self, name: str, content_hash: str) -> bytes | None:
        """The checked bytes kept in memory, if any."""
        key = f"{name}/{content_hash}"
        with self._memory_lock:
            data = self._memory.get(key)
            if data is not None:
                self._memory.move_to_end(key)
                self._hits[key] = None  # moved to the back of the index at the next store, not here: cheap
            return data

    def load(
        self, name: str, content_hash: str, limit: int, *, keep_in_memory: bool = True
    ) -> tuple[bytes | None, str | None]:
        """The entry's bytes read from disk (at most ``limit``), or None and what was wrong with it, if anything."""
        try:
            with files.directories(self.path, name, content_hash, create=False) as bucket:
                if bucket is None:
                    return None, None
                data, problem = files.read_regular(bucket, content_hash, limit)
                if data is not None and hashlib.sha256(data).hexdigest() != content_hash:
                    data, problem = None, "was corrupted"
                if problem is not None:
                    files.remove(bucket, content_hash)
                    self._forget(f"{name}/{content_hash}")
                    return None, problem
                if data is None:
                    return None, None
                stamp = time.time_ns()
                with contextlib.suppress(OSError):
                    os.utime(content_hash, ns=(stamp, stamp), dir_fd=bucket, follow_symlinks=False)
        except OSError as error:
            log.debug("cannot read cache entry %s: %s", content_hash[:12], error)
            return None, None
        key = f"{name}/{content_hash}"
        if self._lock.acquire(blocking=False):  # the recency is a hint: never wait for a rescan to record it
            try:
                if self._index is not None:
                    self._note(key, len(data), stamp)
            finally:
                self._lock.release()
        if keep_in_memory:
            self._keep_in_memory(key, data)
        return data, None

    # -- writes ------------------------------------------------------------------------------------

    def store(self, name: str, content_hash: str, data: bytes) -> None:
        """Write an entry, log it, and evict the least recently used entries of the root beyond the bound."""
        self.store_many(name, [(content_hash, data)], keep_in_memory=True)

    def store_many(self, name: str, entries: list[tuple[str, bytes]], *, keep_in_memory: bool) -> int:
        """Write entries, log them in one go, then evict beyond the bound; how many were written."""
        written: list[tuple[str, int]] = []
        try:
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
            with files.Writer(self.path, name) as writer:
                for content_hash, data in entries:
                    writer.write(content_hash, data)
                    key = f"{name}/{content_hash}"
                    written.append((key, len(data)))
                    if keep_in_memory:
                        self._keep_in_memory(key, data)
        except OSError as error:  # a full disk, say: the rest would fail the same way
            log.warning("cannot write to the cache in %s: %s", self.path, error)
        if not written:
            return 0
        with self._lock:
            try:
                if self._index is None:
                    self._rescan()
                stamp = time.time_ns()
                for key, size in written:
                    self._note(key, size, stamp)
                # Logged before reading what others logged: of two processes storing at once, at least
                # one sees both entries, so the bound holds once they are done.
                self._append([f"+{key} {size}\n" for key, size in written])
                self._follow()
                self._count_memory_hits()
                self._evict()
            except OSError as error:
                log.warning("cannot keep the cache in %s within its bound: %s", self.path, error)
        return len(written)

    def spool(self, limit: int) -> Spool | None:
        """An unnamed temp file in the root (O_TMPFILE where there is one) for at most ``limit`` bytes: it never
        outlives its handle, and ``limit`` counts in the bound while it is open (least recently used entries are
        evicted to make room). None when the spools already open and ``limit`` would pass the bound."""
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._lock:
            if self._reserved + limit > self.max_bytes:
                return None
            self._reserved += limit
            try:
                if self._index is None:
                    self._rescan()
                self._follow()
                self._evict()
            except OSError as error:
                log.warning("cannot keep the cache in %s within its bound: %s", self.path, error)
        try:
            return Spool(tempfile.TemporaryFile(dir=self.path, prefix=files.TEMP_PREFIX), self, limit)
        except OSError:
            self.release(limit)
            raise

    def release(self, size: int) -> None:
        """``size`` bytes of a spool's room given back (it shrank or was closed)."""
        with self._lock:
            self._reserved -= size

    def _keep_in_memory(self, key: str, data: bytes) -> None:
        limit = min(MEMORY_MAX_BYTES, self.max_bytes)
        if len(data) > limit // 4:
            return
        with self._memory_lock:
            if key in self._memory:
                return
            self._memory[key] = data
            self._memory_bytes += len(data)
            while self._memory_bytes > limit:
                _, dropped = self._memory.popitem(last=False)
                self._memory_bytes -= len(dropped)

    # -- the index and the change log (the caller holds self._lock) ---------------------------------

    def _note(self, key: str, size: int, stamp: int) -> None:
        """Record ``key`` as just used."""
        assert self._index is not None
        old = self._index.pop(key, None)
        self._total += size - (old[0] if old is not None else 0)
        self._index[key] = (size, stamp)

    def _count_memory_hits(self) -> None:
        assert self._index is not None
        with self._memory_lock:
            hits, self._hits = self._hits, {}
        for key in hits:
            if key in self._index:
                self._index.move_to_end(key)

    def _forget(self, key: str) -> None:
        """An entry found unfit and removed: out of memory, out of the index, and logged for the others."""
        with self._memory_lock:
            data = self._memory.pop(key, None)
            if data is not None:
                self._memory_bytes -= len(data)
        with self._lock:
            if self._index is None:
                return
            self._total -= self._index.pop(key, (0, 0))[0]
            try:
                self._append([f"-{key}\n"])
            except OSError as error:
                log.warning("cannot log a change to the cache in %s: %s", self.path, error)

    def _follow(self) -> None:
        """Bring the index up to date: apply the lines other processes logged, or rescan if the log was replaced."""
        if self._index is None or not self._log_is_current():
            self._rescan()
            return
        self._apply_log()
        if self._log_read > CHANGES_MAX_BYTES:
            self._rotate_log()
            self._rescan()

    def _rescan(self) -> None:
        """Read the index from the directories; what is logged meanwhile is applied on top."""
        self._open_log()
        assert self._log is not None
        start = os.fstat(self._log).st_size
        found = files.scan(self.path, self.max_entry_bytes)
        found.sort()
        self._index = OrderedDict((key, (size, stamp)) for stamp, key, size in found)
        self._total = sum(size for _, _, size in found)
        self._log_read = start
        self._apply_log()

    def _apply_log(self) -> None:
        assert self._log is not None and self._index is not None
        end = os.fstat(self._log).st_size
        if end < self._log_read:  # cut short in place: what it said is lost, the disk still tells
            self._rescan()
            return
        while self._log_read < end:
            chunk = os.pread(self._log, min(end - self._log_read, _READ_CHUNK), self._log_read)
            last = chunk.rfind(b"\n")
            if last < 0 and len(chunk) < _READ_CHUNK:  # a line still being written: complete lines only
                return
            self._log_read += last + 1 if last >= 0 else len(chunk)  # (a megabyte without a line: junk)
            now = time.time_ns()
            for line in chunk[: last + 1].splitlines():
                change = _CHANGE.fullmatch(line)
                if change is None:
                    continue  # torn by a crash: a line lost, the next rescan makes up for it
                sign, name, content_hash, size = change.groups()
                key = f"{name.decode()}/{content_hash.decode()}"
                if sign == b"-":
                    if key in self._index:
                        self._total -= self._index.pop(key)[0]
                elif size is not None and int(size) <= MAX_ENTRY_BYTES:  # larger: no entry, a junk line
                    self._note(key, int(size), now)

    def _append(self, lines: list[str]) -> None:
        """Log ``lines`` where every process reads them, even if the log is replaced meanwhile."""
        if self._log is None:
            self._open_log()
        assert self._log is not None
        chunks = [""]
        for line in lines:
            if len(chunks[-1]) + len(line) > _WRITE_CHUNK:
                chunks.append("")
            chunks[-1] += line
        for _ in range(3):
            for chunk in chunks:
                os.write(self._log, chunk.encode())  # O_APPEND: whole lines, in any process's order
            if self._log_is_current():
                return
            self._rescan()  # replaced under us: the new log gets the lines too, and the index is rebuilt

    def _evict(self) -> None:
        assert self._index is not None
        removed: list[str] = []
        spared: set[str] = set()
        beside = self.index_bytes()
        while self._total + self._reserved + beside > self.max_bytes and self._index:
            key, (size, stamp) = self._index.popitem(last=False)
            self._total -= size
            used = files.remove_unless_used(self.path, key, None if key in spared else stamp)
            if used is not None:  # another process read it since: to the back of the queue, once
                self._index[key] = (size, used)
                self._total += size
                spared.add(key)
            else:
                removed.append(f"-{key}\n")
        if removed:
            self._append(removed)

    def _open_log(self) -> None:
        if self._log is not None:
            self._close_log()  # closes it
            self._log = None
        path = str(self.path / CHANGES)
        for _ in range(2):
            try:
                handle = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | files.SAFE, 0o600)
            except OSError as error:
                if error.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                    raise
            else:
                if stat.S_ISREG(os.fstat(handle).st_mode):
                    self._log = handle
                    self._close_log = weakref.finalize(self, os.close, handle)  # when the root is dropped
                    return
                os.close(handle)
            files.remove(None, path)  # a symlink, a FIFO, an empty directory: not ours
        raise OSError(errno.EEXIST, "something that is not a file is in the change log's place", path)

    def _log_is_current(self) -> bool:
        assert self._log is not None
        try:
            there = os.stat(self.path / CHANGES, follow_symlinks=False)
        except FileNotFoundError:
            return False
        ours = os.fstat(self._log)
        return (there.st_dev, there.st_ino) == (ours.st_dev, ours.st_ino)

    def _rotate_log(self) -> None:
        temp = self.path / f"{files.TEMP_PREFIX}{CHANGES}-{secrets.token_hex(8)}"
        os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | files.SAFE, 0o600))
        os.replace(temp, self.path / CHANGES)


class ProjectCaches:
    """The content cache of each project of one server, all in one :class:`CacheRoot`: one bound, one LRU order.

    The root is made by the first read that asks for a cache, not at start-up.
    """

    def __init__(self, directory: Path, *, max_bytes: int, server: str) -> None:
        self._directory = directory
        self._max_bytes = max_bytes
        self._server = server
        self._lock = threading.Lock()
        self._root: CacheRoot | None = None
        self._caches: dict[str, ContentCache] = {}
        self._stores: dict[str, IndexStore] = {}

    def for_project(self, project_id: str) -> ContentCache:
        with self._lock:
            cache = self._caches.get(project_id)
            if cache is None:
                if self._root is None:
                    self._root = CacheRoot(self._directory, max_bytes=self._max_bytes)
                cache = self._caches[project_id] = self._root.namespace(f"{self._server}\0{project_id}")
            return cache

    def lookups(self) -> tuple[int, int]:
        """(hits, misses) of every project's content cache so far (read by ``serve --http --metrics``)."""
        with self._lock:
            caches = list(self._caches.values())
        return sum(cache.hits for cache in caches), sum(cache.misses for cache in caches)

    def index_for(self, project_id: str, facts_version: int) -> IndexStore:
        """The project's persistent index, beside its content cache (made by its first use)."""
        cache = self.for_project(project_id)
        with self._lock:
            store = self._stores.get(project_id)
            if store is None:
                store = self._stores[project_id] = cache.root.index_store(cache.name, facts_version)
            return store
