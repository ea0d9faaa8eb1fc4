"""What every agent turn carries: the bytes of ``tools/list``, per tool, before and after, and against peers.

Each package (``--package DIR``: a directory holding a ``teamvault_mcp`` package, e.g. one made by
``git archive <commit> teamvault_mcp | tar -x -C DIR``; the source tree is always measured, as "now")
runs as a real stdio child from an empty directory, so nothing comes from the source tree unless asked,
against one local vault on loopback. "Model-visible" bytes are a tool's name + description + its
inputSchema as JSON (``json.dumps`` defaults, UTF-8): what a host puts in front of the model; "total" is
the whole tool definition as JSON (title, annotations, outputSchema too).

Configurations: "default" (TEAM_VAULT_URL, TEAM_VAULT_API_KEY, TEAM_VAULT_PROJECT_ID: projectId offered),
"single" (TEAM_VAULT_SINGLE_PROJECT=1, as ``--local`` sets it: projectId left out) and "read-only".
The peers' figures are those issue 15 quotes (model-visible bytes, measured the same way).

Goals (issue 15): at most 12,000 model-visible bytes for the 18 tools of the issue's day, in the default
configuration; at most 650 on average for each tool added later.

    .venv/bin/python bench/tool_list_bench.py [--package DIR --name before] ...
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from teamvault_mcp.localvault import LocalVault

ROOT = Path(__file__).resolve().parent.parent
GOAL_BYTES = 12_000
GOAL_PER_NEW_TOOL = 650
#: The 18 tools issue 15 counted; every other tool is one added later.
FIRST_18 = {"whoami", "list_projects", "list_notes", "search_notes", "find_notes", "note_outline", "read_note"}
FIRST_18 |= {"read_notes", "read_frontmatter", "list_note_versions", "read_note_version", "diff_note_versions"}
FIRST_18 |= {"restore_note_version", "write_note", "edit_note", "update_frontmatter", "move_note", "delete_note"}
#: The issue's figures: 19,758 bytes for ours was 2.2× mcp-obsidian and 2.4× the MCP filesystem server.
PEERS = {"mcp-obsidian": round(19_758 / 2.2), "MCP filesystem server": round(19_758 / 2.4)}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def listed_tools(package: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """``tools/list`` of the ``teamvault_mcp`` under ``package``, spoken to over stdio."""
    with tempfile.TemporaryDirectory() as empty:
        child_env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package), "TEAM_VAULT_CACHE_DIR": "off", **env}
        child = subprocess.Popen(
            [sys.executable, "-m", "teamvault_mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=empty,  # not the source tree: ``-m`` would import from the current directory first
            env=child_env,
        )
        assert child.stdin is not None and child.stdout is not None
        messages = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
        messages.append({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        child.stdin.write("".join(json.dumps(message) + "\n" for message in messages).encode())
        child.stdin.flush()
        try:
            for line in child.stdout:
                answer = json.loads(line)
                if answer.get("id") == 1:
                    return list(answer["result"]["tools"])
        finally:
            child.stdin.close()
            child.wait(timeout=30)
            child.stdout.close()
    raise RuntimeError(f"no tools/list answer from {package}")


def visible(tool: dict[str, Any]) -> int:
    return len((tool["name"] + tool.get("description", "") + json.dumps(tool["inputSchema"])).encode())


def total(tool: dict[str, Any]) -> int:
    return len(json.dumps(tool).encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", action="append", default=[], help="a directory holding teamvault_mcp")
    parser.add_argument("--name", action="append", default=[], help="what to call each --package, in order")
    args = parser.parse_args()
    names = args.name + args.package[len(args.name) :]  # a package without a name is called by its path
    packages = [(name, Path(path)) for name, path in zip(names[: len(args.package)], args.package, strict=True)]
    packages.append(("now", ROOT))
    with tempfile.TemporaryDirectory() as data, LocalVault(Path(data)) as vault:
        base = {"TEAM_VAULT_URL": vault.url, "TEAM_VAULT_API_KEY": vault.api_key}
        base["TEAM_VAULT_PROJECT_ID"] = vault.project_id
        configurations = {
            "default": base,
            "single": {**base, "TEAM_VAULT_SINGLE_PROJECT": "1"},
            "read-only": {**base, "TEAM_VAULT_READ_ONLY": "1"},
        }
        found = {
            (name, configuration): listed_tools(package, env)
            for name, package in packages
            for configuration, env in configurations.items()
        }
    names = [name for name, _ in packages]
    print("Model-visible bytes per tool (name + description + inputSchema), default configuration:")
    tools = list(dict.fromkeys(tool["name"] for name in names for tool in found[(name, "default")]))
    print(f"{'tool':24}" + "".join(f"{name:>10}" for name in names))
    for tool_name in tools:
        row = []
        for name in names:
            tool = next((tool for tool in found[(name, "default")] if tool["name"] == tool_name), None)
            row.append(f"{visible(tool):>10,}" if tool else f"{'–':>10}")
        print(f"{tool_name:24}" + "".join(row))
    print()
    print(f"{'all tools':24}{'tools':>6}{'visible':>10}{'total':>10}{'× goal':>8}  (goal: visible ≤ {GOAL_BYTES:,})")
    for name in names:
        for configuration in configurations:
            listed = found[(name, configuration)]
            shown = sum(visible(tool) for tool in listed)
            print(
                f"{name + ' ' + configuration:24}{len(listed):>6}{shown:>10,}"
                f"{sum(total(tool) for tool in listed):>10,}{shown / GOAL_BYTES:>8.2f}"
            )
    listed = found[("now", "default")]
    first = sum(visible(tool) for tool in listed if tool["name"] in FIRST_18)
    later = [visible(tool) for tool in listed if tool["name"] not in FIRST_18]
    print(
        f"now default, the issue's 18 tools: {first:,} (goal ≤ {GOAL_BYTES:,}); the {len(later)} added later: "
        f"{sum(later) / max(len(later), 1):,.0f} on average (goal ≤ {GOAL_PER_NEW_TOOL}), "
        f"the largest {max(later, default=0):,}"
    )
    now = sum(visible(tool) for tool in listed)
    for peer, peer_bytes in PEERS.items():
        print(f"{peer:24}{'':>6}{peer_bytes:>10,}   (issue 15's figure); now is {now / peer_bytes:.2f}× it")


if __name__ == "__main__":
    main()
