"""Front matter: the YAML block at the top of a note, read as JSON and changed key by key. Pure.

A note has front matter when its first line is ``---`` (after an optional byte-order
mark) and a later line is ``---`` or ``...``; the lines between are YAML, read as YAML 1.2
as Obsidian does (``NO`` stays a string, ``010`` is ten). An opening line that is never
closed is not front matter (the same rule as ``markdown.py``). A block is read within the
limits of ``yamltext.py`` (size, depth, alias expansion, the call's ``check``); past one,
it is a :class:`FrontMatterError` that says which.

Changing keys edits the text, not a re-dump of the whole block: an untouched key keeps
its bytes, a key that is set gets freshly written lines in its place, a removed key's
lines go, a new key is appended; comment lines between keys, and merge entries
(``<<: *base``), stay. The body after the closing line is kept byte for byte. Values are
written so that YAML 1.1 and 1.2 readers read them alike (see ``yamltext.py``), except that
``YYYY-MM-DD`` text is written as a plain date, Obsidian's date type.

Merge keys: the fields a ``<<`` entry brings in are read as fields (as YAML libraries read
them). Setting one writes the note's own line for it, which takes precedence over the
merge; the merged-in mapping is not changed. Removing one is refused: it would still be
there.

Each change is checked by reading the result back; if the result does not read as
intended (an alias that pointed into a removed key, a flow-style block), the block is
rewritten whole by ruamel.yaml's round-trip dumper, and if that does not read as intended
either, nothing is written.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import FrontMatterError as FrontMatterError
from teamvault_mcp.errors import Suggest
from teamvault_mcp.text.diff import newline_of, with_newline

if TYPE_CHECKING:  # yamltext imports ruamel.yaml, which start-up does not need
    from teamvault_mcp.text.yamltext import Check, Loaded, YamlProblem

BOM = "\ufeff"
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


#: How a message about a note's text says which tool changes it (read-only: none does).
_WITH_EDIT_NOTE = Suggest(("edit_note",), " (edit_note)")


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


def read(text: str, path: str, *, check: Check | None = None) -> tuple[dict[str, Any], Split]:
    """The front matter of ``text`` as a JSON object ({} when there is none), and the split.

    ``check`` is called now and then while the YAML is read, and stops it by raising.
    """
    parts = split(text)
    if not parts.present:
        return {}, parts
    return _fields(_load(parts.yaml, path, check), path, check), parts


def update(
    text: str, changes: Mapping[str, Any], remove: Sequence[str], path: str, *, check: Check | None = None
) -> str:
    """``text`` with the top-level keys in ``changes`` set (whole values) and those in ``remove`` gone."""
    parts = split(text)
    if parts.unclosed:
        raise FrontMatterError(
            f"{path} starts with a --- line that no later --- line closes, so it has no front matter, and adding "
            "one in front of it would change how the note reads. Close or remove that line first",
            _WITH_EDIT_NOTE,
            ". Nothing was written.",
        )
    _check_depth(changes)
    newline = newline_of(parts.yaml or parts.opening) if parts.present else newline_of(text)
    if not parts.present:
        if not changes:
            return text
        block = _entries(changes, newline, sequence_at_column_0=False)
        if _written_back(block, path, check) != _applied({}, changes, ()):
            raise FrontMatterError(f"These fields cannot be written as front matter of {path} faithfully.")
        head = BOM if text.startswith(BOM) else ""
        return f"{head}---{newline}{block}---{newline}{text[len(head) :]}"
    loaded = _load(parts.yaml, path, check)
    current = _fields(loaded, path, check)
    own = {_key_text(key) for key, _ in loaded.data.non_merged_items()}
    _refuse_merged_removal([name for name in remove if name in current and name not in own], path, own_line=False)
    expected = _applied(current, changes, remove)
    new_yaml = _spliced(parts.yaml, loaded, changes, remove, newline)
    written = None if new_yaml is None else _written_back(new_yaml, path, check)
    _refuse_revived(loaded, written, remove, path)
    if new_yaml is None or written != expected:
        new_yaml = _rewritten(loaded.data, changes, remove, newline)
        written = _written_back(new_yaml, path, check)
        _refuse_revived(loaded, written, remove, path)
        if written != expected:
            raise FrontMatterError(
                f"The front matter of {path} cannot be changed safely: written back, {_differences(expected, written)}."
                " Nothing was written",
                Suggest(("edit_note",), "; change it with edit_note instead.", "."),
            )
    return parts.head + parts.opening + new_yaml + parts.closing + parts.body


def to_json(value: Any) -> Any:
    """A YAML value as JSON: mappings with string keys, dates as ISO text, odd scalars as text."""
    from teamvault_mcp.text import yamltext

    return yamltext.to_json(value)


# -- reading ---------------------------------------------------------------------------------------------


def _load(text: str, path: str, check: Check | None) -> Loaded:
    """The YAML ``text`` as ruamel's round-trip mapping (empty for an empty block), within the limits."""
    from ruamel.yaml.comments import CommentedMap

    from teamvault_mcp.text import yamltext

    try:
        loaded = yamltext.load(text, check)
    except yamltext.YamlProblem as problem:
        raise _refused(problem, path) from None
    if loaded.data is None:  # nothing, blank lines or only comments
        return yamltext.Loaded(CommentedMap())
    if not isinstance(loaded.data, dict):
        kind = "a list" if isinstance(loaded.data, list) else "a single value"
        raise FrontMatterError(
            f"The front matter of {path} is {kind}, not key: value pairs, so it has no fields to read or change."
        )
    return loaded


def _fields(loaded: Loaded, path: str, check: Check | None) -> dict[str, Any]:
    from teamvault_mcp.text import yamltext

    try:
        fields: dict[str, Any] = yamltext.json_of(loaded.data, check)
    except yamltext.YamlProblem as problem:
        raise _refused(problem, path) from None
    return fields


def _refused(problem: YamlProblem, path: str) -> FrontMatterError:
    where = f", line {problem.line + 2}" if problem.line is not None else ""  # line 1 is the opening ---
    if problem.limit:
        return FrontMatterError(
            f"The front matter of {path} is not read{where}: {problem.problem}.",
            Suggest(
                ("read_note", "edit_note"),
                " Read the note with read_note and change it with edit_note instead.",
                Suggest(("read_note",), " Read the note with read_note instead."),
            ),
        )
    return FrontMatterError(
        f"Invalid front matter in {path}{where}: {problem.problem}. Fix the YAML", _WITH_EDIT_NOTE, ", then try again."
    )


def _applied(current: dict[str, Any], changes: Mapping[str, Any], remove: Sequence[str]) -> dict[str, Any]:
    result = {key: value for key, value in current.items() if key not in remove}
    result.update({key: to_json(_yaml_value(value)) for key, value in changes.items()})
    return result


def _written_back(block: str, path: str, check: Check | None) -> Any:
    """The new ``block`` read as front matter (see :func:`_read_back`); refused when it is past the size limit."""
    from teamvault_mcp.text import yamltext

    size = len(block.encode("utf-8", errors="surrogatepass"))
    if size > yamltext.MAX_BLOCK_BYTES:
        raise FrontMatterError(
            f"The front matter of {path} would be {size:,} bytes after this change, more than the "
            f"{yamltext.MAX_BLOCK_BYTES // 1024} KiB that front matter tools read. Nothing was written; keep long "
            "text in the body of the note instead."
        )
    return _read_back(block, check)


def _read_back(text: str, check: Check | None) -> Any:
    """``text`` read as front matter; None when it does not read as key: value pairs (or is past a limit)."""
    from teamvault_mcp.text import yamltext

    try:
        loaded = yamltext.load(text, check)
        if loaded.data is None:
            return {}
        return yamltext.json_of(loaded.data, check) if isinstance(loaded.data, dict) else None
    except yamltext.YamlProblem:
        return None


def _differences(expected: dict[str, Any], written: Any) -> str:
    if not isinstance(written, dict):
        return "it would not read as key: value pairs"
    gone = [name for name in expected if name not in written]
    still = [name for name in written if name not in expected]
    changed = [name for name in expected if name in written and expected[name] != written[name]]
    parts = [
        f"{', '.join(names)} would {what}"
        for names, what in ((gone, "be missing"), (still, "still be there"), (changed, "read differently"))
        if names
    ]
    return "; ".join(parts) or "it would not read as intended"


def _refuse_merged_removal(names: list[str], path: str, *, own_line: bool) -> None:
    """Fields that a merge key (``<<``) gives cannot be removed: without a line of their own they stay there."""
    if not names:
        return
    one = len(names) == 1
    if own_line:  # its own line went, and the merge brought the field back
        why = f"a merge key (<<: …) gives {'it' if one else 'them'} too, so without {'its' if one else 'their'} own"
        why += f" line {'it' if one else 'they'} would still be there, with the merged value"
    else:
        why = f"{'it comes' if one else 'they come'} from a merge key (<<: …), not from a line of"
        why += f" {'its' if one else 'their'} own, so removing would change nothing"
    raise FrontMatterError(
        f"Cannot remove {', '.join(names)} from the front matter of {path}: {why}. Set "
        f"{'it' if one else 'them'} to null instead",
        Suggest(("edit_note",), ", or change the << entry with edit_note"),
        ". Nothing was written.",
    )


def _refuse_revived(loaded: Loaded, written: Any, remove: Sequence[str], path: str) -> None:
    """A removed field that the block written back still has came back through a merge key."""
    if any(merge for _, merge in loaded.entries) and isinstance(written, dict):
        _refuse_merged_removal([name for name in remove if name in written], path, own_line=True)


def _check_depth(changes: Mapping[str, Any]) -> None:
    from teamvault_mcp.text import yamltext

    # The top-level mapping is level 1 and a field's value level 2: what may nest inside it is the rest.
    inside = yamltext.MAX_DEPTH - 2
    deep = [name for name, value in changes.items() if _nested_deeper_than(value, inside)]
    if deep:
        raise FrontMatterError(
            f"{', '.join(deep)} nest(s) lists and objects more than {inside} levels deep; front matter is read "
            f"to {yamltext.MAX_DEPTH} levels at most. Nothing was written."
        )


def _nested_deeper_than(value: Any, levels: int) -> bool:
    if isinstance(value, dict | list):
        items = value.values() if isinstance(value, dict) else value
        return levels == 0 or any(_nested_deeper_than(item, levels - 1) for item in items)
    return False


# -- writing -------------------------------------------------------------------------------------------------


def _spliced(text: str, loaded: Loaded, changes: Mapping[str, Any], remove: Sequence[str], newline: str) -> str | None:
    """The block with only the changed keys' lines replaced; None when its layout does not allow that."""
    if loaded.flow:
        return None
    own = [key for key, _ in loaded.data.non_merged_items()]
    if len(loaded.entries) != len(own) + sum(merge for _, merge in loaded.entries):
        return None
    names = iter(own)
    entries = [(line, None if merge else next(names)) for line, merge in loaded.entries]  # None: a << entry
    starts = [line for line, _ in entries]
    if any(later <= earlier for earlier, later in itertools.pairwise(starts)):
        return None  # two keys on one line, or out of order: not a plain block mapping
    lines = text.splitlines(keepends=True)
    ends = [*starts[1:], len(lines)] if starts else []
    out = lines[: starts[0]] if starts else list(lines)
    sequence_at_column_0 = any(line.startswith("- ") or line.rstrip() == "-" for line in lines)
    for (start, key), end in zip(entries, ends, strict=True):
        kept, detached = _own_lines(lines[start:end])
        name = None if key is None else _key_text(key)
        if name is not None and name in changes:
            out.append(_entries({key: changes[name]}, newline, sequence_at_column_0))
        elif name is None or name not in remove:
            out.extend(kept)
        out.extend(detached)
    if out and not out[-1].endswith(("\n", "\r")):
        out[-1] += newline
    known = {_key_text(key) for key in own}
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
    from teamvault_mcp.text import yamltext

    buffer = io.StringIO()
    yamltext.dumper(sequence_at_column_0=sequence_at_column_0).dump(data, buffer)
    return with_newline(buffer.getvalue(), newline)


def _key_text(key: Any) -> str:
    return key if isinstance(key, str) else str(to_json(key))


def _yaml_value(value: Any) -> Any:
    """A JSON value as it should be written: ISO dates plain, multi-line text as a literal block."""
    import datetime

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
            if _read_back(_dump({"k": literal}, "\n", sequence_at_column_0=False), None) == {"k": value}:
                return literal  # a readable block; otherwise the dumper's quoted form, with \n escapes
    return value
