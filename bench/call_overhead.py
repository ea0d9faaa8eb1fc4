"""Per-call overhead: ``read_note`` through MCP over stdio against the two HTTP round trips it needs.

Against a loopback stand-in server, in one run and interleaved:

- direct: the resolve (``GET /files?path=``) and the download (``GET /files/:id``) made
  with one ``requests.Session`` that is kept across iterations (the cheapest possible);
- MCP: a ``tools/call`` of ``read_note`` sent to ``teamvault-mcp`` over stdio, which does
  the same two requests (plus JSON-RPC over pipes, a worker thread, the retry loop).

The overhead is the difference of the medians (target: at most 2 ms). For scale, the
run then times a trivial tool of a bare ``mcp`` server on its own: the JSON-RPC round
trip over stdio alone, which is most of the overhead.

    .venv/bin/python bench/call_overhead.py [--calls 500]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import requests
from standin import NOTE, NOTE_PATH, PROJECT, standin_server
from stdio_client import StdioHost

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500)
    calls = parser.parse_args().calls
    with standin_server() as base_url:
        env = {
            "TEAM_VAULT_URL": base_url,
            "TEAM_VAULT_API_KEY": "osync_bench",
            "TEAM_VAULT_PROJECT_ID": PROJECT,
            "TEAM_VAULT_CACHE_DIR": "off",  # the same two requests as the direct side (latency_bench.py: with it)
            "PYTHONPATH": str(HERE.parent),
        }
        host = StdioHost([sys.executable, "-m", "teamvault_mcp"], env)
        host.initialize()
        session = requests.Session()
        headers = {"X-API-Key": "osync_bench", "Accept": "application/json"}
        files = f"{base_url}/api/projects/{PROJECT}/files"

        def direct() -> None:
            listing = session.get(files, params={"path": NOTE_PATH}, headers=headers, timeout=20).json()
            body = session.get(f"{files}/{listing['files'][0]['id']}", headers=headers, timeout=20).content
            assert body == NOTE

        def through_mcp() -> None:
            answer = host.call_tool("read_note", {"path": NOTE_PATH})
            assert answer["result"]["content"][0]["text"].encode() == NOTE

        measured: dict[str, list[float]] = {"direct": [], "mcp": [], "bare": []}
        interleaved = (("direct", direct), ("mcp", through_mcp))
        for round_number in range(50 + calls):  # the first 50: warm-up (imports, connections, caches)
            for name, step in interleaved:
                started = time.perf_counter()
                step()
                if round_number >= 50:
                    measured[name].append(time.perf_counter() - started)
        host.close()
        session.close()

        bare = StdioHost([sys.executable, str(HERE / "bare_server.py")])
        bare.initialize()
        for round_number in range(50 + calls):
            started = time.perf_counter()
            bare.call_tool("echo", {})
            if round_number >= 50:
                measured["bare"].append(time.perf_counter() - started)
        bare.close()
    direct_ms, mcp_ms, bare_ms = (statistics.median(measured[name]) * 1000 for name in ("direct", "mcp", "bare"))
    print(f"read_note of a {len(NOTE)} B note, loopback stand-in, median of {calls} interleaved calls")
    print(f"  direct: 2 requests, one kept requests.Session : {direct_ms:6.2f} ms")
    print(f"  teamvault-mcp over stdio (same 2 requests)    : {mcp_ms:6.2f} ms")
    print(f"  overhead                                      : {mcp_ms - direct_ms:6.2f} ms  (target <= 2 ms)")
    print(f"  for scale: a bare mcp server's trivial tool   : {bare_ms:6.2f} ms  (the stdio JSON-RPC round trip)")


if __name__ == "__main__":
    main()
