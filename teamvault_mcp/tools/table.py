"""The tool table: every family's tools, collected in the one order ``tools/list`` shows them.

Each family declares its tools next to its handlers; this is the only module that knows
them all. :data:`ORDER` is the order agents see (and ``call --help``'s examples follow):
who am I and where, then finding (by text, name, properties, tags, tasks, links) and reading, what
changed lately and history, and the writes last.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from teamvault_mcp.text.schemas import Schema
from teamvault_mcp.tools import (
    changes,
    frontmatter,
    graph,
    history,
    notes,
    outline,
    reading,
    replacing,
    schemas,
    search,
    sections,
)
from teamvault_mcp.tools.spec import Tool

ORDER = (
    "whoami",
    "list_projects",
    "list_notes",
    "search_notes",
    "find_notes",
    "query_notes",
    "list_tags",
    "list_tasks",
    "note_links",
    "broken_links",
    "note_outline",
    "read_note",
    "read_notes",
    "read_frontmatter",
    "recent_changes",
    "list_note_versions",
    "read_note_version",
    "diff_note_versions",
    "restore_note_version",
    "write_note",
    "edit_note",
    "edit_section",
    "replace_in_notes",
    "update_frontmatter",
    "move_note",
    "delete_note",
    "list_schemas",
    "reload_schemas",
)


def in_order(families: Sequence[Sequence[Tool]], order: Sequence[str] = ORDER) -> tuple[Tool, ...]:
    """The families' tools in ``order``; a tool missing from it, or named there and declared nowhere, is a bug."""
    by_name = {tool.name: tool for family in families for tool in family}
    declared = sum(len(family) for family in families)
    if declared != len(by_name) or set(by_name) != set(order) or len(order) != len(set(order)):
        raise RuntimeError(
            f"the tool table is inconsistent: declared {sorted(by_name)} ({declared} declarations), "
            f"ordered {list(order)}"
        )
    return tuple(by_name[name] for name in order)


TOOLS = in_order(
    (
        notes.TOOLS,
        reading.TOOLS,
        outline.TOOLS,
        search.TOOLS,
        graph.TOOLS,
        frontmatter.TOOLS,
        changes.TOOLS,
        history.TOOLS,
        schemas.TOOLS,
        sections.TOOLS,
        replacing.TOOLS,
    )
)


#: In TEAM_VAULT_TOOLS, every upsert_<schema> tool at once.
SCHEMA_TOOLS = "upsert_*"


def tools_for(
    read_only: bool,
    schema_list: Sequence[Schema] | None = None,
    *,
    named: frozenset[str] | None = None,
    dropped: frozenset[str] = frozenset(),
) -> tuple[Tool, ...]:
    """The tools to register: in read-only mode the write tools do not exist at all.

    ``schema_list`` is None without TEAM_VAULT_SCHEMA_DIR; otherwise each schema adds its tool.
    ``named`` and ``dropped`` are TEAM_VAULT_TOOLS: only the tools named (None: all), without those dropped;
    ``upsert_*`` stands for every schema tool.
    """
    static = tuple(
        tool for tool in TOOLS if not (read_only and tool.writes) and not (tool.needs_schemas and schema_list is None)
    )
    made = () if read_only or not schema_list else tuple(schemas.schema_tool(schema) for schema in schema_list)
    return tuple(tool for tool in static + made if _chosen(tool.name, named, dropped, schema_tool=tool in made))


def _chosen(name: str, named: frozenset[str] | None, dropped: frozenset[str], *, schema_tool: bool) -> bool:
    group = {name, SCHEMA_TOOLS} if schema_tool else {name}
    return (named is None or bool(group & named)) and not group & dropped


def closest_name(name: str, names: Iterable[str]) -> str | None:
    """The name in ``names`` most like ``name`` (a misspelt tool), or None when none is close."""
    close = difflib.get_close_matches(name, list(names), n=1)
    return close[0] if close else None


def not_offered(name: str, offered: Sequence[str], read_only: bool, schema_list: Sequence[Schema] | None) -> str:
    """Why a call to ``name`` finds no tool: read-only mode, TEAM_VAULT_TOOLS, or no such tool at all.

    ``offered`` are the tools :func:`tools_for` registered with ``read_only`` and ``schema_list``; a tool it
    could have registered that is missing for neither read-only mode was left out by TEAM_VAULT_TOOLS.
    """
    available = f"Available tools: {', '.join(offered)}."
    possible = {tool.name: tool for tool in tools_for(False, schema_list)}
    tool = possible.get(name)
    if tool is None:
        close = closest_name(name, offered)
        hint = f" (did you mean {close}?)" if close else ""
        return f"Unknown tool: {name}{hint}. {available}"
    if read_only and tool.writes:
        return (
            f"{name} is not offered: this server is read-only (TEAM_VAULT_READ_ONLY), so it has no write tools "
            f"and nothing can be changed through it. {available}"
        )
    return f"{name} is not offered: TEAM_VAULT_TOOLS left it out of this server's tools. {available}"
