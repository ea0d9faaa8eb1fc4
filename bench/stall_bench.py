"""The first search after start-up, beside the background warm-up: does it ever stall? (issue 26, part 1)

Each run spawns a fresh ``teamvault-mcp`` (stdio, an empty content cache, the warm-up on as by default)
against a local vault of 80 notes in one folder whose downloads take ``--delay`` seconds each, sends
``initialize`` and at once a ``search_notes`` with a progress token, and records how long the answer took,
whether it was partial, and how many progress notifications came. Two kinds of server: without the folder
archive route (every ``GET …/folders/download`` answers 404, its probe too) and with it. A run counts as a
stall when the search is partial or takes more than half its budget (``TEAM_VAULT_CALL_BUDGET``, 10 s here).

``--package DIR`` runs an older ``teamvault_mcp`` (e.g. ``git archive 1531366 teamvault_mcp``) beside this
tree, alternating, on the same vaults.

    .venv/bin/python bench/stall_bench.py [--runs 8] [--delay 0.05] [--package DIR]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stdio_client import INITIALIZE

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.localvault.store import Change

ROOT = Path(__file__).resolve().parent.parent
NOTES = 80
BUDGET = 10.0
ARCHIVE = "/api/projects/*/folders/download"


def seeded(directory: Path) -> LocalVault:
    vault = LocalVault(directory)
    store, project = vault.store, vault.project_id
    with store.write() as db:
        for number in range(NOTES):
            text = f"# Note {number}\n\nThe needle is in note {number}.\n" + "Filler line.\n" * 40
            store.create(Change(db, project, store.owner_of(project)), f"team/n{number:02d}.md", text.encode(), None)
    return vault


def one_run(package: Path, vault: LocalVault, work: Path) -> dict[str, Any]:
    """A fresh server, ``initialize``, then at once a search: its time, whether partial, its progress count."""
    with tempfile.TemporaryDirectory(dir=work) as cache, tempfile.TemporaryDirectory(dir=work) as empty:
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(package),
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": vault.project_id,
            "TEAM_VAULT_CACHE_DIR": cache,
            "TEAM_VAULT_CALL_BUDGET": str(BUDGET),
            "TEAM_VAULT_STRUCTURED_CONTENT": "on",  # read as data below; an older tree sends it anyway
        }
        child = subprocess.Popen(
            [sys.executable, "-m", "teamvault_mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=empty,  # not the source tree: ``-m`` imports from the current directory first
            env=env,
        )
        assert child.stdin is not None and child.stdout is not None
        search = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_notes", "arguments": {"query": "needle"}, "_meta": {"progressToken": "p"}},
        }
        child.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        child.stdin.flush()
        json.loads(child.stdout.readline())  # initialize's answer
        child.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n").encode())
        child.stdin.write((json.dumps(search) + "\n").encode())
        child.stdin.flush()
        started = time.perf_counter()
        progress = 0
        while True:
            message = json.loads(child.stdout.readline())
            if message.get("method") == "notifications/progress":
                progress += 1
            elif message.get("id") == 1:
                break
        elapsed = time.perf_counter() - started
        child.stdin.close()
        child.wait(timeout=60)
        child.stdout.close()
    data = message["result"].get("structuredContent") or {}
    return {"seconds": elapsed, "partial": bool(data.get("partial", True)), "progress": progress}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds each note's download takes")
    parser.add_argument("--package", type=Path, help="an older teamvault_mcp to run beside this tree")
    args = parser.parse_args()
    packages = {"now": ROOT}
    if args.package is not None:
        packages = {"before": args.package.resolve(), **packages}
    with tempfile.TemporaryDirectory() as work:
        for refuse in (True, False):
            kind = "no archive route" if refuse else "archives"
            with seeded(Path(work) / f"vault-{refuse}") as vault:

                def chooser(method: str, path: str, refuse: bool = refuse) -> Fault | None:
                    if fnmatch.fnmatchcase(path, ARCHIVE):
                        return Fault.answer(404) if refuse else None
                    if "/files/" in path:
                        return Fault.delay(args.delay)
                    return None

                vault.faults.chooser = chooser
                results: dict[str, list[dict[str, Any]]] = {name: [] for name in packages}
                for _ in range(args.runs):
                    for name, package in packages.items():  # alternating: the same load for both
                        results[name].append(one_run(package, vault, Path(work)))
                for name, runs in results.items():
                    stalls = sum(1 for run in runs if run["partial"] or run["seconds"] > BUDGET / 2)
                    times = [run["seconds"] for run in runs]
                    print(
                        f"{kind}, {name}: {len(runs)} runs, {stalls} stalled; search {statistics.median(times):.2f} s "
                        f"median, {max(times):.2f} s worst; progress notifications "
                        f"{min(run['progress'] for run in runs)}–{max(run['progress'] for run in runs)}"
                    )


if __name__ == "__main__":
    main()
