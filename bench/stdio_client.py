"""A minimal MCP host for the benchmarks: spawns a server and speaks raw JSON-RPC lines to it."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


class StdioHost:
    def __init__(self, command: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        """``cwd``: the child's working directory (``python -m`` puts it first on the path, before PYTHONPATH)."""
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
        self._next_id = 1

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        return json.loads(line)

    def initialize(self) -> float:
        """Send initialize; return seconds from spawn until its answer arrived."""
        self.send(INITIALIZE)
        self.receive()
        answered = time.perf_counter() - self.started
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answered

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        self.send(
            {
                "jsonrpc": "2.0",
                "id": self._next_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )
        answer = self.receive()
        if "error" in answer or answer["result"].get("isError"):
            raise RuntimeError(f"tool call failed: {answer}")
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()
