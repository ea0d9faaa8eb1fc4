"""What the operations features cost: the audit log per write call, and ``check`` end to end.

In one run, against one local vault on loopback:

- ``write_note`` over stdio to two ``teamvault-mcp`` servers side by side, one with
  ``TEAM_VAULT_AUDIT_LOG`` and one without, calls interleaved; the audit log's cost is
  the difference of the medians (and ``AuditLog.record`` alone, timed in-process);
- ``teamvault-mcp check`` as a child process, wall time from spawn to exit (all nine
  checks, the Idempotency-Key probe included), against ``teamvault-mcp --version``:
  the Python start-up both share.

    .venv/bin/python bench/operations_bench.py [--calls 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stdio_client import StdioHost

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.server.audit import AuditLog

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    calls = parser.parse_args().calls
    with tempfile.TemporaryDirectory() as scratch, LocalVault(Path(scratch) / "vault") as vault:
        env = {
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": vault.project_id,
            "TEAM_VAULT_CACHE_DIR": "off",
            "PYTHONPATH": str(HERE.parent),
        }
        log = Path(scratch) / "audit.jsonl"
        hosts = {
            "without": StdioHost([sys.executable, "-m", "teamvault_mcp"], env),
            "with": StdioHost([sys.executable, "-m", "teamvault_mcp"], {**env, "TEAM_VAULT_AUDIT_LOG": str(log)}),
        }
        for host in hosts.values():
            host.initialize()
        measured: dict[str, list[float]] = {name: [] for name in hosts}
        for number in range(20 + calls):  # the first 20: warm-up
            order = list(hosts.items()) if number % 2 else list(hosts.items())[::-1]  # neither always goes first
            for name, host in order:
                started = time.perf_counter()
                host.call_tool("write_note", {"path": f"{name}/n{number % 50}.md", "content": f"version {number}\n"})
                if number >= 20:
                    measured[name].append((time.perf_counter() - started) * 1000)
        for host in hosts.values():
            host.close()
        lines = len(log.read_text().splitlines())

        record_log = AuditLog(Path(scratch) / "record.jsonl")
        entry = {"tool": "write_note", "project": "p", "paths": ["inbox/a.md"], "outcome": "applied", "attempts": 1}
        record_times = []
        for _ in range(2000):
            started = time.perf_counter()
            record_log.record(entry)
            record_times.append((time.perf_counter() - started) * 1_000_000)

        check_runs: dict[str, list[float]] = {"check": [], "version": []}
        child_env = {**os.environ, **env}
        for _ in range(7):
            for name, argv in (("check", ["check"]), ("version", ["--version"])):
                started = time.perf_counter()
                command = [sys.executable, "-m", "teamvault_mcp", *argv]
                done = subprocess.run(command, env=child_env, capture_output=True)
                check_runs[name].append(time.perf_counter() - started)
                assert done.returncode == 0, done.stdout + done.stderr

    with_ms, without_ms = statistics.median(measured["with"]), statistics.median(measured["without"])
    print(f"write_note over stdio, median of {calls} interleaved calls each:")
    print(f"  without audit log {without_ms:.2f} ms, with {with_ms:.2f} ms: difference {with_ms - without_ms:+.2f} ms")
    print(f"  audit lines written: {lines} (expected {20 + calls})")
    print(f"AuditLog.record alone: median {statistics.median(record_times):.1f} µs of 2000")
    check_s, version_s = statistics.median(check_runs["check"]), statistics.median(check_runs["version"])
    print(f"teamvault-mcp check, spawn to exit: median {check_s:.2f} s of 7 (--version: {version_s:.2f} s)")


if __name__ == "__main__":
    main()
