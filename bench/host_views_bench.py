"""What each kind of host shows its model, per tool and setting: the matrix of issue 25, bytes per task, tools/list.

The task suite of ``tests/support/host_views.py`` (everyday agent calls on a small team vault: every tool, three
error answers) runs against a real stdio child per configuration, each on a fresh copy of the vault:

- "now, default": this tree, TEAM_VAULT_STRUCTURED_CONTENT unset (results are one text block);
- "now, structured on": this tree, TEAM_VAULT_STRUCTURED_CONTENT=on;
- "before" (with ``--package DIR``): an older tree, which has no such setting (it always sent a thin
  structured half, and read_note's hash in a second block).

For each answer, three host views (all text; the first text block; structured-first: the structured content's
strings when there is any, else the text) must hold the facts the task needs. It prints the matrix (tools ×
views, per configuration: ✓, or ✗ with how many of its tasks miss a fact), the bytes per task of the text and of
the structured content (JSON, as ``JSON.stringify`` writes it), and the bytes of the whole ``tools/list`` answer
and of what a model sees of it (name, description, inputSchema).

    .venv/bin/python bench/host_views_bench.py [--package DIR]   (DIR holds an older teamvault_mcp, e.g.
    mkdir DIR && git archive <commit> teamvault_mcp | tar -x -C DIR)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from stdio_client import INITIALIZE  # noqa: E402
from support.host_views import SCHEMA_DIR, TASKS, VIEWS, Outcome, Vault, run_suite, seed_team_vault  # noqa: E402

from teamvault_mcp.localvault import LocalVault  # noqa: E402


class Child:
    """``python -m teamvault_mcp`` from ``package`` (run from an empty directory), spoken to as a host does."""

    def __init__(self, package: Path, vault: LocalVault, workdir: Path, settings: dict[str, str]) -> None:
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(package),
            "TEAM_VAULT_CACHE_DIR": "off",
            "TEAM_VAULT_PREFETCH": "off",  # a bench of answers, not of the warm-up
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": vault.project_id,
            "TEAM_VAULT_SCHEMA_DIR": SCHEMA_DIR,
            **settings,
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "teamvault_mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=workdir,  # not the source tree: ``-m`` imports from the current directory first
            env=env,
        )
        self.next_id = 1
        self.request("initialize", INITIALIZE["params"])
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The answer's result, and its size on the wire."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("the server closed stdout")
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                return answer["result"], len(line)

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


def run(package: Path, settings: dict[str, str], work: Path) -> tuple[list[Outcome], list[dict[str, Any]]]:
    """The suite on a fresh team vault against the package's server; its outcomes and the tools it listed."""
    with tempfile.TemporaryDirectory(dir=work) as data, LocalVault(Path(data) / "vault") as vault:
        seed_team_vault(vault)
        child = Child(package, vault, work, settings)
        try:
            listed, _ = child.request("tools/list", {})

            async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result, _ = child.request("tools/call", {"name": tool, "arguments": arguments})
                return result

            return anyio.run(run_suite, call, Vault(vault)), listed["tools"]
        finally:
            child.close()


def text_bytes(result: dict[str, Any]) -> int:
    return sum(len(block["text"].encode()) for block in result.get("content", []) if block.get("type") == "text")


def structured_bytes(result: dict[str, Any]) -> int:
    if "structuredContent" not in result:
        return 0
    return len(json.dumps(result["structuredContent"], ensure_ascii=False, separators=(",", ":")).encode())


def visible(tool: dict[str, Any]) -> int:
    return len((tool["name"] + tool.get("description", "") + json.dumps(tool["inputSchema"])).encode())


def matrix(runs: dict[str, list[Outcome]]) -> list[str]:
    """Tools × views per configuration: ✓ when every task of the tool has every fact in that view."""
    tools = list(dict.fromkeys(task.tool for task in TASKS))
    header = ["tool", *(f"{name}: {view}" for name in runs for view in VIEWS)]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for tool in tools:
        cells = [f"`{tool}`"]
        for outcomes in runs.values():
            mine = [outcome for outcome in outcomes if outcome.task.tool == tool]
            for view in VIEWS:
                red = sum(1 for outcome in mine if outcome.missing[view] or outcome.problems)
                cells.append("✓" if not red else f"✗ {red}/{len(mine)}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, help='a directory holding an older teamvault_mcp ("before")')
    args = parser.parse_args()
    configurations = {"now, default": (ROOT, {}), "now, structured on": (ROOT, {"TEAM_VAULT_STRUCTURED_CONTENT": "on"})}
    if args.package is not None:
        configurations = {"before": (args.package.resolve(), {}), **configurations}
    runs: dict[str, list[Outcome]] = {}
    listings: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as work:
        for name, (package, settings) in configurations.items():
            runs[name], listings[name] = run(package, settings, Path(work))

    print(f"{len(TASKS)} tasks, {len({task.tool for task in TASKS})} tools\n")
    print("\n".join(matrix(runs)))
    for name, outcomes in runs.items():
        red = [(outcome.task.name, view) for outcome in outcomes for view in VIEWS if outcome.missing[view]]
        print(f"\n{name}: {len(red)} of {len(outcomes) * len(VIEWS)} task views miss a fact", end="")
        print("" if not red else ": " + "; ".join(f"{task} ({view})" for task, view in red[:12]), end="")
        print(" …" if len(red) > 12 else "")

    print("\nBytes per task: text / structured content (JSON)")
    names = list(runs)
    print("| task | tool | " + " | ".join(names) + " |")
    print("| --- | --- |" + " --- |" * len(names))
    totals = {name: [0, 0] for name in names}
    for index, task in enumerate(TASKS):
        cells = []
        for name in names:
            result = runs[name][index].result
            text, structured = text_bytes(result), structured_bytes(result)
            totals[name][0] += text
            totals[name][1] += structured
            cells.append(f"{text:,} / {structured:,}")
        print(f"| {task.name} | `{task.tool}` | " + " | ".join(cells) + " |")
    print("| **all** | | " + " | ".join(f"**{t:,} / {s:,}**" for t, s in totals.values()) + " |")

    print(
        "\ntools/list: whole answer (every tool's definition as JSON) / what a model sees (name, description, "
        "inputSchema)"
    )
    for name, tools in listings.items():
        whole = sum(len(json.dumps(tool).encode()) for tool in tools)
        seen = sum(visible(tool) for tool in tools)
        schemas = sum(1 for tool in tools if "outputSchema" in tool)
        print(f"  {name}: {len(tools)} tools, {whole:,} bytes whole, {seen:,} model-visible, {schemas} outputSchemas")


if __name__ == "__main__":
    main()
