"""The front-matter tools: read_frontmatter and update_frontmatter, a note's YAML properties by field.

The YAML is read and changed by ``text/frontmatter.py`` (only the fields named change; the
rest keeps its exact text); a change is written like any edit (``writing/rewrite.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from teamvault_mcp.errors import ToolInputError, short_hash
from teamvault_mcp.text import frontmatter
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.spec import DRY_RUN, EXPECTED_HASH, NOTE_PATH, STRING, See, Tool, object_schema
from teamvault_mcp.tools.writing.rewrite import rewrite, rewritten_schema
from teamvault_mcp.tools.writing.rules import expect


def read_frontmatter(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    note = ctx.note(project_id, args["path"])
    fields, parts = frontmatter.read(note.text, note.path, check=ctx.yaml_check(note.path))
    result: dict[str, Any] = {
        "path": note.path,
        "frontmatter": fields,
        "hasFrontmatter": parts.present,
        "contentHash": note.content_hash,
    }
    said = json.dumps(fields, ensure_ascii=False) if parts.present else f"{{}} ({note.path} has no front matter)"
    if parts.unclosed:
        result["note"] = (
            "The note starts with a --- line that no later --- line closes: to Obsidian that is not front matter."
        )
        said += f" {result['note']}"
    return ToolOutput(f"{said}\n[contentHash: {short_hash(note.content_hash)}]", result)


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
    expected = expect(
        ctx, project_id, note.path, note.file, args.get("expectedHash"), current=(note.content_hash, note.text)
    )
    original = note.editable_text("its front matter")
    check = ctx.yaml_check(note.path)
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
        apply=("update_frontmatter", {**args, "path": note.path}),
    )


# -- the tools ----------------------------------------------------------------------------------------

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="read_frontmatter",
        title="Read front matter",
        description=(
            "A note's front matter (its YAML properties) as JSON, {} if none, then its contentHash. Dates come "
            "as 'YYYY-MM-DD'."
        ),
        see=(See(("update_frontmatter",), "Change fields with update_frontmatter, not by editing the YAML."),),
        params=(NOTE_PATH,),
        handler=read_frontmatter,
        output_schema=object_schema(
            {
                "path": STRING,
                "frontmatter": {"type": "object"},
                "hasFrontmatter": {"type": "boolean"},
                "contentHash": STRING,
                "note": STRING,
            },
            ["path", "frontmatter", "hasFrontmatter", "contentHash"],
        ),
    ),
    Tool(
        name="update_frontmatter",
        title="Update front matter",
        description=(
            "Change a note's front matter by field: set writes each field whole (a list or object replaces the "
            "old value), remove drops fields; all else keeps its exact text. Returns the diff, the fields and the "
            "new contentHash; dryRun previews."
        ),
        params=(
            NOTE_PATH,
            Param(
                "set",
                'Fields to write, e.g. {"status": "done"}; null empties one.',
                kind="fields",
                required=False,
            ),
            Param("remove", "Top-level field names to drop.", kind="keys", required=False),
            DRY_RUN,
            EXPECTED_HASH,
        ),
        handler=update_frontmatter,
        writes=True,
        path_params=("path",),
        destructive=True,  # changes content (the server keeps the old content as a version)
        idempotent=True,  # the same fields set again leave the same note
        output_schema=rewritten_schema(
            {"frontmatter": {"type": "object"}, "absent": {"type": "array", "items": STRING}}, required=("frontmatter",)
        ),
    ),
)
