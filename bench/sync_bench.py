"""Cold sync (issue 16): the first search of a big vault by folder archives, side by side with the per-note path.

A local vault (its own process) is seeded with notes of ~4 KB in 10 top-level folders (7
subfolders each; a query that matches every note). In front of it: a TLS front (HTTPS with the
test certificate, bench/tls_front.py) and the delay proxy (bench/delay_proxy.py) at the round
trip asked for. ``teamvault-mcp`` runs as a real stdio child with a fresh cache directory and
``TEAM_VAULT_LOG_LEVEL=debug``, whose one line per HTTP attempt is how requests are counted.
The per-note path is the same server against the vault started with
``--without-folder-download`` (a server without the route: it falls back to one download per
note); ``--before DIR`` adds the package in DIR (say, the code before this change) as a third
column. Every mode gets a fresh vault process on the same data.

a. the cold first ``search_notes`` of 5,000 notes at 40 ms: seconds, requests, partial, and
   the server's RSS after it (``VmRSS``);
b. the same with 20,000 notes at 80 ms, under the default 45 s budget;
c. the warm-up: the first search sent 5 s after ``initialize`` against a warm one (median of
   10) in the same process; and, with that disk cache, a restart: the requests its warm-up
   makes, and the first ``read_note`` sent right after ``initialize`` (its latency in round
   trips, and the TLS handshakes the vault's front saw during it);
d. the threshold: one folder of k notes as one archive against k single downloads on 8
   keep-alive connections (plain HTTP through the proxy), loopback and 40 ms;
e. the first ``read_note`` after spawn, of a note in the disk cache (one request), sent at once
   after ``initialize`` and sent 1 s later, prefetch on and off (median of ``--spawns`` fresh
   processes each): its latency in round trips, the TLS handshakes the front had completed when
   ``initialize`` was answered and those during the read; with ``--before``, that package too.

    PYTHONPATH=. .venv/bin/python bench/sync_bench.py [--notes 5000] [--big 20000] [--before DIR]
        [--parts a,b,c,d,e] [--spawns 7]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import quote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from delay_proxy import DelayProxy, delay_proxy
from search_bench import QUERY, note_text
from standin import CERT
from stdio_client import INITIALIZE
from tls_front import TlsFront, tls_front

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = 10


def seed(data_dir: Path, notes: int) -> None:
    rng = random.Random(notes)
    with mock.patch("os.fsync"), LocalVault(data_dir) as vault:  # a benchmark's data need not survive a power cut
        owner = vault.store.owner_of(vault.project_id)
        with vault.store.write() as db:
            change = Change(db, vault.project_id, owner)
            for number in range(notes):
                path = f"folder-{number % FOLDERS:02d}/sub-{number % 7}/note {number:05d}.md"
                vault.store.create(change, path, note_text(rng, number).encode(), None)


@contextmanager
def vault_process(data_dir: Path, *, archives: bool) -> Iterator[dict[str, str]]:
    command = [sys.executable, "-m", "teamvault_mcp", "local-vault", "--data", str(data_dir), "--port", "0"]
    if not archives:
        command.append("--without-folder-download")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert process.stdout is not None
    announced = dict(process.stdout.readline().rstrip("\n").split("=", 1) for _ in range(3))
    try:
        yield announced
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def network(vault_url: str, rtt: float) -> Iterator[tuple[str, TlsFront, DelayProxy]]:
    """HTTPS at ``rtt``: the delay proxy, then a TLS front, then the vault. Yields the URL to give clients."""
    port = urlsplit(vault_url).port
    assert port is not None
    with tls_front(("127.0.0.1", port)) as front, delay_proxy(("127.0.0.1", front.port), rtt / 2) as proxy:
        yield f"https://127.0.0.1:{proxy.port}", front, proxy


class Host:
    """``teamvault-mcp`` as a stdio child; its stderr (the debug log) goes to a file, read to count requests."""

    def __init__(self, env: dict[str, str], log: Path, package: str | None) -> None:
        self.log = log
        self.started = time.perf_counter()
        self._err = log.open("wb")
        child_env = {**os.environ, **env, "PYTHONPATH": package or str(ROOT), "TEAM_VAULT_LOG_LEVEL": "debug"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "teamvault_mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=child_env,
            cwd=package or str(ROOT),  # python -m puts the working directory first on the path, before PYTHONPATH
        )
        self._id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}).encode()
        )
        self.process.stdin.write(b"\n")
        self.process.stdin.flush()
        while True:
            answer = json.loads(self.process.stdout.readline())
            if answer.get("id") == self._id:
                return answer

    def initialize(self) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        self.process.stdin.flush()
        self.process.stdout.readline()
        answered = time.perf_counter() - self.started
        self.process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        self.process.stdin.flush()
        return answered

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        started = time.perf_counter()
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        seconds = time.perf_counter() - started
        result = answer["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result['content'][0]['text']}")
        return seconds, result.get("structuredContent") or {}

    def requests_logged(self) -> int:
        """HTTP attempts the server has made so far (its debug log: one line each)."""
        return sum(
            1 for line in self.log.read_text(errors="replace").splitlines() if "teamvault_mcp.vault.client:" in line
        )

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self._err.close()


def mcp_env(url: str, announced: dict[str, str], cache: Path, **extra: str) -> dict[str, str]:
    return {
        "TEAM_VAULT_URL": url,
        "TEAM_VAULT_API_KEY": announced["TEAM_VAULT_API_KEY"],
        "TEAM_VAULT_PROJECT_ID": announced["TEAM_VAULT_PROJECT_ID"],
        "TEAM_VAULT_CACHE_DIR": str(cache),
        "REQUESTS_CA_BUNDLE": str(CERT),
        **extra,
    }


def cold_search(data: Path, work: Path, rtt: float, mode: str, package: str | None) -> dict[str, Any]:
    """One fresh server, empty cache, prefetch off: the first search_notes."""
    with (
        vault_process(data, archives=mode == "archives") as announced,
        network(announced["TEAM_VAULT_URL"], rtt) as (
            url,
            _,
            _,
        ),
    ):
        cache = work / f"cache-{mode}"
        shutil.rmtree(cache, ignore_errors=True)
        host = Host(mcp_env(url, announced, cache, TEAM_VAULT_PREFETCH="off"), work / f"log-{mode}", package)
        try:
            host.initialize()
            before = host.requests_logged()
            seconds, result = host.call("search_notes", {"query": QUERY})
            return {
                "seconds": seconds,
                "requests": host.requests_logged() - before,
                "partial": result.get("partial"),
                "searched": result.get("notesSearched"),
                "rss": host.rss_mib(),
            }
        finally:
            host.close()
            shutil.rmtree(cache, ignore_errors=True)


def part_cold(data: Path, work: Path, notes: int, rtt: float, package: str | None, label: str) -> None:
    modes = ["archives", "per note"] + (["before"] if package else [])
    print(
        f"{label}. cold first search_notes, {notes:,} notes of ~4 KB in {FOLDERS} folders, "
        f"HTTPS at {rtt * 1000:.0f} ms RTT"
    )
    print(f"  {'mode':<34} {'seconds':>8} {'requests':>9} {'searched':>9} {'partial':>8} {'RSS after':>10}")
    for mode in modes:
        figures = cold_search(
            data, work, rtt, "per note" if mode == "before" else mode, package if mode == "before" else None
        )
        name = {
            "archives": "folder archives",
            "per note": "per note (no archive route)",
            "before": f"before ({package})",
        }[mode]
        if mode == "before":  # the package before this change has no archives: it is given the route anyway
            name = "before: per note (its only path)"
        print(
            f"  {name:<34} {figures['seconds']:>8.2f} {figures['requests']:>9,} {figures['searched'] or 0:>9,} "
            f"{figures['partial']!s:>8} {figures['rss']:>6.0f} MiB"
        )


def part_warm_up(data: Path, work: Path, rtt: float) -> None:
    print(f"c. background warm-up, {rtt * 1000:.0f} ms RTT, HTTPS, folder archives")
    with vault_process(data, archives=True) as announced, network(announced["TEAM_VAULT_URL"], rtt) as (url, front, _):
        cache = work / "cache-warm"
        shutil.rmtree(cache, ignore_errors=True)
        host = Host(mcp_env(url, announced, cache), work / "log-warm", None)
        try:
            host.initialize()
            time.sleep(5.0)
            warmed_by = host.requests_logged()
            first, result = host.call("search_notes", {"query": QUERY})
            first_requests = host.requests_logged() - warmed_by
            warm = statistics.median(host.call("search_notes", {"query": QUERY})[0] for _ in range(10))
            rss = host.rss_mib()
        finally:
            host.close()
        print(
            f"  first search 5 s after initialize: {first * 1000:7.1f} ms ({first_requests} request, "
            f"partial {result.get('partial')}); warm, median of 10: {warm * 1000:7.1f} ms: ratio {first / warm:.2f}"
        )
        print(f"  the warm-up's requests before it: {warmed_by}; RSS after the searches {rss:.0f} MiB")
        for prefetch in ("on", "off"):  # a restart on that disk cache
            host = Host(mcp_env(url, announced, cache, TEAM_VAULT_PREFETCH=prefetch), work / "log-restart", None)
            try:
                initialized = host.initialize()
                handshakes = front.handshakes
                seconds, _ = host.call("read_note", {"path": "folder-03/sub-3/note 00003.md"})
                during = front.handshakes - handshakes
                time.sleep(3.0)
                made = host.requests_logged()
            finally:
                host.close()
            print(
                f"  restart, prefetch {prefetch:<3}: initialize at {initialized * 1000:.0f} ms, then read_note "
                f"{seconds * 1000:6.1f} ms = {seconds / rtt:.2f} RTT ({during} TLS handshakes during it); "
                f"{made} requests in its first 3 s (the read_note's included)"
            )
        shutil.rmtree(cache, ignore_errors=True)


def part_first_read(work: Path, rtt: float, spawns: int, package: str | None) -> None:
    data = work / "vault-first-read"
    rng = random.Random(3)
    with mock.patch("os.fsync"), LocalVault(data) as vault:
        owner = vault.store.owner_of(vault.project_id)
        with vault.store.write() as db:
            change = Change(db, vault.project_id, owner)
            for number in range(50):
                vault.store.create(
                    change, f"folder-{number % 5}/note {number:02d}.md", note_text(rng, number).encode(), None
                )
    path = "folder-3/note 03.md"  # the one _first_read reads
    print(
        f"e. the first read_note after spawn (the note in the disk cache: one request), HTTPS at {rtt * 1000:.0f} ms "
        f"RTT, median of {spawns} fresh processes"
    )
    print(
        f"  {'server':<7} {'prefetch':<8} {'sent':<24} {'initialize':>10} {'1st TLS':>8} {'last TLS':>8} "
        f"{'read_note':>10} {'in RTT':>6} {'TLS during':>10}"
    )
    with vault_process(data, archives=True) as announced, network(announced["TEAM_VAULT_URL"], rtt) as (url, front, _):
        cache = work / "cache-first-read"
        shutil.rmtree(cache, ignore_errors=True)
        host = Host(mcp_env(url, announced, cache, TEAM_VAULT_PREFETCH="off"), work / "log-first-read", None)
        try:
            host.initialize()
            host.call("read_note", {"path": path})  # into the disk cache
        finally:
            host.close()
        servers = [("this", None)] + ([("before", package)] if package else [])
        for server, source in servers:
            for prefetch in ("on", "off"):
                for delay in (0.0, 1.0):
                    runs = [
                        _first_read(url, announced, cache, work, front, source, prefetch, delay) for _ in range(spawns)
                    ]
                    initialized, first_tls, last_tls, seconds, during = (
                        statistics.median(run[i] for run in runs) for i in range(5)
                    )
                    sent = "at once after initialize" if not delay else f"{delay:.0f} s after initialize"
                    print(
                        f"  {server:<7} {prefetch:<8} {sent:<24} {initialized * 1000:>7.0f} ms "
                        f"{first_tls * 1000:>5.0f} ms {last_tls * 1000:>5.0f} ms "
                        f"{seconds * 1000:>7.1f} ms {seconds / rtt:>6.2f} {during:>10.0f}"
                    )
        print(
            "  (times from spawn: initialize answered, the front's first and last TLS handshake done before the "
            "read; TLS during: handshakes while the read ran)"
        )
        shutil.rmtree(cache, ignore_errors=True)


def _first_read(
    url: str,
    announced: dict[str, str],
    cache: Path,
    work: Path,
    front: TlsFront,
    package: str | None,
    prefetch: str,
    delay: float,
) -> tuple[float, float, float, float, int]:
    """One fresh server: (initialize answered, first and last TLS handshake done before the read — both from
    spawn, NaN if none —, the read's seconds, handshakes during the read)."""
    base = len(front.handshake_times)
    host = Host(mcp_env(url, announced, cache, TEAM_VAULT_PREFETCH=prefetch), work / "log-first-read", package)
    try:
        initialized = host.initialize()
        time.sleep(delay)
        done = front.handshake_times[base:]
        seconds, _ = host.call("read_note", {"path": "folder-3/note 03.md"})
        during = len(front.handshake_times) - base - len(done)
    finally:
        host.close()
    first, last = (done[0] - host.started, done[-1] - host.started) if done else (float("nan"), float("nan"))
    return initialized, first, last, seconds, during


def part_threshold(work: Path, rtt: float) -> None:
    sizes = (1, 2, 4, 8, 16, 32, 64)
    data = work / "vault-threshold"
    rng = random.Random(7)
    with mock.patch("os.fsync"), LocalVault(data) as vault:
        owner = vault.store.owner_of(vault.project_id)
        with vault.store.write() as db:
            change = Change(db, vault.project_id, owner)
            for size in sizes:
                for number in range(size):
                    vault.store.create(change, f"k{size:02d}/n{number:02d}.md", note_text(rng, number).encode(), None)
    print("d. one folder of k notes: one archive against k single downloads on 8 connections (median of 5)")
    print(f"  {'network':<12} " + " ".join(f"{'k=' + str(size):>15}" for size in sizes))
    with vault_process(data, archives=True) as announced:
        port = urlsplit(announced["TEAM_VAULT_URL"]).port
        assert port is not None
        for name, delay in (("loopback", 0.0), (f"{rtt * 1000:.0f} ms RTT", rtt / 2)):
            with delay_proxy(("127.0.0.1", port), delay) as proxy:
                row = [_archive_against_singles(proxy.port, announced, size) for size in sizes]
            print(f"  {name:<12} " + " ".join(f"{a * 1000:6.1f}/{s * 1000:6.1f}ms" for a, s in row))
    print("  (archive/singles; the archive comes on one connection, the singles on 8)")


def _archive_against_singles(port: int, announced: dict[str, str], size: int) -> tuple[float, float]:
    key, project = announced["TEAM_VAULT_API_KEY"], announced["TEAM_VAULT_PROJECT_ID"]
    headers = {"X-API-Key": key}
    connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=60) for _ in range(8)]

    def get(connection: http.client.HTTPConnection, target: str) -> bytes:
        connection.request("GET", target, headers=headers)
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200, (target, response.status)
        return body

    folder = f"k{size:02d}"
    files = json.loads(get(connections[0], f"/api/projects/{project}/files?prefix={folder}/"))["files"]
    for connection in connections:  # every connection opened before the clock starts
        get(connection, "/api/auth/me")
    archive, singles = [], []
    for _ in range(5):
        started = time.perf_counter()
        get(connections[0], f"/api/projects/{project}/folders/download?path={quote(folder)}")
        archive.append(time.perf_counter() - started)
        pending = [f"/api/projects/{project}/files/{file['id']}" for file in files]
        lock = threading.Lock()

        def worker(connection: http.client.HTTPConnection, pending: list[str] = pending, lock: Any = lock) -> None:
            while True:
                with lock:
                    if not pending:
                        return
                    target = pending.pop()
                get(connection, target)

        started = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(c,)) for c in connections[: min(8, size)]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        singles.append(time.perf_counter() - started)
    for connection in connections:
        connection.close()
    return statistics.median(archive), statistics.median(singles)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--big", type=int, default=20000)
    parser.add_argument("--rtt", type=float, default=0.040)
    parser.add_argument("--big-rtt", type=float, default=0.080)
    parser.add_argument("--before", help="a directory holding the teamvault_mcp package before this change")
    parser.add_argument("--parts", default="a,b,c,d,e")
    parser.add_argument("--spawns", type=int, default=7, help="fresh processes for each figure of part e")
    args = parser.parse_args()
    parts = args.parts.split(",")
    print(f"command: {' '.join(sys.argv)}   (cores: {os.cpu_count()}, load {os.getloadavg()[0]:.1f})")
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        if {"a", "c"} & set(parts):
            data = work / "vault"
            started = time.perf_counter()
            seed(data, args.notes)
            print(f"  {args.notes:,} notes seeded in {time.perf_counter() - started:.1f} s", flush=True)
            if "a" in parts:
                part_cold(data, work, args.notes, args.rtt, args.before, "a")
            if "c" in parts:
                part_warm_up(data, work, args.rtt)
            shutil.rmtree(data)
        if "b" in parts:
            data = work / "vault-big"
            started = time.perf_counter()
            seed(data, args.big)
            print(f"  {args.big:,} notes seeded in {time.perf_counter() - started:.1f} s", flush=True)
            part_cold(data, work, args.big, args.big_rtt, args.before, "b")
            shutil.rmtree(data)
        if "d" in parts:
            part_threshold(work, args.rtt)
        if "e" in parts:
            part_first_read(work, args.rtt, args.spawns, args.before)


if __name__ == "__main__":
    main()
