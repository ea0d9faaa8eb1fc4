"""Handlers of the tools that identify, change and look back on notes.

whoami, list_projects, list_note_versions, write_note, move_note, delete_note.
Reading notes (read_note, read_notes, note_outline, list_notes) lives in ``reading.py``.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from teamvault_mcp.calls import ToolContext, ToolOutput, json_output
from teamvault_mcp.errors import HTTPStatusError, NotTextError
from teamvault_mcp.paths import stored_path_of

if TYPE_CHECKING:
    from teamvault_mcp.client import VaultFile


def whoami(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    user = ctx.client.whoami()
    return json_output({"id": user.get("id"), "email": user.get("email"), "name": user.get("name")})


def list_projects(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    projects = [{"id": p.get("id"), "slug": p.get("slug"), "name": p.get("name")} for p in ctx.client.list_projects()]
    return json_output(projects, key="projects")


def list_note_versions(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    _, file = ctx.existing(project_id, args["path"])
    versions = ctx.client.list_versions(project_id, file.id)
    if all(isinstance(v.get("versionNumber"), int) for v in versions):
        versions.sort(key=lambda v: v["versionNumber"], reverse=True)  # newest first, whatever the server did
    return json_output(versions, key="versions")


def write_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    path = stored_path_of(args["path"])
    content = args["content"].encode("utf-8")
    existing = ctx.client.find_file(project_id, path)
    if existing is not None:
        if existing.file_type != "TEXT":
            raise NotTextError(path, existing.mime_type or existing.file_type)
        written = ctx.client.replace_content(project_id, existing.id, content)
        action = "updated"
    else:
        stored_path_of(args["path"], incoming=True)  # the server's gate for new paths, before the POST
        written = _create(ctx, project_id, path, content)
        action = "created"
    size = written.size if written.size is not None else len(content)
    return json_output({"path": written.path, "action": action, "size": size})


def _create(ctx: ToolContext, project_id: str, path: str, content: bytes) -> VaultFile:
    try:
        return ctx.client.create_file(project_id, path, content, mime_type_for(path))
    except HTTPStatusError as error:
        # 409 path_exists after an attempt that got no answer: on a server without
        # Idempotency-Key support that attempt may be the one that created the note.
        # If the note there holds exactly our bytes, the write did happen.
        if error.code == "path_exists" and error.uncertain:
            there = ctx.client.find_file(project_id, path)
            if there is not None and there.content_hash == hashlib.sha256(content).hexdigest():
                return there
        raise


def move_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    new_path = stored_path_of(args["newPath"], incoming=True)  # refused before any request, like path
    _, file = ctx.existing(project_id, args["path"])
    moved = ctx.client.move_file(project_id, file.id, new_path)
    return json_output({"id": moved.get("id", file.id), "path": moved.get("path", new_path)})


def delete_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    path, file = ctx.existing(project_id, args["path"])
    ctx.client.delete_file(project_id, file.id)
    return json_output({"path": path, "action": "deleted"})


def mime_type_for(path: str) -> str:
    """The mime type a new note is created with. Always a text type: the content is text."""
    name = path.rsplit("/", 1)[-1].lower()
    if "." not in name or name.endswith((".md", ".markdown")):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed and (guessed.startswith("text/") or guessed in ("application/json", "application/yaml")):
        return guessed
    return "text/plain"
