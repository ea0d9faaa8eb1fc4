"""The kinds of tool arguments: one table, :data:`KINDS`, gives each kind its JSON schema, its check, how a
command line's ``key=value`` reads as one (``teamvault-mcp call``) and the example ``call --help`` shows.

A :class:`Param` names its kind; nothing else codes the vocabulary. Every agent turn carries the schemas, so a
schema says what a model needs to write a valid call — the types, the choices, the upper limits — and leaves the
rest to the check, whose error says it (a string must not be empty, a count is at least 1, a hash has 8 to 64 hex
digits, content is at most 5 MiB). The fields of a schema note have types of
their own (``text/schemas.py`` checks them); :data:`FIELD_READERS` says how a command line reads them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from teamvault_mcp.errors import SHOWN_HASH_DIGITS, ToolInputError

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
    "note_text",
    "id",
    "prefix",
    "cursor",
    "query",
    "toc",
    "section",
    "paths",
    "count",
    "flag",
    "hash",
    "choice",
    "version",
    "edits",
    "fields",
    "keys",
    "order",
    "when",
]


@dataclass(frozen=True)
class Param:
    """One argument of a tool: its JSON schema, its check and its command-line reading come from ``kind``."""

    name: str
    description: str
    kind: Kind = "path"
    required: bool = True
    minimum: int = 1
    maximum: int | None = None
    choices: tuple[str, ...] = ()

    @property
    def help(self) -> str:
        """What an error about this argument adds: its description, or where it is said."""
        return self.description or "The tool's description says what it takes."

    def schema(self) -> dict[str, Any]:
        """Its JSON schema; no description when it has none (its tool's description says it)."""
        described = {"description": self.description} if self.description else {}
        return {**described, **KINDS[self.kind].schema(self)}

    def check(self, value: Any) -> Any:
        """The value if it is acceptable; a :class:`ToolInputError` saying what is wrong otherwise."""
        return KINDS[self.kind].check(self, value)

    def read(self, text: str) -> Any:
        """The value a command line's ``name=text`` gives this argument (its check judges it afterwards); text it
        cannot read is a ``ValueError`` that shows this argument's example."""
        kind = KINDS[self.kind]
        try:
            return kind.read(self.name, text)
        except ValueError as error:
            said = str(error)
            if kind.example is None or ", e.g. " not in said:
                raise
            raise ValueError(f"{said.rpartition(', e.g. ')[0]}, e.g. {self.name}={kind.example}") from None


# -- the kinds of arguments -------------------------------------------------------------------------


@dataclass(frozen=True)
class Strings:
    """What one string of an argument may be: not blank, at most so many characters, at most 5 MiB of UTF-8."""

    nonempty: bool = False
    max_chars: int | None = MAX_PATH_CHARS
    content: bool = False  # counted in bytes against MAX_CONTENT_BYTES instead of characters
    #: A note's text to write: it must not start with the line read_note puts above a note (:data:`HASH_HEADER`).
    note_text: bool = False


NAME = Strings()
NONEMPTY = Strings(nonempty=True)
CONTENT = Strings(max_chars=None, content=True)
NOTE_TEXT = Strings(max_chars=None, content=True, note_text=True)

#: The line read_note and read_note_version put above a note's text: ``[contentHash: 9f2c41d07a3b]``. No note
#: starts with it; a text to write that does was copied from a read whole, header included.
HASH_HEADER = re.compile(rf"\[contentHash: [0-9a-f]{{{SHOWN_HASH_DIGITS}}}\]\r?(\n|$)")


def hash_header(content_hash: str) -> str:
    """The first line of read_note's text, with its line break: the note's text follows it."""
    return f"[contentHash: {content_hash[:SHOWN_HASH_DIGITS]}]\n"


def check_string(param: Param, value: Any, what: str, rule: Strings) -> str:
    """``value`` if it is a string that keeps ``rule``; a :class:`ToolInputError` naming ``what`` otherwise."""
    if not isinstance(value, str):
        raise ToolInputError(f"{what} must be a string, got {json_type(value)}. {param.help}")
    if rule.nonempty and not value.strip():
        raise ToolInputError(f"{what} must not be empty. {param.help}")
    if rule.max_chars is not None and len(value) > rule.max_chars:
        raise ToolInputError(f"{what} is {len(value)} characters long; the limit is {rule.max_chars}.")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ToolInputError(f"{what} is not valid Unicode text (a lone surrogate at character {exc.start}).") from None
    if rule.content and size > MAX_CONTENT_BYTES:
        raise ToolInputError(
            f"{what} is {size:,} bytes; notes written through this tool are limited to "
            f"{MAX_CONTENT_BYTES:,} bytes (UTF-8). Nothing was written; split the text into several notes."
        )
    if rule.note_text and (header := HASH_HEADER.match(value)):
        raise ToolInputError(
            f"{what} starts with the line {header.group(0).rstrip()!r}, which read_note puts above a note's text; "
            "it is not part of the note. Nothing was written: leave that first line out."
        )
    return value


def _argument(param: Param) -> str:
    return f"Argument '{param.name}'"


#: The fewest leading hex digits of a contentHash an argument may give (texts show SHOWN_HASH_DIGITS).
MIN_HASH_DIGITS = 8


def _check_hash(param: Param, value: Any) -> str:
    """A contentHash: all 64 hex digits, or its first 8 or more (what texts show); lower case from here on."""
    text = check_string(param, value, _argument(param), NONEMPTY)
    if not (MIN_HASH_DIGITS <= len(text) <= 64 and all(ch in "0123456789abcdefABCDEF" for ch in text)):
        got = f"{text[:70]!r}" + ("…" if len(text) > 70 else "")
        raise ToolInputError(
            f"{_argument(param)} must be a contentHash as a read gives it: its first {SHOWN_HASH_DIGITS} hexadecimal "
            f"digits as texts show them (any {MIN_HASH_DIGITS} to 64 will do), not {got} ({len(text)} characters)."
        )
    return text.lower()


def _check_choice(param: Param, value: Any) -> str:
    text = check_string(param, value, _argument(param), NAME)
    if text not in param.choices:
        raise ToolInputError(f"{_argument(param)} must be one of {', '.join(param.choices)}, not {text!r}.")
    return text


def _count_schema(param: Param) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    if param.minimum != 1:  # at least 1 goes without saying for a count
        schema["minimum"] = param.minimum
    if param.maximum is not None:
        schema["maximum"] = param.maximum
    return schema


def _check_count(param: Param, value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(f"Argument '{param.name}' must be an integer, got {json_type(value)}.")
    if value < param.minimum or (param.maximum is not None and value > param.maximum):
        upper = f" and at most {param.maximum:,}" if param.maximum is not None else ""
        raise ToolInputError(f"Argument '{param.name}' must be at least {param.minimum}{upper}, not {value}.")
    return value


def _check_flag(param: Param, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ToolInputError(f"{_argument(param)} must be true or false, got {json_type(value)}.")
    return value


def _check_version(param: Param, value: Any) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, str) and value:
        return value
    raise ToolInputError(f"{_argument(param)} must be a version number (1, 2, …) or a version id. {param.help}")


def _check_section(param: Param, value: Any) -> list[str] | str:
    if isinstance(value, str):
        return check_string(param, value, _argument(param), NAME)
    if not isinstance(value, list):
        raise ToolInputError(
            f"{_argument(param)} must be a tocPath (an array of heading names, [] for the whole note) or a "
            f"breadcrumb string ('A > B'), got {json_type(value)}."
        )
    checked: list[str] = _HEADINGS.check(param, value)
    return checked


def _check_keys(param: Param, value: Any) -> list[str]:
    items: list[str] = _KEY_LIST.check(param, value)
    if any(not item.strip() for item in items):
        raise ToolInputError(f"Argument '{param.name}' holds an empty name.")
    return items


def _check_order(param: Param, value: Any) -> str | list[str]:
    if isinstance(value, str):
        return check_string(param, value, _argument(param), NONEMPTY)
    items: list[str] = _KEY_LIST.check(param, value)
    if any(not item.strip() for item in items):
        raise ToolInputError(f"Argument '{param.name}' holds an empty name.")
    return items


def read_order(name: str, text: str) -> Any:
    """A JSON array of names, or the text itself (one name)."""
    return read_json_array(name, text) if text.lstrip().startswith("[") else text


def _edits_schema(param: Param) -> dict[str, Any]:
    properties = {name: {"type": kind} for name, kind in EDIT_FIELDS.items()}
    item = {"type": "object", "properties": properties, "required": ["oldText", "newText"]}
    return {"type": "array", "items": item, "maxItems": MAX_EDITS}


def _check_edits(param: Param, value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_EDITS:
        raise ToolInputError(
            f"Argument '{param.name}' must be an array of 1 to {MAX_EDITS} edits "
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
        check_string(param, edit["oldText"], f"Edit {number}: oldText", CONTENT)
        check_string(param, edit["newText"], f"Edit {number}: newText", NOTE_TEXT)
    return value


def _check_fields(param: Param, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ToolInputError(
            f"Argument '{param.name}' must be an object of names and values, got {json_type(value)}. {param.help}"
        )
    if len(value) > MAX_KEYS:
        raise ToolInputError(f"Argument '{param.name}' has {len(value)} names; the limit is {MAX_KEYS}.")
    for name, item in value.items():
        if not name.strip():
            raise ToolInputError(f"Argument '{param.name}' holds an empty name.")
        check_string(param, name, f"The name {name[:40]!r} in '{param.name}'", CONTENT)
        check_string(param, json.dumps(item, ensure_ascii=False), f"The value of {name!r}", CONTENT)
    return value


# How a command line's text becomes a value (``teamvault-mcp call key=value``): text stays text; numbers,
# true/false and JSON are converted for the arguments that take them. A value that does not convert stays text,
# and the tool's own check says what is wrong with it.


def read_text(name: str, text: str) -> Any:
    return text


def read_flag(name: str, text: str) -> Any:
    return text.lower() == "true" if text.lower() in ("true", "false") else text


def read_integer(name: str, text: str) -> Any:
    return int(text) if text.isdigit() else text


def read_number(name: str, text: str) -> Any:
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number


def read_json(name: str, text: str) -> Any:
    return _json(name, text, "JSON", "'[\"...\"]'")


def read_json_array(name: str, text: str) -> Any:
    return _json(name, text, "a JSON array", "'[\"...\"]'")


def read_json_object(name: str, text: str) -> Any:
    return _json(name, text, "a JSON object", '\'{"status": "done"}\'')


def _json(name: str, text: str, what: str, example: str) -> Any:
    """``text`` read as JSON; else a ``ValueError`` that says where it stops being JSON (:meth:`Param.read` gives
    the argument's own example in place of ``example``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}" if "\n" in text else f"character {error.pos + 1}"
        raise ValueError(
            f"{name} takes {what}, and this is not valid JSON ({error.msg} at {where}), e.g. {name}={example}"
        ) from None


Reader = Callable[[str, str], Any]


@dataclass(frozen=True)
class ArgumentKind:
    """One row of :data:`KINDS`: the JSON schema of an argument of this kind (after its description), its check,
    how a command line's text reads as one, and the example value ``call --help`` shows (as typed in a shell)."""

    schema: Callable[[Param], dict[str, Any]]
    check: Callable[[Param, Any], Any]
    read: Reader = read_text
    example: str | None = None


def _string_kind(rule: Strings, *, example: str | None = None) -> ArgumentKind:
    return ArgumentKind(
        lambda param: {"type": "string"},
        lambda param, value: check_string(param, value, _argument(param), rule),
        example=example,
    )


def _list_kind(
    rule: Strings, *, at_most: int | None = None, counted: str = "", example: str | None = None
) -> ArgumentKind:
    """An array of strings that keep ``rule``; with ``at_most``, 1 to that many (``counted`` names them)."""

    def schema(param: Param) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
        if at_most is not None:
            schema["maxItems"] = at_most
        return schema

    def check(param: Param, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise ToolInputError(
                f"Argument '{param.name}' must be an array of strings, got {json_type(value)}. {param.help}"
            )
        if at_most is not None and not 1 <= len(value) <= at_most:
            raise ToolInputError(f"Argument '{param.name}' must hold 1 to {at_most} {counted}, not {len(value)}.")
        return [check_string(param, item, f"Item {index} of '{param.name}'", rule) for index, item in enumerate(value)]

    return ArgumentKind(schema, check, read_json_array, example)


_KEY_LIST = _list_kind(NAME, at_most=MAX_KEYS, counted="names")
_HEADINGS = _list_kind(NAME)


def _toc_schema(param: Param) -> dict[str, Any]:
    return {"anyOf": [_HEADINGS.schema(param), {"type": "string"}]}


def _check_toc(param: Param, value: Any) -> list[str] | str:
    """A tocPath: heading names as a list, or one breadcrumb string ``Runbook > Failover``, as search hits show it."""
    if isinstance(value, str):
        return check_string(param, value, _argument(param), NAME)
    if not isinstance(value, list):
        raise ToolInputError(
            f"Argument '{param.name}' must be a list of heading names or one string, got {json_type(value)}. "
            f"{param.help}"
        )
    checked: list[str] = _HEADINGS.check(param, value)
    return checked


def read_toc(name: str, text: str) -> Any:
    """A command line's tocPath: a JSON list (``'["Tasks"]'``), else the breadcrumb string as typed."""
    if text.lstrip().startswith("["):
        return read_json_array(name, text)
    return text


#: Every kind of argument a tool can take: strings (``path`` and ``id`` non-empty, ``content`` up to 5 MiB,
#: ``note_text`` the same, not starting with read_note's ``[contentHash: …]`` line,
#: ``hash`` 8 to 64 hex digits (a contentHash or its start), ``choice`` one of ``choices``, ``when`` a moment or a
#: span back from now), ``toc``
#: (heading names, or one string joining them with " > "; ``section`` the same, for edit_section's own wording),
#: arrays (``paths`` 1–20 paths, ``edits`` 1–100 ``{oldText, newText, replaceAll?}``, ``keys`` 1–100 names),
#: ``order`` (a name, or 1–100 of them: what to sort by), ``count`` (an integer from ``minimum`` to ``maximum``),
#: ``version`` (a number or an id), ``flag`` (a boolean), ``fields`` (an object of at most 100 names and any
#: JSON values).
KINDS: dict[Kind, ArgumentKind] = {
    "path": _string_kind(NONEMPTY, example="inbox/todo.md"),
    "id": _string_kind(Strings(nonempty=True, max_chars=MAX_ID_CHARS)),
    "cursor": _string_kind(NONEMPTY),
    "query": _string_kind(NONEMPTY, example="'travel budget'"),
    "prefix": _string_kind(NAME),
    "when": _string_kind(Strings(nonempty=True, max_chars=64), example="24h"),
    "content": _string_kind(CONTENT),
    "note_text": _string_kind(NOTE_TEXT),
    "hash": ArgumentKind(lambda param: {"type": "string"}, _check_hash),
    "choice": ArgumentKind(lambda param: {"type": "string", "enum": list(param.choices)}, _check_choice),
    "count": ArgumentKind(_count_schema, _check_count, read_integer, "5"),
    "flag": ArgumentKind(lambda param: {"type": "boolean"}, _check_flag, read_flag, "true"),
    "version": ArgumentKind(
        lambda param: {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        _check_version,
        read_integer,
    ),
    "toc": ArgumentKind(_toc_schema, _check_toc, read_toc, "'[\"Tasks\"]'"),
    "section": ArgumentKind(_toc_schema, _check_section, read_toc, "'[\"Tasks\"]'"),
    "paths": _list_kind(NONEMPTY, at_most=MAX_BATCH, counted="paths"),
    "keys": ArgumentKind(_KEY_LIST.schema, _check_keys, read_json_array),
    # anyOf, not a list of types: Ajv's strict mode and the Inspector's --strict refuse a union type. No items nor
    # maxItems: the tool list carries each byte on every turn, and the check says what an item must be.
    "order": ArgumentKind(
        lambda param: {"anyOf": [{"type": "string"}, {"type": "array"}]}, _check_order, read_order, "-due"
    ),
    "edits": ArgumentKind(
        _edits_schema, _check_edits, read_json_array, '\'[{"oldText": "- [ ] call", "newText": "- [x] call"}]\''
    ),
    "fields": ArgumentKind(
        lambda param: {"type": "object", "maxProperties": MAX_KEYS},
        _check_fields,
        read_json_object,
        '\'{"status": "done"}\'',
    ),
}

#: How a command line reads the value of a schema note's field, by the field's type (a string, a date and an
#: enum stay text).
FIELD_READERS: dict[str, Reader] = {
    "number": read_number,
    "integer": read_number,
    "boolean": read_flag,
    "array": read_json,
    "object": read_json,
}


def json_type(value: Any) -> str:
    """What JSON calls the type of ``value``, for messages."""
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
