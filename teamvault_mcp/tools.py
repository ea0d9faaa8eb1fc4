"""The tool table: every tool declared once, with its schema, annotations, checks and handler.

``server.py`` loops over :data:`TOOLS`: the input schema sent in ``tools/list``, the
argument checks and the handler all come from one :class:`Tool` declaration.
Handlers are plain blocking functions; they get a :class:`ToolContext` (the call's
client and default project) and the checked arguments, and return a
:class:`ToolOutput` or raise a :class:`~teamvault_mcp.errors.TeamVaultError`.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from teamvault_mcp.errors import (
    HTTPStatusError,
    NoProjectError,
    NoteNotFoundError,
    NotTextError,
    ToolInputError,
)
from teamvault_mcp.paths import stored_path_of

if TYPE_CHECKING:  # the client pulls in `requests`, which start-up does not need
    from teamvault_mcp.client import TeamVaultClient, VaultFile

#: Largest note `write_note` accepts, in bytes of UTF-8. Notes are text; a bigger payload is a mistake.
MAX_CONTENT_BYTES = 5 * 1024 * 1024
MAX_PATH_CHARS = 4096
MAX_ID_CHARS = 256


@dataclass(frozen=True)
class Param:
    """One string argument of a tool."""

    name: str
    description: str
    kind: Literal["path", "content", "id", "prefix"] = "path"
    required: bool = True

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "description": self.description}
        if self.kind in ("path", "id"):
            schema["minLength"] = 1
        if self.kind == "content":
            schema["maxLength"] = MAX_CONTENT_BYTES
        return schema

    def check(self, value: Any) -> str:
        """The value if it is acceptable; a :class:`ToolInputError` saying what is wrong otherwise."""
        if not isinstance(value, str):
            raise ToolInputError(
                f"Argument '{self.name}' must be a string, got {_json_type(value)}. {self.description}"
            )
        if self.kind in ("path", "id") and not value:
            raise ToolInputError(f"Argument '{self.name}' must not be empty. {self.description}")
        limit = {"path": MAX_PATH_CHARS, "prefix": MAX_PATH_CHARS, "id": MAX_ID_CHARS}.get(self.kind)
        if limit is not None and len(value) > limit:
            raise ToolInputError(f"Argument '{self.name}' is {len(value)} characters long; the limit is {limit}.")
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise ToolInputError(
                f"Argument '{self.name}' is not valid Unicode text (a lone surrogate at character {exc.start})."
            ) from None
        if self.kind == "content" and size > MAX_CONTENT_BYTES:
            raise ToolInputError(
                f"Argument '{self.name}' is {size:,} bytes; notes written through this tool are limited to "
                f"{MAX_CONTENT_BYTES:,} bytes (UTF-8). Nothing was written; split the text into several notes."
            )
        return value


@dataclass(frozen=True)
class ToolOutput:
    """A tool's success: the text the model reads, and the same data as structured content."""

    text: str
    structured: dict[str, Any] | None = None


@dataclass
class ToolContext:
    """What a handler needs: the call's client and the default project."""

    client: TeamVaultClient
    default_project_id: str | None

    def project(self, args: Mapping[str, Any]) -> str:
        project_id = args.get("projectId") or self.default_project_id
        if not project_id:
            raise NoProjectError()
        return str(project_id)

    def existing(self, project_id: str, path: str) -> tuple[str, VaultFile]:
        """The stored form of ``path`` and the live file there; :class:`NoteNotFoundError` if none."""
        stored = stored_path_of(path)
        file = self.client.find_file(project_id, stored)
        if file is None:
            raise NoteNotFoundError(stored)
        return stored, file


Handler = Callable[[ToolContext, Mapping[str, Any]], ToolOutput]


@dataclass(frozen=True)
class Tool:
    """One MCP tool, declared once."""

    name: str
    title: str
    description: str
    params: tuple[Param, ...]
    handler: Handler
    writes: bool = False
    #: MCP hints; see https://modelcontextprotocol.io/specification (ToolAnnotations).
    destructive: bool = False
    idempotent: bool = True
    output_schema: dict[str, Any] | None = None
    takes_project: bool = True
    all_params: tuple[Param, ...] = field(init=False)

    def __post_init__(self) -> None:
        extra = (PROJECT_ID,) if self.takes_project else ()
        object.__setattr__(self, "all_params", self.params + extra)

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {param.name: param.schema() for param in self.all_params},
            "required": [param.name for param in self.all_params if param.required],
            "additionalProperties": False,
        }

    def check_arguments(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments, checked against the declaration; :class:`ToolInputError` on the first problem."""
        arguments = arguments or {}
        known = {param.name for param in self.all_params}
        unknown = sorted(set(arguments) - known)
        if unknown:
            accepted = ", ".join(sorted(known)) or "none"
            raise ToolInputError(
                f"Unknown argument{'s' if len(unknown) > 1 else ''} for {self.name}: {', '.join(unknown)}. "
                f"Accepted: {accepted}."
            )
        checked: dict[str, Any] = {}
        for param in self.all_params:
            value = arguments.get(param.name)
            if value is None:
                if param.required:
                    raise ToolInputError(f"Missing required argument '{param.name}'. {param.description}")
                continue
            checked[param.name] = param.check(value)
        return checked


# -- arguments shared by several tools ----------------------------------------------------------

PROJECT_ID = Param(
    "projectId",
    "Team Vault project id (from list_projects). Optional: defaults to the configured project.",
    kind="id",
    required=False,
)
NOTE_PATH = Param(
    "path",
    "Vault-relative path of the note, e.g. 'people/kuzma-minin.md'. "
    "'./a.md', 'dir\\a.md' and 'dir//a.md' name the same notes as 'a.md' and 'dir/a.md'.",
)


# -- handlers -----------------------------------------------------------------------------------


def whoami(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    user = ctx.client.whoami()
    return _json_output({"id": user.get("id"), "email": user.get("email"), "name": user.get("name")})


def list_projects(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    projects = [{"id": p.get("id"), "slug": p.get("slug"), "name": p.get("name")} for p in ctx.client.list_projects()]
    return _json_output(projects, key="projects")


def list_notes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    files = ctx.client.list_files(project_id, prefix=_prefix(args.get("prefix")))
    notes = [{"path": f.path, "type": f.file_type, "size": f.size} for f in files]
    return _json_output(notes, key="notes")


def read_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    path, file = ctx.existing(project_id, args["path"])
    if file.file_type != "TEXT":
        raise NotTextError(path, file.mime_type or file.file_type)
    return ToolOutput(ctx.client.download(project_id, file.id).decode("utf-8", errors="replace"))


def list_note_versions(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    _, file = ctx.existing(project_id, args["path"])
    versions = ctx.client.list_versions(project_id, file.id)
    if all(isinstance(v.get("versionNumber"), int) for v in versions):
        versions.sort(key=lambda v: v["versionNumber"], reverse=True)  # newest first, whatever the server did
    return _json_output(versions, key="versions")


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
    return _json_output({"path": written.path, "action": action, "size": size})


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
    return _json_output({"id": moved.get("id", file.id), "path": moved.get("path", new_path)})


def delete_note(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    path, file = ctx.existing(project_id, args["path"])
    ctx.client.delete_file(project_id, file.id)
    return _json_output({"path": path, "action": "deleted"})


# -- helpers ------------------------------------------------------------------------------------


def mime_type_for(path: str) -> str:
    """The mime type a new note is created with. Always a text type: the content is text."""
    name = path.rsplit("/", 1)[-1].lower()
    if "." not in name or name.endswith((".md", ".markdown")):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed and (guessed.startswith("text/") or guessed in ("application/json", "application/yaml")):
        return guessed
    return "text/plain"


def _prefix(raw: str | None) -> str | None:
    """The server-side prefix filter: the stored spelling of ``raw``, keeping a trailing ``/``."""
    if raw is None or raw in ("", ".", "./", ".\\", "/", "\\"):
        return None  # the whole vault
    folder = raw.endswith(("/", "\\"))
    stored = stored_path_of(raw)
    return stored + "/" if folder else stored


def _json_output(value: Any, *, key: str | None = None) -> ToolOutput:
    text = json.dumps(value, ensure_ascii=False, indent=2)
    structured = {key: value} if key is not None else value
    return ToolOutput(text, structured)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def _list_schema(key: str, item: dict[str, Any]) -> dict[str, Any]:
    return _object_schema({key: {"type": "array", "items": item}}, [key])


_STRING = {"type": "string"}
_NULLABLE_STRING = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"]}


# -- the table ----------------------------------------------------------------------------------

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="whoami",
        title="Who am I",
        description=(
            "Return the Team Vault user that the configured API key belongs to: id, email and name. "
            "Use it to check that the connection works or to know whose name your edits appear under."
        ),
        params=(),
        handler=whoami,
        takes_project=False,
        output_schema=_object_schema({"id": _STRING, "email": _NULLABLE_STRING, "name": _NULLABLE_STRING}, ["id"]),
    ),
    Tool(
        name="list_projects",
        title="List projects",
        description=(
            "List the Team Vault projects (shared vaults) the API key can access, as id, slug and name. "
            "Pass a project's id as projectId to the other tools when no default project is configured "
            "or to work in another vault."
        ),
        params=(),
        handler=list_projects,
        takes_project=False,
        output_schema=_list_schema(
            "projects",
            _object_schema({"id": _STRING, "slug": _NULLABLE_STRING, "name": _NULLABLE_STRING}, ["id"]),
        ),
    ),
    Tool(
        name="list_notes",
        title="List notes",
        description=(
            "List the files of a project as path, type (TEXT or BINARY) and size in bytes, sorted by path. "
            "Use prefix to list one folder and everything below it, e.g. 'people/'; a prefix without a "
            "trailing slash also matches names that merely start with it ('people' matches 'people-old.md')."
        ),
        params=(
            Param(
                "prefix",
                "Only list paths starting with this, e.g. 'people/' for one folder. Omit for the whole vault.",
                kind="prefix",
                required=False,
            ),
        ),
        handler=list_notes,
        output_schema=_list_schema(
            "notes",
            _object_schema({"path": _STRING, "type": _STRING, "size": _NULLABLE_INT}, ["path", "type"]),
        ),
    ),
    Tool(
        name="read_note",
        title="Read note",
        description=(
            "Return the full text of a text note (markdown, txt, json, yaml, csv) by its vault path, exactly "
            "as stored. Binary files such as images are not returned. Paths are case-sensitive."
        ),
        params=(NOTE_PATH,),
        handler=read_note,
    ),
    Tool(
        name="list_note_versions",
        title="List note versions",
        description=(
            "List the saved version history of a note, newest first: id, versionNumber, contentHash, message, "
            "createdAt and the author where the server reports them. The server records a version on every "
            "change of content made through the API or the Obsidian plugin."
        ),
        params=(NOTE_PATH,),
        handler=list_note_versions,
        output_schema=_list_schema("versions", {"type": "object"}),
    ),
    Tool(
        name="write_note",
        title="Write note",
        description=(
            "Create a text note at a vault path, or replace the whole content of the note already there. "
            "Returns the stored path, whether the note was 'created' or 'updated', and its size in bytes. "
            "Other people edit these notes too: read the note first and keep their changes. Missing folders "
            "are created implicitly. A retried call never writes twice."
        ),
        params=(
            Param("path", "Vault-relative path of the note to write, e.g. 'meetings/2026-11-30.md'."),
            Param(
                "content",
                "The complete new text of the note (UTF-8). Replaces everything that was there.",
                kind="content",
            ),
        ),
        handler=write_note,
        writes=True,
        destructive=True,  # replaces the previous content (the server keeps it as a version)
        idempotent=True,  # the same content written twice leaves the same note
        output_schema=_object_schema(
            {
                "path": _STRING,
                "action": {"type": "string", "enum": ["created", "updated"]},
                "size": {"type": "integer"},
            },
            ["path", "action", "size"],
        ),
    ),
    Tool(
        name="move_note",
        title="Move or rename note",
        description=(
            "Move or rename a note within the project; it keeps its id and version history. Fails if a "
            "note already exists at newPath. Links in other notes are not rewritten."
        ),
        params=(
            Param("path", "Current vault path of the note, e.g. 'inbox/idea.md'."),
            Param("newPath", "New vault path, e.g. 'projects/idea.md'. Missing folders are created implicitly."),
        ),
        handler=move_note,
        writes=True,
        destructive=False,  # nothing is lost; moving back restores the old state
        idempotent=False,  # a repeat could move another note that has appeared at the old path
        output_schema=_object_schema({"id": _STRING, "path": _STRING}, ["id", "path"]),
    ),
    Tool(
        name="delete_note",
        title="Delete note",
        description=(
            "Delete a note by its vault path. The delete is soft: the server keeps a tombstone and the "
            "version history, so an administrator can recover it, and writing a note at the same path "
            "later revives it."
        ),
        params=(NOTE_PATH,),
        handler=delete_note,
        writes=True,
        destructive=True,
        idempotent=True,
        output_schema=_object_schema(
            {"path": _STRING, "action": {"type": "string", "enum": ["deleted"]}}, ["path", "action"]
        ),
    ),
)


def tools_for(read_only: bool) -> tuple[Tool, ...]:
    """The tools to register: in read-only mode the write tools do not exist at all."""
    return tuple(tool for tool in TOOLS if not (read_only and tool.writes))
