"""The growth bench of issue 29: the graph and search tools on vaults of 1,000 to 100,000 notes, from outside.

For each size a generated vault (:func:`vault_notes`: notes of ~4 KB with front matter, headings, ~15 wikilinks,
inline tags and checkbox tasks each; five hub notes ``hubs/hub-<k>.md`` that a quarter of the notes link to,
and a few links to notes that do not exist) is written straight into a local vault's data directory through
its store, in transactions of 2,000 notes with the blobs' fsyncs skipped (seeding only: the vault's own
durability is not measured here, and 100,000 fsynced blobs take minutes). Then ``teamvault-mcp local-vault``
serves it in a process of its own, on loopback, and ``teamvault-mcp`` (the package under test) runs as a stdio
child, as a host starts it, with the default call budget and a fresh cache directory. Measured from the client:

- cold: the first ``search_notes`` of a fresh server on a fresh cache directory (it downloads every note), its
  time and whether its answer was partial; with ``--rtt-ms``, the same once more through ``bench/delay_proxy.py``
  (half the round trip each way), on a fresh cache directory of its own;
- warm: the median of ``--repeat`` calls of each of search_notes, note_links on a hub, broken_links,
  list_tags, query_notes, list_tasks, recent_changes and find_notes, and whether any answer was partial;
- restart: the server killed and started again on the same cache directory, then the first call of each tool;
- the server's resident memory (``VmRSS``, and the peak ``VmHWM``, from ``/proc``) after the warm calls, and
  the restarted server's after its first calls;
- the cache directory's size on disk per 1,000 notes: the content cache, and any index file (``*.sqlite``,
  ``*.db``, ``*index*``, with their ``-wal``/``-shm``) apart.

A partial answer is one whose text says ``[Partial``, as every tool's does (the text is the answer); an error
result (the budget's "Out of time", say) is shown as such, timed.
Printed: a line per phase as it ends, then the growth table in Markdown for docs/benchmarks.md.

``--cache-mb N`` sets the server's ``TEAM_VAULT_CACHE_MAX_MB`` (a vault bigger than the cache's bound, 512 MB by
default, is downloaded again by every search: 100,000 notes of ~4 KB take about 800 MB on disk).
``--settle S`` waits S seconds after the cold search, so that the warm calls find the warm-up's sync and index
done (at 100,000 notes they take minutes; without it the warm calls measure a vault still being taken in);
``--restart-settle S`` waits S seconds after the restart before its first calls (its warm-up reads the index back).
``--package DIR`` runs the server on the ``teamvault_mcp`` package under DIR (``git archive main teamvault_mcp
| tar -x -C DIR``), for a before/after; the local vault always runs from this tree. ``--data-root DIR`` keeps
the seeded vaults there (``DIR/<notes>``) and reuses them on the next run.

    .venv/bin/python bench/index_bench.py [--sizes 1000,5000,20000,50000,100000] [--repeat 20] [--rtt-ms 40]
        [--package DIR] [--data-root DIR] [--cache-mb N] [--settle S] [--restart-settle S]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from delay_proxy import delay_proxy
from stdio_client import StdioHost

from teamvault_mcp.localvault import LocalVault, blobs
from teamvault_mcp.localvault.store import Change

ROOT = Path(__file__).resolve().parent.parent
#: Settings of the server under test that options give (``--cache-mb``).
SERVER_ENV: dict[str, str] = {}
HUBS = 5
#: Each of the tools the issue measures warm, and its arguments.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_notes", {"query": "budget review"}),
    ("note_links", {"path": "hubs/hub-0.md"}),
    ("broken_links", {"limit": 20}),
    ("list_tags", {}),
    ("query_notes", {"where": {"status": "active", "due": {"gte": "2024-06-01"}}, "sort": "-due", "limit": 20}),
    ("list_tasks", {"limit": 50}),
    ("recent_changes", {"since": "7d", "limit": 20}),
    ("find_notes", {"query": "note 4242"}),
]
WORDS = [
    *("team", "vault", "note", "agent", "meeting", "decision", "owner", "deadline", "review", "draft", "budget"),
    *("risk", "customer", "release", "design", "api", "sync", "plugin", "conflict", "version", "history"),
    *("folder", "section", "summary", "action", "item"),
]
FOLDERS = ["people", "projects", "meetings", "areas/eng", "areas/ops", "archive/2024"]


def note_paths(count: int) -> list[str]:
    """The paths of a vault of ``count`` notes: the hubs first, then ``<folder>/note-<n>.md``."""
    return [f"hubs/hub-{k}.md" for k in range(HUBS)] + [
        f"{FOLDERS[n % len(FOLDERS)]}/note-{n}.md" for n in range(count - HUBS)
    ]


def vault_notes(count: int, seed: int = 29) -> Iterator[tuple[str, str]]:
    """``count`` notes, (path, text), made one at a time (a 100,000-note vault is 400 MB of text)."""
    rng = random.Random(seed)
    paths = note_paths(count)
    for index, path in enumerate(paths):
        yield path, note_text(rng, paths, index)


def note_text(rng: random.Random, paths: list[str], index: int) -> str:
    """One note of ~4 KB: front matter, headings, ~15 links (one to a hub for a quarter of the notes), tags, tasks."""

    def words(count: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(count))

    def link() -> str:
        roll = rng.random()
        if roll < 0.01:
            return f"[[missing-{rng.randint(0, 99)}]]"  # a broken link, now and then
        target = rng.choice(paths)
        name = target.rpartition("/")[2].removesuffix(".md")
        return rng.choice([f"[[{name}]]", f"[[{name}|{words(2)}]]", f"[[{target[:-3]}#Plan]]", f"[x]({target})"])

    parts = [
        "---",
        f"title: Note {index}",
        f"status: {rng.choice(['active', 'paused', 'done'])}",
        f"due: 2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        f"tags: [{rng.choice(WORDS)}, area/{rng.choice(WORDS)}]",
        "---",
        f"# Note {index}",
        "",
    ]
    if index % 4 == 0:
        parts += [f"Filed under [[hub-{(index // 4) % HUBS}]].", ""]
    while sum(len(part) + 1 for part in parts) < 3900:
        parts += [
            f"## {words(3).title()}",
            "",
            f"{words(25)} {link()} {words(15)} #{rng.choice(WORDS)} {words(10)} {link()}.",
            f"{words(20)} #{rng.choice(WORDS)}/{rng.choice(WORDS)} {words(20)} {link()}.",
            "",
            f"- [ ] {words(6)} {link()}",
            f"- [x] {words(5)}",
            "",
        ]
    return "\n".join(parts) + "\n"


@contextlib.contextmanager
def blobs_without_fsync() -> Iterator[None]:
    """Seeding only: the blobs are written without fsync (the bench measures the MCP server, not the vault's disk)."""
    fsync, fsync_dir = os.fsync, blobs._fsync_dir
    os.fsync = lambda fd: None
    blobs._fsync_dir = lambda directory: None  # type: ignore[assignment]
    try:
        yield
    finally:
        os.fsync, blobs._fsync_dir = fsync, fsync_dir  # type: ignore[assignment]


def seeded_vault(data: Path, count: int) -> float:
    """A local vault of ``count`` generated notes in ``data`` (kept if it is there already); seconds it took."""
    done = data / "seeded"
    if done.exists():
        return 0.0
    shutil.rmtree(data, ignore_errors=True)
    started = time.perf_counter()
    vault = LocalVault(data)
    try:
        store, project = vault.store, vault.project_id
        owner = store.owner_of(project)
        notes = vault_notes(count)
        with blobs_without_fsync():
            while True:
                batch = [note for _, note in zip(range(2000), notes, strict=False)]
                if not batch:
                    break
                with store.write() as db:
                    change = Change(db, project, owner)
                    for path, text in batch:
                        store.create(change, path, text.encode(), "text/markdown")
    finally:
        vault.store.close()
    done.write_text(f"{count}\n")
    return time.perf_counter() - started


def start_local_vault(data: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """``teamvault-mcp local-vault`` on ``data`` (this tree's), a free port; the environment it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "teamvault_mcp", "local-vault", "--data", str(data), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**clean_environ(), "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None
    return process, dict(process.stdout.readline().rstrip("\n").split("=", 1) for _ in range(3))


def clean_environ() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if not name.startswith("TEAM_VAULT_")}


@dataclass
class Server:
    """The MCP server under test as a stdio child, on one cache directory."""

    package: Path
    vault_env: dict[str, str]
    cache: Path
    host: StdioHost = field(init=False)

    def __post_init__(self) -> None:
        env = {
            **clean_environ(),
            **self.vault_env,
            "PYTHONPATH": str(self.package),
            "TEAM_VAULT_CACHE_DIR": str(self.cache),
            **SERVER_ENV,
        }
        self.host = StdioHost([sys.executable, "-m", "teamvault_mcp"], env, cwd=str(self.package))
        self.host.initialize()

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, str]:
        """Seconds the call took, and what was wrong with its answer: "" (nothing), "partial" or "error"
        (an error result, such as the budget's "Out of time")."""
        host = self.host
        host._next_id += 1
        request = {"name": tool, "arguments": arguments}
        started = time.perf_counter()
        host.send({"jsonrpc": "2.0", "id": host._next_id, "method": "tools/call", "params": request})
        answer = host.receive()
        elapsed = time.perf_counter() - started
        if "error" in answer:
            raise RuntimeError(f"{tool}: {answer['error']}")
        result = answer["result"]
        text = "\n".join(block.get("text", "") for block in result["content"])
        if result.get("isError"):
            say(f"  {tool} answered an error after {elapsed:.1f} s: {text[:120]}")
            return elapsed, "error"
        return elapsed, "partial" if "[Partial" in text else ""

    def memory_mib(self) -> tuple[float, float]:
        """The process's resident set now and at its peak (``VmRSS``, ``VmHWM``), in MiB."""
        fields = {}
        for line in Path(f"/proc/{self.host.process.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) / 1024
        return fields.get("VmRSS", float("nan")), fields.get("VmHWM", float("nan"))

    def kill(self) -> None:
        self.host.process.kill()
        self.host.process.wait(timeout=30)

    def close(self) -> None:
        self.host.close()


def disk_bytes(cache: Path) -> tuple[int, int, int]:
    """Bytes on disk (blocks) under ``cache``: the content cache's files, the index files'; and the content
    cache's bytes (its files' lengths)."""
    content = index = length = 0
    for path in cache.rglob("*"):
        if path.is_file() and not path.is_symlink():
            size = path.stat().st_blocks * 512
            name = path.name.lower()
            if name.endswith((".sqlite", ".db", "-wal", "-shm", ".sqlite3")) or "index" in name:
                index += size
            else:
                content += size
                length += path.stat().st_size
    return content, index, length


@dataclass
class Size:
    """What one vault size measured."""

    notes: int
    seed_s: float = 0.0
    cold: tuple[float, str] = (0.0, "")
    cold_rtt: tuple[float, str] | None = None
    warm: dict[str, float] = field(default_factory=dict)
    warm_mark: dict[str, str] = field(default_factory=dict)
    restart: dict[str, tuple[float, str]] = field(default_factory=dict)
    rss_warm: tuple[float, float] = (0.0, 0.0)
    rss: tuple[float, float] = (0.0, 0.0)
    disk: tuple[int, int, int] = (0, 0, 0)
    total_s: float = 0.0


def measure(count: int, options: argparse.Namespace, work: Path) -> Size:
    started = time.perf_counter()
    data_root = Path(options.data_root) if options.data_root else work / "vaults"
    data = data_root / str(count)
    size = Size(count)
    size.seed_s = seeded_vault(data, count)
    say(f"{count:,} notes: seeded in {size.seed_s:.1f} s" if size.seed_s else f"{count:,} notes: seeded already")
    process, vault_env = start_local_vault(data)
    package = Path(options.package).resolve() if options.package else ROOT
    try:
        cache = work / f"cache-{count}"
        shutil.rmtree(cache, ignore_errors=True)
        server = Server(package, vault_env, cache)
        size.cold = server.call(*CALLS[0])
        say(f"  cold search_notes: {size.cold[0]:.1f} s {size.cold[1]}")
        if options.settle:
            say(f"  letting the warm-up sync and index the rest for {options.settle:g} s")
            time.sleep(options.settle)
        for tool, arguments in CALLS:
            runs = [server.call(tool, arguments) for _ in range(options.repeat)]
            size.warm[tool] = statistics.median(run[0] for run in runs)
            size.warm_mark[tool] = ", ".join(sorted({run[1] for run in runs} - {""}))
            say(f"  warm {tool}: {size.warm[tool] * 1000:,.0f} ms (median of {options.repeat}) {size.warm_mark[tool]}")
        size.rss_warm = server.memory_mib()
        server.kill()
        server = Server(package, vault_env, cache)
        if options.restart_settle:
            say(f"  letting the restarted server's warm-up run for {options.restart_settle:g} s")
            time.sleep(options.restart_settle)
        for tool, arguments in CALLS:
            size.restart[tool] = server.call(tool, arguments)
        say("  after a restart: " + ", ".join(f"{t} {s * 1000:,.0f} ms" for t, (s, _) in size.restart.items()))
        size.rss = server.memory_mib()
        server.close()
        size.disk = disk_bytes(cache)
        say(f"  memory after the warm calls: VmRSS {size.rss_warm[0]:,.0f} MiB, VmHWM {size.rss_warm[1]:,.0f} MiB")
        say(f"  memory after the restart's calls: VmRSS {size.rss[0]:,.0f} MiB, VmHWM {size.rss[1]:,.0f} MiB")
        say(f"  cache on disk: content {size.disk[0]:,} B, index {size.disk[1]:,} B")
        if options.rtt_ms:
            size.cold_rtt = cold_through_proxy(package, vault_env, work / f"cache-{count}-rtt", options.rtt_ms)
            say(f"  cold search_notes at {options.rtt_ms:g} ms RTT: {size.cold_rtt[0]:.1f} s")
    finally:
        process.terminate()
        process.wait(timeout=30)
    size.total_s = time.perf_counter() - started
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    say(f"  {count:,} notes took {size.total_s:.0f} s in all (load average then: {load})")
    return size


def cold_through_proxy(package: Path, vault_env: dict[str, str], cache: Path, rtt_ms: float) -> tuple[float, str]:
    """The first search_notes of a fresh server on a fresh cache, its vault behind ``rtt_ms`` of round trip."""
    _, _, port = vault_env["TEAM_VAULT_URL"].rstrip("/").rpartition(":")
    shutil.rmtree(cache, ignore_errors=True)
    with delay_proxy(("127.0.0.1", int(port)), rtt_ms / 2000) as proxy:
        proxied = {**vault_env, "TEAM_VAULT_URL": f"http://127.0.0.1:{proxy.server_address[1]}"}
        server = Server(package, proxied, cache)
        try:
            return server.call(*CALLS[0])
        finally:
            server.close()


def say(line: str) -> None:
    print(line, flush=True)


def ms(seconds: float, mark: str = "") -> str:
    text = f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"
    return f"**{text}, {mark}**" if mark else text


def growth_table(sizes: list[Size], rtt_ms: float | None) -> list[str]:
    tools = [tool for tool, _ in CALLS]
    head = ["notes", "seeded in", "cold search", *([f"cold at {rtt_ms:g} ms RTT"] if rtt_ms else [])]
    head += [f"warm {tool}" for tool in tools]
    head += ["restart: first search", "restart: slowest other first call"]
    head += ["VmRSS / VmHWM after the warm calls", "… after the restart's", "cache per 1k notes"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for size in sizes:
        others = max((size.restart[tool] for tool in tools[1:]), key=lambda run: run[0])
        per_k = 1000 / size.notes / 2**20
        disk = f"{size.disk[0] * per_k:.1f} MiB ({size.disk[2] * per_k:.1f} MiB of bytes)"
        disk += f" + index {size.disk[1] * per_k:.1f} MiB" if size.disk[1] else ""
        row = [f"{size.notes:,}", f"{size.seed_s:.0f} s" if size.seed_s else "kept", ms(*size.cold)]
        row += [ms(*size.cold_rtt)] if rtt_ms and size.cold_rtt else ([] if not rtt_ms else ["–"])
        row += [ms(size.warm[tool], size.warm_mark[tool]) for tool in tools]
        row += [ms(*size.restart[tools[0]]), ms(*others)]
        row += [f"{rss[0]:,.0f} / {rss[1]:,.0f} MiB" for rss in (size.rss_warm, size.rss)] + [disk]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,5000,20000,50000,100000", help="note counts, comma separated")
    parser.add_argument("--repeat", type=int, default=20, help="warm calls of each tool (the median is shown)")
    parser.add_argument("--rtt-ms", type=float, help="also the cold call through a delay proxy of this round trip")
    parser.add_argument("--package", help="run the server on the teamvault_mcp package under this directory")
    parser.add_argument("--data-root", help="keep the seeded vaults here and reuse them")
    parser.add_argument("--cache-mb", help="TEAM_VAULT_CACHE_MAX_MB of the server under test (default: its own)")
    parser.add_argument("--settle", type=float, default=0.0, help="seconds to wait after the cold search (warm-up)")
    parser.add_argument("--restart-settle", type=float, default=0.0, help="seconds to wait after the restart")
    options = parser.parse_args()
    if options.cache_mb:
        SERVER_ENV["TEAM_VAULT_CACHE_MAX_MB"] = options.cache_mb
    say(f"command: {sys.executable} {' '.join(sys.argv)}   (cores: {os.cpu_count()})")
    sizes = []
    with tempfile.TemporaryDirectory() as work:
        for count in (int(part) for part in options.sizes.split(",")):
            sizes.append(measure(count, options, Path(work)))
    say("")
    for line in growth_table(sizes, options.rtt_ms):
        say(line)


if __name__ == "__main__":
    main()
