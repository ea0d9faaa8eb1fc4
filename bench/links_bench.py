"""Parsing a vault's links, tags and tasks: notes per second, and what each part costs.

A generated vault of 5,000 notes (~4 KB each: front matter with tags and a link, headings,
paragraphs with wikilinks, Markdown links, embeds, inline tags and code, checkbox tasks, a
fenced code block). Each note is parsed from its text alone, as the index does once per
content hash. Reported, in one run, side by side (median of 3 passes over the whole vault):

- the body models: links, inline tags and tasks (``text/prose.py`` masking included) on the
  note's body, front matter cut off, per note;
- the front matter read (``frontmatter.read``, ruamel.yaml), per note: the same for every
  model, paid once per note;
- all of it together, and notes per second;
- resolving every link of the vault against its 5,000 paths, per link;
- ``closest_note`` for a broken link, and ``rewrite_note_links`` over the 30 notes that link
  to one renamed note.

Goal: the later tools answer in ≤ 200 ms on 5,000 notes warm, so a parse is cached per
content hash and must be fast: well under 1 ms per note for the body.

    .venv/bin/python bench/links_bench.py [notes]
"""

from __future__ import annotations

import random
import statistics
import sys
import time

from teamvault_mcp.text import frontmatter
from teamvault_mcp.text.links import parse_links
from teamvault_mcp.text.prose import NoteText
from teamvault_mcp.text.relink import rewrite_note_links
from teamvault_mcp.text.resolution import VaultPaths, closest_note
from teamvault_mcp.text.tags import note_tags
from teamvault_mcp.text.tasks import note_tasks

WORDS = [
    *("team", "vault", "note", "agent", "meeting", "decision", "owner", "deadline", "review", "draft", "budget"),
    *("risk", "customer", "release", "design", "api", "sync", "plugin", "conflict", "version", "history"),
    *("folder", "section", "summary", "action", "item"),
]
FOLDERS = ["people", "projects", "meetings", "areas/eng", "areas/ops", "archive/2024"]


def vault(count: int, seed: int = 17) -> dict[str, str]:
    """``count`` notes, path → text; ``people/person-0.md`` is linked from 30 of them."""
    rng = random.Random(seed)
    paths = [f"{FOLDERS[index % len(FOLDERS)]}/note-{index}.md" for index in range(count)]
    paths[0] = "people/person-0.md"
    notes: dict[str, str] = {}
    for index, path in enumerate(paths):
        notes[path] = _note(rng, paths, index)
    for index in range(1, 31):  # thirty notes link to the person note, in every syntax
        path = paths[index * (count // 31)]
        notes[path] += (
            "\nSee [[person-0]], [[people/person-0#Role|the owner]], ![[person-0#^bio]] and "
            "[the profile](../people/person-0.md) — not `[[person-0]]`.\n"
        )
    return notes


def _note(rng: random.Random, paths: list[str], index: int) -> str:
    def words(count: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(count))

    def link() -> str:
        target = rng.choice(paths)
        name = target.rpartition("/")[2].removesuffix(".md")
        return rng.choice([f"[[{name}]]", f"[[{name}|{words(2)}]]", f"[[{target[:-3]}#Plan]]", f"[x]({target})"])

    parts = [
        "---",
        f"title: Note {index}",
        f"status: {rng.choice(['active', 'paused', 'done'])}",
        f"due: 2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        f"tags: [{rng.choice(WORDS)}, area/{rng.choice(WORDS)}]",
        f'related: "{link()}"',
        "---",
        f"# Note {index}",
        "",
    ]
    while sum(len(part) + 1 for part in parts) < 3900:
        parts += [
            f"## {words(3).title()}",
            "",
            f"{words(25)} {link()} {words(15)} #{rng.choice(WORDS)} {words(10)} `code {words(2)}` {link()}.",
            f"{words(20)} #{rng.choice(WORDS)}/{rng.choice(WORDS)} {words(20)}.",
            "",
            f"- [ ] {words(6)} {link()}",
            f"- [x] {words(5)}",
            f"  - [/] {words(4)}",
            "",
            "```python",
            f"# {words(3)} [[not-a-link]] #not-a-tag",
            "```",
            "",
            f"![diagram](diagram-{rng.randint(0, 9)}.png) {words(12)}",
            "",
        ]
    return "\n".join(parts) + "\n"


def timed(function: object, notes: dict[str, str], passes: int = 3) -> float:
    """Median seconds of ``passes`` runs of ``function(path, text)`` over every note."""
    runs = []
    for _ in range(passes):
        start = time.perf_counter()
        for path, text in notes.items():
            function(path, text)  # type: ignore[operator]
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def body(path: str, text: str) -> None:
    note = NoteText(frontmatter.split(text).body, path)  # the body alone: no YAML to read
    parse_links(note)
    note_tags(note)
    note_tasks(note)


def front_matter(path: str, text: str) -> None:
    frontmatter.read(text, path)


def everything(path: str, text: str) -> None:
    note = NoteText(text, path)
    parse_links(note)
    note_tags(note)
    note_tasks(note)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    notes = vault(count)
    size = sum(len(text) for text in notes.values()) / len(notes)
    print(f"{count:,} notes, {size:,.0f} characters each on average")
    body_s = timed(body, notes)
    yaml_s = timed(front_matter, notes)
    all_s = timed(everything, notes)
    print(f"body (links, tags, tasks): {body_s / count * 1e3:.3f} ms/note  ({count / body_s:,.0f} notes/s)")
    print(f"front matter (ruamel.yaml): {yaml_s / count * 1e3:.3f} ms/note  ({count / yaml_s:,.0f} notes/s)")
    print(f"all, one parse per note:   {all_s / count * 1e3:.3f} ms/note  ({count / all_s:,.0f} notes/s)")

    paths = VaultPaths(notes)
    parsed = {path: parse_links(NoteText(text, path)) for path, text in notes.items()}
    links = sum(len(found) for found in parsed.values())
    start = time.perf_counter()
    broken = [
        (link, path) for path, found in parsed.items() for link in found if paths.resolve_link(link, path) is None
    ]
    resolve_s = time.perf_counter() - start
    print(f"resolve {links:,} links, cold cache: {resolve_s * 1e3:.0f} ms ({resolve_s / links * 1e6:.1f} µs/link)")
    start = time.perf_counter()
    for path, found in parsed.items():
        for link in found:
            paths.resolve_link(link, path)
    print(f"resolve them again, warm cache: {(time.perf_counter() - start) * 1e3:.0f} ms")

    names = ["person-O", "Note 17", "diagramm-3"]
    start = time.perf_counter()
    suggestions = [closest_note(name, paths) for name in names]
    print(
        f"closest_note: {(time.perf_counter() - start) / len(names) * 1e3:.1f} ms per broken link "
        f"({len(broken):,} broken in the vault; e.g. {names[0]!r} → {suggestions[0]})"
    )

    linking = [
        path
        for path, found in parsed.items()
        if any(paths.resolve_link(link, path) == "people/person-0.md" for link in found)
    ]
    start = time.perf_counter()
    changed = 0
    for path in linking:
        changed += len(rewrite_note_links(notes[path], path, "people/person-0.md", "people/ada-king.md", paths).changes)
    rewrite_s = time.perf_counter() - start
    print(
        f"rewrite_note_links over the {len(linking)} linking notes: {rewrite_s * 1e3:.0f} ms, {changed} links changed"
    )


if __name__ == "__main__":
    main()
