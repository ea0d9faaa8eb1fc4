"""Regex search against ReDoS: Python's ``re`` against the ``regex`` package, and pings during long searches.

1. Engines side by side, in this process: the review's pattern ``a{0,100}a{0,100}a{0,100}a{0,100}c``
   on a 1,000-character line, and a few classic ReDoS patterns on inputs built for them, with
   ``re``, ``regex`` and ``regex`` under the server's per-line limit (0.2 s of CPU). Each ``re``
   run is a child process ended after ``--re-cap`` seconds (``re`` cannot be interrupted).
2. Whether another thread runs during one long match: a thread that wakes every millisecond
   counts its wake-ups while ``re`` and ``regex`` match ``\\w*(?=\\w*x)`` on 1,000 word characters.
3. Ping round trips during long calls, over stdio, from a real ``teamvault-mcp`` child talking
   to a local vault child: pings every 20 ms while (a) a regex search that runs into its 10 s
   limit (20 notes of five 1,000-character lines that ``\\w*(?=\\w*x)`` backtracks on) and (b) a
   cold text search over a 5 MB note (folded for the index: case, accents).
4. The cost of the engine on ordinary searches: the regex matching of a warm search over 5,000
   notes of ~4 KB (in this process, median of 5) by the server's matcher, and for reference a
   bare loop over the same lines with ``re``, with ``regex``, and with ``regex`` and a time limit
   on every line. Run it with ``PYTHONPATH=DIR`` to measure an older package's matcher.

``--package DIR`` runs the MCP child on the ``teamvault_mcp`` package under DIR (for example an
older commit's, from ``git archive``), to compare before and after.

    .venv/bin/python bench/regex_bench.py [--re-cap 150] [--package DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import regex

import teamvault_mcp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.children import start_local_vault

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

REGEX_LINE_SECONDS = (
    0.2  # the server's per-line limit (teamvault_mcp.text.search; kept here to run on older packages too)
)

EXAMPLE = "a{0,100}a{0,100}a{0,100}a{0,100}c"
SLOW = r"\w*(?=\w*x)"  # in the safe subset; about a second per 1,000-character line of word characters
CASES = [  # (pattern, text): the review's example, then classic ReDoS shapes
    (EXAMPLE, "a" * 1000),
    ("(a+)+$", "a" * 26 + "!"),
    ("(a|aa)*$", "a" * 34 + "!"),
    ("^(\\w+\\s?)*$", "a" * 26 + "!"),
    (".*a.*a.*a.*b", "a" * 300),
    (SLOW, "a" * 1000),
]


def time_re(pattern: str, text: str, cap: float) -> float | None:
    """Seconds ``re.search`` takes, in a child process; None when it ran past ``cap``."""
    code = (
        "import re, sys, time; p = re.compile(sys.argv[1]); t = sys.argv[2]; s = time.perf_counter(); "
        "p.search(t); print(time.perf_counter() - s)"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, pattern, text], capture_output=True, text=True, timeout=cap, check=True
        )
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout)


def time_regex(pattern: str, text: str, timeout: float | None) -> tuple[float, bool]:
    """Seconds ``regex.search`` takes, and whether it stopped at ``timeout``."""
    compiled = regex.compile(pattern)
    started = time.perf_counter()
    try:
        compiled.search(text, timeout=timeout)
    except TimeoutError:
        return time.perf_counter() - started, True
    return time.perf_counter() - started, False


def shown(seconds: float | None, cap: float) -> str:
    return f"> {cap:.0f} s (stopped)" if seconds is None else f"{seconds:8.3f} s"


def engines(cap: float) -> None:
    print(f"\n1. one search call per pattern; per-line limit {REGEX_LINE_SECONDS} s of CPU")
    print(f"   {'pattern':34} {'text':>10}  {'re':>20}  {'regex':>10}  {'regex, limited':>16}")
    for pattern, text in CASES:
        old = time_re(pattern, text, cap)
        new, _ = time_regex(pattern, text, None)
        limited, stopped = time_regex(pattern, text, REGEX_LINE_SECONDS)
        print(
            f"   {pattern:34} {len(text):>6,} ch  {shown(old, cap):>20}  {new:8.3f} s  {limited:8.3f} s"
            + (" (stopped)" if stopped else "")
        )


def ticks_during(match: Any) -> tuple[int, float]:
    """How often a 1 ms sleeper woke up while ``match()`` ran, and how long it ran."""
    stop = threading.Event()
    ticks = [0]

    def sleeper() -> None:
        while not stop.wait(0.001):
            ticks[0] += 1

    thread = threading.Thread(target=sleeper)
    thread.start()
    time.sleep(0.05)
    ticks[0] = 0
    started = time.perf_counter()
    match()
    elapsed = time.perf_counter() - started
    stop.set()
    thread.join()
    return ticks[0], elapsed


def other_threads() -> None:
    import re

    line = "a" * 1000
    print(f"\n2. a thread waking every 1 ms, while {SLOW} runs on 1,000 word characters (one call)")
    for name, match in (("re", lambda: re.compile(SLOW).search(line)), ("regex", lambda: regex.search(SLOW, line))):
        ticks, elapsed = ticks_during(match)
        print(f"   {name:6}: {elapsed:6.2f} s, the other thread woke {ticks:5,} times (at most {elapsed * 1000:,.0f})")


class Host:
    """An MCP host over stdio that sends a call, then pings while the call runs."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: str | None = None) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
        )
        self.answers: dict[int, float] = {}
        self.results: dict[int, Any] = {}
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b"}})
        self.wait(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        request_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})})
        return request_id

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if "id" in message and ("result" in message or "error" in message):
                with self.arrived:
                    self.answers[message["id"]] = time.perf_counter()
                    self.results[message["id"]] = message
                    self.arrived.notify_all()

    def wait(self, request_id: int, timeout: float = 600) -> Any:
        with self.arrived:
            self.arrived.wait_for(lambda: request_id in self.answers, timeout)
            return self.results[request_id]

    def call_with_pings(self, tool: str, arguments: dict[str, Any], every: float = 0.02) -> tuple[list[float], Any]:
        """Ping round trips (seconds) while ``tool`` runs, and its result."""
        call = self.request("tools/call", {"name": tool, "arguments": arguments})
        trips = []
        while call not in self.answers:
            sent = time.perf_counter()
            ping = self.request("ping")
            self.wait(ping)
            if call not in self.answers or self.answers[ping] < self.answers[call]:
                trips.append(self.answers[ping] - sent)
            time.sleep(max(0.0, every - (time.perf_counter() - sent)))
        return trips, self.results[call]["result"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def seed(data: Path) -> None:
    rng = random.Random(5)
    words = ["team", "vault", "note", "Café", "décision", "Ёлка", "straße", "budget", "review", "meeting"]
    big = "\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(65_000)) + "\n"
    with LocalVault(data) as vault:
        owner = vault.store.owner_of(vault.project_id)
        with vault.store.write() as db:
            change = Change(db, vault.project_id, owner)
            for number in range(20):
                vault.store.create(change, f"slow/{number:02d}.md", (("a" * 1000 + "\n") * 5).encode(), None)
            vault.store.create(change, "big/five-megabytes.md", big.encode(), None)
    print(f"   seeded: 20 notes of five 1,000-character lines, and a {len(big.encode()) / 1e6:.1f} MB note")


def summary(trips: list[float]) -> str:
    if not trips:
        return "no ping was answered before the call"
    trips = sorted(trips)
    p99 = trips[min(len(trips) - 1, int(len(trips) * 0.99))]
    return (
        f"{len(trips):4} pings: median {statistics.median(trips) * 1000:7.1f} ms, p99 {p99 * 1000:7.1f} ms, "
        f"max {trips[-1] * 1000:7.1f} ms"
    )


def pings(package: str | None) -> None:
    print(
        f"\n3. ping round trips every 20 ms during long calls, over stdio (MCP package: {package or 'this checkout'})"
    )
    with tempfile.TemporaryDirectory() as work:
        seed(Path(work) / "vault")
        vault, env = start_local_vault(Path(work) / "vault")
        child_env = {**os.environ, **env, "TEAM_VAULT_CACHE_DIR": str(Path(work) / "cache")}
        if package:
            child_env["PYTHONPATH"] = os.pathsep.join([package, child_env.get("PYTHONPATH", "")])
        try:
            host = Host([sys.executable, "-m", "teamvault_mcp"], child_env, cwd=package)  # -m looks in cwd first
            host.call_with_pings("search_notes", {"query": "aaaa", "prefix": "slow/"})  # downloads the slow notes
            started = time.perf_counter()
            trips, result = host.call_with_pings("search_notes", {"query": SLOW, "mode": "regex", "prefix": "slow/"})
            took = time.perf_counter() - started
            facts = result.get("structuredContent", {})
            print(
                f"   (a) regex {SLOW} over 100 such lines: {took:5.2f} s, partial={facts.get('partial')}, "
                f"slowLines={facts.get('slowLines')}, notesNotSearched={facts.get('notesNotSearched')}"
            )
            print(f"       {summary(trips)}")
            started = time.perf_counter()
            trips, result = host.call_with_pings("search_notes", {"query": "décision straße", "prefix": "big/"})
            took = time.perf_counter() - started
            print(f"   (b) cold text search of the 5 MB note (download, fold, count): {took:5.2f} s")
            print(f"       {summary(trips)}")
            host.close()
        finally:
            vault.terminate()
            vault.wait(timeout=10)


def bare(search: Any, entries: list[Any]) -> None:
    for entry in entries:
        [line for line in entry.lines if search(line)]


def search_module() -> Any:
    """The package's search module: ``text/search.py``, or ``search.py`` in a package from before issue 14."""
    import importlib

    try:
        return importlib.import_module("teamvault_mcp.text.search")
    except ImportError:
        return importlib.import_module("teamvault_mcp.search")


def minute_from_now() -> Any:
    """A deadline a minute away, as the package measured takes it: a Deadline, or a monotonic time before issue 28."""
    try:
        from teamvault_mcp.text.deadlines import Deadline
    except ImportError:
        return time.monotonic() + 60
    return Deadline.after(60, time.monotonic)


def with_matcher(pattern: str, entries: list[Any]) -> None:
    matcher = search_module().Matcher(pattern, "regex")
    deadline = minute_from_now()
    for entry in entries:
        matcher.lines("n.md", entry, deadline=deadline)


def median_ms(run: Any, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def ordinary(rounds: int = 5) -> None:
    import re

    sys.path.insert(0, str(Path(__file__).parent))
    from search_bench import note_text

    rng = random.Random(5000)
    index = search_module().SearchIndex()
    entries = [index.add(str(number), note_text(rng, number)) for number in range(5000)]
    lines = sum(len(entry.lines) for entry in entries)
    print(
        f"\n4. the regex matching of a warm search: 5,000 notes, {lines:,} lines (median of {rounds}), "
        f"package {Path(teamvault_mcp.__file__).parent}"
    )
    for pattern in (r"budget.*review", r"\bapi\b", r"^## \w+ \d+$", r"\d{2}"):
        stdlib, package = re.compile(pattern), regex.compile(pattern)
        matcher = median_ms(lambda: with_matcher(pattern, entries), rounds)  # noqa: B023  (run at once)
        figures = [
            median_ms(lambda: bare(search, entries), rounds)  # noqa: B023
            for search in (
                lambda line: stdlib.search(line, 0, 1000),  # noqa: B023
                lambda line: package.search(line, 0, 1000),  # noqa: B023
                lambda line: package.search(line, 0, 1000, timeout=REGEX_LINE_SECONDS),  # noqa: B023
            )
        ]
        print(
            f"   {pattern:16} the server's matcher {matcher:6.1f} ms | bare loops: re {figures[0]:6.1f} ms, "
            f"regex {figures[1]:6.1f} ms, regex with a limit on every line {figures[2]:6.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--re-cap", type=float, default=150.0, help="seconds an re run may take (default 150)")
    parser.add_argument("--package", help="a directory holding the teamvault_mcp package to run as the MCP child")
    parser.add_argument("--only", choices=["engines", "pings", "ordinary"], help="run one part")
    options = parser.parse_args()
    print(f"command: {sys.executable} {' '.join(sys.argv)}   (cores: {os.cpu_count()}, regex {regex.__version__})")
    if options.only in (None, "engines"):
        engines(options.re_cap)
        other_threads()
    if options.only in (None, "pings"):
        pings(options.package)
    if options.only in (None, "ordinary"):
        ordinary()


if __name__ == "__main__":
    main()
