"""find_notes on a vault's paths: the memory its per-path keys take, and a warm call's time, in this process.

``text/fuzzy.find_paths`` keeps a key per path it has seen (the sieve reads every path on every call). This
measures, for ``--paths`` generated paths (``<folder>/note-<n>.md`` in six folders): the memory the first
call leaves allocated (``tracemalloc``, so that call runs slower than it would), then the median of
``--repeat`` warm calls of an exact query and of a misspelt one, and their top three answers (to compare a
before and an after: they must be the same). Run it with ``PYTHONPATH=DIR`` (a ``git archive`` of another commit's
``teamvault_mcp``) for the before.

    .venv/bin/python bench/find_notes_bench.py [--paths 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import tracemalloc

from teamvault_mcp.text import fuzzy

FOLDERS = ["archive/2024", "people", "projects/alpha", "areas/ops", "hubs", "inbox"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    rng = random.Random(3)
    paths = [f"{rng.choice(FOLDERS)}/note-{number}.md" for number in range(options.paths)]
    tracemalloc.start()
    fuzzy.find_paths("note 4242", paths, 10)
    kept = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"{options.paths:,} paths: the keys take {kept / 2**20:,.0f} MiB ({fuzzy.__file__})")
    for query in ("note 4242", "ntoe 4224"):
        times = []
        for _ in range(options.repeat):
            started = time.perf_counter()
            found = fuzzy.find_paths(query, paths, 10)
            times.append(time.perf_counter() - started)
        print(f"  {query!r}: {statistics.median(times) * 1000:,.0f} ms warm (median of {options.repeat}); {found[:3]}")


if __name__ == "__main__":
    main()
