"""Where one warm ``read_note`` spends its time, stage by stage, over stdio and over ``serve --http``.

Each server runs as a child with timestamps taken at its stages (this file, run as the child, wraps
the functions named below and dumps ``perf_counter_ns`` marks at exit); the client notes when it
sent each call and when the answer was in. Both clocks are the machine's monotonic clock, so each
stage is printed as the median time from the client's send to the first mark of that stage, in µs.
The marks cost about a microsecond each; compare the stages, and take end-to-end figures from
``bench/http_bench.py``.

    .venv/bin/python bench/http_stages.py [--calls 1500]

Stages: ``recv`` (the request reaches our h11 protocol), ``front`` (``HttpFront``), ``mgr`` (the SDK's
session lookup, after its body-limit middleware read the body), ``post`` (its transport's POST handler),
``dispatch`` (the SDK's server runner), ``call``/``called`` (``ToolRunner.call``), ``work``/``worked``
(the tool in its worker thread), ``send ...`` (uvicorn writing the answer), ``complete`` (the answer written).
"""

from __future__ import annotations

import argparse
import atexit
import functools
import json
import os
import runpy
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

MARKS_VARIABLE = "HTTP_STAGES_MARKS"


def run_marked_server() -> None:
    """The child: ``python -m teamvault_mcp`` with its stages marked (arguments as after ``teamvault_mcp``)."""
    import mcp.server.runner as sdk_runner
    import uvicorn.protocols.http.h11_impl as h11_impl
    from mcp.server import streamable_http, streamable_http_manager

    from teamvault_mcp.server import http, http_limits, runner

    marks: list[tuple[int, str]] = []
    atexit.register(lambda: Path(os.environ[MARKS_VARIABLE]).write_text(json.dumps(marks)))

    def mark(label: str) -> None:
        marks.append((time.perf_counter_ns(), label))

    def marked(owner: Any, name: str, before: str, after: str | None = None) -> None:
        original = getattr(owner, name)
        if not callable(original):
            return

        @functools.wraps(original)
        def sync(*args: Any, **kwargs: Any) -> Any:
            mark(before)
            try:
                return original(*args, **kwargs)
            finally:
                if after:
                    mark(after)

        @functools.wraps(original)
        async def asynchronous(*args: Any, **kwargs: Any) -> Any:
            mark(before)
            try:
                return await original(*args, **kwargs)
            finally:
                if after:
                    mark(after)

        import inspect

        setattr(owner, name, asynchronous if inspect.iscoroutinefunction(original) else sync)

    marked(http_limits.GuardedH11Protocol, "data_received", "recv")
    marked(http_limits.GuardedH11Protocol, "on_response_complete", "complete")
    marked(streamable_http_manager.StreamableHTTPSessionManager, "_handle_stateful_request", "mgr")
    marked(streamable_http.StreamableHTTPServerTransport, "_handle_post_request", "post")
    marked(sdk_runner.ServerRunner, "_on_request", "dispatch")
    marked(runner.ToolRunner, "call", "call", "called")
    marked(runner.ToolRunner, "_execute", "work", "worked")
    front_call = http.HttpFront.__call__

    async def front(self: Any, scope: Any, receive: Any, send: Any) -> None:  # uvicorn reads this signature
        if scope["type"] == "http":
            mark("front")
        await front_call(self, scope, receive, send)

    http.HttpFront.__call__ = front  # type: ignore[method-assign]
    cycle_send = h11_impl.RequestResponseCycle.send

    async def send(self: Any, message: Any) -> None:
        kind = message["type"].replace("http.response.", "")
        mark(f"send {kind}" + (" (more)" if message.get("more_body") else ""))
        await cycle_send(self, message)

    h11_impl.RequestResponseCycle.send = send  # type: ignore[method-assign]
    sys.argv = ["teamvault_mcp", *sys.argv[1:]]
    runpy.run_module("teamvault_mcp", run_name="__main__")


def stages(marks_file: Path, calls: list[tuple[int, int]]) -> dict[str, float]:
    """Median µs from the client's send to the first mark of each stage within that call."""
    marks = json.loads(marks_file.read_text())
    since_send: dict[str, list[float]] = defaultdict(list)
    at = 0
    for sent, answered in calls:
        while at < len(marks) and marks[at][0] < sent:
            at += 1
        first: dict[str, int] = {}
        for stamp, label in marks[at:]:
            if stamp > answered:
                break
            first.setdefault(label, stamp)
        for label, stamp in first.items():
            since_send[label].append((stamp - sent) / 1000)
        since_send["answer in (client)"].append((answered - sent) / 1000)
    return {label: statistics.median(values) for label, values in since_send.items() if len(values) > len(calls) // 2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1500)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from http_bench import NOTE_PATH, WARM_UP, RawHttpHost, bench_env, start_http_server, stop
    from stdio_client import StdioHost

    from teamvault_mcp.localvault import LocalVault

    marked = [sys.executable, str(Path(__file__).resolve())]
    with tempfile.TemporaryDirectory() as scratch, LocalVault(Path(scratch) / "vault") as vault:
        env = bench_env(vault, scratch)
        results: dict[str, dict[str, float]] = {}
        stdio_marks = Path(scratch) / "stdio.json"
        stdio = StdioHost(marked, {**env, MARKS_VARIABLE: str(stdio_marks)})
        stdio.initialize()
        http_marks = Path(scratch) / "http.json"
        child, url = start_http_server({**env, MARKS_VARIABLE: str(http_marks)}, command=marked)
        http = RawHttpHost(url)
        try:
            for _ in range(WARM_UP * 4):
                stdio.call_tool("read_note", {"path": NOTE_PATH})
                http.call_read()
            timed: dict[str, list[tuple[int, int]]] = {"stdio": [], "HTTP": []}
            for _ in range(args.calls):
                sent = time.perf_counter_ns()
                stdio.call_tool("read_note", {"path": NOTE_PATH})
                timed["stdio"].append((sent, time.perf_counter_ns()))
                sent = time.perf_counter_ns()
                http.call_read()
                timed["HTTP"].append((sent, time.perf_counter_ns()))
        finally:
            http.close()
            stdio.process.stdin.close()  # type: ignore[union-attr]
            stdio.process.wait(timeout=20)
            stop(child)
        results["stdio"] = stages(stdio_marks, timed["stdio"])
        results["HTTP"] = stages(http_marks, timed["HTTP"])
    for side, found in results.items():
        print(f"{side}: median µs from the client's send ({args.calls} calls, interleaved)")
        previous = 0.0
        for label, value in sorted(found.items(), key=lambda item: item[1]):
            print(f"   {value:8.1f}  (+{value - previous:6.1f})  {label}")
            previous = value


if __name__ == "__main__":
    if os.environ.get(MARKS_VARIABLE):
        run_marked_server()
    else:
        main()
