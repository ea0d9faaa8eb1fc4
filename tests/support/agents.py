"""``teamvault-mcp`` processes over stdio, spoken to in raw JSON-RPC lines, as racing agents (and the races
bench) drive them: every agent's call is sent at once, then the answers are collected."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from typing import Any

#: Seconds a process may take to answer; only a machine far too slow for the suite needs more.
PATIENCE = 120.0


class Agent:
    """One MCP server process; several calls may be in flight on it at once (a host's parallel calls)."""

    def __init__(self, env: dict[str, str], cwd: str | None = None, patience: float = PATIENCE) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "teamvault_mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self.patience = patience
        self.next_id = 0
        self._buffer = b""
        self._answers: dict[int, dict[str, Any]] = {}

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        self.next_id += 1
        self._write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        return self.next_id

    def notify(self, method: str) -> None:
        self._write({"jsonrpc": "2.0", "method": method})

    def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, request_id: int) -> dict[str, Any]:
        """The response to ``request_id``; notifications are skipped, others' responses kept for their turn."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + self.patience
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while request_id not in self._answers:
                while b"\n" in self._buffer:
                    line, self._buffer = self._buffer.split(b"\n", 1)
                    message = json.loads(line)
                    if "id" in message:
                        self._answers[message["id"]] = message
                if request_id in self._answers:
                    break
                left = deadline - time.monotonic()
                assert left > 0, f"no answer within {self.patience:g} s: the machine is too slow for this"
                if selector.select(left):
                    chunk = os.read(self.process.stdout.fileno(), 65536)
                    assert chunk, "the MCP server process ended"
                    self._buffer += chunk
        return self._answers.pop(request_id)

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=self.patience)
        self.process.stdout.close()


def initialize(agents: list[Agent], client: str) -> None:
    """The MCP handshake with every process at once, as ``client``."""
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}
    handshakes = [agent.send("initialize", params) for agent in agents]
    for agent, request_id in zip(agents, handshakes, strict=True):
        agent.answer(request_id)
        agent.notify("notifications/initialized")


def call_all(agents: list[Agent], calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Send every agent its call at once (agents on one process are its parallel calls), then collect the
    results, in agent order."""
    ids = [
        agent.send("tools/call", {"name": name, "arguments": arguments})
        for agent, (name, arguments) in zip(agents, calls, strict=True)
    ]
    return [agent.answer(request_id)["result"] for agent, request_id in zip(agents, ids, strict=True)]


def text_of(result: dict[str, Any]) -> str:
    """Every text block of a tool result, one per line."""
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
