"""How a tool is declared: :class:`Tool`, the arguments several tools share, and output-schema helpers.

Every tool is declared once, as data, next to its handler in its family's module
(``notes.py``, ``reading.py``, ``search.py``, ``frontmatter.py``, ``history.py``,
``schemas.py``); ``table.py`` collects them in the order ``tools/list`` shows them. The
input schema sent in ``tools/list``, the argument checks and the reading of a command line
all come from the declaration, through the kinds of its arguments (``kinds.py``).

What ``tools/list`` shows depends on the server's setting (:class:`~teamvault_mcp.tools.context.ToolSet`): a sentence
that names another tool (:class:`See`) is shown only when that tool is registered, and
``projectId`` only where more than one project can be meant. Every agent turn carries
the tool list, so descriptions say each thing once; what holds for all tools (how paths
are spelt, what ``projectId`` means) is said once, in the server's instructions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.tools.context import ToolContext, ToolOutput, ToolSet
from teamvault_mcp.tools.kinds import Param

# -- tools ---------------------------------------------------------------------------------------------

Handler = Callable[[ToolContext, Mapping[str, Any]], ToolOutput]


class ArgumentSpec(Protocol):
    """Arguments that are not a list of :class:`Param`: the fields of a schema note (``schemas.py``)."""

    def json_schema(self) -> dict[str, Any]: ...

    def check(self, arguments: Mapping[str, Any]) -> dict[str, Any]: ...

    def paths(self, arguments: Mapping[str, Any]) -> list[tuple[str, str]]: ...

    def read(self, name: str, text: str) -> Any: ...


@dataclass(frozen=True)
class See:
    """A sentence of a description that names other tools: shown only when all of ``tools`` are registered."""

    tools: tuple[str, ...]
    text: str


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
    #: Instead of the values of ``path_params``: the (argument, path) pairs a write touches, when an argument
    #: does not name a note by itself (move_note's ``newPath='archive/'``).
    written: Callable[[Mapping[str, Any]], list[tuple[str, str]]] | None = None
    #: Only with TEAM_VAULT_SCHEMA_DIR (list_schemas, reload_schemas).
    needs_schemas: bool = False
    #: Instead of ``params``: arguments described by a schema note (the generated upsert_<name> tools).
    spec: ArgumentSpec | None = None
    #: Sentences added to the description when the tools they name are registered.
    see: tuple[See, ...] = ()
    all_params: tuple[Param, ...] = field(init=False)

    def __post_init__(self) -> None:
        extra = (PROJECT_ID,) if self.takes_project else ()
        object.__setattr__(self, "all_params", self.params + extra)

    def describe(self, tools: ToolSet) -> str:
        """The description ``tools/list`` sends: the tool's own, then each sentence whose tools are there.

        ``{max_read_chars}`` in it is the configured limit of a plain read."""
        sentences = [self.description, *(see.text for see in self.see if set(see.tools) <= tools.names)]
        limit = f"{tools.max_read_chars:,}" if tools.max_read_chars else "no"
        return " ".join(sentences).replace("{max_read_chars}", limit)

    def input_schema(self, tools: ToolSet | None = None) -> dict[str, Any]:
        """The input schema; without ``projectId`` when ``tools`` says only one project can be meant (the
        argument is still accepted: old callers send it)."""
        if self.spec is not None:
            return self.spec.json_schema()
        offered = self.params if tools is not None and tools.one_project else self.all_params
        schema: dict[str, Any] = {"type": "object", "properties": {param.name: param.schema() for param in offered}}
        required = [param.name for param in offered if param.required]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def written_paths(self, args: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(what, path) for each note a write with these (checked) arguments touches, as given."""
        if self.spec is not None:
            return self.spec.paths(args)
        if self.written is not None and all(isinstance(args.get(name), str) for name in self.path_params):
            return self.written(args)
        return [(name, args[name]) for name in self.path_params if isinstance(args.get(name), str)]

    def read_argument(self, name: str, text: str) -> Any:
        """The value a command line's ``name=text`` gives this tool's argument (``teamvault-mcp call``)."""
        if self.spec is not None:
            return self.spec.read(name, text)
        param = next((param for param in self.all_params if param.name == name), None)
        return param.read(text) if param is not None else text

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
                    raise ToolInputError(f"Missing required argument '{param.name}'. {param.help}")
                continue
            checked[param.name] = param.check(value)
        return checked


# -- arguments shared by several tools ----------------------------------------------------------

PROJECT_ID = Param("projectId", "Default: the configured project.", kind="id", required=False)
NOTE_PATH = Param("path", "The note, e.g. 'people/ada.md'.")
EXPECTED_HASH = Param(
    "expectedHash",
    "The contentHash you read: write only if the note still has it.",
    kind="hash",
    required=False,
)
DRY_RUN = Param(
    "dryRun", "true: show the diff and the call that applies it; write nothing.", kind="flag", required=False
)


# -- output schemas --------------------------------------------------------------------------------

STRING = {"type": "string"}
# anyOf, not ``"type": [..., "null"]``: a form every validator takes without a warning (Ajv strict, the Inspector).
NULLABLE_STRING = {"anyOf": [STRING, {"type": "null"}]}
NULLABLE_INT = {"anyOf": [{"type": "integer"}, {"type": "null"}]}


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def list_schema(key: str, item: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return object_schema({key: {"type": "array", "items": item}, **extra}, [key])


#: What every answer built by ``answer.py`` may hold besides its own fields: the headline and the notices.
ANSWER_FIELDS: dict[str, Any] = {"summary": STRING, "notices": {"type": "array", "items": STRING}}


def answer_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The output schema of an :class:`~teamvault_mcp.tools.answer.Answer`: ``properties``, its summary and its
    notices."""
    return object_schema({**properties, **ANSWER_FIELDS}, required)


def rows(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


#: An error result's structured content (TEAM_VAULT_STRUCTURED_CONTENT=on): ``{"error": ERROR}``, the message and
#: what the error knows as data (the path, the current hash and the diff of a conflict, …).
ERROR = object_schema(
    {
        "message": STRING,
        "mayHaveBeenApplied": {"type": "boolean"},
        "path": STRING,
        "httpStatus": {"type": "integer"},
        "code": STRING,
        "expectedHash": STRING,
        "currentHash": NULLABLE_STRING,
        "diff": STRING,
    },
    ["message"],
)


def with_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as ``tools/list`` declares it: a result holds its fields, or is an error ``{"error": …}``.

    Clients check an error result's structured content against the schema too (the TypeScript SDK does), so
    the schema must admit both: the fields a result always has are required unless ``error`` is there."""
    declared = {key: value for key, value in schema.items() if key != "required"}
    declared["properties"] = {**schema["properties"], "error": ERROR}
    declared["anyOf"] = [{"required": schema.get("required", [])}, {"required": ["error"]}]
    return declared
