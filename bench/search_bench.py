"""search_notes and find_notes on big vaults: warm, cold against plain downloads, and how warm grows.

A local vault (its own process) is seeded with N notes of ~4 KB; ``teamvault-mcp`` runs as a
real stdio child with a fresh cache directory. Measured from the client, over stdio:

- cold: the first search_notes (empty cache: every note is downloaded, 8 at a time), side by
  side with downloading every note directly with 8 concurrent ``requests`` sessions;
- warm: search_notes again (the notes in the cache and in memory), median of 20;
- find_notes: median of 20;
- growth: the warm median at 1,000, 5,000, 10,000 and 20,000 notes.

Targets (5,000 notes): warm < 300 ms; cold <= 2x the direct downloads; find_notes < 50 ms;
warm growing no worse than linearly.

    .venv/bin/python bench/search_bench.py [--sizes 1000,5000,10000,20000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from stdio_client import StdioHost

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.children import start_local_vault

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

WORDS = [
    "team",
    "vault",
    "note",
    "agent",
    "meeting",
    "decision",
    "owner",
    "deadline",
    "review",
    "draft",
    "budget",
    "risk",
    "customer",
    "release",
    "design",
    "api",
    "sync",
    "plugin",
    "conflict",
    "version",
    "history",
    "folder",
    "section",
    "summary",
    "action",
    "item",
    "follow",
    "up",
    "quarter",
    "travel",
    "hiring",
    "onboarding",
    "laptop",
    "contract",
    "invoice",
    "roadmap",
    "milestone",
    "incident",
    "postmortem",
    "retro",
    "planning",
]
QUERY = "budget review"
FIND = "meetnig notes 042"  # a typo on purpose


def note_text(rng: random.Random, number: int) -> str:
    parts = [f"# Note {number}\n\n"]
    while sum(map(len, parts)) < 4000:
        parts.append(f"## {rng.choice(WORDS).capitalize()} {rng.randint(1, 99)}\n\n")
        parts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))).capitalize() + ".\n\n")
    return "".join(parts)


def seed(data_dir: Path, count: int) -> None:
    rng = random.Random(count)
    with LocalVault(data_dir) as vault:
        owner = vault.store.owner_of(vault.project_id)
        with vault.store.write() as db:
            change = Change(db, vault.project_id, owner)
            for number in range(count):
                folder = f"{rng.choice(['meetings', 'people', 'projects', 'notes'])}-{number % 40:02d}"
                vault.store.create(change, f"{folder}/note {number:05d}.md", note_text(rng, number).encode(), None)


def direct_downloads(env: dict[str, str]) -> float:
    """Seconds to download every note with 8 concurrent requests sessions (the listing included)."""
    files = f"{env['TEAM_VAULT_URL']}/api/projects/{env['TEAM_VAULT_PROJECT_ID']}/files"
    headers = {"X-API-Key": env["TEAM_VAULT_API_KEY"]}
    started = time.perf_counter()
    ids = [file["id"] for file in requests.get(files, headers=headers, timeout=60).json()["files"]]
    chunks = [ids[i::8] for i in range(8)]

    def fetch(chunk: list[str]) -> None:
        with requests.Session() as session:
            for file_id in chunk:
                session.get(f"{files}/{file_id}", headers=headers, timeout=60).raise_for_status()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(fetch, chunks))
    return time.perf_counter() - started


def timed(host: StdioHost, tool: str, arguments: dict[str, object]) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    answer = host.call_tool(tool, arguments)
    return time.perf_counter() - started, answer["result"]["structuredContent"]


def measure(count: int, work: Path, *, full: bool) -> dict[str, float]:
    data, cache = work / f"vault-{count}", work / f"cache-{count}"
    started = time.perf_counter()
    seed(data, count)
    print(f"  {count:,} notes seeded in {time.perf_counter() - started:.1f} s", flush=True)
    vault, env = start_local_vault(data)
    figures: dict[str, float] = {}
    try:
        host = StdioHost(
            [sys.executable, "-m", "teamvault_mcp"],
            {
                **env,
                "TEAM_VAULT_CACHE_DIR": str(cache),
                "TEAM_VAULT_CALL_BUDGET": "600",
                "TEAM_VAULT_STRUCTURED_CONTENT": "on",
            },
        )
        host.initialize()
        if full:
            figures["direct"] = direct_downloads(env)
        figures["cold"], result = timed(host, "search_notes", {"query": QUERY})
        assert not result["partial"], result
        warm = [timed(host, "search_notes", {"query": QUERY})[0] for _ in range(20)]
        figures["warm"] = statistics.median(warm)
        figures["notes"] = float(result["totalNotes"])  # type: ignore[arg-type]
        if full:
            figures["find"] = statistics.median(timed(host, "find_notes", {"query": FIND})[0] for _ in range(20))
        host.close()
    finally:
        vault.terminate()
        vault.wait(timeout=10)
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,5000,10000,20000")
    sizes = [int(size) for size in parser.parse_args().sizes.split(",")]
    print(f"command: {sys.executable} {' '.join(sys.argv)}   (cores: {os.cpu_count()})")
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for count in sizes:
            results[count] = measure(count, Path(work), full=count == 5000 or len(sizes) == 1)
    print(f"\nquery {QUERY!r} (text mode); find_notes {FIND!r}")
    for count, figures in results.items():
        line = f"  {count:>6,} notes: warm search {figures['warm'] * 1000:7.1f} ms, cold {figures['cold']:6.2f} s"
        if "direct" in figures:
            line += (
                f" (direct downloads {figures['direct']:.2f} s: {figures['cold'] / figures['direct']:.2f}x), "
                f"find_notes {figures['find'] * 1000:.1f} ms"
            )
        print(line + f"; {int(figures['notes']):,} matching notes")
    if len(results) > 1:
        small, large = min(results), max(results)
        growth = results[large]["warm"] / results[small]["warm"]
        print(f"  warm growth {small:,} → {large:,} notes: {growth:.1f}x for {large / small:.0f}x the notes")


if __name__ == "__main__":
    main()
