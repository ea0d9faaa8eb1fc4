"""The schema tools: list_schemas, reload_schemas, and the ``upsert_<name>`` tool each schema note defines.

A schema note (``text/schemas.py`` says what it holds) becomes a tool whose arguments
are its fields; the schema registry (``schema_registry.py``) holds the schemas loaded now. An upsert
creates the note where the schema says, or writes the given fields into its front
matter like any edit (``writing/rewrite.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from teamvault_mcp.errors import TeamVaultError, ToolInputError, short_hash
from teamvault_mcp.text import frontmatter
from teamvault_mcp.text.diff import unified_diff
from teamvault_mcp.text.schemas import Schema
from teamvault_mcp.tools.context import ToolContext, ToolOutput, json_output, sha256_hex
from teamvault_mcp.tools.kinds import FIELD_READERS, read_text
from teamvault_mcp.tools.schema_registry import SchemaRegistry, SchemaSet
from teamvault_mcp.tools.spec import STRING, Tool, object_schema
from teamvault_mcp.tools.writing.rewrite import rewrite
from teamvault_mcp.tools.writing.rules import VERIFIED, create_content
from teamvault_mcp.tools.writing.story import STORY


def list_schemas(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    registry = _registry(ctx)
    return json_output(_schemas_result(registry, registry.current))


def reload_schemas(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    registry = _registry(ctx)
    before = {schema.tool_name for schema in registry.current.schemas}
    try:
        loaded = registry.load(ctx.client)
    except TeamVaultError as error:
        error.extend("The schemas loaded before stay in use.")
        raise
    registry.install(loaded)
    after = {schema.tool_name for schema in loaded.schemas}
    result = _schemas_result(registry, loaded)
    result.update(added=sorted(after - before), removed=sorted(before - after))
    return json_output(result)


def _registry(ctx: ToolContext) -> SchemaRegistry:
    if ctx.schemas is None:  # the tools exist only with TEAM_VAULT_SCHEMA_DIR
        raise ToolInputError("No schema folder is configured (TEAM_VAULT_SCHEMA_DIR).")
    return ctx.schemas


def _schemas_result(registry: SchemaRegistry, loaded: SchemaSet) -> dict[str, Any]:
    return {
        "folder": registry.folder,
        "status": loaded.status,
        "schemas": [schema.summary() for schema in loaded.schemas],
        "problems": [{"source": source, "problem": problem} for source, problem in loaded.problems],
    }


def upsert(schema: Schema, ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    """Create the note of ``schema`` that the fields name, or merge the given fields into its front matter."""
    project_id = ctx.project({})  # the project the schema note is in: the configured one
    path = schema.path_for(args)
    if ctx.client.find_file(project_id, path) is None:
        return _create(schema, ctx, project_id, path, schema.with_defaults(args))
    note = ctx.note(project_id, path)
    original = note.editable_text("its fields")
    check = ctx.yaml_check(note.path)
    changed = frontmatter.update(original, dict(args), [], note.path, check=check)
    after, _ = frontmatter.read(changed, note.path, check=check)
    extra = {"action": "updated" if changed != original else "unchanged", "frontmatter": after}
    return rewrite(
        ctx,
        project_id,
        note,
        changed,
        dry_run=False,
        edits="these fields",
        done="Updated",
        change=lambda text: frontmatter.update(text, dict(args), [], note.path, check=check),
        extra=extra,
    )


def _create(schema: Schema, ctx: ToolContext, project_id: str, path: str, values: dict[str, Any]) -> ToolOutput:
    text = frontmatter.update("", values, [], path)
    data = text.encode("utf-8")
    new_hash = sha256_hex(data)
    ctx.report.facts.saw(None, new_hash)
    _, verified = create_content(ctx, project_id, path, data)
    result: dict[str, Any] = {
        "path": path,
        "action": "created",
        "contentHash": new_hash,
        "frontmatter": frontmatter.read(text, path)[0],
        "diff": unified_diff("", text, before="/dev/null", after=f"b/{path}"),
    }
    result["summary"] = f"Created {path} ({schema.name}); its contentHash is {short_hash(new_hash)}."
    if verified:
        result.update(verified=True, note=VERIFIED)
        result["summary"] += f" {VERIFIED}"
    return ToolOutput(f"{result['summary']}\n{result['diff']}", result)


# -- the tools ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaArguments:
    """The arguments of an ``upsert_<name>`` tool: the fields of its schema note (see :attr:`Tool.spec`)."""

    schema: Schema

    def json_schema(self) -> dict[str, Any]:
        return self.schema.json_schema()

    def check(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self.schema.check(arguments)

    def paths(self, arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("path", self.schema.path_for(arguments))]

    def read(self, name: str, text: str) -> Any:
        """A field's value from a command line, by the field's type (a string, a date and an enum stay text)."""
        field = next((field for field in self.schema.fields if field.name == name), None)
        return FIELD_READERS.get(field.type, read_text)(name, text) if field is not None else text


#: What list_schemas answers; reload_schemas adds which tools it added and removed.
SCHEMAS_RESULT = {
    "folder": STRING,
    "status": STRING,
    "schemas": {"type": "array", "items": {"type": "object"}},
    "problems": {"type": "array", "items": {"type": "object"}},
}

CHANGED_TOOLS = {"added": {"type": "array", "items": STRING}, "removed": {"type": "array", "items": STRING}}

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="list_schemas",
        title="List schemas",
        description=(
            "The kinds of structured notes this vault defines (its schema notes): for each, its upsert_<name> "
            "tool, fields with their types and which are required, and where its notes go; and the schema notes "
            "that are invalid, with what is wrong."
        ),
        params=(),
        handler=list_schemas,
        takes_project=False,
        needs_schemas=True,
        output_schema=object_schema(SCHEMAS_RESULT, list(SCHEMAS_RESULT)),
    ),
    Tool(
        name="reload_schemas",
        title="Reload schemas",
        description=(
            "Read the schema notes again after someone changed them, and make the upsert_<name> tools what they "
            "now define: the schemas, the problems, and which tools were added or removed."
        ),
        params=(),
        handler=reload_schemas,
        writes=True,  # changes this server's tools (it writes no note)
        destructive=False,
        idempotent=True,
        takes_project=False,
        needs_schemas=True,
        output_schema=object_schema({**SCHEMAS_RESULT, **CHANGED_TOOLS}, [*SCHEMAS_RESULT, *CHANGED_TOOLS]),
    ),
)


def schema_tool(schema: Schema) -> Tool:
    """The ``upsert_<name>`` tool of a schema note."""
    where = schema.path_template
    return Tool(
        name=schema.tool_name,
        title=f"Create or update {schema.name}",
        description=(
            f"{schema.description.rstrip('.') + '. ' if schema.description else ''}"
            f"Creates the {schema.name} note at {where} (from the fields; {schema.identifier_field} identifies "
            f"it), or, when it exists, writes the given fields into its front matter and leaves the rest of the "
            f"note as it is. Every field is checked against the schema note {schema.source}."
        ),
        params=(),
        handler=functools.partial(upsert, schema),
        writes=True,
        destructive=True,  # replaces field values (the server keeps the old content as a version)
        idempotent=True,  # the same fields again leave the same note
        takes_project=False,  # the schema's notes live in the project the schema note is in
        spec=SchemaArguments(schema),
        output_schema=object_schema(
            {
                "path": STRING,
                "action": {"type": "string", "enum": ["created", "updated", "unchanged"]},
                "contentHash": STRING,
                "frontmatter": {"type": "object"},
                "diff": STRING,
                "summary": STRING,
                # an update (rewrite's result) also says these
                "previousHash": STRING,
                "changed": {"type": "boolean"},
                "dryRun": {"type": "boolean"},
                **STORY,
            },
            ["path", "action", "contentHash", "frontmatter", "diff", "summary"],
        ),
    )
