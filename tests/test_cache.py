"""The content cache (cache.py): by hash, never stale, corruption detected, private files, bounded size."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import socket
import stat
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

from teamvault_mcp.vault import cache as cache_module
from teamvault_mcp.vault.cache import CacheRoot, ContentCache, default_cache_dir


def key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def open_cache(root: Path, namespace: str = "p", max_bytes: int = cache_module.DEFAULT_MAX_BYTES) -> ContentCache:
    """The cache of one namespace as a new process sees it: nothing known but what the disk holds."""
    return CacheRoot(root, max_bytes=max_bytes).namespace(namespace)


def entries_on_disk(root: Path) -> dict[str, int]:
    return {path.name: path.stat().st_size for path in root.glob("*/*/*") if path.is_file()}


def test_an_entry_is_found_by_its_hash(tmp_path: Path) -> None:
    cache = open_cache(tmp_path, "server\0project")
    cache.put(key(b"note"), b"note")
    assert cache.get(key(b"note")) == b"note"
    assert cache.get(key(b"other")) is None


def test_bytes_that_do_not_match_the_hash_are_not_stored(tmp_path: Path) -> None:
    cache = open_cache(tmp_path)
    cache.put(key(b"one"), b"two")
    assert cache.get(key(b"one")) is None


def test_a_hash_that_is_not_one_is_a_miss_not_an_error(tmp_path: Path) -> None:
    cache = open_cache(tmp_path)
    for odd in (key(b"x").upper(), "../" * 21 + "x", "", "g" * 64):
        assert cache.get(odd) is None


def test_a_corrupted_entry_is_detected_removed_and_never_returned(tmp_path: Path) -> None:
    open_cache(tmp_path).put(key(b"note"), b"note")
    entry = next(tmp_path.rglob(key(b"note")))
    entry.write_bytes(b"nope")
    cache = open_cache(tmp_path)  # another process: what the disk holds is all it has
    assert cache.get(key(b"note")) is None
    assert not entry.exists()
    assert cache.corrupt == 1


def test_files_are_private(tmp_path: Path) -> None:
    cache = open_cache(tmp_path / "c")
    cache.put(key(b"secret"), b"secret")
    entry = next((tmp_path / "c").rglob(key(b"secret")))
    for file in (entry, tmp_path / "c" / cache_module.CHANGES):
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
    for directory in (tmp_path / "c", cache.directory, entry.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_projects_and_servers_do_not_share_entries(tmp_path: Path) -> None:
    open_cache(tmp_path, "server-a\0p").put(key(b"x"), b"x")
    assert open_cache(tmp_path, "server-b\0p").get(key(b"x")) is None
    assert open_cache(tmp_path, "server-a\0p").get(key(b"x")) == b"x"  # another process, same cache


def test_the_size_is_bounded_and_the_least_recently_used_goes_first(tmp_path: Path) -> None:
    cache = open_cache(tmp_path, max_bytes=30)
    blobs = [bytes([65 + i]) * 10 for i in range(3)]
    for blob in blobs:
        cache.put(key(blob), blob)
    assert open_cache(tmp_path).get(key(blobs[0])) == blobs[0]  # read from disk: now the most recent
    fourth = b"D" * 10
    cache.put(key(fourth), fourth)
    assert sorted(entries_on_disk(tmp_path)) == sorted(key(b) for b in (blobs[0], blobs[2], fourth))


def test_a_new_process_learns_the_recency_from_the_files(tmp_path: Path) -> None:
    first = open_cache(tmp_path, max_bytes=20)
    old, new = b"o" * 10, b"n" * 10
    first.put(key(old), old)
    first.put(key(new), new)
    (tmp_path / cache_module.CHANGES).unlink()  # no log left: the disk alone tells
    os.utime(next(tmp_path.rglob(key(new))), (1, 1))  # long unused
    second = open_cache(tmp_path, max_bytes=20)
    second.put(key(b"x" * 10), b"x" * 10)
    assert sorted(entries_on_disk(tmp_path)) == sorted([key(old), key(b"x" * 10)])


def test_the_bound_holds_for_the_whole_root_across_projects_and_processes(tmp_path: Path) -> None:
    # Two processes (two CacheRoots), each with its own server's namespace, on one root of 40 bytes.
    first, second = open_cache(tmp_path, "server-a\0p", 40), open_cache(tmp_path, "server-b\0p", 40)
    a1, a2, a3 = b"a1" * 5, b"a2" * 5, b"a3" * 5
    b1, b2, b3 = b"b1" * 5, b"b2" * 5, b"b3" * 5
    first.put(key(a1), a1)
    first.put(key(a2), a2)
    second.put(key(b1), b1)
    second.put(key(b2), b2)
    assert len(entries_on_disk(tmp_path)) == 4  # 40 bytes: full
    first.put(key(a3), a3)  # the oldest of all goes, whoever wrote it
    assert sorted(entries_on_disk(tmp_path)) == sorted(key(b) for b in (a2, b1, b2, a3))
    second.put(key(b3), b3)  # the second process learnt of a3 and evicts the other's a2
    assert sorted(entries_on_disk(tmp_path)) == sorted(key(b) for b in (b1, b2, a3, b3))
    assert sum(entries_on_disk(tmp_path).values()) <= 40


def test_a_spool_counts_the_bytes_it_may_take_in_the_bound_until_it_is_closed(tmp_path: Path) -> None:
    cache = open_cache(tmp_path, max_bytes=40)
    blobs = [bytes([65 + i]) * 10 for i in range(4)]
    for blob in blobs:
        cache.put(key(blob), blob)
    spool = cache.spool(20)
    assert spool is not None
    with spool:
        assert sorted(entries_on_disk(tmp_path)) == sorted(key(b) for b in blobs[2:])  # the oldest made room
        assert cache.spool(25) is None  # 20 + 25 would pass the bound whatever is evicted: not opened
        spool.file.write(b"z" * 5)
        spool.fit()  # the download is done: only its 5 bytes count now
        extra = b"E" * 10
        cache.put(key(extra), extra)
        assert sorted(entries_on_disk(tmp_path)) == sorted(key(b) for b in [*blobs[2:], extra])
    other = cache.spool(40)  # closed: its room is back
    assert other is not None
    with other:
        assert not entries_on_disk(tmp_path)


def test_an_entry_another_process_reads_is_spared(tmp_path: Path) -> None:
    writer = open_cache(tmp_path, max_bytes=20)
    one, two, three = b"1" * 10, b"2" * 10, b"3" * 10
    writer.put(key(one), one)
    writer.put(key(two), two)
    assert open_cache(tmp_path).get(key(one)) == one  # another process reads the oldest
    writer.put(key(three), three)
    assert sorted(entries_on_disk(tmp_path)) == sorted([key(one), key(three)])


def test_the_bound_holds_with_processes_storing_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "CHANGES_MAX_BYTES", 2000)  # the log is replaced many times meanwhile
    caches = [open_cache(tmp_path, f"server-{n}\0p", 1000) for n in range(3)]
    start = threading.Barrier(6)

    def store(cache: ContentCache, worker: int) -> None:
        start.wait()
        for n in range(60):
            blob = f"{cache.name} {worker} {n} ".encode().ljust(100, b".")
            cache.put(key(blob), blob)

    threads = [threading.Thread(target=store, args=(cache, worker)) for cache in caches for worker in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    held = sum(entries_on_disk(tmp_path).values())
    assert 500 <= held <= 1000, held
    assert (tmp_path / cache_module.CHANGES).stat().st_size < 2000 + 4000
    later = open_cache(tmp_path, "server-x\0p", 1000)  # a process started later agrees with the disk
    later.put(key(b"x" * 100), b"x" * 100)
    assert sum(entries_on_disk(tmp_path).values()) <= 1000


def test_old_folders_are_evicted_like_any_entry_and_then_removed(tmp_path: Path) -> None:
    # An embedded vault's folder from an earlier start (a random port then), never used again.
    old = open_cache(tmp_path, "http://127.0.0.1:40001\0p", 30)
    for blob in (b"1" * 10, b"2" * 10):
        old.put(key(blob), blob)
    current = open_cache(tmp_path, "local vault /data\0p", 30)
    for blob in (b"3" * 10, b"4" * 10, b"5" * 10):
        current.put(key(blob), blob)
    assert not any(old.directory.glob("*/*"))
    open_cache(tmp_path, "local vault /data\0p", 30).put(key(b"6" * 10), b"6" * 10)  # a rescan tidies up
    assert not old.directory.exists()


def test_a_leftover_temp_file_of_a_crashed_write_is_removed_by_a_rescan(tmp_path: Path) -> None:
    cache = open_cache(tmp_path)
    cache.put(key(b"n"), b"n")
    bucket = next(tmp_path.rglob(key(b"n"))).parent
    leftover, live = bucket / ".incoming-crashed", bucket / ".incoming-live"
    leftover.write_bytes(b"half")
    live.write_bytes(b"being written")
    os.utime(leftover, (1, 1))
    (tmp_path / cache_module.CHANGES).unlink()
    open_cache(tmp_path).put(key(b"m"), b"m")
    assert not leftover.exists() and live.exists()


def test_the_default_location_follows_the_platform_conventions() -> None:
    assert default_cache_dir({"HOME": "/h"}) == Path("/h/.cache/teamvault-mcp")
    assert default_cache_dir({"HOME": "/h", "XDG_CACHE_HOME": "/x"}) == Path("/x/teamvault-mcp")


def test_recent_entries_are_served_from_memory_checked_once(tmp_path: Path) -> None:
    cache = open_cache(tmp_path, max_bytes=1000)
    cache.put(key(b"note"), b"note")
    next(tmp_path.rglob(key(b"note"))).unlink()  # not even the disk is needed now
    assert cache.get(key(b"note")) == b"note"
    big = b"x" * 600  # more than a quarter of the bound: not kept in memory
    cache.put(key(big), big)
    next(tmp_path.rglob(key(big))).write_bytes(b"y" * 600)
    assert cache.get(key(big)) is None  # read from disk, checked, found corrupt


# -- hostile entries: a miss, never a hang, an unbounded read or a crash ---------------------------------

READ_IN_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # an unbounded read fails here, not the machine
from pathlib import Path
from teamvault_mcp.vault.cache import CacheRoot
cache = CacheRoot(Path(sys.argv[1])).namespace(sys.argv[2])
print(repr(cache.get(sys.argv[3])), cache.corrupt)
"""


def read_in_child(root: Path, namespace: str, content_hash: str) -> str:
    """What a fresh process's read of ``content_hash`` gives; a read that hangs fails the test, not the run."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", READ_IN_CHILD, str(root), namespace, content_hash],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the read hung for 60 s (or the machine is too slow to start Python in that time)")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def planted(root: Path, data: bytes, namespace: str = "p") -> Path:
    """Where the entry for ``data`` would be, with its bucket made and nothing in it."""
    cache = open_cache(root, namespace)
    path = cache.directory / key(data)[:2] / key(data)
    path.parent.mkdir(parents=True)
    return path


def test_a_fifo_in_an_entrys_place_is_a_miss_and_is_removed(tmp_path: Path) -> None:
    entry = planted(tmp_path, b"note")
    os.mkfifo(entry)
    assert read_in_child(tmp_path, "p", key(b"note")) == "None 1"
    assert not entry.exists()
    cache = open_cache(tmp_path)
    cache.put(key(b"note"), b"note")  # and the place is usable again
    assert open_cache(tmp_path).get(key(b"note")) == b"note"


def test_a_symlink_to_dev_zero_is_a_miss_and_only_the_link_is_removed(tmp_path: Path) -> None:
    entry = planted(tmp_path, b"note")
    entry.symlink_to("/dev/zero")
    assert read_in_child(tmp_path, "p", key(b"note")) == "None 1"
    assert not entry.is_symlink() and Path("/dev/zero").exists()


def test_a_symlink_to_a_file_with_the_right_bytes_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"note")
    entry = planted(tmp_path / "cache", b"note")
    entry.symlink_to(elsewhere)
    assert open_cache(tmp_path / "cache").get(key(b"note")) is None
    assert not entry.is_symlink() and elsewhere.read_bytes() == b"note"


@pytest.mark.parametrize("level", ["bucket", "namespace"])
def test_a_symlinked_directory_is_not_followed_for_reads_writes_or_evictions(tmp_path: Path, level: str) -> None:
    outside = tmp_path / "outside"
    cache = open_cache(tmp_path / "cache", max_bytes=12)
    linked = cache.directory / key(b"note")[:2] if level == "bucket" else cache.directory
    (outside / key(b"note")[:2] if level == "namespace" else outside).mkdir(parents=True)
    in_outside = outside / (f"{key(b'note')[:2]}/" if level == "namespace" else "") / key(b"note")
    in_outside.write_bytes(b"note")  # the right bytes, but not in the cache
    linked.parent.mkdir(parents=True, exist_ok=True)
    linked.symlink_to(outside, target_is_directory=True)
    before = sorted(outside.rglob("*"))
    assert cache.get(key(b"note")) is None
    assert not linked.is_symlink()
    cache.put(key(b"note"), b"note")
    cache.put(key(b"other one"), b"other one")  # past the bound of 12: the older entry is evicted
    assert sorted(outside.rglob("*")) == before and in_outside.read_bytes() == b"note"
    assert entries_on_disk(tmp_path / "cache") == {key(b"other one"): 9}


def test_an_entry_larger_than_the_note_is_not_read_and_is_removed(tmp_path: Path) -> None:
    entry = planted(tmp_path, b"note")
    with entry.open("wb") as out:
        out.truncate(32 << 20)  # sparse: costs no disk, but 32 MB to read
    cache = open_cache(tmp_path)
    tracemalloc.start()
    try:
        assert cache.get(key(b"note"), size=4) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak} bytes allocated to read a 4-byte note"
    assert not entry.exists() and cache.corrupt == 1


def test_an_entry_larger_than_the_per_entry_maximum_is_not_read_and_is_removed(tmp_path: Path) -> None:
    entry = planted(tmp_path, b"note")
    with entry.open("wb") as out:
        out.truncate(cache_module.MAX_ENTRY_BYTES + 1)  # sparse
    cache = open_cache(tmp_path)
    tracemalloc.start()
    try:
        assert cache.get(key(b"note")) is None  # size unknown: the per-entry maximum caps the read
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak} bytes allocated for an entry past the per-entry maximum"
    assert not entry.exists()


def test_a_sparse_giant_found_by_a_rescan_is_removed_not_counted(tmp_path: Path) -> None:
    entry = planted(tmp_path, b"note", "other")
    with entry.open("wb") as out:
        out.truncate(1 << 40)  # 1 TB by its size: it would evict everything else
    cache = open_cache(tmp_path, max_bytes=100)
    cache.put(key(b"kept"), b"kept")
    assert not entry.exists()
    assert open_cache(tmp_path, max_bytes=100).get(key(b"kept")) == b"kept"


def test_an_empty_directory_in_an_entrys_place_is_removed_and_the_entry_stored(tmp_path: Path) -> None:
    entry = planted(tmp_path, b"note")
    entry.mkdir()
    cache = open_cache(tmp_path)
    assert cache.get(key(b"note")) is None
    cache.put(key(b"note"), b"note")
    assert open_cache(tmp_path).get(key(b"note")) == b"note"


def test_a_directory_with_files_in_an_entrys_place_is_left_alone_and_no_harm_done(tmp_path: Path) -> None:
    entry = planted(tmp_path, b"note")
    entry.mkdir()
    (entry / "someones-file").write_text("keep me")
    cache = open_cache(tmp_path)
    assert cache.get(key(b"note")) is None
    cache.put(key(b"note"), b"note")  # cannot be stored on disk; logged, not raised
    assert open_cache(tmp_path).get(key(b"note")) is None
    assert (entry / "someones-file").read_text() == "keep me"
    assert not list(entry.parent.glob(".incoming-*"))


def test_hostile_things_found_by_a_rescan_are_removed_without_blocking(tmp_path: Path) -> None:
    fifo = planted(tmp_path, b"fifo", "other")
    os.mkfifo(fifo)
    bucket_file = open_cache(tmp_path, "other").directory / "ab"
    bucket_file.write_bytes(b"a file where a bucket belongs")
    log = tmp_path / cache_module.CHANGES
    os.mkfifo(log)  # even the change log
    done = threading.Event()

    def store() -> None:
        open_cache(tmp_path).put(key(b"note"), b"note")
        done.set()

    worker = threading.Thread(target=store, daemon=True)
    worker.start()
    if not done.wait(60):
        with contextlib.suppress(OSError):  # let the blocked open go, so the test run can end
            for path in (fifo, log):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("storing an entry hung on a FIFO (or the machine is too slow)")
    assert not fifo.exists() and not bucket_file.exists()
    assert log.is_file() and not log.is_symlink()
    assert open_cache(tmp_path).get(key(b"note")) == b"note"


def test_an_entry_read_again_from_memory_is_the_last_to_leave_the_disk(tmp_path: Path) -> None:
    cache = open_cache(tmp_path, max_bytes=30)
    blobs = [bytes([65 + i]) * 10 for i in range(3)]
    for blob in blobs:
        cache.put(key(blob), blob)
    assert cache.get(key(blobs[0])) == blobs[0]  # from memory
    cache.put(key(b"D" * 10), b"D" * 10)
    assert sorted(entries_on_disk(tmp_path)) == sorted(key(b) for b in (blobs[0], blobs[2], b"D" * 10))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_a_dropped_root_closes_its_change_log(tmp_path: Path) -> None:
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    for n in range(50):
        open_cache(tmp_path).put(key(b"%d" % n), b"%d" % n)
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) < before + 10  # 50 without closing


def test_a_socket_in_an_entrys_place_is_a_miss_and_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = planted(tmp_path, b"note")
    monkeypatch.chdir(entry.parent)  # a socket's path is limited to about 100 characters
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(entry.name)
        assert open_cache(tmp_path).get(key(b"note")) is None
    assert not entry.exists()


def test_junk_in_the_change_log_neither_evicts_everything_nor_stops_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "CHANGES_MAX_BYTES", 8 << 20)  # the junk is read, not rotated away
    first = open_cache(tmp_path, "a", 30)
    a, b, d, e = (letter * 10 for letter in (b"a", b"b", b"d", b"e"))
    first.put(key(a), a)
    first.put(key(b), b)
    with (tmp_path / cache_module.CHANGES).open("ab") as log:
        log.write(f"+{first.name}/{key(b'phantom')} 999999999999\n".encode())  # no entry is that large
        log.write(b"x" * (cache_module.MAX_ENTRY_BYTES // 64 + 10) + b"\n")  # a megabyte and more without a line
    open_cache(tmp_path, "b", 30).put(key(d), d)  # logged after the junk by another process
    first.put(key(e), e)  # learns of d past the junk, and evicts just the oldest
    assert sorted(entries_on_disk(tmp_path)) == sorted(key(x) for x in (b, d, e))
