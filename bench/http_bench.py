"""``serve --http`` against stdio on loopback, in one run, on one local vault (both servers are child processes):

a. a warm ``read_note`` of an unchanged note: stdio against Streamable HTTP, ``--calls`` calls each,
   interleaved (stdio, then each HTTP server; the order reversed every other round), after 50 of
   warm-up: median and p99, their ratio (goal, issue 31: HTTP within 1.3x stdio), and the CPU each
   server process spent per call. Both hosts are minimal raw JSON-RPC clients (lines on a pipe; one
   hand-written POST per call on a kept socket, its answer read whole, JSON or an SSE stream), so the
   figures compare the servers, not client libraries. ``--also DIR`` (repeatable) adds the HTTP server
   of another tree (``git archive <commit> teamvault_mcp``, say) to the same interleaved rounds;
b. 50 sessions at once, each making 20 ``read_note`` calls in turn: errors, p50, p99, max, wall time;
c. memory: the HTTP server's resident set when idle (one session used once), then with 100 more
   sessions opened (initialized, then idle): MiB above idle and KiB per session (goal: <= 50 MiB).

    .venv/bin/python bench/http_bench.py [--calls 500] [--sessions 50] [--reads 20] [--idle 100]
        [--parts abc] [--also DIR ...]

Where the time of one call goes, stage by stage: ``bench/http_stages.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from stdio_client import StdioHost

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

TOKEN = "bench-token-0123456789abcdef"
NOTE_PATH = "bench/note.md"
NOTE = "# A note\n" + "Some text of a typical note, read again and again.\n" * 60
WARM_UP = 50
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def read_call(number: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": "read_note", "arguments": {"path": NOTE_PATH}},
    }


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC answer in a POST's response (SSE ``data:`` lines, or JSON)."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return json.loads(response.text)
    for line in response.text.splitlines():
        if line.startswith("data: ") and line[6:].strip():
            message = json.loads(line[6:])
            if "id" in message:
                return message
    raise RuntimeError(f"no answer in HTTP {response.status_code}: {response.text[:200]}")


class RawHttpHost:
    """One session over Streamable HTTP on one kept socket: requests written by hand, answers read whole (a JSON
    body by its Content-Length, an SSE stream to its last chunk). As minimal as :class:`StdioHost` is for stdio,
    so part a compares the servers."""

    def __init__(self, url: str) -> None:
        opened = HttpHost(url)  # initialize and initialized, then this socket takes the session over
        self.session = opened.http.headers["mcp-session-id"]
        opened.http.close()
        address = url.split("//", 1)[1].split("/", 1)[0]
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = (
            f"POST /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
            f"mcp-session-id: {self.session}\r\nmcp-protocol-version: 2025-11-25\r\n"
        )
        self._next_id = 1

    def call_read(self) -> dict[str, Any]:
        self._next_id += 1
        body = json.dumps(read_call(self._next_id)).encode()
        self.sock.sendall(f"{self.head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        received = self._receive()
        while b"\r\n\r\n" not in received:
            received += self._receive()
        head, _, rest = received.partition(b"\r\n\r\n")
        length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
        if length is not None:  # one JSON body
            while len(rest) < int(length.group(1)):
                rest += self._receive()
            return json.loads(rest[: int(length.group(1))])
        while not rest.endswith(b"\r\n0\r\n\r\n"):  # an SSE stream, chunked
            rest += self._receive()
        for line in rest.split(b"\n"):
            if line.startswith(b"data: {"):
                return json.loads(line[6:])
        raise RuntimeError(f"no answer in {rest[:200]!r}")

    def _receive(self) -> bytes:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


class HttpHost:
    """One session over Streamable HTTP on one kept connection, raw JSON-RPC."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx2.Client(headers=HEADERS, timeout=60)
        opened = self.http.post(url, json=INITIALIZE)
        opened.raise_for_status()
        self.http.headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        self.http.headers["mcp-protocol-version"] = "2025-11-25"
        self.http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        self._next_id = 1

    def call_read(self) -> dict[str, Any]:
        self._next_id += 1
        return answer_of(self.http.post(self.url, json=read_call(self._next_id)))

    def close(self) -> None:
        self.http.delete(self.url)
        self.http.close()


def start_http_server(
    env: dict[str, str], *extra: str, tree: str | None = None, command: list[str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """``serve --http`` on a free port: this tree's, or (``tree``) the package in that directory."""
    command = command or [sys.executable, "-m", "teamvault_mcp"]
    command = [*command, "serve", "--http", "127.0.0.1:0", *extra]
    if tree is not None:  # run in its own directory: python -m puts the working directory before PYTHONPATH
        env = {**env, "PYTHONPATH": tree}
    child = subprocess.Popen(command, env=env, cwd=tree, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert child.stderr is not None
    line = child.stderr.readline()
    match = re.search(r"at (http://\S+/mcp) ", line)
    if match is None:
        child.kill()
        raise RuntimeError(f"serve --http did not start: {line}")
    threading.Thread(target=child.stderr.read, daemon=True).start()  # keep its stderr drained
    return child, match.group(1)


def stop(child: subprocess.Popen[str]) -> None:
    child.terminate()
    try:
        child.wait(timeout=20)
    except subprocess.TimeoutExpired:
        child.kill()


def resident_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process ``pid`` has spent so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def part_a(env: dict[str, str], servers: list[tuple[str, int, str]], calls: int) -> None:
    """``servers``: (label, pid, URL) of each HTTP server, all timed in the same interleaved rounds as stdio."""
    stdio = StdioHost([sys.executable, "-m", "teamvault_mcp"], env)
    stdio.initialize()
    hosts: list[tuple[str, int, Any]] = [("stdio", stdio.process.pid, None)]
    hosts += [(label, pid, RawHttpHost(url)) for label, pid, url in servers]

    def one(host: RawHttpHost | None) -> None:
        answer = stdio.call_tool("read_note", {"path": NOTE_PATH}) if host is None else host.call_read()
        assert not answer["result"].get("isError"), answer

    for _ in range(WARM_UP):
        for _, _, host in hosts:
            one(host)
    times: dict[str, list[float]] = {label: [] for label, _, _ in hosts}
    cpu_before = {label: cpu_seconds(pid) for label, pid, _ in hosts}
    for number in range(calls):
        for label, _, host in hosts if number % 2 == 0 else hosts[::-1]:
            started = time.perf_counter()
            one(host)
            times[label].append(time.perf_counter() - started)
    cpu = {label: (cpu_seconds(pid) - cpu_before[label]) / calls * 1e6 for label, pid, _ in hosts}
    for _, _, host in hosts[1:]:
        host.close()
    stdio.process.stdin.close()  # type: ignore[union-attr]
    stdio.process.wait(timeout=20)
    s50, s99 = statistics.median(times["stdio"]) * 1000, quantile(times["stdio"], 0.99) * 1000
    print(f"a. warm read_note, {calls} calls each, interleaved:")
    for label, _, _ in hosts:
        m50, m99 = statistics.median(times[label]) * 1000, quantile(times[label], 0.99) * 1000
        ratio = "" if label == "stdio" else f"   HTTP / stdio: median {m50 / s50:.2f}x, p99 {m99 / s99:.2f}x"
        print(f"   {label:<12} median {m50:6.2f} ms   p99 {m99:6.2f} ms   CPU {cpu[label]:5.0f} us/call{ratio}")
    print("   (goal, issue 31: HTTP median <= 1.3x stdio)")


async def part_b(url: str, sessions: int, reads: int) -> None:
    latencies: list[float] = []
    errors: list[str] = []

    async def one_session() -> None:
        async with httpx2.AsyncClient(headers=HEADERS, timeout=120) as http:
            opened = await http.post(url, json=INITIALIZE)
            if opened.status_code != 200:
                errors.append(f"initialize: HTTP {opened.status_code}")
                return
            http.headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            http.headers["mcp-protocol-version"] = "2025-11-25"
            await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            for number in range(reads):
                started = time.perf_counter()
                response = await http.post(url, json=read_call(number + 1))
                latencies.append(time.perf_counter() - started)
                try:
                    answer = answer_of(response)
                except RuntimeError as error:
                    errors.append(str(error))
                    continue
                if "error" in answer or answer["result"].get("isError"):
                    errors.append(json.dumps(answer)[:200])
            await http.delete(url)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(sessions):
            group.start_soon(one_session)
    wall = time.perf_counter() - started
    ms = [value * 1000 for value in latencies]
    print(
        f"b. {sessions} sessions at once x {reads} read_note each: {len(ms)} calls, {len(errors)} errors, "
        f"{wall:.2f} s wall ({len(ms) / wall:.0f} calls/s)"
    )
    print(f"   p50 {quantile(ms, 0.5):.1f} ms   p99 {quantile(ms, 0.99):.1f} ms   max {max(ms):.1f} ms")
    for error in errors[:5]:
        print(f"   error: {error}")


def part_c(env: dict[str, str], idle: int) -> None:
    child, url = start_http_server({**env, "TEAM_VAULT_HTTP_MAX_SESSIONS": str(idle + 10)})
    try:
        first = HttpHost(url)
        first.call_read()  # the code paths a session uses are loaded once
        time.sleep(1.0)  # a benchmark, not the package: let start-up garbage settle before measuring
        before = resident_mib(child.pid)
        hosts = [HttpHost(url) for _ in range(idle)]
        time.sleep(1.0)
        after = resident_mib(child.pid)
        for host in hosts:
            host.http.close()  # no DELETE: the sessions stay until the server stops
        first.close()
    finally:
        stop(child)
    print(
        f"c. memory: idle server {before:.1f} MiB resident; with {idle} more idle sessions {after:.1f} MiB: "
        f"+{after - before:.1f} MiB, {(after - before) * 1024 / idle:.0f} KiB per session (goal: <= 50 MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--idle", type=int, default=100)
    parser.add_argument("--parts", default="abc", help="which parts to run (a, b, c)")
    parser.add_argument(
        "--also", action="append", default=[], metavar="DIR", help="the HTTP server of another tree, in part a too"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, LocalVault(Path(scratch) / "vault") as vault:
        env = bench_env(vault, scratch)
        child, url = start_http_server(env)
        others = [start_http_server(env, tree=tree) for tree in args.also]
        try:
            if "a" in args.parts:
                servers = [("HTTP", child.pid, url)]
                servers += [
                    (Path(tree).name[:12], other.pid, other_url)
                    for tree, (other, other_url) in zip(args.also, others, strict=True)
                ]
                part_a(env, servers, args.calls)
            if "b" in args.parts:
                anyio.run(part_b, url, args.sessions, args.reads)
        finally:
            for running in [child, *(other for other, _ in others)]:
                stop(running)
        if "c" in args.parts:
            part_c(env, args.idle)


def bench_env(vault: LocalVault, scratch: str) -> dict[str, str]:
    """The servers' environment: ``vault`` with :data:`NOTE_PATH` in it, a content cache in ``scratch``, the token."""
    store = vault.store
    with store.write() as db:
        store.create(Change(db, vault.project_id, store.owner_of(vault.project_id)), NOTE_PATH, NOTE.encode(), None)
    return {
        **{key: value for key, value in os.environ.items() if not key.startswith("TEAM_VAULT_")},
        "TEAM_VAULT_URL": vault.url,
        "TEAM_VAULT_API_KEY": vault.api_key,
        "TEAM_VAULT_PROJECT_ID": vault.project_id,
        "TEAM_VAULT_CACHE_DIR": str(Path(scratch) / "cache"),
        "TEAM_VAULT_HTTP_TOKEN": TOKEN,
    }


if __name__ == "__main__":
    main()
