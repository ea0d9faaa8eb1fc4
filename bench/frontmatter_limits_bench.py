"""What hostile front matter costs now: the time to refuse it, next to reading ordinary front matter.

In one run, in-process CPU time (median of ``--runs``), for ``frontmatter.read`` and
``frontmatter.update`` (one field set):

- an ordinary note: 30 fields and a 100 KB body (the reference);
- about the largest block that is read: 64 KiB less 100 bytes, 3,300 fields of short lists;
- blocks that are refused: the classic "billion laughs" (9 lists of 9 aliases, 9**9 strings
  once expanded; 486 bytes), nested mappings (2**30 leaves), merge keys that bring in lists
  of the one before, a block 1 byte over 64 KiB, 20,000 levels of nested ``[``, and a
  recursive alias.

    .venv/bin/python bench/frontmatter_limits_bench.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from teamvault_mcp.text import frontmatter, yamltext


def laughs() -> str:
    lines = ["lol0: &lol0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


def nested_mappings() -> str:
    lines = ["m0: &m0 {x: lol}"] + [f"m{i}: &m{i}\n  left: *m{i - 1}\n  right: *m{i - 1}" for i in range(1, 30)]
    return "\n".join(lines) + "\n"


def merges() -> str:
    lines = ["b0: &b0 {x: lol}"] + [
        f"b{i}: &b{i}\n  <<: *b{i - 1}\n  more: [*b{i - 1}, *b{i - 1}]" for i in range(1, 30)
    ]
    return "\n".join(lines) + "\n"


def largest() -> str:
    lines: list[str] = []
    size = index = 0
    while True:
        line = f"field_{index}: [a, b, c]\n"
        if size + len(line) > yamltext.MAX_BLOCK_BYTES - 100:  # room for the field the update sets
            return "".join(lines)
        lines.append(line)
        size += len(line)
        index += 1


def median_ms(work: Callable[[], object], runs: int) -> tuple[float, str]:
    times, outcome = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        try:
            work()
            outcome = "read"
        except frontmatter.FrontMatterError as error:
            outcome = "refused: " + str(error).partition(": ")[2][:60]
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    ordinary = "".join(f"field_{n}: value {n}\n" for n in range(28)) + "tags:\n  - a\n  - b\n"
    blocks = {
        "ordinary, 30 fields": ordinary,
        "64 KiB less 100 bytes": largest(),
        "billion laughs": laughs(),
        "nested mappings": nested_mappings(),
        "merge keys": merges(),
        "64 KiB + 1 byte": "k: " + "x" * (yamltext.MAX_BLOCK_BYTES - 3) + "\n",
        "20,000 levels of [": "a: " + "[" * 20_000 + "]" * 20_000 + "\n",
        "recursive alias": "a: &a [1, *a]\n",
    }
    body = "Body text line.\n" * 6400
    reference = None
    print(f"front matter, CPU time in-process, median of {runs} (ratio to reading the ordinary block):")
    for name, block in blocks.items():
        note = f"---\n{block}---\n{body}"

        def read(note: str = note) -> object:
            return frontmatter.read(note, "n.md")

        def update(note: str = note) -> object:
            return frontmatter.update(note, {"status": "done"}, [], "n.md")

        read_ms, outcome = median_ms(read, runs)
        update_ms, _ = median_ms(update, runs)
        reference = reference or read_ms
        print(
            f"  {name:22} {len(block.encode()):>7,} bytes  read {read_ms:8.2f} ms ({read_ms / reference:6.1f}×)  "
            f"update {update_ms:8.2f} ms  {outcome}"
        )


if __name__ == "__main__":
    main()
