"""Handlers for structured notes: front matter by field, and the tools generated from schema notes.

read_frontmatter, update_frontmatter; list_schemas, reload_schemas and each schema's
``upsert_<name>`` (see ``schemas.py`` for what a schema note holds). Every write goes
through the write rules of ``notes.py``: ``expectedHash``, the call's Idempotency-Key,
settled outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from teamvault_mcp import frontmatter
from teamvault_mcp.calls import ToolContext, ToolOutput, json_output
from teamvault_mcp.errors import EditFailedError, ToolInputError
from teamvault_mcp.notes import expect, rewrite


def read_frontmatter(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    note = ctx.note(project_id, args["path"])
    fields, parts = frontmatter.read(note.text, note.path)
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
    expect(ctx, project_id, note.path, note.file, args.get("expectedHash"), current=(note.content_hash, note.text))
    try:
        original = note.data.decode("utf-8")
    except UnicodeDecodeError:
        problem = f"{note.path} is not valid UTF-8 text; its front matter cannot be changed safely."
        raise EditFailedError(problem) from None
    current, _ = frontmatter.read(original, note.path)
    changed = frontmatter.update(original, changes, remove, note.path)
    after, _ = frontmatter.read(changed, note.path)
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
        extra=extra,
    )
