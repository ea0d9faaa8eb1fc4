"""The link, tag, property, task and change tools on a 5,000-note vault, over stdio: cold, then warm.

A local vault (in this process, on loopback) is seeded with the generated vault of
``links_bench.py``: 5,000 notes of ~4 KB with front matter (status, due, tags, a link),
wikilinks, Markdown links, embeds, inline tags, code and checkbox tasks; 30 notes link to
``people/person-0.md`` in every syntax. ``teamvault-mcp`` runs as a real stdio child with a
fresh cache directory. Measured from the client:

- first, a search_notes: it downloads every note (and the resident memory is taken then);
- cold: the first call of each tool: the notes are at hand, and each tool parses the part of
  them it needs for the first time (links, tags, tasks, front matter);
- warm: the median of 20 calls of each, the vault unchanged;
- one note changed by a colleague: the next call of each (that note is read and parsed again);
- the requests each warm call sends (counted at the vault), and the size of each answer's text.

Then the rename (``move_note`` with ``updateLinks``): ``people/person-0.md`` becomes
``people/ada-lovelace.md`` as an agent would do it, a dry run and the move; checked
afterwards, from the vault's own store: every note's bytes are as before except the links
that resolved to the note (renamed back, each changed note is its old text again), the
backlinks are as many as before, no link broke, and links in code are as they were.

Goals (issue 17): note_links, list_tags, query_notes, list_tasks each <= 200 ms warm;
recent_changes one request; the rename task in <= 2 calls and <= 4 KB of text (by hand:
33 calls and 38.6 KB), with every link still resolving and no other byte changed.

    .venv/bin/python bench/graph_bench.py [--notes 5000] [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from links_bench import vault as generated_vault
from stdio_client import StdioHost

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("note_links", {"path": "people/person-0.md"}),
    ("list_tags", {}),
    ("query_notes", {"where": {"status": "active", "due": {"gte": "2024-06-01"}}, "sort": "-due", "limit": 20}),
    ("list_tasks", {"limit": 50}),
    ("broken_links", {"prefix": "people/", "limit": 20}),
    ("recent_changes", {"since": "1h", "limit": 20}),
]


def seed(vault: LocalVault, notes: dict[str, str]) -> None:
    owner = vault.store.owner_of(vault.project_id)
    with vault.store.write() as db:
        change = Change(db, vault.project_id, owner)
        for path, text in notes.items():
            vault.store.create(change, path, text.encode(), None)


def colleague_edits(vault: LocalVault, path: str, text: str) -> None:
    store, project = vault.store, vault.project_id
    colleague = store.add_user(f"colleague-{time.time_ns()}@x", "Colleague")
    file = store.list_files(project, path=path, prefix=None, include_deleted=False)[0]
    with store.write() as db:
        store.replace(Change(db, project, colleague), file.id, text.encode())


def call(host: StdioHost, vault: LocalVault, tool: str, arguments: dict[str, Any]) -> tuple[float, int, int]:
    """Seconds, requests the vault saw, and characters of the answer's text."""
    seen = len(vault.faults.seen)
    started = time.perf_counter()
    answer = host.call_tool(tool, arguments)
    elapsed = time.perf_counter() - started
    text = answer["result"]["content"][0]["text"]
    return elapsed, len(vault.faults.seen) - seen, len(text)


def resident_mib(pid: int) -> float:
    """The process's resident set (Linux), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    print(f"command: {sys.executable} {' '.join(sys.argv)}   (cores: {os.cpu_count()})")
    notes = generated_vault(options.notes)
    with tempfile.TemporaryDirectory() as work, LocalVault(Path(work) / "vault") as vault:
        started = time.perf_counter()
        seed(vault, notes)
        print(f"{len(notes):,} notes seeded in {time.perf_counter() - started:.1f} s")
        env = {
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": vault.project_id,
            "TEAM_VAULT_CACHE_DIR": str(Path(work) / "cache"),
            "TEAM_VAULT_CALL_BUDGET": "600",
        }
        host = StdioHost([sys.executable, "-m", "teamvault_mcp"], env)
        host.initialize()
        search = call(host, vault, "search_notes", {"query": "budget review"})
        searched_rss = resident_mib(host.process.pid)
        cold = {tool: call(host, vault, tool, arguments) for tool, arguments in CALLS}
        warm: dict[str, list[tuple[float, int, int]]] = {tool: [] for tool, _ in CALLS}
        for _ in range(options.runs):
            for tool, arguments in CALLS:
                warm[tool].append(call(host, vault, tool, arguments))
        changed = "projects/note-1.md"
        colleague_edits(vault, changed, notes[changed] + "\n- [ ] a new task, #new-tag, [[person-0]]\n")
        after_edit = {tool: call(host, vault, tool, arguments) for tool, arguments in CALLS}
        rss = resident_mib(host.process.pid)
        rename = renamed(host, vault)
        host.close()
    print(
        f"first search_notes (downloads every note): {search[0]:.1f} s, {search[1]:,} requests; the server's resident "
        f"memory then: {searched_rss:.0f} MiB"
    )
    print(f"\n{'tool':<15} {'cold':>9} {'warm (median)':>14} {'after 1 edit':>13} {'requests':>9} {'text':>9}")
    for tool, _ in CALLS:
        median = statistics.median(run[0] for run in warm[tool])
        requests = max(run[1] for run in warm[tool])
        print(
            f"{tool:<15} {cold[tool][0] * 1000:7.0f} ms {median * 1000:11.1f} ms {after_edit[tool][0] * 1000:10.1f} ms "
            f"{requests:>9} {warm[tool][0][2]:>8,}c"
        )
    print(f"the server's resident memory after all of it: {rss:.0f} MiB (after the search alone: {searched_rss:.0f})")
    print("\nrename people/person-0.md → people/ada-lovelace.md (links updated):")
    for line in rename:
        print(f"  {line}")


def store_texts(vault: LocalVault) -> dict[str, str]:
    """Every live note's text, by file id, straight from the vault's store."""
    store, project = vault.store, vault.project_id
    files = store.list_files(project, path=None, prefix=None, include_deleted=False)
    return {file.id: store.content(project, file.id)[1].decode() for file in files}


#: A wikilink, an embed or a Markdown link: spans a rename may change (a plain regex, not the server's parser).
LINKISH = re.compile(r"!?\[\[[^\]]*\]\]|\[[^\]]*\]\([^)]*\)")


def links_alone_changed(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` with only some links changed, each from naming person-0 to ada-lovelace."""
    if LINKISH.split(old) != LINKISH.split(new):
        return False  # some byte outside the links changed
    pairs = zip(LINKISH.findall(old), LINKISH.findall(new), strict=True)
    return all(a == b or ("person-0" in a and "ada-lovelace" in b) for a, b in pairs)


def renamed(host: StdioHost, vault: LocalVault) -> list[str]:
    """The scripted rename task, measured and checked: a dry run, then the move."""
    old, new = "people/person-0.md", "people/ada-lovelace.md"
    before = store_texts(vault)
    backlinks = host.call_tool("note_links", {"path": old, "direction": "in"})["result"]["structuredContent"]["in"]
    broken = host.call_tool("broken_links", {})["result"]["structuredContent"]["broken"]
    steps = []
    for arguments in ({"path": old, "newPath": new, "dryRun": True}, {"path": old, "newPath": new}):
        started = time.perf_counter()
        answer = host.call_tool("move_note", arguments)["result"]
        steps.append((time.perf_counter() - started, answer))
    after = store_texts(vault)
    changed = [file_id for file_id in before if before[file_id] != after[file_id]]
    only_links = all(links_alone_changed(before[file_id], after[file_id]) for file_id in changed)
    in_code = sum(text.count("`[[person-0]]`") for text in after.values())
    result = steps[1][1]["structuredContent"]
    links = sum(entry["links"] for entry in result["links"]["updated"])
    backlinks_after = host.call_tool("note_links", {"path": new, "direction": "in"})["result"]["structuredContent"]
    broken_after = host.call_tool("broken_links", {})["result"]["structuredContent"]["broken"]
    texts = [len(step[1]["content"][0]["text"].encode()) for step in steps]
    return [
        f"dry run: {steps[0][0] * 1000:.0f} ms, {texts[0]:,} bytes of text; move_note: {steps[1][0] * 1000:.0f} ms, "
        f"{texts[1]:,} bytes",
        f"the task: 2 calls, {sum(texts):,} bytes (the move alone: 1 call, {texts[1]:,} bytes); by hand: 33 calls, "
        "38.6 KB",
        f"{links} links in {len(result['links']['updated'])} notes rewritten, "
        f"{len(result['links']['notUpdated'])} not; notes whose bytes changed: {len(changed)} "
        f"(only links to the note changed in them: {only_links})",
        f"backlinks before {backlinks}, after {backlinks_after['in']}; broken links before {broken}, after "
        f"{broken_after}; links in code left as written: {in_code}",
    ]


if __name__ == "__main__":
    main()
