"""The section tool, edit_section: text put into one section of a note, found by its heading, no anchor needed.

Where the text goes and the blank lines around it are ``text/sections.py``'s; the write is
``edit_note``'s (``writing/rewrite.py``): ``expectedHash``, the per-request Idempotency-Key,
settled outcomes, conditional writes and the after-the-fact race check. Without
``expectedHash`` a colleague's write meanwhile is rebased on (the content goes into their text);
with it, it is a conflict. ``create=true`` makes a missing note through the create path
(a lost answer is settled; a colleague creating it at the same moment gets the content in theirs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from teamvault_mcp.errors import EditFailedError, HTTPStatusError, NoteNotFoundError, ToolInputError, short_hash
from teamvault_mcp.text import sections
from teamvault_mcp.text.diff import hunks_only, unified_diff
from teamvault_mcp.text.excerpts import section_of
from teamvault_mcp.text.markdown import AmbiguousBreadcrumb, MissingHeading, parse
from teamvault_mcp.text.paths import stored_path_of
from teamvault_mcp.tools.context import Note, ToolContext, ToolOutput, sha256_hex
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.spec import NULLABLE_STRING, Tool
from teamvault_mcp.tools.writing.rewrite import rewrite, rewritten_schema
from teamvault_mcp.tools.writing.rules import VERIFIED, create_content, expect
from teamvault_mcp.vault.retry import outcome

#: Content longer than this is not repeated in a dry run's "apply it with" call.
SHOWN_CONTENT_CHARS = 300


def edit_section(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    try:
        note = ctx.note(project_id, args["path"])
    except NoteNotFoundError as missing:
        if not args.get("create"):
            missing.extend("(create=true makes it, with this section.)")
            raise
        expect(ctx, project_id, missing.path, None, args.get("expectedHash"))  # a hash of a note that is gone
        return _create(ctx, project_id, args)
    return _edit(ctx, project_id, note, args)


def _edit(ctx: ToolContext, project_id: str, note: Note, args: Mapping[str, Any], story: str = "") -> ToolOutput:
    section, content, mode = args["section"], args["content"], args.get("mode", "append")
    dry_run = bool(args.get("dryRun"))
    expected = expect(
        ctx, project_id, note.path, note.file, args.get("expectedHash"), current=(note.content_hash, note.text)
    )
    text = note.editable_text("a section")
    try:
        placed = sections.place(text, section, content, mode)
    except MissingHeading as missing:  # named as section reads name it: the headings that are there
        section_of(note.path, parse(text), [*missing.found, missing.missing])
        raise
    except AmbiguousBreadcrumb as ambiguous:  # one name that headings at two depths have: as a section read says
        section_of(note.path, parse(text), [ambiguous.text])
        raise
    output = rewrite(
        ctx,
        project_id,
        note,
        placed.text,
        dry_run=dry_run,
        edits="these lines",
        done=_done(mode, section, placed),
        change=lambda theirs: _again(theirs, section, content, mode),
        expected=expected,
    )
    result = output.structured or {}
    if dry_run and result.get("changed"):
        would = _done(mode, section, placed, would=True)
        result["summary"] = (
            f"Dry run: nothing was written. {would} {note.path}, making its contentHash "
            f"{short_hash(result['contentHash'])} (it is {short_hash(result['previousHash'])} now)."
        )
        result["applyWith"] = _call(args, expectedHash=short_hash(result["previousHash"]))
        headline = f"{result['summary']} Apply it with: {result['applyWith']}"
        return ToolOutput(f"{headline}\n{hunks_only(result['diff'])}", result)
    if story:
        first, _, rest = output.text.partition("\n")
        return ToolOutput(f"{first} {story}\n{rest}", {**result, "note": story, "summary": f"{first} {story}"})
    return output


def _again(text: str, section: Sequence[str] | str, content: str, mode: str) -> str:
    """The same edit on a colleague's text: an :class:`EditFailedError` when it no longer applies there."""
    try:
        return sections.edit_section(text, section, content, mode)
    except MissingHeading:
        raise EditFailedError(f"the section {_named(section)} is not in their text (renamed or removed).") from None
    except ToolInputError as error:  # their text repeats a title the breadcrumb names
        raise EditFailedError(str(error)) from None
    except AmbiguousBreadcrumb as ambiguous:
        paths = " and ".join(json.dumps(list(path), ensure_ascii=False) for path in ambiguous.paths[:5])
        raise EditFailedError(f'in their text, "{ambiguous.text}" names more than one section: {paths}.') from None


def _create(ctx: ToolContext, project_id: str, args: Mapping[str, Any]) -> ToolOutput:
    """A new note holding the section and its content, through the create path."""
    path = stored_path_of(args["path"], incoming=True)  # the server's gate for new paths, before the POST
    text = sections.create_note_with(args["section"], args["content"])
    data = text.encode("utf-8")
    new_hash = sha256_hex(data)
    diff = unified_diff("", text, before="/dev/null", after=f"b/{path}")
    result: dict[str, Any] = {
        "path": path,
        "dryRun": bool(args.get("dryRun")),
        "changed": True,
        "created": True,
        "previousHash": None,
        "contentHash": new_hash,
        "diff": diff,
    }
    ctx.report.facts.saw(None, new_hash)
    if args.get("dryRun"):
        ctx.report.noop = True
        result["summary"] = (
            f"Dry run: nothing was written. {path} does not exist; this would create it with contentHash "
            f"{short_hash(new_hash)}."
        )
        result["applyWith"] = _call(args)
        return ToolOutput(f"{result['summary']} Apply it with: {result['applyWith']}\n{hunks_only(diff)}", result)
    try:
        written, verified = create_content(ctx, project_id, path, data)
    except HTTPStatusError as error:
        if error.status != 409 or error.code != "path_exists" or outcome(error).uncertain:
            raise
        # Someone created the note between our look and our create: the content goes into theirs.
        ctx.client.new_write()
        ctx.report.clear()
        story = "Someone created the note at the same moment; the content went into their text."
        return _edit(ctx, project_id, ctx.note(project_id, path), args, story)
    result["path"] = written.path
    headline = f"Created {written.path}"
    if _named(args["section"]) != "the whole note":
        headline += f" with the section {_named(args['section'])}"
    headline += f"; its contentHash is {short_hash(new_hash)}."
    if verified:
        result.update(verified=True, note=VERIFIED)
        headline += f" {VERIFIED}"
    result["summary"] = headline
    return ToolOutput(f"{headline}\n{hunks_only(diff)}", result)


def _named(section: Sequence[str] | str) -> str:
    names = section.split(" > ") if isinstance(section, str) else list(section)
    names = [name.strip() for name in names if name.strip()]
    return f'"{" > ".join(names)}"' if names else "the whole note"


def _done(mode: str, section: Sequence[str] | str, placed: sections.Placement, *, would: bool = False) -> str:
    """What the edit did (or would do), before the note's path: ``Appended to "A > B" in``, saying where in the
    section when that is inside a subsection or before one: ``Appended to "A > B" (after the last line of
    "### C"; …) in``."""
    named = _named(section)
    given = [name for name in (section.split(" > ") if isinstance(section, str) else section) if name.strip()]
    if placed.section and len(placed.section) != len(given):
        named = _named(list(placed.section))  # one name found below the top level: its full path
    if named == "the whole note":
        done, do = {
            "append": ("Appended to the end of", "append the content to the end of"),
            "append_body": ("Appended to the end of", "append the content to the end of"),
            "prepend": ("Added at the top of", "add the content at the top of"),
            "replace": ("Replaced the text of", "replace the text of"),
        }[mode]
        if mode == "append_body" and placed.before:
            done, do = (
                f'{verb} before its first heading "{placed.before}" of' for verb in ("Added", "add the content")
            )
        return f"This would {do}" if would else done
    done, do = {
        "append": ("Appended to", "append the content to"),
        "append_body": ("Appended to", "append the content to"),
        "prepend": ("Added under the heading", "add the content under the heading"),
        "replace": ("Replaced the body of", "replace the body of"),
    }[mode]
    where = ""
    if placed.after:
        where = f' (after the last line of "{placed.after}"; mode=append_body writes before the first subheading)'
    elif placed.before:
        where = f' (before its first subheading "{placed.before}")'
    return f"This would {do} {named}{where} in" if would else f"{done} {named}{where} in"


def _call(args: Mapping[str, Any], **changes: Any) -> str:
    """The edit_section call that applies what a dry run showed (the content itself left out when it is long)."""
    values = {**args, **changes}
    values.pop("dryRun", None)
    parts = []
    for name in ("path", "section", "content", "mode", "create", "expectedHash", "projectId"):
        if name not in values or (name == "mode" and values[name] == "append") or values[name] is False:
            continue
        value = values[name]
        if name == "content" and len(value) > SHOWN_CONTENT_CHARS:
            parts.append(f"content=<the same content, {len(value):,} characters>")
        else:
            parts.append(f"{name}={json.dumps(value, ensure_ascii=False)}")
    return f"edit_section({', '.join(parts)})"


# -- the tool ----------------------------------------------------------------------------------------------

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="edit_section",
        title="Edit section",
        description=(
            "Write into a section without reading the note. mode append (default): at the section's end, "
            "subsections included, before the next heading of the same or a higher level; prepend: under the "
            "heading; replace: its body."
        ),
        params=(  # what the description says is not said again: the tool list is carried on every turn
            Param("path", "The note."),
            Param("section", "tocPath; [] = whole note.", kind="section"),
            Param("content", "Markdown.", kind="note_text"),
            Param(
                "mode",
                "append_body: before the first subheading.",
                kind="choice",
                required=False,
                choices=sections.MODES,
            ),
            Param("expectedHash", "Write only if unchanged since.", kind="hash", required=False),
            Param("dryRun", "Diff only.", kind="flag", required=False),
            Param("create", "Make a missing note.", kind="flag", required=False),
        ),
        handler=edit_section,
        writes=True,
        path_params=("path",),
        destructive=True,  # replace mode replaces a section's text (the server keeps the old content as a version)
        idempotent=False,  # an append repeated appends twice
        output_schema=rewritten_schema(
            {"previousHash": NULLABLE_STRING, "created": {"type": "boolean"}, "note": {"type": "string"}}
        ),
    ),
)
