"""Issue 27's two archive bounds, measured: a zip64 decoy, and the temp files of archives on their way in.

1. **zip64 decoy.** An archive whose zip64 locator points at a small decoy (10 entries) while the
   record just before the locator — the one ``zipfile`` reads — describes ``--entries`` real
   central directory entries. Reported: what the bounds said, how many entries ``zipfile`` built,
   the peak memory (tracemalloc) and the time.
2. **Temp files under the cache's bound.** A first ``search_notes`` (the cold sync) of four folders
   of ``--folder-mb`` MB each (incompressible text, stored zips) under ``TEAM_VAULT_CACHE_MAX_MB`` =
   ``--bound-mb``, on a scripted loopback server that holds every archive before its last chunk
   until each folder is either held or coming one by one. Reported: the bytes under the cache
   (entries plus the open temp files, read from ``/proc/self/fd``) at that point and the peak
   sampled every millisecond over the whole search, archives read and declined, requests.

Against another package: ``mkdir DIR && git archive <commit> teamvault_mcp | tar -x -C DIR``, then
``PYTHONPATH=DIR .venv/bin/python bench/archive_bounds_bench.py``. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import random
import struct
import sys
import tempfile
import threading
import time
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.fakes import PROJECT, file_record, make_config
from support.loopback import Exchange, loopback_server
from support.policies import FAST
from support.seeding import digest
from support.sessions import call_once

import teamvault_mcp
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.vault.archive import ArchiveRefused, Expected, Skipped, verified_entries
from teamvault_mcp.vault.retry import SystemClock

FILES = f"/api/projects/{PROJECT}/files"
ARCHIVE = f"/api/projects/{PROJECT}/folders/download"
CHUNK = 64 * 1024


def decoy_archive(entries: int) -> bytes:
    """``entries`` central directory entries (no data), a decoy zip64 end record at the start, the real one last."""
    central = io.BytesIO()
    for number in range(entries):
        name = f"team/n{number}.md".encode()
        central.write(
            struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0, 0, 0, 0, 0, 0)
        )
        central.write(name)
    directory = central.getvalue()
    decoy = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 10, 10, 460, 0)
    real = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, len(directory), 0)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, 0, 1)  # points at the decoy
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return decoy + directory + real + locator + end


def bench_decoy(entries: int) -> None:
    spool = io.BytesIO(decoy_archive(entries))
    skipped = Skipped()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        list(verified_entries(spool, Expected("team", 10, 1), max_total=1 << 30, skipped=skipped))
        outcome = "read"
    except ArchiveRefused as refused:
        outcome = f"refused: {refused}"
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"decoy, {entries:,} entries ({len(spool.getvalue()) / 1e6:.1f} MB): {outcome}")
    print(f"  entries zipfile built: {skipped.unknown:,}; peak memory {peak / 2**20:.1f} MiB; {seconds:.2f} s")


def spooled_bytes(cache: Path) -> int:
    total = 0
    for handle in Path("/proc/self/fd").iterdir():
        try:
            target = str(handle.readlink())
            name = target.rpartition("/")[2]
            if target.startswith(f"{cache}/") and target.endswith(" (deleted)") and name.startswith(("#", ".incoming")):
                total += handle.stat().st_size
        except OSError:
            pass
    return total


def entry_bytes(cache: Path) -> int:
    total = 0
    for path in cache.rglob("*"):
        try:
            if len(path.name) == 64 and path.is_file():
                total += path.stat().st_size
        except OSError:
            pass
    return total


def bench_temp_files(folder_mb: float, bound_mb: float) -> None:
    per_note = 1 << 20
    count = max(8, round(folder_mb))
    notes = {
        f"d{folder}/n{number}.md": b"# needle\n"
        + base64.b64encode(random.Random(folder * 1000 + number).randbytes(per_note * 3 // 4))
        for folder in range(4)
        for number in range(count)
    }
    ids = {path: f"f{number}" for number, path in enumerate(notes)}
    archives = {}
    for folder in range(4):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
            for path, data in notes.items():
                if path.startswith(f"d{folder}/"):
                    archive.writestr(path, data)
        archives[f"d{folder}"] = out.getvalue()
    arrived: dict[str, int] = {}
    singles: set[str] = set()
    lock = threading.Lock()
    release = threading.Event()

    with loopback_server() as server, tempfile.TemporaryDirectory() as directory:
        cache = Path(directory) / "cache"

        def listing(exchange: Exchange) -> None:
            records = [
                file_record(path, ids[path], contentHash=digest(data), size=str(len(data)))
                for path, data in notes.items()
            ]
            exchange.answer(200, json.dumps({"files": records}).encode())

        def single(path: str) -> Any:
            def answer(exchange: Exchange) -> None:
                with lock:
                    singles.add(path.partition("/")[0])
                exchange.answer(200, notes[path], "text/markdown")

            return answer

        def archive(exchange: Exchange) -> None:
            folder = exchange.query.partition("path=")[2]
            body = archives.get(folder)
            if body is None:
                exchange.answer(400, b'{"error":{"code":"missing_path","message":"no folder"}}')
                return
            first = (len(body) - 1) // CHUNK * CHUNK
            exchange.handler.send_response(200)
            exchange.handler.send_header("Content-Type", "application/zip")
            exchange.handler.send_header("Content-Length", str(len(body)))
            exchange.handler.end_headers()
            exchange.handler.wfile.write(body[:first])
            exchange.handler.wfile.flush()
            with lock:
                arrived[folder] = first
            release.wait(60)
            exchange.handler.wfile.write(body[first:])
            exchange.handler.wfile.flush()

        server.route("GET", FILES, listing)
        server.route("GET", ARCHIVE, archive)
        for path, file_id in ids.items():
            server.route("GET", f"{FILES}/{file_id}", single(path))

        config = make_config(
            base_url=server.url,
            cache_dir=cache,
            cache_max_bytes=int(bound_mb * 2**20),
            call_budget=120.0,
            structured_content=True,
        )
        runner = ToolRunner(config, clock=SystemClock(), policy=FAST)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.001):
                peak[0] = max(peak[0], spooled_bytes(cache) + entry_bytes(cache))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        held_at = [0]

        async def main() -> Any:
            result: list[Any] = []

            async def search() -> None:
                result.append(await call_once(runner, "search_notes", query="needle"))

            async with anyio.create_task_group() as group:
                group.start_soon(search)
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    with lock:
                        covered = len(set(arrived) | singles) == 4
                        expected = sum(arrived.values())
                    if covered and spooled_bytes(cache) == expected:
                        break
                    await anyio.sleep(0.005)
                held_at[0] = spooled_bytes(cache) + entry_bytes(cache)
                release.set()
            return result[0]

        started = time.perf_counter()
        _, _, result = anyio.run(main)
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
        stats = runner.workspace.sync.existing(PROJECT).stats  # type: ignore[union-attr]
        total_mb = sum(len(data) for data in notes.values()) / 2**20
        print(f"temp files: 4 folders of {count} notes of 1 MiB ({total_mb:.0f} MiB), bound {bound_mb:g} MiB")
        print(f"  archives held at once: {len(arrived)}; under the cache then: {held_at[0] / 2**20:.1f} MiB")
        print(f"  peak sampled over the search: {peak[0] / 2**20:.1f} MiB; {seconds:.2f} s")
        print(
            f"  archives read {stats.archives}, declined {getattr(stats, 'archives_declined', '-')}, "
            f"notes one by one {stats.singles}; totalNotes {result['totalNotes']}, partial {result['partial']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--folder-mb", type=float, default=44)
    parser.add_argument("--bound-mb", type=float, default=64)
    parser.add_argument("--parts", default="decoy,temp")
    args = parser.parse_args()
    print(f"package: {Path(teamvault_mcp.__file__).parent}")
    if "decoy" in args.parts:
        bench_decoy(args.entries)
    if "temp" in args.parts:
        bench_temp_files(args.folder_mb, args.bound_mb)


if __name__ == "__main__":
    main()
