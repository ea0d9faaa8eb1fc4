"""The content cache: notes downloaded once, kept on disk by content hash, never served stale.

The list endpoint gives every note's current ``contentHash``; an entry is looked up by
that hash, so it is valid exactly while the note has it. Entries live under
``<cache dir>/<server and project>/<hh>/<hash>``, files mode 0600 in directories
0700 (notes can be private); a write goes to a temp file renamed into place, so
another process never reads half an entry. Every read checks the bytes against
their hash: a corrupted entry is deleted and reported as a miss, never returned.
The total size is bounded; the least recently used entries go first.

Recently used entries are also kept in memory (up to :data:`MEMORY_MAX_BYTES`), checked
once when they enter it: a read of an unchanged note then costs no disk access.

Thread-safe; several processes may share one directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
#: Bytes of entries also kept in memory, most recently used first.
MEMORY_MAX_BYTES = 32 * 1024 * 1024


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    """The platform's cache directory for teamvault-mcp."""
    home = Path(environ.get("HOME") or Path.home())
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "teamvault-mcp"
    if os.name == "nt":
        return Path(environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / "teamvault-mcp" / "Cache"
    return Path(environ.get("XDG_CACHE_HOME") or home / ".cache") / "teamvault-mcp"


class ContentCache:
    """Note bytes by content hash, for one server and project (``namespace``), on disk."""

    def __init__(self, root: Path, namespace: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.directory = root / hashlib.sha256(namespace.encode()).hexdigest()[:32]
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._made: set[Path] = set()  # directories known to exist
        self._sizes: OrderedDict[str, int] | None = None  # hash → size, least recently used first
        self._total = 0
        self._memory: OrderedDict[str, bytes] = OrderedDict()  # checked entries, least recently used first
        self._memory_bytes = 0
        self.hits = self.misses = self.corrupt = 0

    def get(self, content_hash: str) -> bytes | None:
        """The bytes with this hash, or None: not cached, or found corrupted (and then removed)."""
        with self._lock:
            data = self._memory.get(content_hash)
            if data is not None:
                self._memory.move_to_end(content_hash)
                self.hits += 1
                return data
        path = self._path(content_hash)
        try:
            data = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        if hashlib.sha256(data).hexdigest() != content_hash:
            log.warning("cache entry %s was corrupted; it is dropped and fetched again", content_hash[:12])
            self.corrupt += 1
            self._forget(content_hash)
            return None
        self.hits += 1
        with self._lock:
            sizes = self._entries()
            if content_hash in sizes:
                sizes.move_to_end(content_hash)
            self._keep_in_memory(content_hash, data)
        with contextlib.suppress(OSError):
            os.utime(path)  # the recency other processes see
        return data

    def put(self, content_hash: str, data: bytes) -> None:
        """Keep ``data`` under its hash (a wrong hash is not stored)."""
        if hashlib.sha256(data).hexdigest() != content_hash or len(data) > self.max_bytes:
            return
        path = self._path(content_hash)
        temp: str | None = None
        try:
            if path.parent not in self._made:
                self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
                for directory in (self.directory, path.parent):
                    directory.mkdir(exist_ok=True, mode=0o700)
                self._made.add(path.parent)
            handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")  # created 0600
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temp, path)
        except OSError as error:
            log.warning("cannot write to the cache in %s: %s", self.root, error)
            if temp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
            return
        with self._lock:
            self._keep_in_memory(content_hash, data)
            sizes = self._entries()
            self._total += len(data) - sizes.pop(content_hash, 0)
            sizes[content_hash] = len(data)
            victims = []
            while self._total > self.max_bytes and sizes:
                victim, size = sizes.popitem(last=False)
                self._total -= size
                victims.append(victim)
        for victim in victims:
            with contextlib.suppress(OSError):
                self._path(victim).unlink()

    def _keep_in_memory(self, content_hash: str, data: bytes) -> None:
        """Under the lock: remember checked bytes, dropping the least recently used beyond the bound."""
        limit = min(MEMORY_MAX_BYTES, self.max_bytes)
        if len(data) > limit // 4 or content_hash in self._memory:
            return
        self._memory[content_hash] = data
        self._memory_bytes += len(data)
        while self._memory_bytes > limit:
            _, dropped = self._memory.popitem(last=False)
            self._memory_bytes -= len(dropped)

    def _forget(self, content_hash: str) -> None:
        with contextlib.suppress(OSError):
            self._path(content_hash).unlink()
        with self._lock:
            size = self._entries().pop(content_hash, None)
            if size is not None:
                self._total -= size

    def _path(self, content_hash: str) -> Path:
        if len(content_hash) != 64 or not all(ch in "0123456789abcdef" for ch in content_hash):
            raise ValueError(f"not a content hash: {content_hash!r}")
        return self.directory / content_hash[:2] / content_hash

    def _entries(self) -> OrderedDict[str, int]:
        """The entries on disk, oldest use first; read once, then kept up to date (caller holds the lock)."""
        if self._sizes is None:
            found = []
            if self.directory.is_dir():
                for bucket in self.directory.iterdir():
                    for entry in bucket.glob("[0-9a-f]" * 64) if bucket.is_dir() else ():
                        with contextlib.suppress(OSError):
                            stat = entry.stat()
                            found.append((stat.st_mtime, entry.name, stat.st_size))
            found.sort()
            self._sizes = OrderedDict((name, size) for _, name, size in found)
            self._total = sum(self._sizes.values())
        return self._sizes
