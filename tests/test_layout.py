"""The import contracts of the layout (README: Development; issue 14), read from the source with ``ast``.

Layers, from the top: ``cli`` over ``server`` | ``doctor`` (independent of each other) over ``config``
over ``tools`` over ``vault`` over ``text`` over ``errors`` (and the package's ``__version__``). A module
imports its own layer and those below, never one above. The tool families never import one another, and
what they share (``tools/spec.py``, ``context.py``, the write rules…) imports no family. Only ``server/``
imports the MCP SDK; only ``vault/`` imports ``requests``/``urllib3``; ``text/`` imports neither, nor the
SDK. ``localvault/`` imports only itself, ``text/`` and ``errors``. And no import cycles. Every import
counts: at the top of a module, inside a function, under ``if TYPE_CHECKING:``.

Why a test with ``ast`` rather than import-linter: these contracts are a page of plain Python that runs
with the suite (so in ``.ci/run`` too, and in an unpacked sdist), needs no dev dependency, and reads
function-level and ``TYPE_CHECKING`` imports exactly as written, which is the point of the contracts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "teamvault_mcp"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

#: The layers, top first; a module's layer is the first entry its name starts with.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "__main__", "commands"),  # commands/: one module per command of the command line
    ("server", "doctor"),
    ("config", "http_config"),
    ("tools",),
    ("vault",),
    ("text",),
    ("errors", "messages", ""),  # "": the package itself (its __version__)
)
#: Modules of one layer that must not import each other (by prefix).
INDEPENDENT = (("server", "doctor"),)
FAMILIES = ("tools.notes", "tools.reading", "tools.outline", "tools.search", "tools.history", "tools.frontmatter")
FAMILIES += ("tools.schemas", "tools.sections", "tools.replacing", "tools.graph", "tools.changes")
#: What the families share: it imports no family (nor the table that collects them).
SHARED_TOOLS = ("tools.kinds", "tools.spec", "tools.context", "tools.schema_registry")
SHARED_TOOLS += ("tools.versions", "tools.gathering", "tools.missing")
#: The write pipeline, shared by every family that writes (``tools/writing/``).
SHARED_TOOLS += tuple(f"tools.writing.{name}" for name in ("report", "rules", "history", "story", "content"))
SHARED_TOOLS += ("tools.writing.rewrite", "tools.writing.many", "tools.writing")
SHARED_TOOLS += ("tools.team_note", "tools.indexing", "tools.tallies", "tools.relinking")
#: Third-party packages only some folders may import.
ONLY_IN = {"mcp": ("server",), "pydantic": ("server",), "pydantic_core": ("server",)}
ONLY_IN |= {"requests": ("vault",), "urllib3": ("vault",)}
ONLY_IN |= {"prometheus_client": ("server",)}  # serve --http --metrics; vault/ reports through an observer
LOCALVAULT_MAY_IMPORT = ("localvault", "text", "errors")


@dataclass(frozen=True)
class Import:
    """One import in a module: what it names (a module of ours without the package prefix, or a top-level
    third-party name), and where."""

    source: str
    target: str
    ours: bool
    line: int

    def __str__(self) -> str:
        return (
            f"{self.source} (line {self.line}) imports {self.target if not self.ours else PACKAGE + '.' + self.target}"
        )


def sources(root: Path = ROOT) -> dict[str, str]:
    """Every module of the package by name (``tools.notes``; ``""`` for the package's ``__init__``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path.read_text()
    return found


def imports_of(name: str, source: str, modules: set[str]) -> Iterator[Import]:
    """Every import ``source`` makes, wherever it is written; one per module of ours that it names."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield _import(name, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # the package imports absolutely: a relative import is named as written
                yield Import(name, "." * node.level + (node.module or ""), False, node.lineno)
                continue
            base = _import(name, node.module or "", node.lineno)
            # `from teamvault_mcp.tools import context, notes` imports two modules, not the package.
            prefix = base.target + "." if base.target else ""
            named = [prefix + alias.name for alias in node.names if base.ours and prefix + alias.name in modules]
            yield from (Import(name, module, True, node.lineno) for module in named) if named else [base]


def _import(source: str, dotted: str, line: int) -> Import:
    if dotted != PACKAGE and not dotted.startswith(PACKAGE + "."):
        return Import(source, dotted.split(".")[0], False, line)
    return Import(source, dotted.removeprefix(PACKAGE).removeprefix("."), True, line)


def all_imports(modules: Mapping[str, str]) -> list[Import]:
    names = set(modules)
    return [item for name, source in modules.items() for item in imports_of(name, source, names)]


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".") if prefix else name == ""


def layer_of(name: str) -> int | None:
    for index, prefixes in enumerate(LAYERS):
        if any(_within(name, prefix) for prefix in prefixes):
            return index
    return None


def violations(modules: Mapping[str, str]) -> list[str]:
    """Every broken contract, in words; [] when the layout holds."""
    problems = []
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for item in all_imports(modules):
        source, target = item.source, item.target
        if not item.ours:
            if target.startswith("."):
                problems.append(f"{item}: import absolutely ({PACKAGE}.…), so the contracts can read it")
                continue
            allowed = ONLY_IN.get(target)
            if allowed is not None and not any(_within(source, prefix) for prefix in allowed):
                problems.append(f"{item}: only {', '.join(p + '/' for p in allowed)} may")
            continue
        if target == source:
            continue
        edges[source].add(target)
        if _within(source, "localvault"):
            if not any(_within(target, prefix) for prefix in LOCALVAULT_MAY_IMPORT):
                problems.append(f"{item}: localvault/ imports only itself, text/ and errors")
            continue
        if _within(target, "localvault"):
            if layer_of(source) != 0:
                problems.append(f"{item}: only the command line starts a local vault")
            continue
        above, below = layer_of(source), layer_of(target)
        if above is None or below is None:
            problems.append(f"{item}: {source if above is None else target} is in no layer (add it to LAYERS)")
        elif below < above:
            problems.append(f"{item}: a layer imports one above it")
        for group in INDEPENDENT:
            home = [p for p in group if _within(source, p)]
            if home and any(_within(target, p) for p in group if p not in home):
                problems.append(f"{item}: {' and '.join(group)} are independent of each other")
        if source in FAMILIES and target in FAMILIES:
            problems.append(f"{item}: tool families never import each other (what they share goes in tools/)")
        if source in SHARED_TOOLS and (target in FAMILIES or target == "tools.table"):
            problems.append(f"{item}: what the tool families share imports no family")
    problems += [f"an import cycle: {' → '.join(cycle)}" for cycle in cycles(edges)]
    return problems


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules that has one (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in edges.get(node, ()):
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_cycle_in(sorted(group), edges) for group in groups]


def _cycle_in(group: list[str], edges: Mapping[str, set[str]]) -> list[str]:
    """A path from the group's first module back to itself, within the group."""
    members, start = set(group), group[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                return [*paths[node], start]
            if nxt in members and nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    return group


# -- the contracts hold ---------------------------------------------------------------------------------------


def test_the_package_keeps_its_import_contracts() -> None:
    modules = sources()
    assert {"cli", "server.runner", "tools.spec", "vault.client", "text.paths", "localvault.store"} <= set(modules)
    assert violations(modules) == []


def test_every_module_is_in_a_layer() -> None:
    unplaced = [name for name in sources() if layer_of(name) is None and not _within(name, "localvault")]
    assert unplaced == []


def test_the_subpackages_import_nothing_at_start_up() -> None:
    # `import teamvault_mcp.vault.client` runs vault/__init__.py first: an import there would load for everyone.
    modules = sources()
    for package in ("", "commands", "server", "tools", "vault", "text"):
        tree = ast.parse(modules[package])
        assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)], package


def test_the_local_vault_package_only_re_exports() -> None:
    # localvault/__init__.py names the public API (LocalVault, Store, …) by importing it from the modules that hold
    # it: nothing is defined or run there, and a module of the local vault is imported only as the API needs it.
    tree = ast.parse(sources()["localvault"])
    body = [node for node in tree.body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    imports = [node for node in body if isinstance(node, ast.ImportFrom)]
    assert all(node.module and node.module.startswith(PACKAGE + ".localvault.") for node in imports)
    rest = [node for node in body if node not in imports]
    assert [target.id for node in rest for target in node.targets] == ["__all__"]  # type: ignore[attr-defined]


# -- no module too long to read, no function too long to follow (issue 28) ---------------------------------------

MAX_MODULE_LINES = 600
#: A function's lines from its ``def`` to its last line (ast: ``end_lineno - lineno + 1``), decorators not counted.
MAX_FUNCTION_LINES = 80


def too_long(root: Path = ROOT) -> list[str]:
    """Every module over MAX_MODULE_LINES and every function or method over MAX_FUNCTION_LINES, in words."""
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        source = path.read_text()
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{name}: {lines} lines (at most {MAX_MODULE_LINES}: split it by concern)")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(
                        f"{name}::{node.name} (line {node.lineno}): {length} lines (at most {MAX_FUNCTION_LINES})"
                    )
    return found


def test_no_module_over_600_lines_and_no_function_over_80() -> None:
    assert too_long() == []


def test_a_long_module_or_function_is_reported(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    fits = "@decorated\ndef fits():\n" + "    y = 0\n" * (MAX_FUNCTION_LINES - 1)  # its def and body: the limit
    over = "class A:\n    def over(self):\n" + "        y = 0\n" * MAX_FUNCTION_LINES  # one line more
    source = fits + "\n\n" + over
    (tmp_path / "short.py").write_text(source)
    line = source.splitlines().index("    def over(self):") + 1
    assert too_long(tmp_path) == [
        f"long.py: {MAX_MODULE_LINES + 1} lines (at most {MAX_MODULE_LINES}: split it by concern)",
        f"short.py::over (line {line}): {MAX_FUNCTION_LINES + 1} lines (at most {MAX_FUNCTION_LINES})",
    ]


# -- and it would say so: each contract fails on a planted violation -------------------------------------------


def planted(module: str, line: str) -> list[str]:
    """The violations once ``line`` is added to ``module`` (as the last line of its source)."""
    modules = sources()
    modules[module] = modules[module] + "\n" + line + "\n"
    return violations(modules)


@pytest.mark.parametrize(
    ("module", "line", "expected"),
    [
        ("text.paths", "from teamvault_mcp.tools.context import ToolContext", "a layer imports one above it"),
        ("vault.retry", "from teamvault_mcp.server import runner", "a layer imports one above it"),
        ("tools.spec", "import teamvault_mcp.config", "a layer imports one above it"),
        ("errors", "from teamvault_mcp.text.paths import stored_path_of", "a layer imports one above it"),
        ("server.runner", "from teamvault_mcp.doctor import Doctor", "independent of each other"),
        ("tools.notes", "from teamvault_mcp.tools.reading import read_note", "tool families never import each other"),
        ("tools.writing.rules", "from teamvault_mcp.tools.notes import write_note", "what the tool families share"),
        ("tools.context", "from teamvault_mcp.tools import table", "what the tool families share"),
        ("tools.reading", "import requests", "only vault/ may"),
        ("text.search", "from urllib3 import PoolManager", "only vault/ may"),
        ("text.wire", "import mcp.types", "only server/ may"),
        ("vault.client", "from mcp.server.lowlevel import Server", "only server/ may"),
        ("vault.cache", "from prometheus_client import Counter", "only server/ may"),
        ("localvault.store", "from teamvault_mcp.vault.answers import decode_json", "localvault/ imports only"),
        ("tools.notes", "from teamvault_mcp.localvault import LocalVault", "only the command line starts"),
        ("text.diff", "from teamvault_mcp.text import edits", "an import cycle: text.diff → text.edits → text.diff"),
    ],
)
def test_a_planted_violation_is_reported(module: str, line: str, expected: str) -> None:
    found = planted(module, line)
    assert any(expected in problem for problem in found), found


def test_imports_in_functions_and_under_type_checking_count_too() -> None:
    in_function = "def later() -> None:\n    from teamvault_mcp.server.runner import ToolRunner\n"
    assert any("a layer imports one above it" in problem for problem in planted("text.paths", in_function))
    guarded = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from teamvault_mcp.tools.notes import Tool\n"
    assert any("an import cycle" in problem for problem in planted("tools.spec", guarded))


def test_each_module_a_from_import_names_counts() -> None:
    # `from teamvault_mcp.tools import context, notes` imports two modules; the second one counts as much.
    found = planted("tools.reading", "from teamvault_mcp.tools import context, notes")
    assert any("tools.reading (line" in problem and "tools.notes" in problem for problem in found), found
