"""Issue 30's everyday tasks, done as a careful text-only agent would: calls, text bytes and success per task.

A small team vault on an embedded local vault (projects, meetings with subsections, people, decisions with a
status, tasks for several people, two notes named ``Retro.md``, and changes by colleagues: Bob creates a note and
deletes one of ours, Carol appends to one), served over stdio by a ``teamvault-mcp`` child. Each task is the
calls an agent makes (reading only the text of each answer), and a check of the outcome — in the vault itself or
in what the text tells the agent — that is a trap when it fails: a wrong result with no warning.

``--package DIR`` runs the server on the ``teamvault_mcp`` package under DIR, for example the tree before
issue 30 (``git archive 09d6915 teamvault_mcp | tar -x -C DIR``): its answers to the same calls.

    .venv/bin/python bench/workflows_bench.py [--package DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.agents import Agent, call_all, initialize
from support.env import agent_env
from support.seeding import text as text_of

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

NOTES = {
    "projects/falcon.md": "---\nstatus: active\n---\n# Falcon\nFalcon is our product. Roadmap: [[Falcon roadmap]].\n",
    "projects/Falcon roadmap.md": "# Falcon roadmap\n- Falcon v2 in May\n",
    "projects/launch.md": "# Launch\nWe launch Falcon in May ([[Falcon]], [[Falcon roadmap|the plan]]).\n",
    "meetings/planning.md": (
        "# Planning\n## Next steps\n- [ ] send the deck @bob\n### Parking lot\n- a bigger office\n## Notes\nshort.\n"
    ),
    "meetings/Retro.md": "# Retro\n- went well\n",
    "projects/Retro.md": "# Retro of the project\n",
    "team/log.md": "# Log\nSee [[Retro]].\n- [ ] Bob: order chairs\n- [ ] Carol: book the room\n",
    "people/grace.md": "# Grace\n- [ ] review [[Bob Lee]]'s draft\n",
    "people/Bob Lee.md": "# Bob Lee\n- [ ] @carol send the invoice\n",
    "decisions/pricing-v1.md": (
        "---\nstatus: superseded\ntags: [pricing, decision]\n---\n# Pricing decision\n"
        "Decision: pricing is per seat, $10 a month.\n"
    ),
    "decisions/pricing-v2.md": (
        "---\nstatus: accepted\ntags: [pricing, decision]\n---\n# Pricing decision\n"
        "Decision: pricing is per team, $50 a month.\n"
    ),
    "old.md": "# Old\n",
    **{f"tasks/t{n}.md": f"# T{n}\n- [ ] chore {n} for @dana\n- [x] done {n}\n" for n in range(30)},
}


def seed(vault: LocalVault) -> None:
    store, project = vault.store, vault.project_id
    you = store.owner_of(project)
    bob, carol = store.add_user("bob@x", "Bob"), store.add_user("carol@x", "Carol")
    with store.write() as db:
        for path, text in NOTES.items():
            store.create(Change(db, project, you), path, text.encode(), None)
    with store.write() as db:
        store.create(Change(db, project, bob), "ideas.md", b"# Ideas\n- a bot\n", None)
    (falcon,) = store.list_files(project, path="projects/falcon.md", prefix=None, include_deleted=False)
    with store.write() as db:
        store.replace(
            Change(db, project, carol), falcon.id, (NOTES["projects/falcon.md"] + "- Carol: ship it\n").encode()
        )
    (old,) = store.list_files(project, path="old.md", prefix=None, include_deleted=False)
    with store.write() as db:
        store.delete(Change(db, project, bob), old.id)


#: A task: its calls (tool, arguments), and the check of the outcome (the vault, and every answer's text).
Task = tuple[str, list[tuple[str, dict[str, Any]]], Callable[[LocalVault, list[str]], bool]]

#: What an agent does on a server that refuses a task's argument (one before issue 30): the way it had then.
OLD_WAYS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "edit_section": [
        (
            "edit_section",
            {
                "path": "meetings/planning.md",
                "section": ["Planning", "Next steps"],
                "content": "- [ ] book a room",
                "mode": "append",
            },
        ),
    ],
    "replace_in_notes": [
        ("replace_in_notes", {"find": "Falcon", "replace": "Osprey", "prefix": "projects/"}),
        ("replace_in_notes", {"find": "Falcon", "replace": "Osprey", "prefix": "projects/", "dryRun": False}),
    ],
    "list_tasks": [("list_tasks", {"status": "open"})],
    "diff_note_versions": [
        ("list_note_versions", {"path": "projects/falcon.md"}),
        ("diff_note_versions", {"path": "projects/falcon.md", "from": 1}),
    ],
}


def refused(text: str) -> bool:
    """An answer that refuses an argument this server does not know (or a value of it)."""
    return text.startswith("Unknown argument") or "must be one of" in text or "is not one of" in text


TASKS: list[Task] = [
    (
        'add an action item under "Next steps" (it has a subsection)',
        [
            (
                "edit_section",
                {
                    "path": "meetings/planning.md",
                    "section": "Next steps",
                    "content": "- [ ] book a room",
                    "mode": "append_body",
                },
            )
        ],
        lambda v, t: "@bob\n- [ ] book a room\n### Parking lot" in text_of(v, "meetings/planning.md"),
    ),
    (
        "rename the product Falcon to Osprey in projects/ prose, links kept working",
        [
            ("replace_in_notes", {"find": "Falcon", "replace": "Osprey", "prefix": "projects/", "links": "keep"}),
            (
                "replace_in_notes",
                {"find": "Falcon", "replace": "Osprey", "prefix": "projects/", "links": "keep", "dryRun": False},
            ),
        ],
        lambda v, t: (
            "[[Falcon roadmap]]" in text_of(v, "projects/falcon.md")
            and "[[Falcon]]" in text_of(v, "projects/launch.md")
            and "We launch Osprey" in text_of(v, "projects/launch.md")
        ),
    ),
    (
        "what changed recently, and by whom",
        [("recent_changes", {"since": "1d"})],
        lambda v, t: "Carol" in t[0] and "created  ideas.md  by Bob" in t[0] and "old.md  by you" not in t[0],
    ),
    (
        "where [[Retro]] in team/log.md points",
        [("note_links", {"path": "team/log.md", "direction": "out"})],
        lambda v, t: "ambiguous" in t[0] and "projects/Retro.md" in t[0] and "meetings/Retro.md" in t[0],
    ),
    (
        "Bob's open tasks",
        [("list_tasks", {"status": "open", "assignee": "bob"})],
        lambda v, t: (
            all(s in t[0] for s in ("send the deck", "order chairs", "review [[Bob Lee]]"))
            and "chore" not in t[0]
            and "invoice" not in t[0]
        ),
    ),
    (
        'notes whose "stauts" is blocked (a typo)',
        [("query_notes", {"where": {"stauts": "blocked"}})],
        lambda v, t: '"status"' in t[0],
    ),
    (
        "find Grace's note, typed grcae",
        [("find_notes", {"query": "grcae"})],
        lambda v, t: "people/grace.md" in t[0].splitlines()[1] if len(t[0].splitlines()) > 1 else False,
    ),
    (
        "what we decided about pricing",
        [("search_notes", {"query": "pricing decision"})],
        lambda v, t: "(status: superseded)" in t[0] and "(status: accepted)" in t[0],
    ),
    (
        "what changed in projects/falcon.md since yesterday",
        [("diff_note_versions", {"path": "projects/falcon.md", "since": "24h"})],
        lambda v, t: "+- Carol: ship it" in t[-1],
    ),
]


def answer(host: Agent, tool: str, arguments: dict[str, Any]) -> str:
    """The text of one call's answer (all that a text-only agent reads)."""
    (result,) = call_all([host], [(tool, arguments)])
    return "".join(part.get("text", "") for part in result.get("content", []))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", help="a directory holding the teamvault_mcp package to run the server on")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory, LocalVault(Path(directory) / "vault") as vault:
        seed(vault)
        env = agent_env(vault, directory, options.package, PREFETCH="off")
        host = Agent(env, options.package, patience=300.0)
        initialize([host], "bench")
        print(f"on {options.package or 'this checkout'}")
        done = calls = size = 0
        for name, steps, check in TASKS:
            texts = [answer(host, *steps[0])]
            if refused(texts[0]) and steps[0][0] in OLD_WAYS:
                steps = OLD_WAYS[steps[0][0]]
                texts = [answer(host, *steps[0])]
            texts += [answer(host, tool, arguments) for tool, arguments in steps[1:]]
            ok = check(vault, texts)
            done += ok
            calls += len(steps)
            size += sum(len(text.encode()) for text in texts)
            bytes_used = sum(len(text.encode()) for text in texts)
            print(f"  {'ok  ' if ok else 'TRAP'} {name}: {len(steps)} call(s), {bytes_used:,} bytes of text")
            if not ok:
                print("       " + texts[-1][:300].replace("\n", "\n       "))
        print(f"{done} of {len(TASKS)} tasks done without a trap, {calls} calls, {size:,} bytes of text")
        host.close()


if __name__ == "__main__":
    main()
