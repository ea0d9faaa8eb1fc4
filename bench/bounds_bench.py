"""Bounded work (issue 27): the two cases that ran away, timed on this package and, with ``--package``, an older one.

1. **diff**: the unified diff of an edit that changes every other line of a 40,000-line note
   (0.9 MB): ``text.diff.unified_diff``, as every edit answer makes it. difflib is quadratic on
   it; bounded, it is the line that counts the changed lines.
2. **replace** and **replaceAll**: a note of 100,000 ``x`` and a 100 KB replacement for ``x``
   (``Replacer.apply`` as replace_in_notes makes it, ``apply_edits`` with ``replaceAll`` as
   edit_note does), and the regex template ``(x)`` → ``$1`` × 5,000 on 100 lines of 1,000 ``x``;
   bounded, each is refused from its computed size past 5 MiB, before it is built.

Each case runs in a child process on the package's ``teamvault_mcp`` (``PYTHONPATH``), capped at
``--cap`` seconds (default 30) and ``--memory`` MB of address space (default 3,000, so an unbounded
replacement fails with MemoryError instead of filling the machine); it reports its CPU seconds,
its peak resident memory and what came out.

    .venv/bin/python bench/bounds_bench.py [--package DIR] [--cap 30] [--memory 3000]

DIR holds an older ``teamvault_mcp``, e.g. ``git archive <commit> teamvault_mcp | tar -x -C DIR``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import teamvault_mcp

LIMIT = 5 * 1024 * 1024

CHILD = r"""
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]) * 1024 * 1024,) * 2)
case = sys.argv[1]
LIMIT = 5 * 1024 * 1024

def bounded(function, *args, **bound):
    try:
        return function(*args, **bound)
    except TypeError:  # an older package: no bound to give
        return function(*args)

started = time.process_time()
try:
    if case == "diff":
        from teamvault_mcp.text.diff import unified_diff
        old = "".join(f"line {n} {'even' if n % 2 == 0 else 'odd'} of the log\n" for n in range(40_000))
        diff = unified_diff(old, old.replace("even", "EVEN"), before="a/log.md", after="b/log.md")
        outcome = diff if "\n" not in diff else f"a diff of {diff.count(chr(10)) + 1:,} lines"
    elif case in ("replace", "regex"):
        from teamvault_mcp.text.replace import Replacer
        if case == "replace":
            replacer, text = Replacer("x", "y" * 100_000), "x" * 100_000
        else:
            replacer, text = Replacer("(x)", "$1" * 5_000, regex=True), ("x" * 1_000 + "\n") * 100
        new, count = bounded(replacer.apply, text, max_bytes=LIMIT, path="big.md")
        outcome = f"built: {len(new):,} characters ({count:,} matches)"
    else:
        from teamvault_mcp.text.edits import Edit, apply_edits
        edits = [Edit("x", "y" * 100_000, replace_all=True)]
        new = bounded(apply_edits, "x" * 100_000, edits, max_bytes=LIMIT, path="big.md")
        outcome = f"built: {len(new):,} characters"
except MemoryError:
    outcome = f"MemoryError at the {sys.argv[2]} MB cap"
except Exception as error:  # the refusal, on a bounded package
    outcome = f"{type(error).__name__}: {str(error)[:110]}…"
seconds = time.process_time() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak, "outcome": outcome}))
"""

CASES = {
    "diff": "diff, 40,000 lines, every other changed",
    "replace": "replace_in_notes: 100,000 x → 100 KB",
    "replaceAll": "edit_note replaceAll: 100,000 x → 100 KB",
    "regex": "regex (x) → $1 × 5,000 on 100,000 x",
}


def run(package: Path, case: str, cap: float, memory: int) -> str:
    """One case in a child on ``package``: its figures as a line of the table."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, case, str(memory)],
            capture_output=True,
            text=True,
            timeout=cap,
            env=env,
            cwd=package,  # not this tree: python -c puts the working directory first on sys.path
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"> {cap:g} s (stopped)"
    if done.returncode != 0 or not done.stdout.strip():
        return f"exit {done.returncode}: {done.stderr.strip()[-160:]}"
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return f"{figures['seconds']:.2f} s CPU, peak {figures['peak_mb']:,} MB: {figures['outcome']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", help="a directory holding an older teamvault_mcp package, to compare")
    parser.add_argument("--cap", type=float, default=30.0, help="seconds a case may take (default 30)")
    parser.add_argument("--memory", type=int, default=3000, help="MB of address space a case may take (default 3000)")
    options = parser.parse_args()
    packages = {"this package": Path(teamvault_mcp.__file__).resolve().parent.parent}
    if options.package:
        packages = {f"--package {options.package}": Path(options.package).resolve(), **packages}
    for label, package in packages.items():
        print(f"{label} ({package}):")
        for case, title in CASES.items():
            print(f"  {title:<44} {run(package, case, options.cap, options.memory)}", flush=True)


if __name__ == "__main__":
    main()
