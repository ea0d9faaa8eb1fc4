"""What the two output guards cost, next to the serialisation every result goes through anyway.

For tool results of several sizes (text only, as read_note answers; text and the same
text in structured content, as read_notes answers), in one run:

- sdk: what the SDK does with every result — ``CallToolResult.model_dump`` (the runner)
  and the JSON-RPC response's ``model_dump_json`` (the stdio writer);
- result guard: ``ToolRunner._deliverable`` — the result made from the tool's output, with the key
  scrub, lone surrogates and the depth check;
- write guard: :func:`~teamvault_mcp.server.stdio.writable`, the stock transport's check of every message
  before its writer (the lean transport repairs only what the serialiser refuses, and walks nothing).

Each as the median of repeated runs, and as a share of the sdk's time.

    .venv/bin/python bench/guard_overhead.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import mcp.types as types

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from teamvault_mcp.config import Config
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.server.stdio import writable
from teamvault_mcp.tools.context import ToolOutput

KEY = "osync_" + "5ec2e7" * 10 + "abcd"
LINE = "- [ ] a task with Ümlauts — and a [[link]] to another note\n"


def median_ms(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    repeat = parser.parse_args().repeat
    runner = ToolRunner(Config(base_url="http://127.0.0.1:9", api_key=KEY, cache_dir=None))
    print(f"median of {repeat} runs; ms, and in brackets the share of the sdk's own serialisation")
    print(f"{'result':<28}{'sdk':>10}{'result guard':>22}{'write guard':>22}")
    for size in (2_000, 100_000, 1_000_000, 5_000_000):
        text = LINE * (size // len(LINE))
        for shape, structured in (
            ("text", {"path": "notes/a.md", "contentHash": "ab" * 32}),
            ("text + structured", {"notes": [{"path": "notes/a.md", "content": text}]}),
        ):
            output = ToolOutput(text, structured)
            result = types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], structured_content=structured
            )

            def sdk(result: types.CallToolResult = result) -> None:
                dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                types.JSONRPCResponse(jsonrpc="2.0", id=1, result=dumped).model_dump_json(
                    by_alias=True, exclude_unset=True
                )

            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            response = types.JSONRPCResponse(jsonrpc="2.0", id=1, result=dumped)
            sdk_ms = median_ms(sdk, repeat)
            guard_ms = median_ms(lambda output=output: runner._deliverable("read_note", output), repeat)
            write_ms = median_ms(lambda response=response: writable(response), repeat)
            label = f"{len(text):>9,} chars, {shape}"
            print(
                f"{label:<28}{sdk_ms:>10.3f}{guard_ms:>13.3f} ({guard_ms / sdk_ms:>4.0%}){write_ms:>13.3f} "
                f"({write_ms / sdk_ms:>4.0%})"
            )


if __name__ == "__main__":
    main()
