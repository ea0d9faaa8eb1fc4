"""Outline and section reads: CPU on a big note, exactness, and the tokens saved on a realistic one.

1. A 2 MB note with 2,000 headings: the CPU time ``note_outline`` spends on it in the MCP
   process — the parse and the outline JSON, measured in process (median of 20), and the
   whole tool call measured in a real ``teamvault-mcp --local`` child (its CPU time from
   /proc, per call, download and JSON-RPC included). Target: under 50 ms.
2. A section read returns at most the section plus one line: checked on every top-level
   section of the big note through the real tool.
3. On a realistic 200 KB note, the text an agent reads to get one section by
   outline + section against a whole-note read. Tokens are estimated as characters / 4
   (no tokenizer is a dependency); the ratio is what matters.
4. A hostile note: 0.6 MB of one-line headings (``# a`` 150,000 times; before the cap it gave a
   40 MB answer in 23 s). The answer's size and the whole call's time (median of 5).

    .venv/bin/python bench/outline_bench.py
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from stdio_client import StdioHost

from teamvault_mcp.text.markdown import parse
from teamvault_mcp.tools.reading import DEFAULT_EXCERPT_CHARS

WORDS = [
    "team",
    "vault",
    "note",
    "agent",
    "meeting",
    "decision",
    "owner",
    "deadline",
    "review",
    "draft",
    "budget",
    "risk",
    "customer",
    "release",
    "design",
    "api",
    "sync",
    "plugin",
    "conflict",
    "version",
    "history",
    "folder",
    "section",
    "summary",
    "action",
    "item",
    "follow",
    "up",
]


def paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + ".\n"


def big_note(rng: random.Random) -> str:
    """About 2 MB with 2,000 headings: 200 chapters of 9 subsections, with code fences in between."""
    parts = []
    for chapter in range(200):
        parts.append(f"# Chapter {chapter}\n\n{paragraph(rng, 60)}\n")
        for sub in range(9):
            parts.append(f"## Part {chapter}.{sub}\n\n{paragraph(rng, 160)}\n")
            parts.append("```\n# not a heading\n```\n\n")
    return "".join(parts)


def realistic_note(rng: random.Random) -> str:
    """About 200 KB: a project handbook with front matter, 14 chapters, 3–8 sections each, lists, code."""
    parts = ["---\ntitle: Team handbook\ntags: [handbook, team]\n---\n\n", paragraph(rng, 80), "\n"]
    for chapter in range(14):
        parts.append(f"# {rng.choice(WORDS).capitalize()} {chapter + 1}\n\n{paragraph(rng, 50)}\n")
        for section in range(rng.randint(3, 8)):
            parts.append(f"## {rng.choice(WORDS).capitalize()} {chapter + 1}.{section + 1}\n\n")
            for _ in range(rng.randint(3, 6)):
                parts.append(paragraph(rng, rng.randint(40, 110)) + "\n")
            parts.extend(f"- {paragraph(rng, 12)}" for _ in range(rng.randint(2, 6)))
            parts.append("\n")
    return "".join(parts)


def outline_cpu_in_process(text: str, runs: int = 20) -> float:
    """Median CPU seconds for what note_outline computes once the text is downloaded."""
    samples = []
    for _ in range(runs):
        started = time.process_time()
        document = parse(text)
        json.dumps({"headings": [heading.as_json() for heading in document.headings]}, ensure_ascii=False)
        samples.append(time.process_time() - started)
    return statistics.median(samples)


def child_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    big = big_note(random.Random(7))
    handbook = realistic_note(random.Random(11))
    print(f"command: {sys.executable} {' '.join(sys.argv)}")
    headings = sum(1 + len(h.children) for h in parse(big).headings)
    print(f"big note: {len(big.encode()) / 1e6:.2f} MB, {headings:,} headings, {big.count(chr(10)):,} lines")

    in_process = outline_cpu_in_process(big)
    print(f"  outline CPU in process (parse + JSON), median of 20: {in_process * 1000:6.1f} ms   (target < 50 ms)")

    with tempfile.TemporaryDirectory() as data:
        host = StdioHost([sys.executable, "-m", "teamvault_mcp", "--local", data])
        host.initialize()
        host.call_tool("write_note", {"path": "big.md", "content": big})
        host.call_tool("write_note", {"path": "handbook.md", "content": handbook})
        host.call_tool("note_outline", {"path": "big.md"})  # warm-up
        samples = []
        for _ in range(10):
            before = child_cpu(host.process.pid)
            host.call_tool("note_outline", {"path": "big.md"})
            samples.append(child_cpu(host.process.pid) - before)
        print(
            f"  whole note_outline call, CPU of the MCP process (incl. the embedded vault, download, JSON-RPC), "
            f"median of 10: {statistics.median(samples) * 1000:.0f} ms"
        )

        outline = json.loads(host.call_tool("note_outline", {"path": "big.md"})["result"]["content"][0]["text"])
        extra = []
        for heading in outline["headings"]:
            answer = host.call_tool(
                "read_note", {"path": "big.md", "section": heading["path"], "maxChars": DEFAULT_EXCERPT_CHARS}
            )
            shown = answer["result"]["structuredContent"]
            extra.append((shown["endLine"] - shown["startLine"] + 1) - (heading["endLine"] - heading["startLine"] + 1))
        print(f"  section reads: {len(extra)} sections, lines beyond the section: max {max(extra)} (target <= 1)")

        whole = host.call_tool("read_note", {"path": "handbook.md"})["result"]["content"][0]["text"]
        top = host.call_tool("note_outline", {"path": "handbook.md"})["result"]["content"][0]["text"]
        chapter = json.loads(top)["headings"][4]
        down = host.call_tool("note_outline", {"path": "handbook.md", "tocPath": chapter["path"]})
        level2 = down["result"]["content"][0]["text"]
        target = json.loads(level2)["headings"][1]
        part = host.call_tool("read_note", {"path": "handbook.md", "section": target["path"]})
        section_text = part["result"]["content"][0]["text"]

        host.call_tool("write_note", {"path": "flat.md", "content": "# a\n" * 150_000})
        times, answer = [], ""
        for _ in range(5):
            started = time.perf_counter()
            answer = host.call_tool("note_outline", {"path": "flat.md"})["result"]["content"][0]["text"]
            times.append(time.perf_counter() - started)
        host.close()

    frugal = len(top) + len(level2) + len(section_text)
    print(f"realistic note: {len(handbook.encode()) / 1e3:.0f} KB, {handbook.count(chr(10)):,} lines")
    print(f"  whole-note read          : {len(whole):8,} chars ≈ {len(whole) // 4:7,} tokens")
    print(
        f"  outline + outline + section: {frugal:8,} chars ≈ {frugal // 4:7,} tokens "
        f"(top level {len(top):,} + one chapter {len(level2):,} + the section {len(section_text):,})"
    )
    print(f"  saving: {1 - frugal / len(whole):.1%} of the tokens, {len(whole) / frugal:.0f}× fewer")
    flat = json.loads(answer)
    print(
        f"hostile note: 0.60 MB, 150,000 one-line headings: note_outline answers {len(answer):,} chars "
        f"({len(flat['headings'])} of {flat['totalHeadings']:,} headings, next offset {flat['next']['offset']}) "
        f"in {statistics.median(times) * 1000:.0f} ms (median of 5, whole call over stdio)"
    )


if __name__ == "__main__":
    main()
