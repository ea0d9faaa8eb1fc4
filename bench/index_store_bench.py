"""Restart, then the first call: what the persistent index (``vault/index_db.py``) saves, on a 5,000-note vault.

A local vault on loopback is seeded with ``links_bench.py``'s generated vault. A first server
(in this process, through a real MCP client) with a fresh cache directory reads every note
(``list_tags``, ``note_links``, ``list_tasks``: links, tags, front matter and tasks parsed);
then a second server on the same cache directory, nothing in its memory, makes each first
call again. Measured for each: seconds, parts parsed, parts taken from the store, note
downloads. Then warm (the second server, median of ``--runs``), and the index's size on disk.

    .venv/bin/python bench/index_store_bench.py [--notes 5000] [--runs 5]

Runs against whatever tree is imported: the tree before the index gives the "before" figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from graph_bench import seed
from links_bench import vault as generated_vault
from support.sessions import Session, session_on

from teamvault_mcp.localvault import LocalVault

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_tags", {}),
    ("note_links", {"path": "people/person-0.md"}),
    ("list_tasks", {"limit": 50}),
]


def downloads(vault: LocalVault) -> int:
    return sum(1 for _, path in vault.faults.seen if "content" in path or "download" in path)


async def timed(session: Session, vault: LocalVault, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    facts = session.runner.workspace.note_index.facts
    parsed, loaded, fetched = facts.parsed, getattr(facts, "loaded", 0), downloads(vault)
    started = time.perf_counter()
    text = await session.ok_text(tool, **arguments)
    return {
        "seconds": time.perf_counter() - started,
        "parsed": facts.parsed - parsed,
        "loaded": getattr(facts, "loaded", 0) - loaded,
        "downloads": downloads(vault) - fetched,
        "partial": text.startswith("[Partial"),
    }


async def main_async(notes: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as temp:
        cache = Path(temp) / "cache"
        with LocalVault(Path(temp) / "vault") as vault:
            seed(vault, generated_vault(notes))
            for server in ("first server, cold", "restarted server, first call"):
                async with session_on(vault, cache_dir=cache, call_budget=120.0) as session:
                    for tool, arguments in CALLS:
                        row = await timed(session, vault, tool, arguments)
                        print(
                            f"{server:30} {tool:12} {row['seconds'] * 1000:8.0f} ms  parsed {row['parsed']:6}  "
                            f"from the store {row['loaded']:6}  downloads {row['downloads']:5}"
                            f"{'  PARTIAL' if row['partial'] else ''}"
                        )
                    if server.startswith("restarted"):
                        for tool, arguments in CALLS:
                            times = [(await timed(session, vault, tool, arguments))["seconds"] for _ in range(runs)]
                            print(f"{'restarted server, warm':30} {tool:12} {statistics.median(times) * 1000:8.0f} ms")
        size = sum(path.stat().st_size for path in cache.glob("*/index.sqlite*"))
        print(
            f"index on disk: {size / 1024 / 1024:.1f} MiB for {notes:,} notes "
            f"({size / notes * 1000 / 1024:.0f} KiB per 1,000)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    anyio.run(main_async, args.notes, args.runs)


if __name__ == "__main__":
    main()
