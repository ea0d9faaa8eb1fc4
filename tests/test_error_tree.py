"""The error tree (issue 28): every failure the package reports is drawn in ``errors.py``, and a cancel is none.

``errors.py``'s docstring says every failure is one of its classes: a failure class defined elsewhere
(``FrontMatterError`` was in ``text/frontmatter.py``, ``HttpStartError`` in ``config.py``) is a tree nobody can
read in one place. A cancel is not a failure of the vault: it passes every handler of failures
(``except TeamVaultError``) and of bugs (``except Exception``) on its way to the runner, with no guard needed.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import teamvault_mcp
from teamvault_mcp import errors
from teamvault_mcp.errors import CallCancelledError, TeamVaultError


def every_subclass(base: type) -> set[type]:
    found = set()
    for child in base.__subclasses__():
        found |= {child, *every_subclass(child)}
    return found


def test_every_failure_class_of_the_package_is_defined_in_errors_and_drawn_in_its_tree() -> None:
    for module in pkgutil.walk_packages(teamvault_mcp.__path__, "teamvault_mcp."):
        if not module.name.endswith("__main__"):  # importing it runs the command line
            importlib.import_module(module.name)
    failures = {cls for cls in every_subclass(TeamVaultError) if cls.__module__.startswith("teamvault_mcp.")}
    assert {cls.__qualname__: cls.__module__ for cls in failures if cls.__module__ != "teamvault_mcp.errors"} == {}
    tree = errors.__doc__ or ""
    assert (
        sorted(cls.__name__ for cls in failures | {TeamVaultError, CallCancelledError} if cls.__name__ not in tree)
        == []
    )


@pytest.mark.parametrize("handler", [TeamVaultError, Exception])
def test_a_cancel_passes_the_handlers_of_failures_and_of_bugs(handler: type[BaseException]) -> None:
    with pytest.raises(CallCancelledError):
        try:
            raise CallCancelledError()
        except handler:
            pytest.fail(f"except {handler.__name__} caught the host's cancel")
