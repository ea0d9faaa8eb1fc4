"""What an agent on a text-only host reads for everyday tasks: calls and text bytes per task, before and after.

A generated vault of ~300 notes (front matter on every note, wikilinks between them, a few long
notes of 40-60 KB with headings) is copied fresh for each package; each package runs as a real
stdio child (``--local`` on the copy, from an empty directory so the source tree is used only for
"now"). Every task is scripted as an agent would do it reading the text content only (never
``structuredContent``): what the next call needs is taken from the text of the answers before it.
"text" is the bytes of every text block of every result.

1. find a phrase and read its section: ``search_notes(mode="phrase")``, then ``read_note(section=…)``
   with the section the hit line shows (before: its breadcrumb split at " > ", as the old text showed it);
2. change a line in a long note with a preview: find the line, ``edit_note`` dry run, apply it (now with
   the expectedHash the dry run shows; before the text gave none);
3. list a folder one level: ``list_notes(prefix=, depth=1)``;
4. read five notes: ``read_notes``;
5. rename a linked note: before, ``move_note``, a search for the links and one ``edit_note`` per linking
   note (the old move_note left links alone); now one ``move_note``, which rewrites the links itself
   (``updateLinks``, on by default), as the instructions say;
6. a query with a typo: ``search_notes("ledgr rotation")``; before it found nothing, so a second search
   with the word spelled right.

Goal (issue 15): total text ≤ 0.75× before, and no task worse.

    .venv/bin/python bench/answers_bench.py --package DIR   (DIR holds the old teamvault_mcp, e.g.
    mkdir DIR && git archive <commit> teamvault_mcp | tar -x -C DIR)
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

ROOT = Path(__file__).resolve().parent.parent
GOAL = 0.75
WORDS = [
    "budget",
    "launch",
    "review",
    "backlog",
    "customer",
    "ticket",
    "release",
    "schedule",
    "vendor",
    "contract",
    "design",
    "sprint",
    "metrics",
    "incident",
    "report",
    "roadmap",
    "hiring",
    "onboarding",
    "training",
    "audit",
    "policy",
    "service",
    "deploy",
    "staging",
    "capacity",
]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def sentence(rng: random.Random, words: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def long_note(rng: random.Random, title: str, target: int) -> str:
    parts = [f"---\nowner: Ada\nstatus: active\ntags: [ops]\n---\n# {title}\n\n"]
    chapter = 0
    while sum(map(len, parts)) < target:
        chapter += 1
        parts.append(f"## Chapter {chapter}\n\n")
        for section in range(1, 4):
            parts.append(f"### Part {chapter}.{section}\n\n")
            parts.extend(sentence(rng, 14) + "\n\n" for _ in range(6))
    return "".join(parts)


def generated_vault(rng: random.Random) -> dict[str, str]:
    """~300 notes: people, projects in folders, meetings, and ops runbooks (three of them long)."""
    notes: dict[str, str] = {}
    people = [f"person-{n:02d}" for n in range(40)]
    for name in people:
        notes[f"people/{name}.md"] = f"---\nrole: engineer\nteam: core\n---\n# {name}\n\n{sentence(rng)}\n"
    for area in ("aurora", "atlas", "borealis", "cygnus"):
        for n in range(30):
            folder = f"projects/{area}/" + ("design/" if n % 3 == 0 else "")
            notes[f"{folder}{area}-{n:02d}.md"] = (
                f"---\nproject: {area}\nstatus: open\n---\n# {area} {n}\n\nOwner [[{rng.choice(people)}]]. "
                + "".join(sentence(rng) + " " for _ in range(8))
                + "\n"
            )
    for n in range(100):
        notes[f"meetings/2026-{1 + n % 12:02d}-{1 + n % 28:02d}-{n}.md"] = (
            f"---\ndate: 2026-01-01\nattendees: [{rng.choice(people)}]\n---\n# Meeting {n}\n\n"
            + "".join(f"- {sentence(rng, 8)}\n" for _ in range(10))
        )
    notes["projects/aurora.md"] = "---\nproject: aurora\n---\n# Aurora\n\nThe aurora project overview.\n"
    for n in range(3):  # notes linking to projects/aurora.md, for the rename
        notes[f"meetings/aurora-sync-{n}.md"] = f"# Aurora sync {n}\n\nSee [[aurora]] for the plan.\n"
    runbook = long_note(rng, "Operations Runbook", 60_000)
    runbook = runbook.replace(
        "### Part 3.2\n\n", "### Part 3.2\n\nThe ledger rotation happens every quarter after the failover drill.\n\n"
    )
    notes["ops/runbook.md"] = runbook
    notes["ops/handbook.md"] = long_note(rng, "Handbook", 45_000).replace(
        "### Part 2.1\n\n", "### Part 2.1\n\nRetention window: 30 days.\n\n"
    )
    notes["ops/archive-notes.md"] = long_note(rng, "Archive", 40_000)
    return notes


class Host:
    """A stdio child of one package, and the text of every result it sent."""

    def __init__(self, package: Path, data: Path, workdir: Path) -> None:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package), "TEAM_VAULT_CACHE_DIR": "off"}
        self.child = subprocess.Popen(
            [sys.executable, "-m", "teamvault_mcp", "--local", str(data)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=workdir,  # not the source tree: ``-m`` imports from the current directory first
            env=env,
        )
        self.calls = 0
        self.text_bytes = 0
        self._id = 0
        self._send(INITIALIZE)
        self._receive()
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.child.stdin is not None
        self.child.stdin.write(json.dumps(message).encode() + b"\n")
        self.child.stdin.flush()

    def _receive(self) -> dict[str, Any]:
        assert self.child.stdout is not None
        return dict(json.loads(self.child.stdout.readline()))

    def call(self, tool: str, **arguments: Any) -> str:
        """The joined text blocks of a call (what a text-only host shows); fails on an error result."""
        self._id += 1
        self._send(
            {"jsonrpc": "2.0", "id": self._id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        )
        result = self._receive()["result"]
        text = "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
        self.calls += 1
        self.text_bytes += len(text.encode())
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {text[:500]}")
        return text

    def close(self) -> None:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.close()
        self.child.wait(timeout=30)
        self.child.stdout.close()


def section_of(hit_line: str) -> Any:
    """The section a search hit line names: now ``section="A > B"`` (or a list), before ``path:line · A > B · …``."""
    shown = re.search(r'section=("(?:[^"\\]|\\.)*"|\[.*?\]) · ', hit_line)
    if shown:
        return json.loads(shown.group(1))
    return hit_line.split(" · ")[1].split(" > ")  # the old text: a breadcrumb the old section took as a list


def first_hit(text: str) -> tuple[str, str]:
    line = next(line for line in text.splitlines() if re.match(r"\S+\.md:\d+ ", line))
    return line.split(":", 1)[0], line


def find_and_read_section(host: Host) -> None:
    path, line = first_hit(host.call("search_notes", query="ledger rotation happens", mode="phrase"))
    host.call("read_note", path=path, section=section_of(line))


def change_a_line_with_a_preview(host: Host) -> None:
    old, new = "Retention window: 30 days.", "Retention window: 45 days."
    path, _ = first_hit(host.call("search_notes", query=old, mode="phrase"))
    preview = host.call("edit_note", path=path, edits=[{"oldText": old, "newText": new}], dryRun=True)
    shown = re.search(r'expectedHash="([0-9a-f]{8,64})"', preview)
    hashed = {"expectedHash": shown.group(1)} if shown else {}  # before, the text gave no hash to pass
    host.call("edit_note", path=path, edits=[{"oldText": old, "newText": new}], **hashed)


def list_a_folder(host: Host) -> None:
    host.call("list_notes", prefix="projects/", depth=1)


def read_five_notes(host: Host) -> None:
    host.call("read_notes", paths=[f"projects/aurora/aurora-{n:02d}.md" for n in (1, 2, 4, 5, 7)])


def rename_a_linked_note(host: Host) -> None:
    moved = host.call("move_note", path="projects/aurora.md", newPath="projects/aurora-overview.md")
    if "Links: " in moved:  # now: the move rewrote the links to the note, and says so
        return
    found = host.call("search_notes", query="[[aurora]]", mode="phrase")
    linking = sorted({line.split(":", 1)[0] for line in found.splitlines() if re.match(r"\S+\.md:\d+ ", line)})
    for path in linking:
        host.call("edit_note", path=path, edits=[{"oldText": "[[aurora]]", "newText": "[[aurora-overview]]"}])


def query_with_a_typo(host: Host) -> None:
    text = host.call("search_notes", query="ledgr rotation")
    if not re.search(r"\S+\.md:\d+ ", text):  # nothing found: the agent spells it again
        host.call("search_notes", query="ledger rotation")


TASKS: list[tuple[str, Callable[[Host], None]]] = [
    ("find a phrase, read its section", find_and_read_section),
    ("change a line with a preview", change_a_line_with_a_preview),
    ("list a folder one level", list_a_folder),
    ("read five notes", read_five_notes),
    ("rename a linked note", rename_a_linked_note),
    ("a query with a typo", query_with_a_typo),
]


def seeded_data(directory: Path) -> Path:
    data = directory / "seed"
    with LocalVault(data) as vault:
        store, project = vault.store, vault.project_id
        with store.write() as db:
            for path, text in generated_vault(random.Random(15)).items():
                store.create(Change(db, project, store.owner_of(project)), path, text.encode(), "text/markdown")
    return data


def run(package: Path, seed: Path, work: Path) -> dict[str, tuple[int, int]]:
    figures = {}
    for name, task in TASKS:  # each task on a fresh copy: no task sees another's writes
        data = work / f"data-{len(figures)}"
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(seed, data)
        host = Host(package, data, work)
        try:
            task(host)
        finally:
            host.close()
        figures[name] = (host.calls, host.text_bytes)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", required=True, help="a directory holding the old teamvault_mcp")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        seed = seeded_data(work)
        before = run(Path(args.package), seed, work)
        now = run(ROOT, seed, work)
    print(f"{'task':34}{'calls before':>13}{'now':>5}{'text before':>13}{'now':>9}{'ratio':>7}")
    for name, _ in TASKS:
        (calls_before, bytes_before), (calls_now, bytes_now) = before[name], now[name]
        worse = "  WORSE" if bytes_now > bytes_before or calls_now > calls_before else ""
        print(
            f"{name:34}{calls_before:>13}{calls_now:>5}{bytes_before:>13,}{bytes_now:>9,}"
            f"{bytes_now / bytes_before:>7.2f}{worse}"
        )
    total_before = sum(bytes for _, bytes in before.values())
    total_now = sum(bytes for _, bytes in now.values())
    calls = (sum(calls for calls, _ in before.values()), sum(calls for calls, _ in now.values()))
    ratio = total_now / total_before
    print(f"{'total':34}{calls[0]:>13}{calls[1]:>5}{total_before:>13,}{total_now:>9,}{ratio:>7.2f}")
    print(f"goal: total text ≤ {GOAL}× before, no task worse: {'met' if ratio <= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
