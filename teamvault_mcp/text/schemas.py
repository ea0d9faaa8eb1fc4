"""A schema: the fields of a kind of structured note, their checks, and the path its notes go to. Pure.

``schema_notes.py`` reads one from a schema note (and says what such a note holds); the
``upsert_<name>`` tool of ``tools/schemas.py`` takes its fields as arguments.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from teamvault_mcp.errors import InvalidPathError, ToolInputError
from teamvault_mcp.text.paths import stored_path_of

PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")

_NO_DEFAULT = object()


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    description: str = ""
    optional: bool = False
    default: Any = _NO_DEFAULT
    minimum: float | None = None
    maximum: float | None = None
    values: tuple[Any, ...] = ()
    items: Field | None = None
    properties: tuple[Field, ...] | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    @property
    def required(self) -> bool:
        return not self.optional and not self.has_default

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {}
        if self.type == "enum":
            schema["enum"] = list(self.values)
            kinds = {_json_kind(value) for value in self.values}
            if len(kinds) == 1:
                schema["type"] = kinds.pop()
        elif self.type == "date":
            schema.update(type="string", format="date", pattern=r"^\d{4}-\d{2}-\d{2}$")
        else:
            schema["type"] = self.type
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.items is not None:
            schema["items"] = self.items.json_schema()
            if not self.items.description:
                del schema["items"]["description"]
        if self.properties is not None:
            schema.update(_object_schema(self.properties))
        description = self.description or f"{self.name} ({self.type})"
        if self.has_default:
            schema["default"] = self.default
        schema["description"] = description
        return schema

    def check(self, value: Any, where: str) -> Any:
        """``value`` if it fits this field; a :class:`ToolInputError` naming ``where`` otherwise."""
        expected = self._expected()
        if self.type == "string" and isinstance(value, str):
            return value
        if self.type in ("number", "integer") and is_number(value) and math.isfinite(value):
            if self.type == "integer" and not float(value).is_integer():
                raise ToolInputError(f"Field '{where}' must be {expected}, got {value!r}.")
            if (self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum
            ):
                raise ToolInputError(f"Field '{where}' must be {expected}, got {value!r}.")
            return int(value) if self.type == "integer" else value
        if self.type == "boolean" and isinstance(value, bool):
            return value
        if self.type == "date" and isinstance(value, str) and _is_date(value):
            return value
        if self.type == "enum" and any(value == allowed and type(value) is type(allowed) for allowed in self.values):
            return value
        if self.type == "array" and isinstance(value, list):
            if self.items is None:
                return value
            return [self.items.check(item, f"{where}[{index}]") for index, item in enumerate(value)]
        if self.type == "object" and isinstance(value, dict):
            if self.properties is None:
                return value
            return check_fields(self.properties, value, f"{where}.")
        raise ToolInputError(f"Field '{where}' must be {expected}, got {_shown(value)}.")

    def _expected(self) -> str:
        if self.type == "enum":
            return "one of " + ", ".join(repr(value) for value in self.values)
        words = {"integer": "a whole number", "date": "a date 'YYYY-MM-DD'", "array": "an array", "object": "an object"}
        text = words.get(self.type, f"a {self.type}")
        if self.minimum is not None and self.maximum is not None:
            return f"{text} from {self.minimum:g} to {self.maximum:g}"
        if self.minimum is not None:
            return f"{text} of at least {self.minimum:g}"
        if self.maximum is not None:
            return f"{text} of at most {self.maximum:g}"
        return text


def check_fields(fields: tuple[Field, ...], values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The given ``values`` checked against ``fields`` (null counts as not given), in the fields' order."""
    known = {f.name for f in fields}
    unknown = sorted(name for name in values if name not in known)
    if unknown:
        where = f" in '{prefix[:-1]}'" if prefix else ""
        raise ToolInputError(
            f"Unknown field{'s' if len(unknown) > 1 else ''}{where}: {', '.join(unknown)}. "
            f"Fields: {', '.join(f.name for f in fields)}."
        )
    checked: dict[str, Any] = {}
    for f in fields:
        value = values.get(f.name)
        if value is None:
            if f.required:
                hint = f" {f.description}" if f.description else ""
                raise ToolInputError(f"Missing required field '{prefix}{f.name}'.{hint}")
            continue
        checked[f.name] = f.check(value, prefix + f.name)
    return checked


@dataclass(frozen=True)
class Schema:
    """A valid schema: its tool's name, input schema and argument check, and where its notes go."""

    name: str
    description: str
    identifier_field: str
    path_template: str
    path_components: tuple[str, ...]
    fields: tuple[Field, ...]
    source: str  # the schema note's path
    _by_name: dict[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {f.name: f for f in self.fields})

    @property
    def tool_name(self) -> str:
        return f"upsert_{self.name}"

    def json_schema(self) -> dict[str, Any]:
        """The input schema of the schema's tool: its fields, no others."""
        return {**_object_schema(self.fields), "additionalProperties": False}

    def check(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The given field values, checked; a :class:`ToolInputError` on the first problem."""
        values = check_fields(self.fields, arguments)
        self.path_for(values)  # a component that cannot be a path segment is a bad argument too
        return values

    def with_defaults(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` plus the defaults of the fields not given, in the fields' order."""
        return {f.name: values.get(f.name, f.default) for f in self.fields if f.name in values or f.has_default}

    def path_for(self, values: Mapping[str, Any]) -> str:
        """The note's path: the template filled in, each component one path segment."""
        values = self.with_defaults(values)

        def component(match: re.Match[str]) -> str:
            name = match.group(1)
            text = _segment_text(values.get(name))
            if not text.strip():
                raise ToolInputError(f"Field '{name}' is part of the note's path and must not be empty.")
            if "/" in text or "\\" in text or text.strip() in (".", ".."):
                raise ToolInputError(
                    f"Field '{name}' is part of the note's path ({self.path_template}) and must be one folder "
                    f"or file name: {text!r} would leave its folder."
                )
            return text

        filled = PLACEHOLDER.sub(component, self.path_template)
        try:
            path = stored_path_of(filled, incoming=True)
        except InvalidPathError as error:
            raise ToolInputError(f"The fields give the path {filled!r}, which the server refuses: {error}") from None
        if path.count("/") != self.path_template.count("/"):
            raise ToolInputError(f"The fields give the path {filled!r}, which is not of the form {self.path_template}.")
        return path

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tool": self.tool_name,
            "description": self.description,
            "source": self.source,
            "identifierField": self.identifier_field,
            "pathTemplate": self.path_template,
            "fields": self.json_schema()["properties"],
            "required": self.json_schema()["required"],
        }


def _object_schema(fields: tuple[Field, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f.name: f.json_schema() for f in fields},
        "required": [f.name for f in fields if f.required],
    }


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_date(value: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return False
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _segment_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return repr(value[:60])
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"{_json_kind(value)} {value!r}"
