"""Local vault throughput and listing time on a 10,000-note project, against the issue's two targets.

1. A ``GET /files?path=`` + download pair at ≥ 1,000 pairs/s with the vault on one core.
2. The whole 10,000-note project lists (``GET /files``) in under 150 ms server-side.

How:

- seed: a fresh temp data directory gets ``--notes`` notes (``folder-NN/note-NNNNN.md``, a few
  hundred bytes of markdown each), written through the store in one write transaction;
- serve: ``python -m teamvault_mcp local-vault --data DIR --port 0`` in its own process, pinned
  to one core (``sched_setaffinity``); this process and its load workers go to the other cores;
- listing: ``GET /files`` of the whole project, 20 times on one keep-alive connection; the
  median of the server's ``Server-Timing: app;dur=`` and of the client's wall time;
- throughput: 1, 2 and 4 worker processes, each with one keep-alive ``http.client``
  connection, loop over pairs for a random note: ``GET /files?path=`` → id → ``GET /files/:id``
  (both must answer 200). After a warm-up, pairs completed in the measured window are counted;
  the vault's CPU time over the same window (``/proc/<pid>/stat``) shows it stayed on one core.

The result is a measurement, so the exit status is 0 whether or not a target is met.

    PYTHONPATH=. .venv/bin/python bench/localvault_bench.py [--notes 10000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

ROOT = Path(__file__).resolve().parent.parent
PAIRS_TARGET = 1000.0  # pairs/s
LISTING_TARGET_MS = 150.0
CONCURRENCY = (1, 2, 4)
WARMUP_SECONDS = 1.0
LISTINGS = 20
FOLDERS = 100


@dataclass(frozen=True)
class Vault:
    """How to reach the vault under test (picklable: the load workers get a copy)."""

    host: str
    port: int
    api_key: str
    project_id: str

    @property
    def files(self) -> str:
        return f"/api/projects/{self.project_id}/files"

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=30)


@dataclass(frozen=True)
class WorkerResult:
    pairs: int
    errors: int
    app_ms: float  # the Server-Timing durations of the counted pairs, summed
    cpu_seconds: float  # the worker's own CPU time over the measured window


@dataclass(frozen=True)
class Throughput:
    connections: int
    pairs_per_second: float
    errors: int
    vault_cpu: float  # vault CPU seconds / measured wall seconds (1.0 = one core busy)
    vault_cpu_per_pair_us: float
    app_per_pair_us: float
    client_cpu: float  # the load workers' CPU seconds / measured wall seconds


@dataclass(frozen=True)
class Listing:
    server_ms: float  # median Server-Timing app;dur
    wall_ms: float  # median client-side wall time
    bytes: int
    files: int


# -- the data ----------------------------------------------------------------------------------------


def note_path(index: int) -> str:
    return f"folder-{index % FOLDERS:02d}/note-{index:05d}.md"


def note_content(index: int) -> bytes:
    return (
        f"# Note {index:05d}\n\n"
        f"Filed under folder {index % FOLDERS:02d}. Links: [[note-{(index + 1):05d}]], [[note-{(index + 7):05d}]].\n\n"
        "## Summary\n\n"
        "- A few hundred bytes of markdown, enough to look like a real note.\n"
        "- Every note differs, so every note has its own blob.\n\n"
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
        "ut labore et dolore magna aliqua.\n"
    ).encode()


def seed(data_dir: Path, notes: int) -> float:
    """Create the vault in ``data_dir`` and write ``notes`` notes in one transaction; return the seconds taken."""
    started = time.perf_counter()
    with LocalVault(data_dir) as vault:
        owner = vault.store.owner_of(vault.project_id)
        with vault.store.write() as db:
            change = Change(db, vault.project_id, owner)
            for index in range(notes):
                vault.store.create(change, note_path(index), note_content(index), "text/markdown")
    return time.perf_counter() - started


# -- the vault process -------------------------------------------------------------------------------


def start_vault(data_dir: Path, core: int) -> tuple[subprocess.Popen[str], Vault]:
    """Serve ``data_dir`` from ``python -m teamvault_mcp local-vault`` pinned to ``core``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "teamvault_mcp", "local-vault", "--data", str(data_dir), "--port", "0"]
    with (data_dir / "vault.log").open("w") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    os.sched_setaffinity(process.pid, {core})
    printed = {}
    assert process.stdout is not None
    while len(printed) < 3:
        line = process.stdout.readline()
        if not line:
            process.wait()
            raise SystemExit(f"the vault did not start:\n{(data_dir / 'vault.log').read_text()}")
        name, _, value = line.strip().partition("=")
        printed[name] = value
    url = urlsplit(printed["TEAM_VAULT_URL"])
    assert url.hostname is not None and url.port is not None
    return process, Vault(url.hostname, url.port, printed["TEAM_VAULT_API_KEY"], printed["TEAM_VAULT_PROJECT_ID"])


def stop_vault(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def cpu_seconds_of(pid: int) -> float:
    """User + system CPU time of all of the process's threads so far (``/proc/<pid>/stat``)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; fields[0] is field 3 (state)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- requests ----------------------------------------------------------------------------------------


def get(conn: http.client.HTTPConnection, target: str, api_key: str) -> tuple[int, bytes, float]:
    """One GET on a kept-alive connection: status, body, and the server's ``app;dur`` in ms."""
    conn.request("GET", target, headers={"X-API-Key": api_key})
    response = conn.getresponse()
    body = response.read()
    timing = response.getheader("Server-Timing", "app;dur=0")
    return response.status, body, float(timing.partition("dur=")[2] or 0)


def read_pair(conn: http.client.HTTPConnection, vault: Vault, path: str) -> float:
    """Resolve ``path`` to an id, download it; return the server-side ms of both, or raise on any failure."""
    status, body, listed_ms = get(conn, f"{vault.files}?path={quote(path, safe='')}", vault.api_key)
    if status != 200:
        raise RuntimeError(f"GET /files?path={path}: {status}")
    files = json.loads(body)["files"]
    if len(files) != 1 or files[0]["path"] != path:
        raise RuntimeError(f"GET /files?path={path}: {len(files)} files")
    status, body, download_ms = get(conn, f"{vault.files}/{files[0]['id']}", vault.api_key)
    if status != 200 or not body:
        raise RuntimeError(f"GET /files/{files[0]['id']}: {status}")
    return listed_ms + download_ms


def pair_worker(vault: Vault, notes: int, worker: int, measure_from: float, measure_until: float) -> WorkerResult:
    """Loop over pairs until ``measure_until``; count those that end inside the measured window."""
    rng = random.Random(worker)
    conn = vault.connect()
    pairs = errors = 0
    app_ms = 0.0
    cpu_from = None
    while (now := time.monotonic()) < measure_until:
        if cpu_from is None and now >= measure_from:
            cpu_from = time.process_time()
        try:
            pair_ms = read_pair(conn, vault, note_path(rng.randrange(notes)))
        except (OSError, http.client.HTTPException, RuntimeError, ValueError, KeyError):
            errors += 1
            conn.close()
            conn = vault.connect()
            continue
        if measure_from <= time.monotonic() <= measure_until:
            pairs += 1
            app_ms += pair_ms
    conn.close()
    cpu_seconds = 0.0 if cpu_from is None else time.process_time() - cpu_from
    return WorkerResult(pairs, errors, app_ms, cpu_seconds)


def _pair_worker_star(args: tuple[Vault, int, int, float, float]) -> WorkerResult:
    return pair_worker(*args)


# -- the measurements --------------------------------------------------------------------------------


def measure_throughput(vault: Vault, vault_pid: int, notes: int, connections: int, seconds: float) -> Throughput:
    """``connections`` worker processes, one connection each, for a warm-up and then ``seconds``."""
    measure_from = time.monotonic() + WARMUP_SECONDS
    measure_until = measure_from + seconds
    jobs = [(vault, notes, worker, measure_from, measure_until) for worker in range(connections)]
    with multiprocessing.get_context("fork").Pool(connections) as pool:
        pending = pool.map_async(_pair_worker_star, jobs)
        time.sleep(max(0.0, measure_from - time.monotonic()))
        cpu_from = cpu_seconds_of(vault_pid)
        time.sleep(max(0.0, measure_until - time.monotonic()))
        cpu_used = cpu_seconds_of(vault_pid) - cpu_from
        results = pending.get(timeout=seconds + 60)
    pairs = sum(result.pairs for result in results)
    return Throughput(
        connections=connections,
        pairs_per_second=pairs / seconds,
        errors=sum(result.errors for result in results),
        vault_cpu=cpu_used / seconds,
        vault_cpu_per_pair_us=cpu_used / pairs * 1e6 if pairs else float("nan"),
        app_per_pair_us=sum(result.app_ms for result in results) / pairs * 1e3 if pairs else float("nan"),
        client_cpu=sum(result.cpu_seconds for result in results) / seconds,
    )


def measure_listing(vault: Vault, rounds: int) -> Listing:
    """``GET /files`` of the whole project ``rounds`` times on one connection (after two warm-up rounds)."""
    conn = vault.connect()
    server_ms, wall_ms = [], []
    body = b""
    for round_number in range(rounds + 2):
        started = time.perf_counter()
        status, body, app_ms = get(conn, vault.files, vault.api_key)
        wall = (time.perf_counter() - started) * 1000
        if status != 200:
            raise SystemExit(f"GET /files answered {status}")
        if round_number >= 2:
            server_ms.append(app_ms)
            wall_ms.append(wall)
    conn.close()
    files = len(json.loads(body)["files"])
    return Listing(statistics.median(server_ms), statistics.median(wall_ms), len(body), files)


# -- the report --------------------------------------------------------------------------------------


def command_line() -> str:
    pythonpath = os.environ.get("PYTHONPATH")
    prefix = f"PYTHONPATH={shlex.quote(pythonpath)} " if pythonpath else ""
    return prefix + shlex.join([sys.executable, *sys.argv])


def verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def print_throughput_header(seconds: float) -> None:
    window = f"{WARMUP_SECONDS:g} s warm-up, {seconds:g} s measured"
    print(f"\nthroughput: pairs of GET /files?path= + GET /files/:id; {window}")
    print("  vault CPU: the vault process's CPU time / wall time (100% = its one core busy)")
    print("  app time: the Server-Timing durations of the pair's two requests (the handler, not the HTTP parsing)")
    print(" connections   pairs/s   vault CPU   vault CPU/pair   app time/pair   client CPU   errors")


def print_throughput_row(result: Throughput) -> None:
    print(
        f" {result.connections:>11}   {result.pairs_per_second:>7,.0f}   {result.vault_cpu:>7.0%}  "
        f" {result.vault_cpu_per_pair_us:>11,.0f} µs   {result.app_per_pair_us:>10,.0f} µs"
        f"   {result.client_cpu:>9.0%}   {result.errors:>6}",
        flush=True,
    )


def print_listing(listing: Listing) -> None:
    size = f"{listing.files:,} files, {listing.bytes / 1e6:.2f} MB"
    print(f"\nlisting: GET /files of the whole project ({size}); {LISTINGS} times")
    print(f"  server-side (Server-Timing app;dur), median : {listing.server_ms:7.1f} ms")
    print(f"  client-side wall time, median              : {listing.wall_ms:7.1f} ms", flush=True)


def print_targets(best: Throughput, listing: Listing) -> None:
    print("\ntargets")
    print(
        f"  pairs ≥ {PAIRS_TARGET:,.0f}/s on one core   : best {best.pairs_per_second:,.0f}/s "
        f"({best.connections} connections)  {verdict(best.pairs_per_second >= PAIRS_TARGET)}"
    )
    print(
        f"    (at {best.vault_cpu_per_pair_us:,.0f} µs of vault CPU per pair, one saturated core would give "
        f"≈ {1e6 / best.vault_cpu_per_pair_us:,.0f} pairs/s)"
    )
    print(
        f"  listing < {LISTING_TARGET_MS:.0f} ms server-side : {listing.server_ms:.1f} ms  "
        f"{verdict(listing.server_ms < LISTING_TARGET_MS)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=10_000, help="notes in the project (default: 10000)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per concurrency level")
    args = parser.parse_args()

    cores = sorted(os.sched_getaffinity(0))
    vault_core, client_cores = cores[0], set(cores[1:]) or {cores[0]}
    print(f"command: {command_line()}")
    print(f"settings: --notes {args.notes} --seconds {args.seconds:g}; python {sys.version.split()[0]}", flush=True)
    data_dir = Path(tempfile.mkdtemp(prefix="localvault-bench-"))
    try:
        seeding = seed(data_dir, args.notes)
        print(f"\nseeding: {args.notes:,} notes through the store in one transaction: {seeding:.1f} s", flush=True)
        process, vault = start_vault(data_dir, vault_core)
        os.sched_setaffinity(0, client_cores)  # the load workers inherit it
        print(
            f"vault pid {process.pid} on cores {sorted(os.sched_getaffinity(process.pid))}, "
            f"load generator on cores {sorted(os.sched_getaffinity(0))}",
            flush=True,
        )
        try:
            listing = measure_listing(vault, LISTINGS)
            print_listing(listing)
            print_throughput_header(args.seconds)
            throughput = []
            for connections in CONCURRENCY:
                throughput.append(measure_throughput(vault, process.pid, args.notes, connections, args.seconds))
                print_throughput_row(throughput[-1])
        finally:
            stop_vault(process)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print_targets(max(throughput, key=lambda result: result.pairs_per_second), listing)


if __name__ == "__main__":
    main()
