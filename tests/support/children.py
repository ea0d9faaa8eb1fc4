"""The program as a child process: its entry points, and a server spoken to over its stdin and stdout."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

#: The repository: the source tree a child runs from.
ROOT = Path(__file__).resolve().parent.parent.parent
CONSOLE_SCRIPT = Path(sys.executable).parent / "teamvault-mcp"
ENTRY_POINTS = {
    "python -m teamvault_mcp": [sys.executable, "-m", "teamvault_mcp"],
    "teamvault-mcp": [str(CONSOLE_SCRIPT)],
}


def start_local_vault(data: Path, cwd: Path | None = None) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """``teamvault-mcp local-vault`` on ``data`` and a free port, in a process of its own; the environment it
    prints for a server (``TEAM_VAULT_URL``, ``TEAM_VAULT_API_KEY``, ``TEAM_VAULT_PROJECT_ID``)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "teamvault_mcp", "local-vault", "--data", str(data), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
    )
    assert process.stdout is not None
    return process, dict(process.stdout.readline().rstrip("\n").split("=", 1) for _ in range(3))


class StdioChild:
    """A server process and a line reader on its stdout."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, message: dict[str, Any] | str) -> None:
        assert self.process.stdin is not None
        text = message if isinstance(message, str) else json.dumps(message)
        self.process.stdin.write(text.encode() + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 20.0) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        return json.loads(line)  # every stdout line must be JSON-RPC

    def request(self, id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}})
        return self.receive()

    def initialize(self) -> dict[str, Any]:
        answer = self.request(
            1,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close(self) -> tuple[int, str]:
        """Close stdin as a host does at shutdown; the exit code and everything on stderr."""
        assert self.process.stdin and self.process.stdout and self.process.stderr
        self.process.stdin.close()
        code = self.process.wait(timeout=20)
        self.reader.join(timeout=5)
        self.process.stdout.close()
        with self.process.stderr:
            return code, self.process.stderr.read().decode()
