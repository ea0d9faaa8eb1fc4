"""A replace_in_notes preview over 5,000 warm notes of ~4 KB, in memory: the pure part (text/replace.py).

Issue 18's goal is a preview of 5,000 warm notes in at most 500 ms. Each case builds one
``Replacer``, applies it to every note (match count and new text) and makes the compact diff of
each note that changes, as the tool's dry run does; a case that shows only the first 50 notes
counts the matches of the others (``Replacer.count``). The median of ``--runs`` runs is shown
next to the goal; "preview" is the characters of the diffs made. The notes are generated
(seeded): prose, lists, a table, code, front matter, some CRLF; "Acme" is in 30 of them (the
rename of the issue's second goal), "the" in all of them.

    .venv/bin/python bench/replace_bench.py [--notes 5000] [--runs 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from teamvault_mcp.text.replace import Replacer, preview

GOAL_MS = 500.0
WORDS = [
    "the",
    "team",
    "vault",
    "note",
    "sync",
    "server",
    "budget",
    "review",
    "plan",
    "meeting",
    "alpha",
    "beta",
    "gamma",
    "delta",
    "action",
    "item",
    "owner",
    "status",
    "draft",
    "final",
    "report",
    "week",
    "month",
    "quarter",
    "project",
    "design",
    "test",
    "release",
    "customer",
]


def generated_notes(count: int, seed: int = 18) -> list[str]:
    rng = random.Random(seed)
    holders = set(rng.sample(range(count), 30))
    notes = []
    for index in range(count):
        parts = ["---\ntags: [work]\n---\n"] if rng.random() < 0.3 else []
        parts.append(f"# Note {index}\n\n")
        while sum(map(len, parts)) < 4000:
            kind = rng.random()
            if kind < 0.5:
                parts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40))).capitalize() + ".\n\n")
            elif kind < 0.75:
                parts.append("".join(f"- {' '.join(rng.sample(WORDS, 5))}\n" for _ in range(rng.randint(2, 6))) + "\n")
            elif kind < 0.85:
                parts.append("| a | b |\n|---|---|\n| 1 | 2 |\n\n")
            elif kind < 0.95:
                parts.append(f"## {rng.choice(WORDS).capitalize()}\n\n")
            else:
                parts.append("```python\n# a comment\nprint('x')\n```\n\n")
        text = "".join(parts)
        if index in holders:
            words = text.split(" ")
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(words))
                words[at] = "Acme"
            text = " ".join(words)
        notes.append(text.replace("\n", "\r\n") if rng.random() < 0.1 else text)
    return notes


def run_case(notes: list[str], replacer: Replacer, diffs_for: int | None) -> tuple[float, int, int, int]:
    """Seconds, matches, notes changed and preview characters for one pass over ``notes``."""
    started = time.perf_counter()
    matches = changed = preview_chars = 0
    for text in notes:
        if diffs_for is not None and changed >= diffs_for:  # past the notes shown: their counts only
            count = replacer.count(text)
            matches += count
            changed += bool(count)
            continue
        new, count = replacer.apply(text)
        if not count:
            continue
        matches += count
        changed += 1
        preview_chars += len(preview(text, new, count).diff)
    return time.perf_counter() - started, matches, changed, preview_chars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    notes = generated_notes(args.notes)
    size = sum(map(len, notes))
    print(f"{len(notes):,} notes, {size / len(notes):,.0f} characters each on average, {size / 1e6:.1f} MB in all")
    cases = [
        ("literal 'Acme' (30 notes)", Replacer("Acme", "Globex"), None),
        ("literal, any case", Replacer("acme", "Globex", case_sensitive=False), None),
        ("regex \\bAcme\\b", Replacer(r"\bAcme\b", "Globex", regex=True), None),
        ("regex (\\w+) Acme, any case", Replacer(r"(\w+) acme", "$1 Globex", regex=True, case_sensitive=False), None),
        ("literal 'the' (every note), 50 shown", Replacer("the", "a"), 50),
        ("literal 'the' (every note), all diffs", Replacer("the", "a"), None),
    ]
    print(
        f"{'case':40} {'median ms':>10} {'of goal':>8} {'MB/s':>6} {'matches':>9} {'notes':>6} {'matches/s':>11} "
        f"{'preview':>9}"
    )
    for name, replacer, diffs_for in cases:
        runs = [run_case(notes, replacer, diffs_for) for _ in range(args.runs)]
        seconds = statistics.median(run[0] for run in runs)
        _, matches, changed, chars = runs[0]
        print(
            f"{name:40} {seconds * 1000:10.1f} {seconds * 1000 / GOAL_MS:8.0%} {size / 1e6 / seconds:6.0f} "
            f"{matches:9,} {changed:6,} "
            f"{matches / seconds:11,.0f} {chars:8,}c"
        )
    print(f"(goal: a preview of {args.notes:,} warm notes in {GOAL_MS:.0f} ms; 'of goal' is the median's share of it)")


if __name__ == "__main__":
    main()
