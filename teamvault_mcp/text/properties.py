"""The ``where`` and ``sort`` of ``query_notes``: front matter fields matched, compared and sorted. Pure.

``where`` maps a field to a value (equality) or to an object of operators, all of which must
hold: ``{"status": "active", "due": {"gte": "2024-05-01", "lt": "2024-06-01"}}``.

====================  ==================================================================
``eq`` (or a value)   equal; for a list field, one of its items is equal
``ne``                not equal: no item is equal (a missing field is not equal)
``in``                equal to one of the given values (a non-empty list)
``contains``          a list field has the item; a text field has the text in it
``gt`` ``gte``        greater (or equal); ``lt`` ``lte`` less (or equal): for a list field,
                      one of its items is; a missing field never is
``exists``            ``true``: the field is there with a value (not null, ``""`` or ``[]``);
                      ``false``: it is not
====================  ==================================================================

How two values compare: numbers as numbers (a number and a text that reads as one, ``"3"``,
too); ``true``/``false`` as booleans (also against the text ``"true"``); dates as dates:
``YYYY-MM-DD`` and ISO date-times (``2024-05-01T10:00``, ``…Z``, ``…+02:00``; a time without a
zone is taken as UTC) compare by the instant, and a date against a date-time by the day
(``"2024-05-01"`` equals ``2024-05-01T10:00``); text as text ignoring case (casefold, as
Obsidian's property search does; a date against a text that is no date, too). Other values
of different kinds are never equal or ordered (a number is not greater than a date). A value
to order by that starts like a date but is none (``2024-5-1``, ``2024-02-30``) is refused: as
text it would order by its characters. ``null`` as a value means "missing or empty"
(``{"due": null}`` is ``{"due": {"exists": false}}``).

:func:`queryable` gives a note's fields: its front matter, and the fields every note has,
``path``, ``tags`` (front matter and inline, without ``#``) and ``updatedAt``, which win over
front matter keys of those names. For ``tags``, a value's leading ``#`` is ignored and a tag matches its nested tags
(``"project"`` matches ``project/alpha``), as Obsidian's tag search does. Other field names
match a front matter key exactly, or else the one key that matches ignoring case.

:func:`unknown_fields` says which fields of a ``where`` no note has, with the close names that
notes do have (``stauts``: ``status``), so a typo is answered with the fix, not with "0 match".

``sort`` is a field, or a list of them, ``-field`` for descending; a note without the field
comes last either way; ties keep the order given (the caller sorts by path first).

:func:`compile_where` and :func:`compile_sort` check everything first and raise
:class:`~teamvault_mcp.errors.ToolInputError` naming what is wrong; nothing is matched until
the whole query is valid.
"""

from __future__ import annotations

import datetime
import difflib
import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from teamvault_mcp.errors import ToolInputError

OPERATORS = ("eq", "ne", "in", "contains", "gt", "gte", "lt", "lte", "exists")
BUILT_IN_FIELDS = ("path", "tags", "updatedAt")
_ORDERING = {"gt": (1,), "gte": (0, 1), "lt": (-1,), "lte": (-1, 0)}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?", re.IGNORECASE
)
_LOOKS_LIKE_DATE = re.compile(r"\s*\d{4}-\d{1,2}(?:-|$)")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
MISSING: Any = object()

Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Condition:
    field: str
    operator: str
    value: Any


@dataclass(frozen=True)
class Where:
    """A checked ``where``: every condition must hold."""

    conditions: tuple[Condition, ...]

    def matches(self, fields: Mapping[str, Any]) -> bool:
        return all(_holds(condition, field_value(fields, condition.field)) for condition in self.conditions)

    def matcher(self, names: Collection[str]) -> Callable[[Mapping[str, Any]], bool]:
        """:meth:`matches` for many notes whose field names are all among ``names``: each condition is worked out
        once per value it meets (a vault's notes share few statuses and dates), and a field that no name spells
        another way is read straight (:func:`field_value` looks at every name when it is missing)."""
        memo: dict[tuple[int, Any], bool] = {}
        checks = [
            (index, condition, _reader(condition.field, names)) for index, condition in enumerate(self.conditions)
        ]

        def matches(fields: Mapping[str, Any]) -> bool:
            for index, condition, read in checks:
                value = read(fields)
                try:
                    key = (index, _value_key(value))
                    held = memo.get(key)
                    if held is None:
                        held = memo[key] = _holds(condition, value)
                except TypeError:  # a value that cannot be a key (a mapping, say): worked out each time
                    held = _holds(condition, value)
                if not held:
                    return False
            return True

        return matches


@dataclass(frozen=True)
class SortKey:
    field: str
    descending: bool


def compile_where(where: Any) -> Where:
    """``where`` checked and ready to match; a :class:`ToolInputError` that names the problem otherwise."""
    if where is None:
        return Where(())
    if not isinstance(where, Mapping):
        raise ToolInputError(
            f'where must be an object mapping fields to values, like {{"status": "active"}}; got {_kind(where)}.'
        )
    conditions: list[Condition] = []
    for name, spec in where.items():
        if not isinstance(name, str) or not name.strip():
            raise ToolInputError("where has an empty field name; name a front matter field, path, tags or updatedAt.")
        if isinstance(spec, Mapping):
            if not spec:
                raise ToolInputError(f"where.{name} is an empty object; give a value or one of {_operator_list()}.")
            for operator, value in spec.items():
                conditions.append(Condition(name, operator, _checked(name, operator, value)))
        else:
            conditions.append(Condition(name, "eq", _checked(name, "eq", spec)))
    return Where(tuple(conditions))


def compile_sort(sort: Any) -> tuple[SortKey, ...]:
    """``sort`` (``"field"``, ``"-field"`` or a list of them) checked; a :class:`ToolInputError` otherwise."""
    if sort is None:
        return ()
    names = [sort] if isinstance(sort, str) else sort
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        raise ToolInputError(
            f'sort must be a field name, "-name" for descending, or a list of them; got {_kind(sort)}.'
        )
    keys: list[SortKey] = []
    for name in names:
        field = name[1:] if name.startswith("-") else name
        if not field.strip():
            raise ToolInputError(f'sort has an empty field name ({name!r}); write "due" or "-due".')
        keys.append(SortKey(field, name.startswith("-")))
    return tuple(keys)


def sort_rows(rows: Sequence[Mapping[str, Any]], keys: Sequence[SortKey]) -> list[Mapping[str, Any]]:
    """``rows`` (each a note's fields) in the order of ``keys``; missing values last; stable."""
    ordered = list(rows)
    for key in reversed(keys):  # one stable sort per key, the last key first: the first key then decides
        decorated = [(_sort_key(field_value(row, key.field)), row) for row in ordered]  # each value's key once
        present = [pair for pair in decorated if pair[0] is not None]
        present.sort(key=_first, reverse=key.descending)  # reversed, a sort stays stable
        ordered = [row for _, row in present] + [row for sort_key, row in decorated if sort_key is None]
    return ordered


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def queryable(
    front_matter: Mapping[str, Any], *, path: str, tags: Iterable[str], updated_at: str | None
) -> dict[str, Any]:
    """A note's fields for ``where`` and ``sort``: its front matter, then ``path``, ``tags`` and ``updatedAt``."""
    return with_built_ins(own_fields(front_matter), path=path, tags=tags, updated_at=updated_at)


def own_fields(front_matter: Mapping[str, Any]) -> dict[str, Any]:
    """The front matter fields a query reads: all but those named as a built-in field (the built-in one wins)."""
    return {key: value for key, value in front_matter.items() if key not in BUILT_IN_FIELDS}


def with_built_ins(own: Mapping[str, Any], *, path: str, tags: Iterable[str], updated_at: str | None) -> dict[str, Any]:
    """:func:`queryable` of the note whose :func:`own_fields` are ``own``."""
    return {**own, "path": path, "tags": list(tags), "updatedAt": updated_at}


def field_value(fields: Mapping[str, Any], name: str) -> Any:
    """The value of field ``name`` (exactly, else the one key equal ignoring case); :data:`MISSING` otherwise."""
    if name in fields:
        return fields[name]
    folded = name.casefold()
    matches = [key for key in fields if isinstance(key, str) and key.casefold() == folded]
    return fields[matches[0]] if len(matches) == 1 else MISSING


#: Close names offered for a field no note has; the most common ones when none is close.
CLOSE_NAMES = 3


def unknown_fields(where: Where, names: Counter[str], notes: int, scope: str = "") -> list[str]:
    """A sentence for each field of ``where`` that no note has: ``names`` counts the notes having each field
    name (as :func:`queryable` gives them); ``scope`` says where, like `` under people/``."""
    folded: dict[str, tuple[str, int]] = {}  # the casefolded name: its most common spelling, its notes
    for name, count in names.most_common():
        spelling, total = folded.get(name.casefold(), (name, 0))
        folded[name.casefold()] = (spelling, total + count)
    said: list[str] = []
    for field in dict.fromkeys(condition.field for condition in where.conditions):
        if field.casefold() in folded:
            continue
        close = difflib.get_close_matches(field.casefold(), list(folded), n=CLOSE_NAMES, cutoff=0.7)
        if close:
            named = [
                f'"{folded[key][0]}" ({folded[key][1]:,} note{"" if folded[key][1] == 1 else "s"})' for key in close
            ]
            said.append(f'No note{scope} has a field "{field}"; did you mean {_either(named)}?')
            continue
        common = [f'"{name}" ({count:,})' for name, count in folded.values() if name not in BUILT_IN_FIELDS]
        said.append(
            f'No note{scope} has a field "{field}"; '
            + (
                f"the most common: {', '.join(common[:CLOSE_NAMES])} of {notes:,} notes."
                if common
                else "none has front matter fields."
            )
        )
    return said


def _either(choices: list[str]) -> str:
    return choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])} or {choices[-1]}"


# -- checking -----------------------------------------------------------------------------------------------


def _checked(name: str, operator: Any, value: Any) -> Any:
    where = f"where.{name}"
    if operator not in OPERATORS:
        raise ToolInputError(f"{where}: unknown operator {operator!r}; use one of {_operator_list()}.")
    if operator == "exists":
        if not isinstance(value, bool):
            raise ToolInputError(f"{where}.exists takes true or false; got {_kind(value)}.")
        return value
    if operator == "in":
        if not isinstance(value, list) or not value:
            raise ToolInputError(
                f'{where}.in takes a non-empty list of values, like ["active", "paused"]; got {_kind(value)}.'
            )
        for item in value:
            _scalar(f"{where}.in", item)
        return [_prepared(name, item) for item in value]
    if isinstance(value, list):
        hint = " (one of several: use in)" if operator in ("eq", "contains") else ""
        raise ToolInputError(f"{where}{'' if operator == 'eq' else '.' + operator} takes one value, not a list{hint}.")
    _scalar(where if operator == "eq" else f"{where}.{operator}", value)
    if operator in _ORDERING and (value is None or isinstance(value, bool)):
        raise ToolInputError(f"{where}.{operator} compares numbers, dates or text; got {_kind(value)}.")
    if operator in _ORDERING and isinstance(value, str) and _LOOKS_LIKE_DATE.match(value) and _date(value) is None:
        raise ToolInputError(
            f"{where}.{operator}: {value!r} is not a date; write YYYY-MM-DD or an ISO date-time like "
            "2024-05-01T10:00:00Z."
        )
    if operator == "contains" and value is None:
        raise ToolInputError(f'{where}.contains needs a value; to find notes without {name}, use {{"exists": false}}.')
    return _prepared(name, value)


def _scalar(where: str, value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolInputError(f"{where}: {value} is not a number a field can hold.")
    if not isinstance(value, Scalar):
        raise ToolInputError(f"{where} takes a text, number, true/false or null; got {_kind(value)}.")


def _prepared(name: str, value: Any) -> Any:
    if name == "tags" and isinstance(value, str):
        return value.strip().removeprefix("#")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _operator_list() -> str:
    return ", ".join(OPERATORS)


# -- matching -----------------------------------------------------------------------------------------------


def _reader(name: str, names: Collection[str]) -> Callable[[Mapping[str, Any]], Any]:
    """How to read field ``name`` of fields whose names are among ``names``: :func:`field_value`, or straight when
    no other name is ``name`` ignoring case (then a note without it has none of that name)."""
    folded = name.casefold()
    if any(other != name and isinstance(other, str) and other.casefold() == folded for other in names):
        return lambda fields: field_value(fields, name)
    return lambda fields: fields.get(name, MISSING)


def _value_key(value: Any) -> Any:
    """``value`` as a key that tells apart what ``==`` does not (``True``, ``1`` and ``1.0``); a TypeError when
    it cannot be one."""
    if isinstance(value, list):
        return (list, tuple((item.__class__, item) for item in value))
    return (value.__class__, value)


def _holds(condition: Condition, value: Any) -> bool:
    operator, wanted = condition.operator, condition.value
    empty = value is MISSING or value is None or value == "" or value == []
    if operator == "exists":
        return bool(wanted) != empty
    if wanted is None:  # eq/ne null: missing or empty
        return empty if operator == "eq" else not empty
    if value is MISSING or value is None:
        return operator == "ne"
    equal = _tag_equal if condition.field == "tags" else _equal
    items = value if isinstance(value, list) else [value]
    if operator == "eq":
        return any(equal(item, wanted) for item in items)
    if operator == "ne":
        return not any(equal(item, wanted) for item in items)
    if operator == "in":
        return any(equal(item, choice) for item in items for choice in wanted)
    if operator == "contains":
        if isinstance(value, list):
            return any(equal(item, wanted) for item in items)
        return isinstance(value, str) and _text_of(wanted).casefold() in value.casefold()
    accepted = _ORDERING[operator]
    return any((order := _compare(item, wanted)) is not None and order in accepted for item in items)


def _text_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def _equal(left: Any, right: Any) -> bool:
    return _compare(left, right) == 0


def _tag_equal(tag: Any, wanted: Any) -> bool:
    if not isinstance(tag, str) or not isinstance(wanted, str):
        return _equal(tag, wanted)
    name, prefix = tag.removeprefix("#").casefold(), wanted.casefold()
    return name == prefix or name.startswith(prefix + "/")


def _compare(left: Any, right: Any) -> int | None:
    """-1, 0 or 1 when ``left`` and ``right`` are of one kind (see the module docstring); None otherwise."""
    for convert in _CONVERSIONS:
        pair = convert(left, right)
        if pair is not None:
            a, b = pair
            return 1 if a > b else -1 if a < b else 0
    return None


def _as_booleans(left: Any, right: Any) -> tuple[bool, bool] | None:
    if isinstance(left, bool) or isinstance(right, bool):
        a, b = _boolean(left), _boolean(right)
        return (a, b) if a is not None and b is not None else None
    return None


def _as_numbers(left: Any, right: Any) -> tuple[float, float] | None:
    if _is_number(left) or _is_number(right):
        a, b = _number(left), _number(right)
        return (a, b) if a is not None and b is not None else None
    return None


def _as_dates(left: Any, right: Any) -> tuple[Any, Any] | None:
    a, b = _date(left), _date(right)
    if a is None or b is None:
        return None
    if isinstance(a, datetime.datetime) != isinstance(b, datetime.datetime):  # a day against an instant: by the day
        a = a.date() if isinstance(a, datetime.datetime) else a
        b = b.date() if isinstance(b, datetime.datetime) else b
    return a, b


def _as_texts(left: Any, right: Any) -> tuple[str, str] | None:
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold(), right.casefold()
    return None


_CONVERSIONS: tuple[Callable[[Any, Any], tuple[Any, Any] | None], ...] = (
    _as_booleans,
    _as_numbers,
    _as_dates,
    _as_texts,
)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: Any) -> float | None:
    if _is_number(value):
        return float(value)
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        return float(value)
    return None


def _boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


@functools.lru_cache(maxsize=4096)
def _parsed_date(text: str) -> datetime.date | datetime.datetime | None:
    try:
        if _DATE.fullmatch(text):
            return datetime.date.fromisoformat(text)
        if _DATE_TIME.fullmatch(text):
            moment = datetime.datetime.fromisoformat(text.replace(",", ".").upper().replace("Z", "+00:00"))
            return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)
    except ValueError:
        return None  # 2024-13-45: text, not a date
    return None


def _date(value: Any) -> datetime.date | datetime.datetime | None:
    return _parsed_date(value.strip()) if isinstance(value, str) else None


# -- sorting ------------------------------------------------------------------------------------------------

#: Kinds in the order a sort puts them when one field holds several: numbers, dates, text, booleans.
_KIND_RANK = {"number": 0, "date": 1, "text": 2, "boolean": 3, "other": 4}


def _sort_key(value: Any) -> tuple[Any, ...] | None:
    if isinstance(value, list):
        value = value[0] if value else None
    if value is MISSING or value is None or value == "":
        return None
    if isinstance(value, bool):
        return (_KIND_RANK["boolean"], value)
    if _is_number(value):
        return (_KIND_RANK["number"], float(value))
    if isinstance(value, str):
        moment = _date(value)
        if moment is not None:
            if not isinstance(moment, datetime.datetime):
                moment = datetime.datetime.combine(moment, datetime.time(), datetime.UTC)
            return (_KIND_RANK["date"], moment)
        return (_KIND_RANK["text"], value.casefold(), value)
    return (_KIND_RANK["other"], repr(value))
