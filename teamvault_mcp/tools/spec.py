"""How a tool is declared: :class:`Tool`, the arguments several tools share, and output-schema helpers.

Every tool is declared once, as data, next to its handler in its family's module
(``notes.py``, ``reading.py``, ``search.py``, ``frontmatter.py``, ``history.py``,
``schemas.py``); ``table.py`` collects them in the order ``tools/list`` shows them. The
input schema sent in ``tools/list``, the argument checks and the reading of a command line
all come from the declaration, through the kinds of its arguments (``kinds.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.tools.context import ToolContext, ToolOutput
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


# -- output schemas --------------------------------------------------------------------------------

STRING = {"type": "string"}
NULLABLE_STRING = {"type": ["string", "null"]}
NULLABLE_INT = {"type": ["integer", "null"]}


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def list_schema(key: str, item: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return object_schema({key: {"type": "array", "items": item}, **extra}, [key])
