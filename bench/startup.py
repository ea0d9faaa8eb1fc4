"""Start-up: spawn → ``initialize`` answered, teamvault-mcp against a bare ``mcp`` server, side by side.

The servers are started alternately, so all see the same machine load; the result is
the ratio of their medians (target: at most 1.1). ``--also DIR`` adds another tree of
teamvault-mcp (e.g. a copy of ``main`` made with ``git worktree add --detach DIR main``),
run from DIR's package in the same alternation: a before/after in one run.

    .venv/bin/python bench/startup.py [--runs 30] [--also DIR ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from stdio_client import StdioHost

HERE = Path(__file__).resolve().parent
TEAMVAULT = [sys.executable, "-m", "teamvault_mcp"]
BARE = [sys.executable, str(HERE / "bare_server.py")]
ENV = {"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "osync_bench"}
#: Every module runs from bytecode, as from an installed package (pip compiles it at install time): with
#: PYTHONDONTWRITEBYTECODE set, our modules would be compiled anew at every start and the SDK's would not.
#: The bytecode goes to a directory of this run's own, so no tree is written to.
BYTECODE = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": ""}


def spawn_to_initialized(command: list[str], tree: Path) -> float:
    """Seconds from spawn to ``initialize`` answered, with ``tree``'s package first on the path.

    The child runs in ``tree`` too: ``python -m`` puts its working directory first on the path, before PYTHONPATH.
    """
    host = StdioHost(command, {**ENV, **BYTECODE, "PYTHONPATH": str(tree)}, cwd=str(tree))
    try:
        return host.initialize()
    finally:
        host.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--also",
        metavar="DIR",
        type=Path,
        action="append",
        default=[],
        help="another teamvault-mcp tree (holding teamvault_mcp/) to run alternately too",
    )
    args = parser.parse_args()
    for tree in args.also:
        if not (tree / "teamvault_mcp" / "__init__.py").is_file():
            parser.error(f"--also {tree}: no teamvault_mcp package in it")
    servers = {"bare mcp low-level server, one tool": (BARE, HERE.parent)}
    servers["teamvault-mcp (this tree)"] = (TEAMVAULT, HERE.parent)
    for tree in args.also:
        servers[f"teamvault-mcp ({tree})"] = (TEAMVAULT, tree.resolve())
    times: dict[str, list[float]] = {name: [] for name in servers}
    with tempfile.TemporaryDirectory(prefix="startup-bench-pyc-") as bytecode:
        BYTECODE["PYTHONPYCACHEPREFIX"] = bytecode
        for command, tree in servers.values():  # warm the OS file cache for each, and write its bytecode
            spawn_to_initialized(command, tree)
        for _ in range(args.runs):
            for name, (command, tree) in servers.items():
                times[name].append(spawn_to_initialized(command, tree))
    medians = {name: statistics.median(runs) * 1000 for name, runs in times.items()}
    bare_ms = medians.pop("bare mcp low-level server, one tool")
    width = max(len(name) for name in servers)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"start-up, spawn -> initialize answered, median of {args.runs} alternating runs "
        f"(Python {sys.version.split()[0]}, load average now {load})"
    )
    for name, runs in times.items():
        print(f"  {name:<{width}} : {statistics.median(runs) * 1000:7.1f} ms  (min {min(runs) * 1000:.1f})")
    for name, ms in medians.items():
        print(f"  {'ratio ' + name + ' / bare':<{width + 13}} : {ms / bare_ms:7.3f}  (target <= 1.1)")


if __name__ == "__main__":
    main()
