"""The content cache before and after the root-wide bound and the no-follow reads, side by side in one run.

The baseline is ``cache.py`` as it was before :class:`CacheRoot` (the parent of the commit
that added it, or ``--baseline REV``), loaded from git next to the current one. For each,
interleaved, the best of ``--rounds`` rounds (the machine is shared: the least disturbed round):

- memory hit: ``get`` of an unchanged 2 KB note kept in memory (the hot path of every read);
- disk hit: ``get`` of a 2 KB note from disk (the memory layer turned off for both);
- put: a new 2 KB entry into a full cache, which evicts one;
- first put in a fresh process: the index read from a root of ``--entries`` entries (old:
  its own namespace only; new: the whole root), and the index's memory.

    .venv/bin/python bench/cache_bench.py [--rounds 7] [--entries 20000]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from teamvault_mcp.vault import cache as new  # noqa: E402

NOTE = b"# Handbook\n" + b"The travel budget is reviewed every quarter.\n" * 46  # ~2 KB


def baseline(rev: str | None) -> ModuleType:
    if rev is None:
        added = subprocess.run(
            ["git", "log", "--format=%H", "-S", "class CacheRoot", "--", "teamvault_mcp/cache.py"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        rev = f"{added[-1]}^"
    source = subprocess.run(
        ["git", "show", f"{rev}:teamvault_mcp/cache.py"], cwd=HERE.parent, capture_output=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="cache-bench-")) / "old_cache.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("old_cache", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def open_cache(module: ModuleType, root: Path, namespace: str, max_bytes: int) -> Any:
    if module is new:
        return new.CacheRoot(root, max_bytes=max_bytes).namespace(namespace)
    return module.ContentCache(root, namespace, max_bytes=max_bytes)


def per_call(action: Callable[[int], None], count: int) -> float:
    """Microseconds per call of ``action(i)``."""
    started = time.perf_counter()
    for i in range(count):
        action(i)
    return (time.perf_counter() - started) / count * 1e6


def blob(i: int) -> bytes:
    return NOTE + str(i).encode()


def one_round(module: ModuleType, root: Path) -> dict[str, float]:
    """Microseconds per memory hit, disk hit and evicting put, in a fresh root."""
    cache = open_cache(module, root, "server\0project", 1 << 30)
    digest = hashlib.sha256(NOTE).hexdigest()
    cache.put(digest, NOTE)
    timings = {"memory hit": per_call(lambda _: cache.get(digest), 20000)}
    saved = module.MEMORY_MAX_BYTES
    module.MEMORY_MAX_BYTES = 0  # every get reads the disk
    try:
        disk = open_cache(module, root, "server\0project", 1 << 30)
        disk.get(digest)  # the old cache scans its namespace at the first read
        timings["disk hit"] = per_call(lambda _: disk.get(digest), 2000)
        full = open_cache(module, root, "server\0project", len(NOTE) * 200)
        for i in range(200):
            full.put(hashlib.sha256(blob(i)).hexdigest(), blob(i))
        timings["put (evicts one)"] = per_call(
            lambda i: full.put(hashlib.sha256(blob(i + 10**6)).hexdigest(), blob(i + 10**6)), 500
        )
    finally:
        module.MEMORY_MAX_BYTES = saved
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--baseline", help="the git revision of the old cache.py")
    options = parser.parse_args()
    old = baseline(options.baseline)
    work = Path(tempfile.mkdtemp(prefix="cache-bench-"))
    results: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    modules = {"old": old, "new": new}

    for round_number in range(options.rounds):
        for label, module in modules.items():
            for what, microseconds in one_round(module, work / f"{label}-{round_number}").items():
                results[label].setdefault(what, []).append(microseconds)

    # A root of many entries, in 20 namespaces (servers and projects): the first put of a fresh process.
    first_put: dict[str, tuple[float, int]] = {}
    for label, module in modules.items():
        root = work / f"{label}-big"
        per_namespace = options.entries // 20
        for n in range(20):
            filler = open_cache(module, root, f"server-{n}\0p", 1 << 40)
            for i in range(per_namespace):
                data = b"%d %d" % (n, i)
                filler.put(hashlib.sha256(data).hexdigest(), data)
        fresh = open_cache(module, root, "server-0\0p", 1 << 40)
        started = time.perf_counter()
        fresh.put(hashlib.sha256(b"one more").hexdigest(), b"one more")
        elapsed = time.perf_counter() - started
        tracemalloc.start()  # slows every allocation: the memory is measured on another fresh process's put
        measured = open_cache(module, root, "server-0\0p", 1 << 40)
        measured.put(hashlib.sha256(b"and one more").hexdigest(), b"and one more")
        memory = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        first_put[label] = (elapsed * 1000, memory)

    print(f"{'µs per call, best of ' + str(options.rounds):<34} {'before':>10} {'after':>10} {'after/before':>13}")
    for what in results["old"]:
        before, after = min(results["old"][what]), min(results["new"][what])
        print(f"{what:<34} {before:>10.2f} {after:>10.2f} {after / before:>12.2f}×")
    (old_ms, old_memory), (new_ms, new_memory) = first_put["old"], first_put["new"]
    print(
        f"first put, root of {options.entries} entries in 20 namespaces: before {old_ms:.0f} ms "
        f"(its namespace: {options.entries // 20} entries, index {old_memory / 1e6:.1f} MB), "
        f"after {new_ms:.0f} ms (the whole root, index {new_memory / 1e6:.1f} MB)"
    )


if __name__ == "__main__":
    main()
