"""The README and docs/ are held to the code: the worked schema example, every argument a call names, the tools
tables, the lists of tools by their hints, the Node versions, the variables.

Each check reads the page its text lives on (the README keeps what a newcomer needs; the reference is in docs/).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from teamvault_mcp.text import frontmatter
from teamvault_mcp.text.schema_notes import parse_schema_note

ROOT = Path(__file__).resolve().parent.parent
README_PATH = ROOT / "README.md"
README = README_PATH.read_text()
#: Every page of docs/ but the REST contract, which describes the server rather than this program.
DOCS = {path.name: path.read_text() for path in sorted((ROOT / "docs").glob("*.md")) if path.name != "teamvault-api.md"}
TOOLS_PAGE = DOCS["tools.md"]
SCHEMAS_PAGE = DOCS["structured-notes.md"]
DEVELOPMENT_PAGE = DOCS["development.md"]
#: The README and the docs, as one text: what a call or a variable anywhere in them names must exist.
EVERY_PAGE = "\n".join([README, *DOCS.values()])


def block_after(marker: str, fence: str, language: str, text: str = SCHEMAS_PAGE) -> str:
    start = text.index(marker)
    match = re.compile(rf"^{fence}{language}\n(.*?)^{fence}$", re.M | re.S).search(text, start)
    assert match is not None, f"no {language} block after {marker!r}"
    return match.group(1)


def test_the_worked_schema_example_gives_the_input_schema_and_the_note_shown() -> None:
    note = block_after("`schemas/recipe.md`:", "````", "markdown")
    schema = parse_schema_note("schemas/recipe.md", note)
    shown_schema = json.loads(block_after("gives the tool `upsert_recipe`", "```", "json"))
    assert schema.tool_name == "upsert_recipe"
    assert schema.json_schema() == shown_schema

    arguments = {"recipe_id": "borscht", "category": "soup", "title": "Borscht", "servings": 6}
    values = schema.check(arguments)
    assert schema.path_for(values) == "Recipes/soup/borscht.md"
    created = frontmatter.update("", schema.with_defaults(values), [], "Recipes/soup/borscht.md")
    assert created == block_after("creates\n`Recipes/soup/borscht.md`:", "```", "markdown")


# -- every tool argument the README, the help texts and the server's instructions name exists ---------------------


def tool_table() -> dict[str, set[str]]:
    """Each tool's argument names, projectId included where it takes one."""
    from teamvault_mcp.tools.table import TOOLS

    return {tool.name: {param.name for param in tool.all_params} for tool in TOOLS}


def recipe_fields() -> set[str]:
    note = block_after("`schemas/recipe.md`:", "````", "markdown")
    return set(parse_schema_note("schemas/recipe.md", note).json_schema()["properties"])


def call_forms(text: str, names: set[str]) -> list[tuple[str, list[str]]]:
    """Every ``tool(arg, key=value, …)`` in ``text`` for a tool in ``names``: the tool and the argument names."""
    found = []
    for match in re.finditer(r"\b([a-z_<>]+)\(", text):
        if match.group(1) not in names:
            continue
        pieces, depth, quote, piece = [], 0, "", ""
        for char in text[match.end() :]:
            if quote:
                quote = "" if char == quote and not piece.endswith("\\") else quote
            elif char in "\"'":
                quote = char
            elif char in "([{":
                depth += 1
            elif char in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif char == "," and depth == 0:
                pieces.append(piece)
                piece = ""
                continue
            piece += char
        pieces.append(piece)
        arguments = [piece.split("=", 1)[0].strip() for piece in pieces]
        found.append((match.group(1), [name for name in arguments if re.fullmatch(r"[A-Za-z_]\w*", name)]))
    return found


def shell_calls(text: str) -> list[tuple[str, list[str]]]:
    """Every ``teamvault-mcp call TOOL key=value …`` command line in ``text``: the tool and the keys."""
    import shlex

    found = []
    for line in re.findall(r"teamvault-mcp call [a-z_]+ [^\n|]*", text):
        words = shlex.split(line.replace("\\", ""))
        keys = [word.split("=", 1)[0] for word in words[3:] if "=" in word and not word.startswith("-")]
        found.append((words[2], keys))
    return found


def test_every_argument_a_call_in_the_readme_and_the_docs_names_exists_on_its_tool() -> None:
    tools = tool_table()
    tools["upsert_recipe"] = recipe_fields()  # the worked schema example's tool
    calls = call_forms(EVERY_PAGE, set(tools)) + shell_calls(EVERY_PAGE)
    assert len(calls) > 25, "the scanner finds the calls of the README and the docs"
    assert len(call_forms(TOOLS_PAGE, set(tools))) > 25, "the scanner finds the calls of docs/tools.md"
    unknown = [(tool, name) for tool, names in calls for name in names if name not in tools[tool]]
    assert unknown == [], f"the README or the docs name arguments these tools do not have: {unknown}"


def test_every_argument_the_help_and_the_instructions_name_exists() -> None:
    import argparse

    from support.fakes import make_config

    from teamvault_mcp.cli import _parser
    from teamvault_mcp.server.protocol import instructions_for
    from teamvault_mcp.tools.context import ToolSet
    from teamvault_mcp.tools.table import TOOLS

    tools = tool_table()
    parser = _parser()
    [commands] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    every = ToolSet(frozenset(tools))
    helps = [parser.format_help(), *(command.format_help() for command in commands.choices.values())]
    helps.append(instructions_for(make_config(schema_dir="schemas/"), every))
    helps += [tool.describe(every) for tool in TOOLS] + [param.description for tool in TOOLS for param in tool.params]
    text = "\n".join(helps)
    calls = call_forms(text, set(tools)) + shell_calls(text)
    assert len(calls) > 10, "the scanner finds the calls in the help and the instructions"
    unknown = [(tool, name) for tool, names in calls for name in names if name not in tools[tool]]
    assert unknown == [], f"these help texts name arguments the tools do not have: {unknown}"
    # key=value outside a call (the epilog's "path=2024.md"): an argument of some tool
    every = set().union(*tools.values(), {"key"})  # `key=value`: the placeholder
    loose = {name for name in re.findall(r"(?<![\w-])([a-z][A-Za-z]*)=", text) if name not in every}
    assert loose == set(), f"these help texts name arguments no tool has: {sorted(loose)}"


#: Lower-case `name=` in the README and the docs that are not tool arguments.
NOT_ARGUMENTS = {"key", "synchronous"}  # the placeholder of `key=value`; SQLite's `synchronous=FULL`


def test_every_lone_argument_the_readme_and_the_docs_show_exists() -> None:
    # `limit=`, `mode="phrase"`, `dryRun=true` in running text: an argument of some tool (or of the worked schema)
    every = set().union(*tool_table().values(), recipe_fields(), NOT_ARGUMENTS)
    shown = set(re.findall(r"`([a-z][A-Za-z_]*)=", EVERY_PAGE))
    assert len(shown) > 10, "the scanner finds the arguments shown in running text"
    assert shown - every == set(), f"the README or the docs show arguments no tool has: {sorted(shown - every)}"


def test_the_tools_table_lists_every_tool_with_its_kind_and_arguments() -> None:
    from teamvault_mcp.tools.table import TOOLS

    rows = re.findall(r"^\| `([a-z_<>]+)` \| (read|write) \| (.*?) \| .* \|$", TOOLS_PAGE, re.M)
    table = {name: (kind, arguments) for name, kind, arguments in rows}
    assert set(table) == {tool.name for tool in TOOLS} | {"upsert_<schema>"}
    for tool in TOOLS:
        kind, arguments = table[tool.name]
        assert kind == ("write" if tool.writes else "read"), tool.name
        while "(" in arguments:  # what is said about an argument, e.g. `mode?` (`text`|`phrase`), is not one
            arguments = re.sub(r"\([^()]*\)", "", arguments)
        named = set(re.findall(r"`([A-Za-z]\w*)\??`", arguments))
        assert named == {param.name for param in tool.params}, tool.name


def test_the_readme_lists_every_tool_once_with_its_kind() -> None:
    from teamvault_mcp.tools.table import TOOLS

    rows = re.findall(r"^\| `([a-z_<>]+)` \| (read|write) \| [^|]+ \|$", README, re.M)
    assert len(rows) == len({name for name, _ in rows}), "a tool listed twice"
    kinds = dict(rows)
    assert set(kinds) == {tool.name for tool in TOOLS} | {"upsert_<schema>"}
    assert kinds["upsert_<schema>"] == "write"
    for tool in TOOLS:
        assert kinds[tool.name] == ("write" if tool.writes else "read"), tool.name


def sentence_with(marker: str, text: str = TOOLS_PAGE) -> str:
    start = text.index(marker)
    end = text.index(".", start + len(marker))
    return text[start:end]


def test_the_docs_say_which_tools_take_no_project_id() -> None:
    from teamvault_mcp.tools.table import TOOLS

    named = set(re.findall(r"`([a-z_<>]+)`", sentence_with("Every tool except")))
    assert named == {tool.name for tool in TOOLS if not tool.takes_project} | {"upsert_<schema>"}


def test_the_docs_list_the_destructive_and_the_non_idempotent_tools() -> None:
    from teamvault_mcp.tools.table import TOOLS

    destructive = sentence_with("The write tools that replace or remove content").split("; ")[0]
    assert set(re.findall(r"`([a-z_<>]+)`", destructive)) - {"destructiveHint"} == {
        tool.name for tool in TOOLS if tool.writes and tool.destructive
    } | {"upsert_<schema>"}
    repeatable = sentence_with("Not `idempotentHint`")
    assert set(re.findall(r"`([a-z_<>]+)`", repeatable)) - {"idempotentHint"} == {
        tool.name for tool in TOOLS if not tool.idempotent
    }


def test_the_docs_give_the_node_versions_the_interop_packages_declare() -> None:
    lock = json.loads((ROOT / "tests" / "interop" / "package-lock.json").read_text())
    for package in ("@modelcontextprotocol/inspector", "@modelcontextprotocol/sdk"):
        declared = lock["packages"][f"node_modules/{package}"]["engines"]["node"]
        version = lock["packages"][f"node_modules/{package}"]["version"]
        page = DEVELOPMENT_PAGE
        assert f"`{package}` {version}" in page and f"declares Node `{declared}`" in page, package


def test_every_variable_the_readme_and_the_docs_name_is_read_by_the_program() -> None:
    source = "\n".join(path.read_text() for path in (ROOT / "teamvault_mcp").rglob("*.py"))
    named = set(re.findall(r"\bTEAM_VAULT_[A-Z_]+[A-Z]\b", EVERY_PAGE))
    assert len(named) > 25, "the scanner finds the variables"
    assert named and {name for name in named if f'"{name}"' not in source and "TEAM_VAULT_{" not in name} == set()
