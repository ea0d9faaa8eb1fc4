"""Front matter: the YAML block at the top of a note, read as JSON and changed key by key. Pure.

A note has front matter when its first line is ``---`` (after an optional byte-order
mark) and a later line is ``---`` or ``...``; the lines between are YAML, read as YAML 1.2
as Obsidian does (``NO`` stays a string, ``010`` is ten). An opening line that is never
closed is not front matter (the same rule as ``markdown.py``).

Changing keys edits the text, not a re-dump of the whole block: an untouched key keeps
its bytes, a key that is set gets freshly written lines in its place, a removed key's
lines go, a new key is appended; comment lines between keys stay. The body after the
closing line is kept byte for byte. Each change is checked by reading the result back;
if the result does not read as intended (an alias that pointed into a removed key, a
flow-style block), the block is rewritten whole by ruamel.yaml's round-trip dumper.

``ruamel.yaml`` is imported on first use, not at start-up.
"""

from __future__ import annotations

import base64
import datetime
import io
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from teamvault_mcp.errors import TeamVaultError
from teamvault_mcp.textdiff import newline_of, with_newline

BOM = "\ufeff"
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: Long strings are never folded over several lines.
_WIDTH = 1_000_000


class FrontMatterError(TeamVaultError):
    """Front matter that cannot be read, or changed safely; nothing was written."""


@dataclass(frozen=True)
class Split:
    """A note cut into its front matter and its body; ``present`` False when it has none."""

    present: bool
    head: str = ""  # a byte-order mark, kept in front of everything
    opening: str = ""  # the "---" line, with its line ending
    yaml: str = ""  # the lines in between
    closing: str = ""  # the "---" (or "...") line, with its line ending (none at the end of the note)
    body: str = ""
    unclosed: bool = False  # starts with a "---" line that no later line closes


def split(text: str) -> Split:
    head = BOM if text.startswith(BOM) else ""
    rest = text[len(head) :]
    first_end = rest.find("\n")
    first = rest if first_end < 0 else rest[:first_end]
    if first.rstrip() != "---":
        return Split(False, body=text)
    if first_end < 0:
        return Split(False, body=text, unclosed=True)
    start = position = first_end + 1
    while position < len(rest):
        end = rest.find("\n", position)
        line_end = len(rest) if end < 0 else end + 1
        if rest[position:line_end].rstrip() in ("---", "..."):
            return Split(
                True,
                head=head,
                opening=rest[:start],
                yaml=rest[start:position],
                closing=rest[position:line_end],
                body=rest[line_end:],
            )
        position = line_end
    return Split(False, body=text, unclosed=True)


def read(text: str, path: str) -> tuple[dict[str, Any], Split]:
    """The front matter of ``text`` as a JSON object ({} when there is none), and the split."""
    parts = split(text)
    if not parts.present:
        return {}, parts
    return to_json(_load(parts.yaml, path)), parts


def update(text: str, changes: Mapping[str, Any], remove: Sequence[str], path: str) -> str:
    """``text`` with the top-level keys in ``changes`` set (whole values) and those in ``remove`` gone."""
    parts = split(text)
    if parts.unclosed:
        raise FrontMatterError(
            f"{path} starts with a --- line that no later --- line closes, so it has no front matter, and adding "
            "one in front of it would change how the note reads. Close or remove that line first (edit_note). "
            "Nothing was written."
        )
    newline = newline_of(parts.yaml or parts.opening) if parts.present else newline_of(text)
    if not parts.present:
        if not changes:
            return text
        block = _entries(changes, newline, sequence_at_column_0=False)
        if _read_back(block) != _applied({}, changes, ()):
            raise FrontMatterError(f"These fields cannot be written as front matter of {path} faithfully.")
        head = BOM if text.startswith(BOM) else ""
        return f"{head}---{newline}{block}---{newline}{text[len(head) :]}"
    data = _load(parts.yaml, path)
    expected = _applied(to_json(data), changes, remove)
    new_yaml = _spliced(parts.yaml, data, changes, remove, newline)
    if new_yaml is None or _read_back(new_yaml) != expected:
        new_yaml = _rewritten(data, changes, remove, newline)
        if _read_back(new_yaml) != expected:
            raise FrontMatterError(
                f"The front matter of {path} cannot be changed safely: written back, it would not read as intended. "
                "Nothing was written; change it with edit_note instead."
            )
    return parts.head + parts.opening + new_yaml + parts.closing + parts.body


# -- reading ---------------------------------------------------------------------------------------------


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML()  # round-trip: keeps key order and records where each key is
    yaml.width = _WIDTH
    return yaml


def _load(text: str, path: str) -> Any:
    """The YAML ``text`` as ruamel's round-trip mapping; {} for an empty block."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        data = _yaml().load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f", line {mark.line + 2}" if mark is not None else ""
        problem = error.problem or error.context or "not valid YAML"
        raise FrontMatterError(
            f"Invalid front matter in {path}{where}: {problem}. Fix the YAML (edit_note), then try again."
        ) from None
    except YAMLError as error:
        raise FrontMatterError(f"Invalid front matter in {path}: {error}.") from None
    if data is None:
        from ruamel.yaml.comments import CommentedMap

        return CommentedMap()
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "a single value"
        raise FrontMatterError(
            f"The front matter of {path} is {kind}, not key: value pairs, so it has no fields to read or change."
        )
    return data


def to_json(value: Any) -> Any:
    """A YAML value as JSON: mappings with string keys, dates as ISO text, odd scalars as text."""
    if isinstance(value, dict):
        return {_key_text(key): to_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_json(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return float(value)
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, str):
        return str(value)
    return str(getattr(value, "value", value))  # tagged scalars (!foo bar) and the like


def _key_text(key: Any) -> str:
    return key if isinstance(key, str) else str(to_json(key))


def _applied(current: dict[str, Any], changes: Mapping[str, Any], remove: Sequence[str]) -> dict[str, Any]:
    result = {key: value for key, value in current.items() if key not in remove}
    result.update({key: to_json(_yaml_value(value)) for key, value in changes.items()})
    return result


def _read_back(text: str) -> Any:
    try:
        return to_json(_load(text, ""))
    except FrontMatterError:
        return None


# -- writing -------------------------------------------------------------------------------------------------


def _spliced(text: str, data: Any, changes: Mapping[str, Any], remove: Sequence[str], newline: str) -> str | None:
    """The block with only the changed keys' lines replaced; None when its layout does not allow that."""
    if getattr(data.fa, "flow_style", lambda: False)():
        return None
    keys = list(data.keys())
    starts = [data.lc.key(key)[0] for key in keys]
    if any(later <= earlier for earlier, later in itertools.pairwise(starts)):
        return None  # two keys on one line, or out of order: not a plain block mapping
    lines = text.splitlines(keepends=True)
    ends = [*starts[1:], len(lines)]
    out = lines[: starts[0]] if starts else list(lines)
    sequence_at_column_0 = any(line.startswith("- ") or line.rstrip() == "-" for line in lines)
    for key, start, end in zip(keys, starts, ends, strict=True):
        own, detached = _own_lines(lines[start:end])
        name = _key_text(key)
        if name in changes:
            out.append(_entries({key: changes[name]}, newline, sequence_at_column_0))
        elif name not in remove:
            out.extend(own)
        out.extend(detached)
    if out and not out[-1].endswith(("\n", "\r")):
        out[-1] += newline
    known = {_key_text(key) for key in keys}
    added = {name: value for name, value in changes.items() if name not in known}
    if added:
        out.append(_entries(added, newline, sequence_at_column_0))
    return "".join(out)


def _own_lines(lines: list[str]) -> tuple[list[str], list[str]]:
    """A key's lines, and the blank and column-0 comment lines after them (which may belong to the next key)."""
    cut = len(lines)
    while cut > 1 and (not lines[cut - 1].strip() or lines[cut - 1].startswith("#")):
        cut -= 1
    return lines[:cut], lines[cut:]


def _rewritten(data: Any, changes: Mapping[str, Any], remove: Sequence[str], newline: str) -> str:
    """The whole block written anew by the round-trip dumper (comments kept where ruamel can)."""
    by_name = {_key_text(key): key for key in data}
    for name in remove:
        if name in by_name:
            del data[by_name[name]]
    for name, value in changes.items():
        data[by_name.get(name, name)] = _yaml_value(value)
    if not data:
        return ""
    return _dump(data, newline, sequence_at_column_0=False)


def _entries(values: Mapping[Any, Any], newline: str, sequence_at_column_0: bool) -> str:
    """``key: value`` lines for each of ``values``, as YAML block style."""
    from ruamel.yaml.comments import CommentedMap

    mapping = CommentedMap()
    for key, value in values.items():
        mapping[key] = _yaml_value(value)
    return _dump(mapping, newline, sequence_at_column_0)


def _dump(data: Any, newline: str, sequence_at_column_0: bool) -> str:
    yaml = _yaml()
    if sequence_at_column_0:
        yaml.indent(mapping=2, sequence=2, offset=0)
    else:  # as Obsidian writes lists: "tags:\n  - a"
        yaml.indent(mapping=2, sequence=4, offset=2)
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return with_newline(buffer.getvalue(), newline)


def _yaml_value(value: Any) -> Any:
    """A JSON value as it should be written: ISO dates plain, multi-line text as a literal block."""
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.scalarstring import LiteralScalarString

    if isinstance(value, dict):
        mapping = CommentedMap()
        for key, item in value.items():
            mapping[key] = _yaml_value(item)
        return mapping
    if isinstance(value, list):
        return [_yaml_value(item) for item in value]
    if isinstance(value, str):
        if _ISO_DATE.fullmatch(value):
            try:
                return datetime.date.fromisoformat(value)
            except ValueError:
                return value  # 2024-13-45 stays text (and is quoted)
        if "\n" in value:
            literal = LiteralScalarString(value)
            if _read_back(_dump({"k": literal}, "\n", sequence_at_column_0=False)) == {"k": value}:
                return literal  # a readable block; otherwise the dumper's quoted form, with \n escapes
    return value
