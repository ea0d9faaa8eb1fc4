"""The content cache (cache.py): by hash, never stale, corruption detected, private files, bounded size."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from teamvault_mcp.cache import ContentCache, default_cache_dir


def key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_an_entry_is_found_by_its_hash(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path, "server\0project")
    cache.put(key(b"note"), b"note")
    assert cache.get(key(b"note")) == b"note"
    assert cache.get(key(b"other")) is None


def test_bytes_that_do_not_match_the_hash_are_not_stored(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path, "p")
    cache.put(key(b"one"), b"two")
    assert cache.get(key(b"one")) is None


def test_a_corrupted_entry_is_detected_removed_and_never_returned(tmp_path: Path) -> None:
    ContentCache(tmp_path, "p").put(key(b"note"), b"note")
    entry = next(tmp_path.rglob(key(b"note")))
    entry.write_bytes(b"nope")
    cache = ContentCache(tmp_path, "p")  # another process: what the disk holds is all it has
    assert cache.get(key(b"note")) is None
    assert not entry.exists()
    assert cache.corrupt == 1


def test_files_are_private(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path / "c", "p")
    cache.put(key(b"secret"), b"secret")
    entry = next((tmp_path / "c").rglob(key(b"secret")))
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    for directory in (tmp_path / "c", cache.directory, entry.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_projects_and_servers_do_not_share_entries(tmp_path: Path) -> None:
    ContentCache(tmp_path, "server-a\0p").put(key(b"x"), b"x")
    assert ContentCache(tmp_path, "server-b\0p").get(key(b"x")) is None
    assert ContentCache(tmp_path, "server-a\0p").get(key(b"x")) == b"x"  # another process, same cache


def test_the_size_is_bounded_and_the_least_recently_used_goes_first(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path, "p", max_bytes=30)
    blobs = [bytes([65 + i]) * 10 for i in range(3)]
    for blob in blobs:
        cache.put(key(blob), blob)
    assert cache.get(key(blobs[0])) == blobs[0]  # used again: now the most recent
    fourth = b"D" * 10
    cache.put(key(fourth), fourth)
    assert cache.get(key(blobs[1])) is None  # the least recently used went
    assert [cache.get(key(b)) is not None for b in (blobs[0], blobs[2], fourth)] == [True, True, True]


def test_a_new_process_learns_the_recency_from_the_files(tmp_path: Path) -> None:
    first = ContentCache(tmp_path, "p", max_bytes=20)
    old, new = b"o" * 10, b"n" * 10
    first.put(key(old), old)
    first.put(key(new), new)
    os.utime(next(tmp_path.rglob(key(old))), (1, 1))  # long unused
    second = ContentCache(tmp_path, "p", max_bytes=20)
    second.put(key(b"x" * 10), b"x" * 10)
    assert second.get(key(old)) is None and second.get(key(new)) == new


def test_the_default_location_follows_the_platform_conventions() -> None:
    assert default_cache_dir({"HOME": "/h"}) == Path("/h/.cache/teamvault-mcp")
    assert default_cache_dir({"HOME": "/h", "XDG_CACHE_HOME": "/x"}) == Path("/x/teamvault-mcp")


def test_recent_entries_are_served_from_memory_checked_once(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path, "p", max_bytes=1000)
    cache.put(key(b"note"), b"note")
    next(tmp_path.rglob(key(b"note"))).unlink()  # not even the disk is needed now
    assert cache.get(key(b"note")) == b"note"
    big = b"x" * 600  # more than a quarter of the bound: not kept in memory
    cache.put(key(big), big)
    next(tmp_path.rglob(key(big))).write_bytes(b"y" * 600)
    assert cache.get(key(big)) is None  # read from disk, checked, found corrupt
