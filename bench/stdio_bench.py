"""The stdio transport and the hot path: ping, a trivial call and ``read_note``, lean against stock and the original.

In one run, against one loopback stand-in (``standin.py``, plain HTTP), round by round:

- ``teamvault-mcp`` on the lean transport (the default) and on the SDK's own
  (``TEAM_VAULT_STDIO=stock``), content cache on: ``read_note`` of the unchanged note is one request;
- the original TypeScript server (kremdigital/TeamVaultMCP), when ``--ts-server`` names its built
  ``dist/index.js`` (not part of this repository: build it yourself). It makes two requests per
  ``read_note``, the resolve and the download;
- a bare ``mcp`` low-level server with one trivial tool (``bare_server.py``), on the SDK's
  ``stdio_server`` and on the lean transport: what the transport alone costs;
- with ``--also DIR``, the teamvault-mcp package in DIR (a copy of ``main``, say) on its lean transport.

Each round sends each server, in a rotating order, five ``ping``, five trivial ``tools/call`` and
five ``read_note`` of the note (in blocks: the first call of a block wakes a process that was idle).
The trivial call is the bare server's ``echo``; for teamvault-mcp it is a ``read_note`` of a path
the server refuses before any request (``../x.md``): the whole call pipeline, worker thread
included, without HTTP. The medians after 10 rounds of warm-up are printed side by side, with the
stand-in's requests per ``read_note``. Then, one server at a time: the CPU each call costs the
server (all its threads, from ``/proc/<pid>/task/*/schedstat``, over ``--cpu-calls`` sequential
calls), and the cancel latency of teamvault-mcp: from the ``notifications/cancelled`` of a
``read_note`` whose request the stand-in holds, to the stand-in seeing its connection dropped,
and to the answer of a ``ping`` sent right after the cancel.

    .venv/bin/python bench/stdio_bench.py [--rounds 200] [--ts-server /path/to/TeamVaultMCP/dist/index.js] [--also DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from standin import HANG_PATH, NOTE, NOTE_PATH, PROJECT, StandIn, run_standin
from stdio_client import StdioHost

HERE = Path(__file__).resolve().parent
WARM_UP = 10
#: Calls of one kind a server makes in a row within a round: the first of a block wakes a process that was idle.
BLOCK = 5
CANCELS = 20


class Server:
    """One server under test, spoken to over stdio with raw JSON-RPC lines."""

    def __init__(
        self, label: str, command: list[str], env: dict[str, str], *, tools: str, cwd: str | None = None
    ) -> None:
        self.label = label
        self.host = StdioHost(command, env, cwd=cwd)
        self.host.initialize()
        self.tools = tools  # "teamvault", "ts" or "bare"
        self.times: dict[str, list[float]] = {"ping": [], "trivial": [], "read_note": []}
        self._id = 100

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            message["params"] = params
        self.host.send(message)
        answer = self.host.receive()
        assert answer.get("id") == self._id, answer
        return answer

    def ping(self) -> None:
        assert self.request("ping")["result"] == {}

    def trivial(self) -> None:
        if self.tools == "bare":
            answer = self.request("tools/call", {"name": "echo", "arguments": {}})
            assert not answer["result"].get("isError"), answer
        else:
            answer = self.request("tools/call", {"name": "read_note", "arguments": {"path": "../x.md"}})
            assert answer["result"]["isError"] is True, answer

    def read_note(self) -> None:
        answer = self.request("tools/call", {"name": "read_note", "arguments": {"path": NOTE_PATH}})
        text = answer["result"]["content"][0]["text"]
        if text.startswith("[contentHash: "):  # teamvault-mcp since issue 25: the hash line, then the exact text
            text = text.split("\n", 1)[1]
        assert text.encode() == NOTE, answer

    def steps(self) -> dict[str, Callable[[], None]]:
        steps = {"ping": self.ping}
        if self.tools != "ts":  # the original has no tool that answers without a request
            steps["trivial"] = self.trivial
        if self.tools != "bare":
            steps["read_note"] = self.read_note
        return steps

    def cpu_seconds(self) -> float:
        """CPU time the server process has used so far, all its threads."""
        total = 0
        tasks = f"/proc/{self.host.process.pid}/task"
        for task in os.listdir(tasks):
            try:
                with open(f"{tasks}/{task}/schedstat") as stats:
                    total += int(stats.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
                pass
        return total / 1e9

    def close(self) -> None:
        self.host.close()


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:6.3f}" if values else "     –"


@contextmanager
def servers(standin: StandIn, ts_server: str | None, also: str | None = None) -> Iterator[list[Server]]:
    cache = tempfile.TemporaryDirectory(prefix="stdio-bench-cache-")
    env = {
        "TEAM_VAULT_URL": standin.url,
        "TEAM_VAULT_API_KEY": "osync_bench",
        "TEAM_VAULT_PROJECT_ID": PROJECT,
        "PYTHONPATH": str(HERE.parent),
    }
    made: list[Server] = []
    with ExitStack() as stack:
        stack.callback(cache.cleanup)
        for label, transport in (("teamvault-mcp, lean stdio", "lean"), ("teamvault-mcp, stock stdio", "stock")):
            own = {**env, "TEAM_VAULT_STDIO": transport, "TEAM_VAULT_CACHE_DIR": f"{cache.name}/{transport}"}
            made.append(
                Server(label, [sys.executable, "-m", "teamvault_mcp"], own, tools="teamvault", cwd=str(HERE.parent))
            )
        if ts_server is not None:
            made.append(Server("original TypeScript server", ["node", ts_server], env, tools="ts"))
        if also is not None:  # run in its own directory: python -m puts the working directory before PYTHONPATH
            other = {**env, "PYTHONPATH": also, "TEAM_VAULT_CACHE_DIR": f"{cache.name}/also"}
            label = f"{Path(also).name}, lean stdio"[:30]
            made.append(Server(label, [sys.executable, "-m", "teamvault_mcp"], other, tools="teamvault", cwd=also))
        bare = [sys.executable, str(HERE / "bare_server.py")]
        made.append(Server("bare mcp server, stock stdio", bare, env, tools="bare"))
        made.append(Server("bare mcp server, lean stdio", [*bare, "--lean"], env, tools="bare"))
        for server in made:
            stack.callback(server.close)
        yield made


def interleaved(made: list[Server], rounds: int, standin: StandIn) -> dict[str, float]:
    requests_per_read: dict[str, float] = {}
    seen = {server.label: 0 for server in made}
    for number in range(WARM_UP + rounds):
        order = made[number % len(made) :] + made[: number % len(made)]
        for server in order:
            for name, step in server.steps().items():
                for _ in range(BLOCK):
                    before = standin.counts()
                    started = time.perf_counter()
                    step()
                    elapsed = time.perf_counter() - started
                    if number >= WARM_UP:
                        server.times[name].append(elapsed)
                        if name == "read_note":
                            after = standin.counts()
                            seen[server.label] += (after["resolves"] + after["downloads"]) - (
                                before["resolves"] + before["downloads"]
                            )
    for server in made:
        if server.times["read_note"]:
            requests_per_read[server.label] = seen[server.label] / len(server.times["read_note"])
    return requests_per_read


def cpu_per_call(server: Server, step: Callable[[], None], calls: int) -> float:
    for _ in range(50):
        step()
    before = server.cpu_seconds()
    for _ in range(calls):
        step()
    return (server.cpu_seconds() - before) / calls


def cancel_latency(server: Server, standin: StandIn) -> tuple[list[float], list[float]]:
    """Seconds from each cancel to the dropped connection, and to the answer of the ping sent after it."""
    dropped: list[float] = []
    pinged: list[float] = []
    for _ in range(CANCELS):
        held = len(standin.stamps("hang_started"))
        ended = len(standin.stamps("hang_ended"))
        server._id += 1
        call_id = server._id
        params = {"name": "read_note", "arguments": {"path": HANG_PATH}}
        server.host.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params})
        deadline = time.monotonic() + 20
        while len(standin.stamps("hang_started")) == held:
            assert time.monotonic() < deadline, "the stand-in never saw the request: the machine is too slow"
            time.sleep(0.001)
        cancelled_at = time.perf_counter()
        cancel = {"requestId": call_id, "reason": "bench"}
        server.host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        server.ping()  # the cancelled call gets no answer: the first line back is the ping's
        pinged.append(time.perf_counter() - cancelled_at)
        while len(standin.stamps("hang_ended")) == ended:
            assert time.monotonic() < deadline, "the connection was never dropped: the cancel did not reach it"
            time.sleep(0.001)
        dropped.append(standin.stamps("hang_ended")[-1] - cancelled_at)
    return dropped, pinged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200, help="measured rounds (default 200)")
    parser.add_argument("--cpu-calls", type=int, default=1000, help="sequential calls per CPU figure (default 1000)")
    parser.add_argument("--ts-server", help="the original TypeScript server's built dist/index.js, to run beside")
    parser.add_argument(
        "--also", metavar="DIR", help="another tree of teamvault-mcp (a copy of main, say), to run beside"
    )
    args = parser.parse_args()
    with run_standin() as standin, servers(standin, args.ts_server, args.also) as made:
        requests_per_read = interleaved(made, args.rounds, standin)
        cpu = {
            server.label: {name: cpu_per_call(server, step, args.cpu_calls) for name, step in server.steps().items()}
            for server in made
        }
        cancels = {server.label: cancel_latency(server, standin) for server in made if server.tools == "teamvault"}
    load = os.getloadavg()[0]
    print(
        f"median of {args.rounds} interleaved rounds of {BLOCK} calls of each kind, ms "
        f"(loopback stand-in; load average {load:.1f} at the end)"
    )
    print(f"  {'':30} {'ping':>8} {'trivial':>8} {'read_note':>10}  requests per read_note")
    for server in made:
        reads = requests_per_read.get(server.label)
        print(
            f"  {server.label:30} {median_ms(server.times['ping']):>8} {median_ms(server.times['trivial']):>8} "
            f"{median_ms(server.times['read_note']):>10}  {f'{reads:.2f}' if reads is not None else '–'}"
        )
    lean, stock = made[0], made[1]
    lean_read = statistics.median(lean.times["read_note"])
    print(f"  read_note, lean / stock: {lean_read / statistics.median(stock.times['read_note']):.3f}")
    if args.ts_server:
        original = statistics.median(made[2].times["read_note"])
        print(f"  read_note, lean / original TypeScript server: {lean_read / original:.3f}  (goal <= 0.9)")
    print(f"CPU per call in the server process, µs (median-free: total over {args.cpu_calls} sequential calls)")
    for server in made:
        costs = "  ".join(f"{name} {seconds * 1e6:7.1f}" for name, seconds in cpu[server.label].items())
        print(f"  {server.label:30} {costs}")
    print(f"cancel latency, ms: median (max) of {CANCELS} cancels of a read_note whose request the stand-in holds")
    for label, (dropped, pinged) in cancels.items():
        print(
            f"  {label:30} connection dropped {median_ms(dropped)} ({max(dropped) * 1000:.3f}), "
            f"next ping answered {median_ms(pinged)} ({max(pinged) * 1000:.3f})"
        )


if __name__ == "__main__":
    main()
