"""The tool table: every tool declared once, with its schema, annotations, checks and handler.

``server.py`` loops over :data:`TOOLS`: the input schema sent in ``tools/list``, the
argument checks and the handler all come from one :class:`Tool` declaration. The
handlers live in ``notes.py`` and ``reading.py``; see ``calls.py`` for what they get.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.text.schemas import Schema
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.history import diff_note_versions, list_note_versions, read_note_version, restore_note_version
from teamvault_mcp.tools.notes import delete_note, edit_note, list_projects, move_note, whoami, write_note
from teamvault_mcp.tools.reading import (
    DEFAULT_EXCERPT_CHARS,
    DEFAULT_LIST_LIMIT,
    OUTLINE_HEADINGS,
    list_notes,
    note_outline,
    read_note,
    read_notes,
)
from teamvault_mcp.tools.schemas import list_schemas, read_frontmatter, reload_schemas, update_frontmatter, upsert
from teamvault_mcp.tools.search import DEFAULT_FOUND, DEFAULT_HITS, find_notes, search_notes

#: Largest note `write_note` accepts, in bytes of UTF-8. Notes are text; a bigger payload is a mistake.
MAX_CONTENT_BYTES = 5 * 1024 * 1024
MAX_PATH_CHARS = 4096
MAX_ID_CHARS = 256
MAX_BATCH = 20
MAX_EDITS = 100
MAX_KEYS = 100
EDIT_FIELDS = {"oldText": "string", "newText": "string", "replaceAll": "boolean"}

Kind = Literal[
    "path",
    "content",
    "id",
    "prefix",
    "cursor",
    "query",
    "toc",
    "paths",
    "count",
    "flag",
    "hash",
    "choice",
    "version",
    "edits",
    "fields",
    "keys",
]


@dataclass(frozen=True)
class Param:
    """One argument of a tool: its JSON schema and its check come from ``kind``.

    Strings: ``path`` and ``id`` (non-empty), ``content`` (at most 5 MiB), ``prefix``,
    ``cursor``, ``hash`` (64 hex digits), ``choice`` (one of ``choices``). Arrays:
    ``toc`` (heading names), ``paths`` (1–20 paths), ``edits`` (1–100 ``{oldText,
    newText, replaceAll?}``), ``keys`` (1–100 names). Integers: ``count``, between
    ``minimum`` and ``maximum``. ``version``: a version number or id. ``flag``: a
    boolean. ``fields``: an object of names and any JSON values (at most 100).
    """

    name: str
    description: str
    kind: Kind = "path"
    required: bool = True
    minimum: int = 1
    maximum: int | None = None
    choices: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"description": self.description}
        if self.kind == "flag":
            schema["type"] = "boolean"
        elif self.kind == "hash":
            schema.update(type="string", pattern="^[0-9a-fA-F]{64}$")
        elif self.kind == "choice":
            schema.update(type="string", enum=list(self.choices))
        elif self.kind == "version":
            schema["anyOf"] = [{"type": "integer", "minimum": 1}, {"type": "string", "minLength": 1}]
        elif self.kind == "edits":
            properties = {name: {"type": kind} for name, kind in EDIT_FIELDS.items()}
            item = {"type": "object", "properties": properties, "required": ["oldText", "newText"]}
            schema.update(type="array", items=item, minItems=1, maxItems=MAX_EDITS)
        elif self.kind == "count":
            schema.update(type="integer", minimum=self.minimum)
            if self.maximum is not None:
                schema["maximum"] = self.maximum
        elif self.kind in ("toc", "paths", "keys"):
            schema.update(type="array", items={"type": "string"})
            if self.kind == "paths":
                schema.update(minItems=1, maxItems=MAX_BATCH)
            if self.kind == "keys":
                schema.update(minItems=1, maxItems=MAX_KEYS)
        elif self.kind == "fields":
            schema.update(type="object", maxProperties=MAX_KEYS)
        else:
            schema["type"] = "string"
            if self.kind in ("path", "id", "cursor", "query"):
                schema["minLength"] = 1
            if self.kind == "content":
                schema["maxLength"] = MAX_CONTENT_BYTES
        return schema

    def check(self, value: Any) -> Any:
        """The value if it is acceptable; a :class:`ToolInputError` saying what is wrong otherwise."""
        what = f"Argument '{self.name}'"
        if self.kind == "count":
            return self._check_count(value)
        if self.kind in ("toc", "paths", "keys"):
            return self._check_list(value)
        if self.kind == "fields":
            return self._check_fields(value)
        if self.kind == "flag":
            if not isinstance(value, bool):
                raise ToolInputError(f"{what} must be true or false, got {_json_type(value)}.")
            return value
        if self.kind == "version":
            if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                return value
            if isinstance(value, str) and value:
                return value
            raise ToolInputError(f"{what} must be a version number (1, 2, …) or a version id. {self.description}")
        if self.kind == "edits":
            return self._check_edits(value)
        text = self._check_string(value, what)
        if self.kind == "hash" and not (len(text) == 64 and all(ch in "0123456789abcdefABCDEF" for ch in text)):
            raise ToolInputError(f"{what} must be a contentHash: 64 hexadecimal digits, as a read result gives it.")
        if self.kind == "choice" and text not in self.choices:
            raise ToolInputError(f"{what} must be one of {', '.join(self.choices)}, not {text!r}.")
        return text

    def _check_edits(self, value: Any) -> list[dict[str, Any]]:
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_EDITS:
            raise ToolInputError(
                f"Argument '{self.name}' must be an array of 1 to {MAX_EDITS} edits "
                '{"oldText": …, "newText": …, "replaceAll"?: true}.'
            )
        for number, edit in enumerate(value, start=1):
            if not isinstance(edit, dict):
                raise ToolInputError(f"Edit {number} must be an object with oldText and newText.")
            unknown = sorted(set(edit) - set(EDIT_FIELDS))
            if unknown:
                raise ToolInputError(
                    f"Edit {number} has unknown fields {', '.join(unknown)}; use oldText, newText, replaceAll."
                )
            for field_name, kind in EDIT_FIELDS.items():
                if field_name not in edit:
                    if field_name != "replaceAll":
                        raise ToolInputError(f"Edit {number} has no {field_name}.")
                elif kind == "string" and not isinstance(edit[field_name], str):
                    raise ToolInputError(f"Edit {number}: {field_name} must be a string.")
                elif kind == "boolean" and not isinstance(edit[field_name], bool):
                    raise ToolInputError(f"Edit {number}: replaceAll must be true or false.")
            self._check_string(edit["oldText"], f"Edit {number}: oldText", "content")
            self._check_string(edit["newText"], f"Edit {number}: newText", "content")
        return value

    def _check_string(self, value: Any, what: str, kind: Kind | None = None) -> str:
        kind = kind or self.kind
        if not isinstance(value, str):
            raise ToolInputError(f"{what} must be a string, got {_json_type(value)}. {self.description}")
        if kind in ("path", "id", "cursor", "query", "paths", "hash") and not value.strip():
            raise ToolInputError(f"{what} must not be empty. {self.description}")
        limit = MAX_ID_CHARS if kind == "id" else MAX_PATH_CHARS if kind != "content" else None
        if limit is not None and len(value) > limit:
            raise ToolInputError(f"{what} is {len(value)} characters long; the limit is {limit}.")
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise ToolInputError(
                f"{what} is not valid Unicode text (a lone surrogate at character {exc.start})."
            ) from None
        if kind == "content" and size > MAX_CONTENT_BYTES:
            raise ToolInputError(
                f"{what} is {size:,} bytes; notes written through this tool are limited to "
                f"{MAX_CONTENT_BYTES:,} bytes (UTF-8). Nothing was written; split the text into several notes."
            )
        return value

    def _check_list(self, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise ToolInputError(
                f"Argument '{self.name}' must be an array of strings, got {_json_type(value)}. {self.description}"
            )
        if self.kind == "paths" and not 1 <= len(value) <= MAX_BATCH:
            raise ToolInputError(f"Argument '{self.name}' must hold 1 to {MAX_BATCH} paths, not {len(value)}.")
        if self.kind == "keys" and not 1 <= len(value) <= MAX_KEYS:
            raise ToolInputError(f"Argument '{self.name}' must hold 1 to {MAX_KEYS} names, not {len(value)}.")
        items = [self._check_string(item, f"Item {index} of '{self.name}'") for index, item in enumerate(value)]
        if self.kind == "keys" and any(not item.strip() for item in items):
            raise ToolInputError(f"Argument '{self.name}' holds an empty name.")
        return items

    def _check_fields(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ToolInputError(
                f"Argument '{self.name}' must be an object of names and values, got {_json_type(value)}. "
                f"{self.description}"
            )
        if len(value) > MAX_KEYS:
            raise ToolInputError(f"Argument '{self.name}' has {len(value)} names; the limit is {MAX_KEYS}.")
        for name, item in value.items():
            if not name.strip():
                raise ToolInputError(f"Argument '{self.name}' holds an empty name.")
            self._check_string(name, f"The name {name[:40]!r} in '{self.name}'", "content")
            self._check_string(json.dumps(item, ensure_ascii=False), f"The value of {name!r}", "content")
        return value

    def _check_count(self, value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolInputError(f"Argument '{self.name}' must be an integer, got {_json_type(value)}.")
        if value < self.minimum or (self.maximum is not None and value > self.maximum):
            upper = f" and at most {self.maximum:,}" if self.maximum is not None else ""
            raise ToolInputError(f"Argument '{self.name}' must be at least {self.minimum}{upper}, not {value}.")
        return value


Handler = Callable[[ToolContext, Mapping[str, Any]], ToolOutput]


class ArgumentSpec(Protocol):
    """Arguments that are not a list of :class:`Param` (a :class:`~teamvault_mcp.text.schemas.Schema`)."""

    def json_schema(self) -> dict[str, Any]: ...

    def check(self, arguments: Mapping[str, Any]) -> dict[str, Any]: ...

    def paths(self, arguments: Mapping[str, Any]) -> list[tuple[str, str]]: ...

    def kinds(self) -> dict[str, str]: ...


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
    #: The arguments naming notes a write touches: checked against TEAM_VAULT_WRITE_PREFIXES, audited.
    path_params: tuple[str, ...] = ()
    #: Only with TEAM_VAULT_SCHEMA_DIR (list_schemas, reload_schemas).
    needs_schemas: bool = False
    #: Instead of ``params``: arguments described by a schema note (the generated upsert_<name> tools).
    spec: ArgumentSpec | None = None
    all_params: tuple[Param, ...] = field(init=False)

    def __post_init__(self) -> None:
        extra = (PROJECT_ID,) if self.takes_project else ()
        object.__setattr__(self, "all_params", self.params + extra)

    def input_schema(self) -> dict[str, Any]:
        if self.spec is not None:
            return self.spec.json_schema()
        return {
            "type": "object",
            "properties": {param.name: param.schema() for param in self.all_params},
            "required": [param.name for param in self.all_params if param.required],
            "additionalProperties": False,
        }

    def written_paths(self, args: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(what, path) for each note a write with these (checked) arguments touches, as given."""
        if self.spec is not None:
            return self.spec.paths(args)
        return [(name, args[name]) for name in self.path_params if isinstance(args.get(name), str)]

    def argument_kinds(self) -> dict[str, str]:
        """Each argument's kind, for reading it from a command line (``cli.py``)."""
        if self.spec is not None:
            return self.spec.kinds()
        return {param.name: param.kind for param in self.all_params}

    def check_arguments(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments, checked against the declaration; :class:`ToolInputError` on the first problem."""
        arguments = arguments or {}
        if self.spec is not None:
            return self.spec.check(arguments)
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
EXPECTED_HASH = Param(
    "expectedHash",
    "The contentHash you last read. The write happens only if the note still has it; if someone changed it "
    "since, you get a conflict with the current hash and what changed.",
    kind="hash",
    required=False,
)
VERSION_HELP = "A version number (1 is the first) or a version id, from list_note_versions."
MAX_CHARS = Param(
    "maxChars",
    f"Longest text to return, in characters (default {DEFAULT_EXCERPT_CHARS:,} for a section or line range, "
    "no limit for a plain read). Longer text is cut at a line boundary and says how to read the rest.",
    kind="count",
    required=False,
)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    return type(value).__name__


def _object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def _list_schema(key: str, item: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return _object_schema({key: {"type": "array", "items": item}, **extra}, [key])


_STRING = {"type": "string"}
_NULLABLE_STRING = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"]}
#: What list_schemas answers; reload_schemas adds which tools it added and removed.
_SCHEMAS = {
    "folder": _STRING,
    "status": _STRING,
    "schemas": {"type": "array", "items": {"type": "object"}},
    "problems": {"type": "array", "items": {"type": "object"}},
}
_CHANGED_TOOLS = {"added": {"type": "array", "items": _STRING}, "removed": {"type": "array", "items": _STRING}}
_HEADING = _object_schema(
    {
        "title": _STRING,
        "level": {"type": "integer"},
        "path": {"type": "array", "items": _STRING},
        "hasChildren": {"type": "boolean"},
        "startLine": {"type": "integer"},
        "endLine": {"type": "integer"},
        "chars": {"type": "integer"},
    },
    ["title", "level", "path", "hasChildren", "startLine", "endLine", "chars"],
)


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
            "trailing slash also matches names that merely start with it ('people' matches 'people-old.md'). "
            "On a big vault use depth to see the shape first: with depth=1 the notes directly in the folder are "
            "listed and each subfolder is one {folder, notes} count. At most limit entries (default "
            f"{DEFAULT_LIST_LIMIT}) come back; a cut listing says so and gives the cursor to continue with."
        ),
        params=(
            Param(
                "prefix",
                "Only list paths starting with this, e.g. 'people/' for one folder. Omit for the whole vault.",
                kind="prefix",
                required=False,
            ),
            Param(
                "depth",
                "Show notes at most this many folder levels below the prefix (1 = only the folder's own notes); "
                "deeper folders are summarised as {folder, notes} counts. Omit to list everything.",
                kind="count",
                required=False,
            ),
            Param(
                "limit",
                f"Most entries to return (default {DEFAULT_LIST_LIMIT}, at most 5,000).",
                kind="count",
                required=False,
                maximum=5000,
            ),
            Param(
                "cursor",
                "Continue a cut listing: the cursor it gave. Pass the same prefix and depth.",
                kind="cursor",
                required=False,
            ),
        ),
        handler=list_notes,
        output_schema=_list_schema(
            "notes",
            {
                "anyOf": [
                    _object_schema({"path": _STRING, "type": _STRING, "size": _NULLABLE_INT}, ["path", "type"]),
                    _object_schema({"folder": _STRING, "notes": {"type": "integer"}}, ["folder", "notes"]),
                ]
            },
            nextCursor=_STRING,
            remaining={"type": "integer"},
        ),
    ),
    Tool(
        name="search_notes",
        title="Search notes",
        description=(
            "Search the text of the project's notes. mode=text (default) finds notes holding every word of the "
            "query, ignoring case and accents, and ranks the lines; mode=phrase finds the words in order on one "
            "line; mode=regex takes a regular expression (a safe subset: no nested quantifiers). Each hit gives "
            "path, line, a short snippet, the heading breadcrumb and the tocPath of its section: read just that "
            "part with read_note(path, section=tocPath). Notes are ranked by BM25 (words that are frequent in a "
            f"note and rare in the vault count most); at most limit hits (default {DEFAULT_HITS}), at most 3 per "
            "note, and the result says how many more notes matched. The first search of a big vault downloads its "
            "notes (and caches them); if the time budget runs out first, it answers with what it searched, "
            "marked partial."
        ),
        params=(
            Param("query", "What to look for: words, a phrase, or a regular expression (see mode).", kind="query"),
            Param("prefix", "Only search paths starting with this, e.g. 'projects/'.", kind="prefix", required=False),
            Param(
                "limit",
                f"Most hits to return (default {DEFAULT_HITS}, at most 200).",
                kind="count",
                required=False,
                maximum=200,
            ),
            Param(
                "mode",
                "text (all words, any case and accents), phrase (the words in order), or regex.",
                kind="choice",
                required=False,
                choices=("text", "phrase", "regex"),
            ),
        ),
        handler=search_notes,
        output_schema=_object_schema(
            {
                "query": _STRING,
                "mode": _STRING,
                "hits": {
                    "type": "array",
                    "items": _object_schema(
                        {
                            "path": _STRING,
                            "line": {"type": "integer"},
                            "snippet": _STRING,
                            "breadcrumb": _STRING,
                            "tocPath": {"type": "array", "items": _STRING},
                            "score": {"type": "number"},
                        },
                        ["path", "line", "snippet", "breadcrumb", "tocPath", "score"],
                    ),
                },
                "totalNotes": {"type": "integer"},
                "moreNotes": {"type": "integer"},
                "notesSearched": {"type": "integer"},
                "notesNotSearched": {"type": "integer"},
                "slowLines": {"type": "integer"},
                "partial": {"type": "boolean"},
            },
            ["query", "mode", "hits", "totalNotes", "moreNotes", "notesSearched", "partial"],
        ),
    ),
    Tool(
        name="find_notes",
        title="Find notes by name",
        description=(
            'Find notes by their path or file name, forgiving typos and missing letters, ranked: for "where is '
            'the note about X". Case and accents are ignored. Returns paths with a score (100 is an exact name).'
        ),
        params=(
            Param("query", "Part of a name or path, e.g. 'kuzma' or 'meeting notes 2026'.", kind="query"),
            Param(
                "limit",
                f"Most paths to return (default {DEFAULT_FOUND}, at most 100).",
                kind="count",
                required=False,
                maximum=100,
            ),
        ),
        handler=find_notes,
        output_schema=_object_schema(
            {
                "query": _STRING,
                "notes": {
                    "type": "array",
                    "items": _object_schema(
                        {"path": _STRING, "type": _STRING, "score": {"type": "number"}}, ["path", "type", "score"]
                    ),
                },
            },
            ["query", "notes"],
        ),
    ),
    Tool(
        name="note_outline",
        title="Note outline",
        description=(
            "Show the headings of a markdown note one level at a time, without its text: each with title, "
            "level, path (the tocPath to pass back), hasChildren, startLine, endLine and chars (the size of its "
            "section). Without tocPath: the top-level headings (and the lines before the first one, as "
            "preamble); with tocPath: that heading's subheadings. Then read just the part you need with "
            "read_note(path, section=<path>). A title that repeats under the same parent is named 'Title [2]', "
            "'Title [3]' from its second occurrence on; pass that name back as it is."
        ),
        params=(
            NOTE_PATH,
            Param(
                "tocPath",
                'Heading names from the top down, as the outline gives them in "path", e.g. ["Chapter 1", "Intro"]. '
                "Omit for the top level.",
                kind="toc",
                required=False,
            ),
            Param(
                "offset",
                f"Headings of this level to skip: a level of more than {OUTLINE_HEADINGS} headings is shown "
                "in pages, and a cut answer gives the offset of the next one (default 0).",
                kind="count",
                required=False,
                minimum=0,
            ),
        ),
        handler=note_outline,
        output_schema=_object_schema(
            {
                "path": _STRING,
                "tocPath": {"type": "array", "items": _STRING},
                "totalLines": {"type": "integer"},
                "totalChars": {"type": "integer"},
                "headings": {"type": "array", "items": _HEADING},
                "totalHeadings": {"type": "integer"},
                "offset": {"type": "integer"},
                "next": _object_schema({"offset": {"type": "integer"}}, ["offset"]),
                "outlinedLines": {"type": "integer"},
            },
            ["path", "tocPath", "totalLines", "totalChars", "headings"],
        ),
    ),
    Tool(
        name="read_note",
        title="Read note",
        description=(
            "Return the text of a text note (markdown, txt, json, yaml, csv) by its vault path, exactly as "
            "stored; binary files such as images are not returned. Paths are case-sensitive. To spend fewer "
            "tokens on a long note, read one part: section (a heading's tocPath from note_outline; the heading "
            "line and everything down to the next heading of the same or a higher level) or startLine/endLine "
            "(1-based, inclusive). maxChars caps the text; a cut result ends with a note giving the call that "
            "reads on."
        ),
        params=(
            NOTE_PATH,
            Param(
                "section",
                'The heading to read, as a tocPath from note_outline, e.g. ["Chapter 1", "Intro"].',
                kind="toc",
                required=False,
            ),
            Param("startLine", "First line to read (1-based).", kind="count", required=False),
            Param(
                "endLine", "Last line to read (inclusive; default: the end of the note).", kind="count", required=False
            ),
            MAX_CHARS,
        ),
        handler=read_note,
    ),
    Tool(
        name="read_notes",
        title="Read several notes",
        description=(
            f"Read up to {MAX_BATCH} notes in one call, fetched at the same time. Each note comes back under its "
            "own path with its text, or with the error that note met (a missing note does not fail the others). "
            "maxChars caps each note's text, cut as in read_note."
        ),
        params=(
            Param(
                "paths",
                f"Vault paths of the notes, 1 to {MAX_BATCH}, e.g. ['people/a.md', 'people/b.md'].",
                kind="paths",
            ),
            MAX_CHARS,
        ),
        handler=read_notes,
        output_schema=_list_schema(
            "notes",
            _object_schema(
                {"path": _STRING, "content": _STRING, "error": _STRING, "truncated": {"type": "boolean"}}, ["path"]
            ),
        ),
    ),
    Tool(
        name="read_frontmatter",
        title="Read front matter",
        description=(
            "Return a note's YAML front matter (the properties between the --- lines at its top) as a JSON "
            "object, with the note's contentHash: {} when it has none. Dates come as 'YYYY-MM-DD' text. Invalid "
            "YAML is an error naming the line. Change fields with update_frontmatter, not by editing the YAML."
        ),
        params=(NOTE_PATH,),
        handler=read_frontmatter,
        output_schema=_object_schema(
            {
                "path": _STRING,
                "frontmatter": {"type": "object"},
                "hasFrontmatter": {"type": "boolean"},
                "contentHash": _STRING,
                "note": _STRING,
            },
            ["path", "frontmatter", "hasFrontmatter", "contentHash"],
        ),
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
        name="read_note_version",
        title="Read note version",
        description=(
            "Return the text of one saved version of a note, exactly as it was (the version's contentHash is "
            "that of these bytes). Name the version by number or id, as list_note_versions gives them."
        ),
        params=(NOTE_PATH, Param("version", VERSION_HELP, kind="version")),
        handler=read_note_version,
    ),
    Tool(
        name="diff_note_versions",
        title="Diff note versions",
        description=(
            "Show what changed in a note between two saved versions, as a unified diff; without 'to', between "
            "the version 'from' and the note's current content. Use it to review what an agent or a colleague "
            "changed before restoring anything."
        ),
        params=(
            NOTE_PATH,
            Param("from", f"The older version. {VERSION_HELP}", kind="version"),
            Param(
                "to",
                f"The newer version (default: the current content). {VERSION_HELP}",
                kind="version",
                required=False,
            ),
        ),
        handler=diff_note_versions,
        output_schema=_object_schema(
            {
                "path": _STRING,
                "from": {"type": "object"},
                "to": {"type": "object"},
                "changed": {"type": "boolean"},
                "diff": _STRING,
            },
            ["path", "from", "to", "changed", "diff"],
        ),
    ),
    Tool(
        name="restore_note_version",
        title="Restore note version",
        description=(
            "Bring back the content a note had in one saved version, by writing it as a new version: nothing "
            "is lost, and the content it replaces stays in the history. Returns the diff from the current "
            "content to the restored one and the new contentHash."
        ),
        params=(NOTE_PATH, Param("version", VERSION_HELP, kind="version"), EXPECTED_HASH),
        handler=restore_note_version,
        writes=True,
        path_params=("path",),
        destructive=False,  # the replaced content stays in the history
        idempotent=True,  # restoring the same version again changes nothing
        output_schema=_object_schema(
            {
                "path": _STRING,
                "action": {"type": "string", "enum": ["restored", "unchanged"]},
                "restoredVersion": {"type": "object"},
                "previousHash": _STRING,
                "contentHash": _STRING,
                "verified": {"type": "boolean"},
            },
            ["path", "action", "restoredVersion", "contentHash"],
        ),
    ),
    Tool(
        name="write_note",
        title="Write note",
        description=(
            "Create a text note at a vault path, or replace the whole content of the note already there. "
            "Returns the stored path, whether the note was 'created' or 'updated', its size in bytes and its new "
            "contentHash. Other people edit these notes too: to change part of a note use edit_note; to replace "
            "one, pass the contentHash you read as expectedHash so a colleague's edit is never overwritten. "
            "mode=create refuses to overwrite, mode=update refuses to create. Missing folders are created "
            "implicitly. A retried call never writes twice."
        ),
        params=(
            Param("path", "Vault-relative path of the note to write, e.g. 'meetings/2026-11-30.md'."),
            Param(
                "content",
                "The complete new text of the note (UTF-8). Replaces everything that was there.",
                kind="content",
            ),
            Param(
                "mode",
                "upsert (default): create or replace; create: fail if the note exists; update: fail if it does not.",
                kind="choice",
                required=False,
                choices=("upsert", "create", "update"),
            ),
            EXPECTED_HASH,
        ),
        handler=write_note,
        writes=True,
        path_params=("path",),
        destructive=True,  # replaces the previous content (the server keeps it as a version)
        idempotent=True,  # the same content written twice leaves the same note
        output_schema=_object_schema(
            {
                "path": _STRING,
                "action": {"type": "string", "enum": ["created", "updated"]},
                "size": {"type": "integer"},
                "contentHash": _STRING,
                "verified": {"type": "boolean"},
            },
            ["path", "action", "size"],
        ),
    ),
    Tool(
        name="edit_note",
        title="Edit note",
        description=(
            "Change part of a note without rewriting it: edits is an ordered list of {oldText, newText} "
            "replacements (each oldText must occur exactly once, or set replaceAll); or give patch, a unified "
            "diff with @@ hunks of ' ', '-' and '+' lines (line numbers optional). Line endings may differ from "
            "the note's; the note keeps its own. All edits apply or none; a failed one shows the closest lines "
            "or every match's line number. Returns the unified diff and the new contentHash. dryRun shows the "
            "diff and writes nothing. Pass the contentHash you read as expectedHash to be safe from "
            "concurrent edits."
        ),
        params=(
            NOTE_PATH,
            Param(
                "edits",
                'Replacements, applied in order, e.g. [{"oldText": "- [ ] call Kuzma", '
                '"newText": "- [x] call Kuzma"}].',
                kind="edits",
                required=False,
            ),
            Param("patch", "Instead of edits: a unified diff of the note (@@ hunks).", kind="content", required=False),
            Param("dryRun", "true: show the diff, write nothing.", kind="flag", required=False),
            EXPECTED_HASH,
        ),
        handler=edit_note,
        writes=True,
        path_params=("path",),
        destructive=True,  # changes content (the server keeps the old content as a version)
        idempotent=False,  # a repeated replaceAll, or an edit whose oldText is in its newText, changes again
        output_schema=_object_schema(
            {
                "path": _STRING,
                "dryRun": {"type": "boolean"},
                "changed": {"type": "boolean"},
                "previousHash": _STRING,
                "contentHash": _STRING,
                "diff": _STRING,
                "verified": {"type": "boolean"},
            },
            ["path", "dryRun", "changed", "previousHash", "contentHash", "diff"],
        ),
    ),
    Tool(
        name="update_frontmatter",
        title="Update front matter",
        description=(
            "Change a note's front matter by field, without touching its YAML by hand: set writes each given "
            "field whole (a nested object or list replaces the old value; it does not merge into it), remove "
            "drops fields. Other fields keep their exact text, order and comments, and the body stays byte for "
            "byte; a note without front matter gets a block. Dates go in as 'YYYY-MM-DD'. Returns the diff, the "
            "new front matter and contentHash; dryRun writes nothing. Pass the contentHash you read as "
            "expectedHash to be safe from concurrent edits."
        ),
        params=(
            NOTE_PATH,
            Param(
                "set",
                'Fields to write, e.g. {"status": "done", "tags": ["project", "q3"], "due": "2026-12-01"}; '
                "null writes an empty field.",
                kind="fields",
                required=False,
            ),
            Param("remove", "Names of top-level fields to drop, e.g. ['draft'].", kind="keys", required=False),
            Param("dryRun", "true: show the diff, write nothing.", kind="flag", required=False),
            EXPECTED_HASH,
        ),
        handler=update_frontmatter,
        writes=True,
        path_params=("path",),
        destructive=True,  # changes content (the server keeps the old content as a version)
        idempotent=True,  # the same fields set again leave the same note
        output_schema=_object_schema(
            {
                "path": _STRING,
                "dryRun": {"type": "boolean"},
                "changed": {"type": "boolean"},
                "previousHash": _STRING,
                "contentHash": _STRING,
                "diff": _STRING,
                "frontmatter": {"type": "object"},
                "absent": {"type": "array", "items": _STRING},
                "verified": {"type": "boolean"},
            },
            ["path", "dryRun", "changed", "previousHash", "contentHash", "diff", "frontmatter"],
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
            EXPECTED_HASH,
        ),
        handler=move_note,
        writes=True,
        path_params=("path", "newPath"),
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
        params=(NOTE_PATH, EXPECTED_HASH),
        handler=delete_note,
        writes=True,
        path_params=("path",),
        destructive=True,
        idempotent=True,
        output_schema=_object_schema(
            {"path": _STRING, "action": {"type": "string", "enum": ["deleted"]}}, ["path", "action"]
        ),
    ),
    Tool(
        name="list_schemas",
        title="List schemas",
        description=(
            "List the kinds of structured notes this vault defines (schema notes in TEAM_VAULT_SCHEMA_DIR): for "
            "each, its upsert_<name> tool, description, fields with their types and which are required, and the "
            "path template its notes follow. Also lists schema notes that are invalid, with what is wrong."
        ),
        params=(),
        handler=list_schemas,
        takes_project=False,
        needs_schemas=True,
        output_schema=_object_schema(_SCHEMAS, list(_SCHEMAS)),
    ),
    Tool(
        name="reload_schemas",
        title="Reload schemas",
        description=(
            "Read the schema notes again after someone changed them, and replace the upsert_<name> tools with "
            "what they now define. Returns the schemas, the problems, and which tools were added or removed."
        ),
        params=(),
        handler=reload_schemas,
        writes=True,  # changes this server's tools (it writes no note)
        destructive=False,
        idempotent=True,
        takes_project=False,
        needs_schemas=True,
        output_schema=_object_schema({**_SCHEMAS, **_CHANGED_TOOLS}, [*_SCHEMAS, *_CHANGED_TOOLS]),
    ),
)


def tools_for(read_only: bool, schemas: Sequence[Schema] | None = None) -> tuple[Tool, ...]:
    """The tools to register: in read-only mode the write tools do not exist at all.

    ``schemas`` is None without TEAM_VAULT_SCHEMA_DIR; otherwise each schema adds its tool.
    """
    static = tuple(
        tool for tool in TOOLS if not (read_only and tool.writes) and not (tool.needs_schemas and schemas is None)
    )
    if read_only or not schemas:
        return static
    return static + tuple(schema_tool(schema) for schema in schemas)


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
        spec=schema,
        output_schema=_object_schema(
            {
                "path": _STRING,
                "action": {"type": "string", "enum": ["created", "updated", "unchanged"]},
                "contentHash": _STRING,
                "frontmatter": {"type": "object"},
                "diff": _STRING,
                "verified": {"type": "boolean"},
            },
            ["path", "action", "contentHash", "frontmatter"],
        ),
    )
