"""Rewriting a note's text: :func:`rewrite`, the write every edit tool makes (edit_note, update_frontmatter,
edit_section, replace_in_notes…): the same text is no write, a dry run shows the diff and the call that applies
it, and a change is a content write (``content.py``) whose answer shows the diff of what it wrote."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from teamvault_mcp.errors import short_hash
from teamvault_mcp.text.diff import hunks_only, unified_diff
from teamvault_mcp.tools.context import Note, ToolContext, ToolOutput, sha256_hex
from teamvault_mcp.tools.spec import STRING, object_schema
from teamvault_mcp.tools.writing.content import Mode, write_content
from teamvault_mcp.tools.writing.story import STORY, written_result


def rewrite(
    ctx: ToolContext,
    project_id: str,
    note: Note,
    changed: str,
    *,
    dry_run: bool,
    edits: str,
    done: str,
    change: Callable[[str], str] | None = None,
    expected: str | None = None,
    extra: dict[str, Any] | None = None,
    apply: tuple[str, Mapping[str, Any]] | None = None,
) -> ToolOutput:
    """Replace ``note``'s text by ``changed`` (unless it is the same, or a dry run): the result with its diff.

    ``edits`` names what changes it in messages ("the edits"), ``done`` what was done ("Edited");
    ``change`` makes the same change on another text (to rebase onto a colleague's write);
    ``expected`` is the agent's expectedHash (then a colleague's write is a conflict);
    ``extra`` adds fields to the result; ``apply`` is the tool and arguments of a dry run, to say the
    exact call that applies it.

    The text is the headline, then the diff's hunks; the data holds the headline as ``summary`` (the
    call after "Apply with:" as ``applyWith``), the whole diff, both hashes in full and the story.
    """
    original = note.data.decode("utf-8")
    data = changed.encode("utf-8")
    result: dict[str, Any] = {
        "path": note.path,
        "dryRun": dry_run,
        "changed": changed != original,
        "previousHash": note.content_hash,
        "contentHash": sha256_hex(data),
        "diff": "",  # made once the write is done (a dry run: now), within the budget: diff.py
        **(extra or {}),
    }
    ctx.report.facts.saw(note.content_hash, result["contentHash"])
    if changed == original:
        ctx.report.noop = True
        result["summary"] = (
            f"No change: {edits} leave {note.path} as it is (contentHash {short_hash(note.content_hash)}). "
            "Nothing was written."
        )
        return ToolOutput(result["summary"], result)
    if dry_run:
        ctx.report.noop = True
        result["diff"] = diff = _diff(ctx, note.path, original, changed)
        result["summary"] = (
            f"Dry run: nothing was written. {note.path}: previousHash {short_hash(note.content_hash)}, contentHash "
            f"{short_hash(result['contentHash'])} once applied."
        )
        if apply is None:
            return ToolOutput(f"{result['summary']}\n{hunks_only(diff)}", result)
        tool, args = apply
        result["applyWith"] = applying_call(tool, args, short_hash(note.content_hash))
        return ToolOutput(f"{result['summary']} Apply with: {result['applyWith']}\n{hunks_only(diff)}", result)
    mode: Mode = "strict" if expected is not None else "rebase" if change is not None else "replace"
    written = write_content(
        ctx, project_id, note.path, note.file, data, mode=mode, read=note.data, change=change, expected=expected
    )
    if written.data != data and written.based_on is not None:  # made again on a colleague's change: show ours there
        result["contentHash"] = sha256_hex(written.data)
        result["diff"] = diff = _diff(ctx, note.path, _text(written.based_on), _text(written.data))
        ctx.report.facts.now(result["contentHash"])
    else:
        result["diff"] = diff = _diff(ctx, note.path, original, changed)
    said = f"{done} {note.path}; its contentHash is now {short_hash(result['contentHash'])}."
    output = written_result(ctx, result, written, said)
    return ToolOutput(f"{output.text}\n{hunks_only(diff)}", result)


#: Seconds of the budget a write's diff leaves for the answer: past them, the diff is summarised (diff.py).
DIFF_RESERVE_SECONDS = 1.0


def _diff(ctx: ToolContext, path: str, old: str, new: str) -> str:
    """The diff a rewrite's answer shows, bounded by its work and by the call's budget (then a summary line)."""
    return unified_diff(old, new, before=f"a/{path}", after=f"b/{path}", deadline=ctx.deadline(DIFF_RESERVE_SECONDS))


#: A dry run's call is written out in full up to this many characters of arguments; a longer one is described.
APPLY_CALL_CHARS = 1_000


def applying_call(tool: str, args: Mapping[str, Any], previous_hash: str) -> str:
    """The call that applies a dry run: its arguments without ``dryRun``, with ``expectedHash``, in JSON."""
    kept = {name: value for name, value in args.items() if name not in ("dryRun", "expectedHash")}
    shown = ", ".join(f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in kept.items())
    if len(shown) > APPLY_CALL_CHARS:
        return f'the same {tool} call without dryRun, with expectedHash="{previous_hash}".'
    return f'{tool}({shown}, expectedHash="{previous_hash}")'


#: The fields of :func:`rewrite`'s result, all of them always there: ``summary`` is the text's headline (the
#: sentences above the diff's hunks), ``diff`` the whole diff (the text shows its hunks).
REWRITTEN = {
    "path": STRING,
    "dryRun": {"type": "boolean"},
    "changed": {"type": "boolean"},
    "previousHash": STRING,
    "contentHash": STRING,
    "diff": STRING,
    "summary": STRING,
}

#: A dry run's call that applies it, exactly as the text shows it after "Apply with:" (when the tool gives one).
APPLY_WITH = {"applyWith": STRING}


def rewritten_schema(extra: dict[str, Any] | None = None, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The output schema of a tool that answers with :func:`rewrite`'s result, plus its ``extra`` fields
    (``required`` of them always there), the dry run's ``applyWith`` and the story's fields."""
    return object_schema({**REWRITTEN, **APPLY_WITH, **STORY, **(extra or {})}, [*REWRITTEN, *required])


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
