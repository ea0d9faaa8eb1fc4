"""The packaging metadata keeps its promises: every subpackage, a fast refusal on old Pythons, bounded CI tools.

``.ci/run`` builds the wheel and the sdist and checks their contents (``.ci/check_dist.py``); these tests hold
the rules in ``setup.cfg`` that those checks depend on, without building anything.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETUP_CFG = configparser.ConfigParser()
SETUP_CFG.read(ROOT / "setup.cfg")
MARKER = 'python_version >= "3.11"'


def requirements(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def all_requirements() -> dict[str, list[str]]:
    found = {"install_requires": requirements(SETUP_CFG["options"]["install_requires"])}
    for extra, text in SETUP_CFG["options.extras_require"].items():
        found[f"extra {extra}"] = requirements(text)
    return found


def test_every_subpackage_goes_into_the_wheel() -> None:
    setupcfg = pytest.importorskip("setuptools.config.setupcfg")
    found = set(setupcfg.read_configuration(ROOT / "setup.cfg")["options"]["packages"])
    on_disk = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "teamvault_mcp").rglob("__init__.py")}
    assert on_disk <= found, f"setup.cfg leaves out {sorted(on_disk - found)}"
    assert "teamvault_mcp.localvault" in found


def test_every_requirement_is_marked_for_the_pythons_we_support() -> None:
    # Python 3.10's pip 23.0 backtracks for over ten minutes on `pip install -e '.[test]'` when a requirement
    # applies there; with every requirement marked away it refuses at once (setup.cfg says why).
    assert SETUP_CFG["options"]["python_requires"].strip() == ">=3.11"
    unmarked = [
        f"{where}: {line}" for where, lines in all_requirements().items() for line in lines if MARKER not in line
    ]
    assert unmarked == [], f'add "; {MARKER}" to: {unmarked}'


def test_ci_tools_have_an_upper_bound() -> None:
    dev = all_requirements()["extra dev"]
    names = {re.split(r"[<>=!~;\s]", line, maxsplit=1)[0] for line in dev}
    assert {"ruff", "mypy", "types-requests", "build"} <= names
    unbounded = [line for line in dev if "<" not in line.split(";")[0]]
    assert unbounded == [], f"a new release of these could turn CI red overnight: {unbounded}"


def test_the_license_is_an_spdx_expression_without_the_deprecated_classifier() -> None:
    metadata = SETUP_CFG["metadata"]
    assert metadata["license_expression"] == "MIT"
    assert "license" not in metadata  # the free-text License field is superseded by the expression
    assert "License ::" not in metadata["classifiers"]
    build_requires = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'requires = \["setuptools>=(7[7-9]|[89]\d)', build_requires), "license_expression needs 77+"
