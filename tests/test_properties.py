"""The where and sort of query_notes (text/properties.py): matching, comparing, sorting, refusing, table-driven."""

from __future__ import annotations

import functools
import random
from typing import Any

import pytest

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.text.properties import compile_sort, compile_where, queryable, sort_rows

NOTE: dict[str, Any] = {
    "path": "projects/apollo.md",
    "tags": ["project/alpha", "risk"],
    "updatedAt": "2024-05-02T09:30:00.000Z",
    "status": "Active",
    "owner": "[[Ada]]",
    "priority": 2,
    "budget": 1500.5,
    "done": False,
    "due": "2024-05-10",
    "started": "2024-04-01T08:00:00",
    "team": ["Ada", "Bob"],
    "scores": [3, 9],
    "empty": None,
    "blank": "",
    "none": [],
    "code": "007",
    "not a date": "2024-13-45",
}

MATCHES = {
    "equality": ({"status": "Active"}, True),
    "text ignores case": ({"status": "active"}, True),
    "text is not a prefix": ({"status": "Act"}, False),
    "eq spelled out": ({"status": {"eq": "ACTIVE"}}, True),
    "ne": ({"status": {"ne": "paused"}}, True),
    "ne, equal": ({"status": {"ne": "active"}}, False),
    "a list field: membership": ({"team": "bob"}, True),
    "a list field: not a member": ({"team": "Carol"}, False),
    "a list field: ne means no item": ({"team": {"ne": "Ada"}}, False),
    "in": ({"status": {"in": ["paused", "active"]}}, True),
    "in, none of them": ({"status": {"in": ["paused", "done"]}}, False),
    "in, a list field": ({"team": {"in": ["Carol", "Bob"]}}, True),
    "contains, text": ({"owner": {"contains": "ada"}}, True),
    "contains, a list": ({"team": {"contains": "Ada"}}, True),
    "contains, a list is by item": ({"team": {"contains": "Ad"}}, False),
    "contains, a number in text": ({"code": {"contains": 7}}, True),
    "a number": ({"priority": 2}, True),
    "a number and its text": ({"priority": "2"}, True),
    "a float": ({"budget": {"gt": 1500}}, True),
    "gte": ({"priority": {"gte": 2}}, True),
    "gt, equal": ({"priority": {"gt": 2}}, False),
    "lt": ({"priority": {"lt": 10}}, True),
    "lte": ({"priority": {"lte": 1}}, False),
    "numbers are not text": ({"priority": {"lt": "10"}}, True),
    "text that looks like a number is text": ({"code": 7}, True),
    "a range": ({"priority": {"gte": 1, "lt": 3}}, True),
    "a range that misses": ({"priority": {"gte": 3, "lt": 5}}, False),
    "a list field: one item in range": ({"scores": {"gt": 5}}, True),
    "a list field: none in range": ({"scores": {"gt": 10}}, False),
    "a boolean": ({"done": False}, True),
    "a boolean as text": ({"done": "false"}, True),
    "a boolean is not a number": ({"done": 0}, False),
    "a date": ({"due": "2024-05-10"}, True),
    "dates compare as dates": ({"due": {"gt": "2024-05-09", "lt": "2024-06-01"}}, True),
    "a date against a date-time: by the day": ({"due": "2024-05-10T23:59:00"}, True),
    "a date-time against a date": ({"started": {"gte": "2024-04-01", "lte": "2024-04-01"}}, True),
    "a date-time against a date-time": ({"started": {"lt": "2024-04-01T08:00:01"}}, True),
    "a zone is an instant": ({"started": {"eq": "2024-04-01T10:00:00+02:00"}}, True),
    "Z is UTC": ({"updatedAt": {"gt": "2024-05-02T09:29:59Z"}}, True),
    "updatedAt by the day": ({"updatedAt": {"gte": "2024-05-02"}}, True),
    "updatedAt, later": ({"updatedAt": {"gt": "2024-05-02"}}, False),
    "a date that does not exist is text": ({"not a date": {"gt": "2024-12-31"}}, True),
    "kinds do not mix": ({"due": {"gt": 5}}, False),
    "missing: eq is false": ({"nothing": "x"}, False),
    "missing: ne is true": ({"nothing": {"ne": "x"}}, True),
    "missing: in is false": ({"nothing": {"in": ["x"]}}, False),
    "missing: gt is false": ({"nothing": {"gt": 1}}, False),
    "missing: lt is false": ({"nothing": {"lt": 1}}, False),
    "exists": ({"status": {"exists": True}}, True),
    "exists, missing": ({"nothing": {"exists": True}}, False),
    "exists false, missing": ({"nothing": {"exists": False}}, True),
    "null, empty text and an empty list do not exist": (
        {"empty": {"exists": False}, "blank": {"exists": False}, "none": {"exists": False}},
        True,
    ),
    "null means missing or empty": ({"empty": None, "nothing": None, "blank": None}, True),
    "ne null means there": ({"status": {"ne": None}}, True),
    "a key in another case": ({"STATUS": "active"}, True),
    "path": ({"path": {"contains": "projects/"}}, True),
    "tags: with or without #": ({"tags": "#risk"}, True),
    "tags: a parent matches its nested tags": ({"tags": "project"}, True),
    "tags: not a prefix of a name": ({"tags": "proj"}, False),
    "tags: ne": ({"tags": {"ne": "project"}}, False),
    "tags: in": ({"tags": {"in": ["nothing", "PROJECT/ALPHA"]}}, True),
    "every condition must hold": ({"status": "active", "priority": 3}, False),
    "no conditions match every note": ({}, True),
}


@pytest.mark.parametrize("where, expected", MATCHES.values(), ids=MATCHES.keys())
def test_where(where: dict[str, Any], expected: bool) -> None:
    assert compile_where(where).matches(NOTE) is expected


def test_a_key_two_ways_in_other_cases_is_not_guessed() -> None:
    assert compile_where({"status": "a"}).matches({"Status": "a", "STATUS": "b"}) is False
    assert compile_where({"Status": "a"}).matches({"Status": "a", "STATUS": "b"}) is True


def test_no_where_matches_every_note() -> None:
    assert compile_where(None).matches({})


REFUSED = {
    "not an object": (["status"], r"where must be an object.*got a list"),
    "an empty field name": ({" ": 1}, r"empty field name"),
    "an unknown operator": (
        {"due": {"after": "2024-01-01"}},
        r"where\.due: unknown operator 'after'; use one of eq, ne",
    ),
    "an empty operator object": ({"due": {}}, r"where\.due is an empty object"),
    "exists takes a boolean": (
        {"due": {"exists": "yes"}},
        r"where\.due\.exists takes true or false; got the text 'yes'",
    ),
    "in takes a list": ({"status": {"in": "active"}}, r"where\.status\.in takes a non-empty list"),
    "in takes a non-empty list": ({"status": {"in": []}}, r"non-empty list"),
    "in takes scalars": (
        {"status": {"in": [["a"]]}},
        r"where\.status\.in takes a text, number, true/false or null; got a list",
    ),
    "a list for eq": ({"team": ["Ada", "Bob"]}, r"where\.team takes one value, not a list \(one of several: use in\)"),
    "an object inside an operator": ({"due": {"gt": {"a": 1}}}, r"where\.due\.gt takes a text.*got an object"),
    "ordering a boolean": ({"done": {"gt": True}}, r"where\.done\.gt compares numbers, dates or text; got true"),
    "ordering null": ({"due": {"lt": None}}, r"compares numbers, dates or text; got null"),
    "contains null": ({"team": {"contains": None}}, r"use \{\"exists\": false\}"),
    "a date that is none": (
        {"due": {"lt": "2024-5-11"}},
        r"where\.due\.lt: '2024-5-11' is not a date; write YYYY-MM-DD",
    ),
    "a day that does not exist": ({"due": {"gte": "2024-02-30"}}, r"is not a date"),
    "not a finite number": ({"priority": {"gt": float("nan")}}, r"is not a number"),
}


@pytest.mark.parametrize("where, message", REFUSED.values(), ids=REFUSED.keys())
def test_a_bad_where_is_refused_with_what_is_wrong(where: Any, message: str) -> None:
    with pytest.raises(ToolInputError, match=message):
        compile_where(where)


ROWS: list[dict[str, Any]] = [
    {"path": "a.md", "due": "2024-05-10", "priority": 2, "title": "beta"},
    {"path": "b.md", "due": "2024-05-01T12:00:00Z", "priority": 10, "title": "Alpha"},
    {"path": "c.md", "priority": 2, "title": "alpha"},
    {"path": "d.md", "due": "2024-04-30", "title": None},
    {"path": "e.md", "due": "", "priority": [1, 5]},
]

SORTS = {
    "a date, ascending, missing last": ("due", ["d.md", "b.md", "a.md", "c.md", "e.md"]),
    "a date, descending, missing still last": ("-due", ["a.md", "b.md", "d.md", "c.md", "e.md"]),
    "numbers as numbers": ("priority", ["e.md", "a.md", "c.md", "b.md", "d.md"]),
    "text ignoring case, then as written": ("title", ["b.md", "c.md", "a.md", "d.md", "e.md"]),
    "two keys": (["priority", "-title"], ["e.md", "a.md", "c.md", "b.md", "d.md"]),
    "ties keep the order given": ("nothing", ["a.md", "b.md", "c.md", "d.md", "e.md"]),
}


@pytest.mark.parametrize("sort, expected", SORTS.values(), ids=SORTS.keys())
def test_sort(sort: Any, expected: list[str]) -> None:
    assert [row["path"] for row in sort_rows(ROWS, compile_sort(sort))] == expected


def test_one_field_of_several_kinds_sorts_numbers_dates_text_booleans() -> None:
    rows = [{"path": p, "v": v} for p, v in [("t", "text"), ("b", True), ("d", "2024-01-01"), ("n", 3)]]
    assert [row["path"] for row in sort_rows(rows, compile_sort("v"))] == ["n", "d", "t", "b"]


def test_the_matcher_for_many_notes_answers_as_matches_on_random_rows() -> None:
    """Where.matcher works each condition out once per value it meets and reads a field straight when no other name
    spells it another way: on rows of values == cannot tell apart (True, 1, 1.0), names alike but for case, lists
    and mappings, it must say what matches says of every row."""
    values = [True, False, 1, 1.0, 0, "1", "true", "open", "Open", "2024-05-01", "2024-05-01T10:00:00Z", None, ""]
    values += [[], ["a", "B"], [1, True], {"x": 1}, [{"y": 2}], 2.5, "b"]
    operators = ["eq", "ne", "in", "contains", "gt", "gte", "lt", "lte", "exists"]
    rng = random.Random(31)
    for _ in range(150):
        rows = []
        for _ in range(40):
            names = rng.sample(["status", "Status", "due", "n", "tags", "Due"], rng.randint(0, 4))
            rows.append({name: rng.choice(values) for name in names})
        where: dict[str, Any] = {}
        for field in rng.sample(["status", "due", "n", "tags", "STATUS"], rng.randint(1, 3)):
            operator = rng.choice(operators)
            wanted = rng.choice([True, 1, "open", "2024-05-01", None, 2]) if operator != "in" else ["open", 1, True]
            where[field] = {operator: wanted if operator != "exists" else rng.random() < 0.5}
        try:
            compiled = compile_where(where)
        except ToolInputError:
            continue
        names = {name for row in rows for name in row}
        matcher = compiled.matcher(names)
        assert [matcher(row) for row in rows] == [compiled.matches(row) for row in rows], where


def test_the_sort_is_the_comparison_it_was_written_as_on_random_rows() -> None:
    """sort_rows works out each value's key once and sorts once per key; it must order rows exactly as the rule
    reads, compared pair by pair: per key in turn, missing values last in either direction, then the order given."""
    from teamvault_mcp.text.properties import _sort_key, field_value

    def compare(left: dict[str, Any], right: dict[str, Any], keys: Any) -> int:
        for key in keys:
            a, b = _sort_key(field_value(left, key.field)), _sort_key(field_value(right, key.field))
            if a is None or b is None:
                order = (a is None) - (b is None)
            else:
                order = ((a > b) - (a < b)) * (-1 if key.descending else 1)
            if order:
                return order
        return 0

    values = [
        None,
        "",
        3,
        2.5,
        -1,
        True,
        False,
        "2024-05-01",
        "2024-05-01T10:00:00Z",
        "beta",
        "Beta",
        "alpha",
        [],
        ["x"],
    ]
    rng = random.Random(29)
    for _ in range(200):
        rows = [{"path": f"{i}.md", **{f: rng.choice(values) for f in "abc" if rng.random() < 0.8}} for i in range(30)]
        keys = compile_sort([("-" if rng.random() < 0.5 else "") + f for f in rng.sample("abc", rng.randint(1, 3))])
        expected = sorted(rows, key=functools.cmp_to_key(lambda x, y, keys=keys: compare(x, y, keys)))
        assert sort_rows(rows, keys) == expected


@pytest.mark.parametrize(
    "sort, message",
    [("-", r"empty field name"), ([], r"sort must be"), (["due", 3], r"sort must be"), ({"due": 1}, r"got an object")],
)
def test_a_bad_sort_is_refused(sort: Any, message: str) -> None:
    with pytest.raises(ToolInputError, match=message):
        compile_sort(sort)


def test_no_sort_keeps_the_order() -> None:
    assert sort_rows(ROWS, compile_sort(None)) == ROWS


def test_a_note_s_fields_are_its_front_matter_and_the_built_in_ones_which_win() -> None:
    fields = queryable(
        {"status": "active", "path": "fake.md", "tags": ["x"], "updatedAt": "never"},
        path="real.md",
        tags=["project/alpha"],
        updated_at="2024-05-02T09:30:00Z",
    )
    assert fields == {
        "status": "active",
        "path": "real.md",
        "tags": ["project/alpha"],
        "updatedAt": "2024-05-02T09:30:00Z",
    }
    assert compile_where({"path": "real.md", "tags": "project", "updatedAt": {"gte": "2024-05-01"}}).matches(fields)
