"""Check the built sdist and wheel against the source tree: nothing the program or the tests need is left out.

    python .ci/check_dist.py DIST_DIR

The wheel must hold every ``.py`` file under ``teamvault_mcp/`` (a subpackage that ``setup.cfg`` does not
find would be missing from every non-editable install). The sdist must hold what ``MANIFEST.in`` promises:
the package, its metadata, the docs (``tests/test_readme.py`` and ``tests/test_docs.py`` read them) and the whole
test suite with its helpers; and none of the benchmarks, CI files or installed npm packages. Prints one line per
missing or unwanted file and exits 1 if there is any.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDIST_TOP = ("LICENSE", "README.md", "MANIFEST.in", "setup.cfg", "pyproject.toml", "Dockerfile", ".dockerignore")
SDIST_TREES = ("teamvault_mcp/", "tests/", "docs/")
NOT_IN_SDIST = ("bench/", ".ci/", "tests/interop/node_modules/")


def package_modules() -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "teamvault_mcp").rglob("*.py")
        if "__pycache__" not in path.parts
    }


def tracked_files() -> set[str]:
    """The files of the source tree: git's list, or every file on disk outside a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True
        ).stdout.split("\0")
    except (OSError, subprocess.CalledProcessError):
        listed = [path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*") if path.is_file()]
    return {name for name in listed if name and "__pycache__" not in name and (ROOT / name).is_file()}


def main(dist: Path) -> int:
    wheels = sorted(dist.glob("teamvault_mcp-*.whl"))
    sdists = sorted(dist.glob("teamvault_mcp-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"check_dist: expected one wheel and one sdist in {dist}, found {wheels + sdists}")
        return 1
    problems: list[str] = []

    with zipfile.ZipFile(wheels[0]) as wheel:
        in_wheel = set(wheel.namelist())
        entry_points = next((name for name in in_wheel if name.endswith(".dist-info/entry_points.txt")), None)
        if entry_points is None or "teamvault-mcp = teamvault_mcp.cli:main" not in wheel.read(entry_points).decode():
            problems.append(f"{wheels[0].name}: no teamvault-mcp console script")
    modules = package_modules()
    problems += [f"{wheels[0].name}: missing {name}" for name in sorted(modules - in_wheel)]

    with tarfile.open(sdists[0]) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        in_sdist = {name.removeprefix(top + "/") for name in sdist.getnames() if name.startswith(top + "/")}
    wanted = {name for name in tracked_files() if name in SDIST_TOP or name.startswith(SDIST_TREES)}
    wanted = {name for name in wanted if not name.startswith(NOT_IN_SDIST)}
    problems += [f"{sdists[0].name}: missing {name}" for name in sorted(wanted - in_sdist)]
    unwanted = sorted(name for name in in_sdist if name.startswith(NOT_IN_SDIST))
    problems += [f"{sdists[0].name}: should not hold {name}" for name in unwanted]

    for problem in problems:
        print(f"check_dist: {problem}")
    if not problems:
        print(f"check_dist: {wheels[0].name}: all {len(modules)} modules; {sdists[0].name}: all {len(wanted)} files")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
