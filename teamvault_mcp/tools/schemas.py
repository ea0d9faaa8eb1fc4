"""Handlers for structured notes: front matter by field, and the tools generated from schema notes.

read_frontmatter, update_frontmatter; list_schemas, reload_schemas and each schema's
``upsert_<name>`` (see ``schemas.py`` for what a schema note holds). Every write goes
through the write rules of ``notes.py``: ``expectedHash``, the call's Idempotency-Key,
settled outcomes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import CallCancelledError, TeamVaultError, ToolInputError
from teamvault_mcp.text import frontmatter
from teamvault_mcp.text.diff import unified_diff
from teamvault_mcp.text.schemas import Schema, SchemaProblem, parse_schema_note
from teamvault_mcp.tools.context import ToolContext, ToolOutput, json_output, sha256_hex
from teamvault_mcp.tools.notes import mime_type_for
from teamvault_mcp.tools.writes import VERIFIED, expect, rewrite, settle_content

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient

log = logging.getLogger(__name__)


def read_frontmatter(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    note = ctx.note(project_id, args["path"])
    fields, parts = frontmatter.read(note.text, note.path, check=_yaml_check(ctx, note.path))
    result: dict[str, Any] = {
        "path": note.path,
        "frontmatter": fields,
        "hasFrontmatter": parts.present,
        "contentHash": note.content_hash,
    }
    if parts.unclosed:
        result["note"] = (
            "The note starts with a --- line that no later --- line closes: to Obsidian that is not front matter."
        )
    return json_output(result)


def update_frontmatter(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    changes: dict[str, Any] = args.get("set") or {}
    remove: list[str] = args.get("remove") or []
    if not changes and not remove:
        raise ToolInputError("Give set (fields to write), remove (field names to drop), or both.")
    both = sorted(set(changes) & set(remove))
    if both:
        raise ToolInputError(f"A field cannot be both set and removed: {', '.join(both)}.")
    note = ctx.note(project_id, args["path"])
    expected = args.get("expectedHash")
    expect(ctx, project_id, note.path, note.file, expected, current=(note.content_hash, note.text))
    original = note.editable_text("its front matter")
    check = _yaml_check(ctx, note.path)
    current, _ = frontmatter.read(original, note.path, check=check)
    changed = frontmatter.update(original, changes, remove, note.path, check=check)
    after, _ = frontmatter.read(changed, note.path, check=check)
    absent = [name for name in remove if name not in current]
    extra: dict[str, Any] = {"frontmatter": after}
    if absent:
        extra["absent"] = absent  # asked to remove, but not there: nothing to do for them
    return rewrite(
        ctx,
        project_id,
        note,
        changed,
        dry_run=bool(args.get("dryRun")),
        edits="these changes",
        done="Updated the front matter of",
        change=lambda text: frontmatter.update(text, changes, remove, note.path, check=check),
        expected=expected,
        extra=extra,
    )


def _yaml_check(ctx: ToolContext, path: str) -> Callable[[], None]:
    """Stops reading or changing the YAML of ``path`` when the call is cancelled or its budget has run out:
    parsing is CPU work that no request's time limit covers."""

    def check() -> None:
        if ctx.token is not None and ctx.token.cancelled:
            raise CallCancelledError()
        if ctx.budget is not None and ctx.budget.remaining() <= 0:
            raise frontmatter.FrontMatterError(
                f"The front matter of {path} took longer to read than this call's {ctx.budget.seconds:g} s budget, "
                "so it was stopped; nothing was written. Read the note with read_note instead."
            )

    return check


# -- schema tools -----------------------------------------------------------------------------------------

#: The start-up load of the schemas gets this long; the server answers tools/list by then at the latest.
SCHEMA_LOAD_LIMIT = 5.0
#: Schema notes read from the folder, at most (in path order).
MAX_SCHEMA_NOTES = 100


@dataclass(frozen=True)
class SchemaSet:
    """The schemas loaded from the folder, and what was wrong with the notes that did not load."""

    schemas: tuple[Schema, ...] = ()
    problems: tuple[tuple[str, str], ...] = ()  # (schema note, problem)
    status: str = "loading"


class SchemaRegistry:
    """The current :class:`SchemaSet`; replaced whole by each load, counted by ``generation``."""

    def __init__(self, project_id: str, folder: str) -> None:
        self.project_id = project_id
        self.folder = folder
        self.current = SchemaSet()
        self.generation = 0
        #: Set when the start-up load has ended, loaded or not.
        self.started = threading.Event()
        self._lock = threading.Lock()

    def install(self, loaded: SchemaSet) -> None:
        with self._lock:
            self.current = loaded
            self.generation += 1
        for source, problem in loaded.problems:
            log.warning("schema note %s not loaded: %s", source, problem)

    def load(self, client: TeamVaultClient) -> SchemaSet:
        """Read every schema note of the folder; a note that is not a valid schema becomes a problem."""
        files = sorted(
            (f for f in client.list_files(self.project_id, prefix=self.folder) if f.path.startswith(self.folder)),
            key=lambda f: f.path,
        )
        notes = [f for f in files if f.path.lower().endswith(".md")]
        problems: list[tuple[str, str]] = []
        if len(notes) > MAX_SCHEMA_NOTES:
            problems.append((self.folder, f"{len(notes)} notes; only the first {MAX_SCHEMA_NOTES} were read"))
        schemas: list[Schema] = []
        defined: dict[str, str] = {}
        for file in notes[:MAX_SCHEMA_NOTES]:
            if file.file_type != "TEXT":
                problems.append((file.path, "not a text note"))
                continue
            text = client.download(self.project_id, file.id).decode("utf-8", errors="replace")
            try:
                schema = parse_schema_note(file.path, text)
            except SchemaProblem as problem:
                problems.append((file.path, str(problem)))
                continue
            if schema.name in defined:
                problems.append(
                    (file.path, f"schemaName {schema.name!r} is already defined by {defined[schema.name]}; ignored")
                )
                continue
            defined[schema.name] = file.path
            schemas.append(schema)
        when = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        return SchemaSet(tuple(schemas), tuple(problems), f"loaded from {self.folder} at {when}")


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
    check = _yaml_check(ctx, note.path)
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
    ctx.facts.update(hashBefore=None, hashAfter=new_hash)
    _, verified = settle_content(
        ctx,
        project_id,
        path,
        lambda: ctx.client.create_file(project_id, path, data, mime_type_for(path)),
        before=None,
        data=data,
    )
    result: dict[str, Any] = {
        "path": path,
        "action": "created",
        "contentHash": new_hash,
        "frontmatter": frontmatter.read(text, path)[0],
        "diff": unified_diff("", text, before="/dev/null", after=f"b/{path}"),
    }
    if verified:
        result.update(verified=True, note=VERIFIED)
    headline = f"Created {path} ({schema.name}); its contentHash is {new_hash}."
    return ToolOutput(f"{headline}{' ' + VERIFIED if verified else ''}\n{result['diff']}", result)
