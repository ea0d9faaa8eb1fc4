"""Writers racing for one note: how many acknowledged changes survive, counted, not timed.

Sixteen ``teamvault-mcp`` processes over stdio share one local vault, which runs
without its conditional writes (as today's Team Vault server: the client checks the
version history after each write) and then with them (If-Match, 412). Scenarios:

1. sixteen agents append a line under one heading at the same moment (``edit_note``, no hash);
2. forty rounds of two agents editing different lines with one ``expectedHash``;
3. sixteen agents following the README's recipe: read, edit with ``expectedHash``, read again on a conflict;
4. what a write costs when nobody races: requests per ``edit_note``.

``--package DIR`` runs the agents on the ``teamvault_mcp`` package under DIR, for example the one
before issue 13 (``git archive 72a7c79 teamvault_mcp | tar -x -C /tmp/before``), against the same vault.

With ``--layouts 16x1,1x16,2x8,4x4`` it runs scenario 3 instead for each layout of processes × agents (an
agent on a process shares it with the others there: they are its host's parallel calls), counting
acknowledged, lost, extra copies, conflicts, extra rounds and wall time.

    .venv/bin/python bench/races_bench.py [--trials 5] [--package DIR] [--appenders-only] [--layouts …]
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.agents import Agent, call_all, initialize
from support.env import agent_env
from support.seeding import put, text

from teamvault_mcp.localvault import LocalVault

AGENTS = 16
#: Seconds an agent may take to answer: a storm of sixteen on a loaded machine takes long.
PATIENCE = 300.0


def entries(text: str) -> collections.Counter[str]:
    return collections.Counter(line for line in text.splitlines() if line.startswith("- entry"))


def appenders(vault: LocalVault, agents: list[Agent], trials: int) -> str:
    acknowledged = lost = failed = doubled = 0
    for trial in range(trials):
        path = f"append-{trial}.md"
        put(vault, path, "# Team log\n\n## Log\n\n## Done\n")
        calls = [
            ("edit_note", {"path": path, "edits": [{"oldText": "## Log\n", "newText": f"## Log\n- entry {n}\n"}]})
            for n in range(len(agents))
        ]
        results = call_all(agents, calls)
        final = entries(text(vault, path))
        for number, result in enumerate(results):
            if result.get("isError"):
                failed += 1
            else:
                acknowledged += 1
                lost += final[f"- entry {number}"] == 0
        doubled += sum(count - 1 for count in final.values() if count > 1)
    total = trials * len(agents)
    return f"{acknowledged}/{total} acknowledged, {lost} of them missing, {failed} failed, {doubled} doubled lines"


def pairs(vault: LocalVault, agents: list[Agent], rounds: int) -> str:
    both = lost = neither = 0
    for number in range(rounds):
        expected = put(vault, "pair.md", f"# Round {number}\na: open\nb: open\n")
        calls = [
            (
                "edit_note",
                {
                    "path": "pair.md",
                    "edits": [{"oldText": f"{side}: open", "newText": f"{side}: done"}],
                    "expectedHash": expected,
                },
            )
            for side in ("a", "b")
        ]
        won = [not result.get("isError") for result in call_all(agents[:2], calls)]
        final = text(vault, "pair.md")
        both += all(won)
        neither += not any(won)
        lost += sum(
            1 for side, success in zip(("a", "b"), won, strict=True) if success and f"{side}: done" not in final
        )
    return f"{rounds} rounds: two successes {both} times, a success missing {lost} times, no success {neither} times"


def read_hash(read: dict[str, Any]) -> str:
    """The contentHash a read gives: its text's first line (``[contentHash: …]``), or, from a tree before
    issue 25, its structured content."""
    found = re.match(r"\[contentHash: ([0-9a-f]+)\]", read["content"][0]["text"])
    return found.group(1) if found else str(read["structuredContent"]["contentHash"])


def recipe(vault: LocalVault, agents: list[Agent], trials: int) -> str:
    """The README's recipe, every agent at once: read, edit_note with that expectedHash, read again on a conflict."""
    acknowledged = lost = extra = calls_made = conflicts = rounds = 0
    started = time.perf_counter()
    for trial in range(trials):
        path = f"recipe-{trial}-{time.monotonic_ns()}.md"
        put(vault, path, "# Log\n")
        pending = dict(enumerate(agents))
        done: list[int] = []
        for round_number in range(4 * len(agents)):
            if not pending:
                break
            rounds += round_number > 0
            reads = call_all(list(pending.values()), [("read_note", {"path": path})] * len(pending))
            calls = [
                (
                    "edit_note",
                    {
                        "path": path,
                        "edits": [{"oldText": "# Log\n", "newText": f"# Log\n- entry {number}\n"}],
                        "expectedHash": read_hash(read),
                    },
                )
                for number, read in zip(pending, reads, strict=True)
            ]
            calls_made += 2 * len(calls)
            for number, result in zip(list(pending), call_all(list(pending.values()), calls), strict=True):
                if not result.get("isError"):
                    del pending[number]
                    done.append(number)
                else:
                    conflicts += 1
        final = entries(text(vault, path))
        acknowledged += len(done)
        lost += sum(1 for number in done if final[f"- entry {number}"] == 0)
        extra += sum(final.values()) - len(set(final))
    total = trials * len(agents)
    seconds = time.perf_counter() - started
    return (
        f"{acknowledged}/{total} acknowledged, {lost} of them missing, {extra} extra copies of a line, "
        f"{conflicts} conflicts, {rounds} extra rounds, {calls_made} calls, {seconds:.1f} s"
    )


def cost(vault: LocalVault, agents: list[Agent]) -> str:
    put(vault, "cost.md", "# Tasks\n- [ ] one\n")
    before = len(vault.faults.seen)
    call_all(agents[:1], [("edit_note", {"path": "cost.md", "edits": [{"oldText": "one", "newText": "two"}]})])
    methods = [method for method, _ in vault.faults.seen[before:]]
    return f"{len(methods)} requests per edit_note ({' '.join(methods)})"


def layout(text: str) -> tuple[int, int]:
    """``2x8``: two processes, eight agents (parallel calls) in each."""
    processes, _, per_process = text.partition("x")
    return int(processes), int(per_process)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--package", help="a directory holding the teamvault_mcp package to run the agents on")
    parser.add_argument(
        "--appenders-only",
        action="store_true",
        help="scenario 1 alone, without conditional writes, a result line per trial (rare losses need many trials)",
    )
    parser.add_argument(
        "--layouts",
        help="instead of the four scenarios: the recipe storm (scenario 3) for each of these processes×agents "
        "layouts, e.g. 16x1,1x16,2x8,4x4, on both kinds of server",
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory, LocalVault(Path(directory) / "vault") as vault:
        env = agent_env(vault, directory, options.package, PREFETCH="off")
        wanted = [layout(text) for text in options.layouts.split(",")] if options.layouts else [(AGENTS, 1)]
        count = max(processes for processes, _ in wanted)
        hosts = [Agent(env, options.package, patience=PATIENCE) for _ in range(count)]
        initialize(hosts, "bench")
        print(f"{len(hosts)} processes on {options.package or 'this checkout'}")
        trials = options.trials
        try:
            if options.layouts:
                for conditional in (False, True):
                    vault.state.conditional_writes = conditional
                    print(f"\nthe vault {'with' if conditional else 'without'} conditional writes")
                    for processes, per_process in wanted:
                        agents = [hosts[number % processes] for number in range(processes * per_process)]
                        print(
                            f"  {processes}x{per_process}, {trials} trials: {recipe(vault, agents, trials)}", flush=True
                        )
                return
            agents = hosts
            if options.appenders_only:
                vault.state.conditional_writes = False
                for trial in range(trials):
                    print(f"  trial {trial + 1}: {appenders(vault, agents, 1)}", flush=True)
                return
            for conditional in (False, True):
                vault.state.conditional_writes = conditional
                kind = (
                    "with conditional writes (If-Match)"
                    if conditional
                    else "without conditional writes (today's server)"
                )
                print(f"\nthe vault {kind}")
                print(f"  1. {AGENTS} appenders at once, {trials} trials: {appenders(vault, agents, trials)}")
                print(f"  2. two agents, one expectedHash: {pairs(vault, agents, options.rounds)}")
                print(f"  3. the README's recipe, {AGENTS} agents, {trials} trials: {recipe(vault, agents, trials)}")
                print(f"  4. no race: {cost(vault, agents)}")
        finally:
            for host in hosts:
                host.close()


if __name__ == "__main__":
    main()
