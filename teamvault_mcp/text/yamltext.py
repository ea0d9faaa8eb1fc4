"""YAML for front matter and schema notes: read within limits, written so that every reader agrees. Pure.

Reading (:func:`load`, then :func:`json_of`) uses ruamel.yaml's round-trip loader: YAML 1.2,
as Obsidian reads it, with each key's line recorded. A note is text anyone can write, so the
work it can cause is bounded, and each bound is an error that says which one:

- a block of more than :data:`MAX_BLOCK_BYTES` is not parsed at all;
- nesting deeper than :data:`MAX_DEPTH` levels, and an alias inside the value it names
  (``&a [*a]``), are refused while parsing (ruamel.yaml would recurse until it crashes);
- parsing does not expand aliases (an alias is the same Python object as its anchor); turning
  the data into JSON does, so :func:`json_of` counts what it writes and stops at
  :data:`MAX_VALUES` values or :data:`MAX_JSON_CHARS` characters: nested aliases ("billion
  laughs") and merge keys cannot make an answer of hundreds of megabytes;
- ``check`` (the call's budget and cancel) is called every few hundred values, while parsing
  and while converting, and stops the work by raising.

A date that does not exist (``2024-02-30``) reads as text, as Obsidian reads it. Merge keys
(``<<: *base``) are applied, as YAML libraries apply them.

Writing (:func:`dumper`): a string that some YAML 1.1 or 1.2 reader would take for something
else (:func:`misread_as`: ``yes`` is true to YAML 1.1, ``1e3`` a number to YAML 1.2, ``1,000``
a number to Ruby) is single-quoted, keys included, so it reads back as the same text in
Obsidian, ruamel.yaml, PyYAML and Ruby; a float always has a dot (``1.0e+20``), which YAML
1.1 needs to see a number.

This module imports ruamel.yaml: ``frontmatter.py`` and ``schema_notes.py`` import it on first use,
so start-up does not pay for it.
"""

from __future__ import annotations

import base64
import datetime
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode
from ruamel.yaml.representer import RoundTripRepresenter

#: A block (front matter, a schema block) larger than this, in UTF-8, is not read.
MAX_BLOCK_BYTES = 64 * 1024
#: Mappings and lists nested deeper than this are not read (or written).
MAX_DEPTH = 50
#: The JSON form of a block, aliases expanded, holds at most this many values (keys not counted).
MAX_VALUES = 100_000
#: ... and at most this many characters: keys, values and the indentation of the JSON answer.
MAX_JSON_CHARS = 1_000_000
#: ``check`` is called once per this many values parsed or converted.
CHECK_EVERY = 256
#: Long strings are never folded over several lines.
WIDTH = 1_000_000
MERGE_TAG = "tag:yaml.org,2002:merge"

#: Called now and then during long work; raises to stop it (the call's budget ran out, or it was cancelled).
Check = Callable[[], None]


class YamlProblem(Exception):
    """YAML that is not read: invalid (``limit`` False), or past one of the limits above (``limit`` True).

    ``problem`` is a phrase for a message ("mapping values are not allowed here"); ``line`` is
    0-based within the block, when known.
    """

    def __init__(self, problem: str, line: int | None = None, *, limit: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.limit = limit


@dataclass(frozen=True)
class Loaded:
    """A parsed block: ruamel's round-trip data, and where its top-level entries start.

    ``entries`` holds ``(line, merge)`` for each ``key: value`` of a top-level mapping, in
    order; ``merge`` is True for a ``<<`` entry (which ``data`` shows merged, not as a key).
    ``flow`` is True when the top level is written ``{…}``.
    """

    data: Any
    entries: tuple[tuple[int, bool], ...] = ()
    flow: bool = False


# -- reading -------------------------------------------------------------------------------------------------


def load(text: str, check: Check | None = None) -> Loaded:
    """Parse ``text`` (one YAML document) within the limits; :class:`YamlProblem` if it is not read."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_BLOCK_BYTES:
        raise YamlProblem(
            f"it is {size:,} bytes, more than the {MAX_BLOCK_BYTES // 1024} KiB ({MAX_BLOCK_BYTES:,} bytes) that "
            "are read as fields",
            limit=True,
        )
    yaml = _yaml()
    yaml.check = check
    try:
        data = yaml.load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise YamlProblem(
            error.problem or error.context or "not valid YAML", mark.line if mark is not None else None
        ) from None
    except YAMLError as error:
        raise YamlProblem(" ".join(str(error).split())) from None
    except (ValueError, TypeError, KeyError, OverflowError) as error:
        # ruamel.yaml lets these through for a value it cannot convert: `!!int abc`, `!!bool maybe`,
        # an integer of more than 4,300 digits.
        raise YamlProblem(f"a value cannot be converted ({type(error).__name__}: {error})") from None
    composer = yaml.composer
    return Loaded(data, composer.entries, composer.flow)


def json_of(data: Any, check: Check | None = None) -> Any:
    """Loaded ``data`` as JSON (see :func:`to_json`), aliases expanded within MAX_VALUES and MAX_JSON_CHARS."""
    return _json(data, _Expansion(check), 1)


def to_json(value: Any) -> Any:
    """A YAML value as JSON: mappings with string keys, dates as ISO text, odd scalars as text. Unbounded:
    for values that came as JSON; a loaded block goes through :func:`json_of`."""
    return _json(value, None, 1)


def _json(value: Any, expansion: _Expansion | None, depth: int) -> Any:
    if isinstance(value, dict):
        if expansion is not None:
            expansion.count(depth, 2)
        return {_key_text(key, expansion): _json(item, expansion, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        if expansion is not None:
            expansion.count(depth, 2)
        return [_json(item, expansion, depth + 1) for item in value]
    scalar = _scalar_json(value)
    if expansion is not None:
        expansion.count(depth, len(scalar) + 2 if isinstance(scalar, str) else 8)
    return scalar


def _scalar_json(value: Any) -> Any:
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


def _key_text(key: Any, expansion: _Expansion | None = None) -> str:
    text = key if isinstance(key, str) else str(_json(key, expansion, 1))  # ? [a, b] : c has the key "['a', 'b']"
    if expansion is not None:
        expansion.chars += len(text) + 4
    return text


class _Expansion:
    """What :func:`json_of` has written so far; a :class:`YamlProblem` once it is past the limits."""

    def __init__(self, check: Check | None) -> None:
        self.check = check
        self.values = 0
        self.chars = 0

    def count(self, depth: int, chars: int) -> None:
        self.values += 1
        self.chars += chars + 2 * depth  # the JSON answer indents each value by its depth
        if self.values > MAX_VALUES:
            raise YamlProblem(f"with its aliases (*name) expanded it holds more than {MAX_VALUES:,} values", limit=True)
        if self.chars > MAX_JSON_CHARS:
            raise YamlProblem(
                f"with its aliases (*name) expanded it is more than {MAX_JSON_CHARS:,} characters as JSON",
                limit=True,
            )
        if self.check is not None and self.values % CHECK_EVERY == 0:
            self.check()


class _Composer(Composer):
    """ruamel.yaml's composer, checking depth, recursive aliases and the call's time as it goes.

    ``compose_node`` is the one method ruamel.yaml calls for every node (aliases included);
    it recurses, so the depth is checked before Python's own limit is reached.
    """

    def __init__(self, loader: Any = None) -> None:
        super().__init__(loader)
        self.warn_double_anchors = False  # valid YAML: the later anchor counts; the warning would go to stderr
        self.levels = 0
        self.nodes = 0
        self.entries: tuple[tuple[int, bool], ...] = ()
        self.flow = False

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.nodes += 1
        check = self.loader.check
        if check is not None and self.nodes % CHECK_EVERY == 0:
            check()
        line = self.parser.peek_event().start_mark.line
        if self.levels >= MAX_DEPTH:
            raise YamlProblem(f"it is nested more than {MAX_DEPTH} levels deep", line, limit=True)
        self.levels += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.levels -= 1
        if getattr(node, "end_mark", True) is None:  # a collection still being composed: an alias inside it
            raise YamlProblem(f"the alias *{node.anchor} is inside the value it names, which has no end", line)
        if self.levels == 0 and isinstance(node, MappingNode):
            # Recorded now: constructing the data later rewrites the merge entries of node.value.
            self.entries = tuple((key.start_mark.line, str(key.tag) == MERGE_TAG) for key, _ in node.value)
            self.flow = bool(node.flow_style)
        return node


class _Constructor(RoundTripConstructor):
    """ruamel.yaml's round-trip constructor; a date that does not exist stays text, as in Obsidian."""

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
        try:
            return super().construct_yaml_timestamp(node, values)
        except ValueError:  # 2024-02-30, 2024-13-01 10:00:00
            return str(node.value)


_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _Constructor.construct_yaml_timestamp)


# -- writing -------------------------------------------------------------------------------------------------

#: Plain (unquoted) text that some YAML reader takes for something other than a string. Sources: the
#: YAML 1.1 type repository (yaml.org/type: bool, null, int with base 60, float, timestamp, merge,
#: value; PyYAML's and libyaml's readers spell them a little more widely, so do we), the YAML 1.2
#: core schema, and Ruby's Psych (Jekyll, Rails), which also reads 1,000 as a number, 2024-1-5 as a
#: date and :name as a symbol.
MISREAD: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (meaning, re.compile(pattern))
    for meaning, pattern in (
        ("null", r"~|null|Null|NULL|"),
        ("a boolean or null to Ruby", r"(?i:yes|true|on|no|false|off|null)"),
        ("a YAML 1.1 boolean", r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"),
        ("a YAML 1.1 integer", r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"),
        ("a YAML 1.1 sexagesimal number", r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"),
        (
            "a YAML 1.1 float",
            r"[-+]?(?:[0-9][0-9_]*)?\.[0-9._]*(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        ),
        (
            "a YAML 1.1 timestamp",
            r"-?[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
            r"(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"  # time
            r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::?[0-9]{2})?))?)?",  # zone
        ),
        ("the YAML 1.1 merge key", r"<<"),
        ("the YAML 1.1 value key", r"="),
        ("a YAML 1.2 integer", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"),
        ("a YAML 1.2 float", r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"),
        (
            "a number to Ruby",
            r"[-+]?(?:0b[0-1_,]+|0[0-7_,]+|[1-9][0-9_,]*|0x[0-9a-fA-F_,]+|[0-9][0-9_,]*\.[0-9]*(?:[eE][-+][0-9]+)?)"
            r"|[-+]?\.(?i:inf)|\.(?i:nan)",
        ),
        ("a symbol to Ruby", r":[^ \t].*"),
    )
)


def misread_as(text: str) -> str | None:
    """What some YAML reader would take ``text`` for, written plain; None when every reader reads the text."""
    for meaning, pattern in MISREAD:
        if pattern.fullmatch(text):
            return meaning
    return None


class _Representer(RoundTripRepresenter):
    """ruamel.yaml's round-trip representer; strings any reader would misread are quoted, floats have a dot."""

    def represent_str(self, data: str) -> Any:
        return self.represent_scalar("tag:yaml.org,2002:str", data, style="'" if misread_as(data) else None)

    def represent_float(self, data: float) -> Any:
        if math.isnan(data) or math.isinf(data):
            return super().represent_float(data)
        text = repr(data)
        mantissa, _, exponent = text.partition("e")
        if exponent and "." not in mantissa:
            text = f"{mantissa}.0e{exponent}"  # 1e+20 is text to YAML 1.1, 1.0e+20 a number to all
        return self.represent_scalar("tag:yaml.org,2002:float", text)


_Representer.add_representer(str, _Representer.represent_str)
_Representer.add_representer(float, _Representer.represent_float)


def dumper(*, sequence_at_column_0: bool) -> Any:
    """A round-trip YAML writer: lists as Obsidian writes them (``tags:\\n  - a``), or at column 0."""
    yaml = _yaml()
    if sequence_at_column_0:
        yaml.indent(mapping=2, sequence=2, offset=0)
    else:
        yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _yaml() -> Any:
    yaml: Any = YAML()  # round-trip: keeps key order and comments, records where each key is
    yaml.Composer = _Composer
    yaml.Constructor = _Constructor
    yaml.Representer = _Representer
    yaml.width = WIDTH
    yaml.check = None
    return yaml
