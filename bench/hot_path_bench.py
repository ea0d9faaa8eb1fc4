"""The hot path's steps in process, without stdio: each trim of issue 19 against what it replaced, side by side.

- the thread hand-off: ``anyio.to_thread.run_sync`` under anyio's limiter (before) against the runner's
  kept threads and queue (:class:`~teamvault_mcp.server.threads.CallThreads`) under an asyncio
  semaphore, for a function that returns at once;
- a whole ``ToolRunner.call`` that its worker thread refuses (``read_note`` of ``../x.md``): the
  product code around a request plus the hand-off;
- the SDK's OpenTelemetry middleware, per message, with no tracer provider set (the server drops it then);
- the lean transport's serving loop: ``ping`` and a bare ``tools/call`` over its reader and writer on a pair of
  pipes, the host in the same event loop, on ``Server.run`` (which finds the protocol era through a relay task)
  against the SDK's handshake loop ``serve_loop`` (what the lean transport runs after an ``initialize``).

Rounds alternate the two sides; medians of the per-round means are printed.

    .venv/bin/python bench/hot_path_bench.py [--rounds 9] [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from types import SimpleNamespace
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_loop

from teamvault_mcp.config import load_config
from teamvault_mcp.server.lean import MessageReader, MessageWriter, Stdin, Stdout, Unanswered
from teamvault_mcp.server.runner import MAX_CONCURRENT_CALLS, ToolRunner
from teamvault_mcp.server.threads import CallThreads


def nothing() -> int:
    return 1


async def anyio_hand_off(calls: int, limiter: anyio.CapacityLimiter) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        async with limiter:
            await anyio.to_thread.run_sync(nothing, abandon_on_cancel=True)
    return (time.perf_counter() - started) / calls


async def queue_hand_off(calls: int, slots: asyncio.Semaphore, threads: CallThreads) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        async with slots:
            await threads.run(nothing, on_cancel=lambda: None, grace=1.0)
    return (time.perf_counter() - started) / calls


async def refused_call(calls: int, runner: ToolRunner) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        result = await runner.call("read_note", {"path": "../x.md"})
    assert result.is_error
    return (time.perf_counter() - started) / calls


async def middleware_cost(calls: int) -> float:
    middleware = Server("bare").middleware[0]
    ctx = SimpleNamespace(
        params={"name": "read_note"}, method="tools/call", protocol_version="2025-11-25", request_id=5, meta=None
    )

    async def call_next(ctx: Any) -> dict[str, Any]:
        return {}

    started = time.perf_counter()
    for _ in range(calls):
        await middleware(ctx, call_next)
    wrapped = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(calls):
        await call_next(ctx)
    return (wrapped - (time.perf_counter() - started)) / calls


ECHO = types.Tool(name="echo", description="Echo.", input_schema={"type": "object"})
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


async def serving_loop(calls: int, handshake_loop: bool) -> tuple[float, float]:
    """Seconds per ``ping`` and per bare ``tools/call``, host and server in this loop, over two pipes."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[ECHO])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="echo")])

    server: Server[Any] = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware = []
    server_in, to_server = os.pipe()
    from_server, server_out = os.pipe()
    pending = b""

    async def exchange(message: dict[str, Any], answers: int = 1) -> None:
        nonlocal pending
        os.write(to_server, json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        while pending.count(b"\n") < answers:
            await anyio.wait_readable(from_server)
            pending += os.read(from_server, 65536)
        pending = pending.split(b"\n", answers)[-1]

    async def serve() -> None:
        unanswered = Unanswered()
        writes = MessageWriter(Stdout(server_out, on_broken=lambda: None), unanswered)
        reads = MessageReader(Stdin(server_in), writes, unanswered, drain_limit=10)
        options = server.create_initialization_options()
        if handshake_loop:
            assert await reads.opens_with_initialize()
            await serve_loop(server, reads, writes, lifespan_state=None, init_options=options)
        else:
            await server.run(reads, writes, options)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            await exchange({"id": 1, "method": "initialize", "params": HELLO})
            await exchange({"method": "notifications/initialized"}, answers=0)
            figures = []
            for method, params in (("ping", None), ("tools/call", {"name": "echo", "arguments": {}})):
                started = time.perf_counter()
                for number in range(calls):
                    await exchange({"id": number + 2, "method": method, **({"params": params} if params else {})})
                figures.append((time.perf_counter() - started) / calls)
            os.close(to_server)
            to_server = -1
    finally:
        for fd in (server_in, to_server, from_server, server_out):
            if fd >= 0:
                os.close(fd)
    return figures[0], figures[1]


async def main(rounds: int, calls: int) -> None:
    limiter = anyio.CapacityLimiter(MAX_CONCURRENT_CALLS)
    slots = asyncio.Semaphore(MAX_CONCURRENT_CALLS)
    threads = CallThreads()
    environ = {
        "TEAM_VAULT_URL": "http://127.0.0.1:9",
        "TEAM_VAULT_API_KEY": "osync_bench",
        "TEAM_VAULT_CACHE_DIR": "off",
    }
    runner = ToolRunner(load_config(environ))
    figures: dict[str, list[float]] = {
        name: []
        for name in (
            "anyio to_thread",
            "kept threads",
            "refused call",
            "otel",
            "ping, Server.run",
            "ping, serve_loop",
            "call, Server.run",
            "call, serve_loop",
        )
    }
    try:
        await anyio_hand_off(200, limiter)
        await queue_hand_off(200, slots, threads)
        await refused_call(200, runner)
        for _ in range(rounds):
            figures["anyio to_thread"].append(await anyio_hand_off(calls, limiter))
            figures["kept threads"].append(await queue_hand_off(calls, slots, threads))
            figures["refused call"].append(await refused_call(calls, runner))
            figures["otel"].append(await middleware_cost(calls * 5))
            for handshake_loop, label in ((False, "Server.run"), (True, "serve_loop")):
                ping, call = await serving_loop(calls, handshake_loop)
                figures[f"ping, {label}"].append(ping)
                figures[f"call, {label}"].append(call)
    finally:
        threads.close()
        runner.close()
    print(f"median of {rounds} rounds of {calls} calls, µs per call")
    for name, values in figures.items():
        print(f"  {name:16} {statistics.median(values) * 1e6:8.1f}  (min {min(values) * 1e6:.1f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    anyio.run(main, args.rounds, args.calls)
