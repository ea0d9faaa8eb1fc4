"""Start-up: spawn → ``initialize`` answered, teamvault-mcp against a bare ``mcp`` server, side by side.

The two servers are started alternately, so both see the same machine load; the
result is the ratio of their medians (target: at most 1.2).

    .venv/bin/python bench/startup.py [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from stdio_client import StdioHost

HERE = Path(__file__).resolve().parent
TEAMVAULT = [sys.executable, "-m", "teamvault_mcp"]
BARE = [sys.executable, str(HERE / "bare_server.py")]
ENV = {"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "osync_bench", "PYTHONPATH": str(HERE.parent)}


def spawn_to_initialized(command: list[str]) -> float:
    host = StdioHost(command, ENV)
    try:
        return host.initialize()
    finally:
        host.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    spawn_to_initialized(TEAMVAULT), spawn_to_initialized(BARE)  # warm the OS file cache for both
    ours: list[float] = []
    bare: list[float] = []
    for _ in range(runs):
        ours.append(spawn_to_initialized(TEAMVAULT))
        bare.append(spawn_to_initialized(BARE))
    ours_ms = statistics.median(ours) * 1000
    bare_ms = statistics.median(bare) * 1000
    print(
        f"start-up, spawn -> initialize answered, median of {runs} alternating runs (Python {sys.version.split()[0]})"
    )
    print(f"  bare mcp low-level server, one tool : {bare_ms:7.1f} ms  (min {min(bare) * 1000:.1f})")
    print(f"  teamvault-mcp                        : {ours_ms:7.1f} ms  (min {min(ours) * 1000:.1f})")
    print(f"  ratio teamvault-mcp / bare           : {ours_ms / bare_ms:7.3f}  (target <= 1.2)")


if __name__ == "__main__":
    main()
