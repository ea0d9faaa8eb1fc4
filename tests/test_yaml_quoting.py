"""Front matter written by update_frontmatter reads back the same in YAML 1.2 (Obsidian, ruamel.yaml) and in
YAML 1.1 readers (PyYAML, Ruby's Psych, most team scripts).

The YAML 1.1 readers are stood in for by their resolvers, written out here from their own definitions: the
YAML 1.1 type repository (yaml.org/type), PyYAML's ``resolver.py`` and Psych's ``scalar_scanner.rb``. A
reader of either version parses the syntax of these blocks alike; what differs is which type a *plain*
(unquoted) scalar gets, so each plain scalar of the written block is resolved by each of them.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from ruamel.yaml import YAML
from ruamel.yaml.events import ScalarEvent

from teamvault_mcp.text import frontmatter


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns))


#: yaml.org/type/{bool,int,float,null,timestamp,merge,value}.html, as published.
YAML_1_1_SPEC: dict[str, re.Pattern[str]] = {
    "bool": _any(r"y|Y|yes|Yes|YES|n|N|no|No|NO", r"true|True|TRUE|false|False|FALSE", r"on|On|ON|off|Off|OFF"),
    "int": _any(
        r"[-+]?0b[0-1_]+",
        r"[-+]?0[0-7_]+",
        r"[-+]?(0|[1-9][0-9_]*)",
        r"[-+]?0x[0-9a-fA-F_]+",
        r"[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+",
    ),
    "float": _any(
        r"[-+]?([0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)?",
        r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*",
        r"[-+]?\.(inf|Inf|INF)",
        r"\.(nan|NaN|NAN)",
    ),
    "null": _any(r"~", r"null|Null|NULL", r""),
    "timestamp": _any(
        r"[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]",
        r"[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?([Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](\.[0-9]*)?"
        r"(([ \t]*)Z|[-+][0-9][0-9]?(:[0-9][0-9])?)?",
    ),
    "merge": _any(r"<<"),
    "value": _any(r"="),
}

#: PyYAML 6, resolver.py: the same types, spelled a little differently (no y/n; 1._5 and .5 are floats).
PYYAML: dict[str, re.Pattern[str]] = {
    "bool": _any(r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"),
    "float": _any(
        r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?",
        r"\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?",
        r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
        r"[-+]?\.(?:inf|Inf|INF)",
        r"\.(?:nan|NaN|NAN)",
    ),
    "int": _any(
        r"[-+]?0b[0-1_]+",
        r"[-+]?0[0-7_]+",
        r"[-+]?(?:0|[1-9][0-9_]*)",
        r"[-+]?0x[0-9a-fA-F_]+",
        r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
    ),
    "merge": _any(r"<<"),
    "null": _any(r"~", r"null|Null|NULL", r""),
    "timestamp": _any(
        r"[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]",
        r"[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]"
        r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?",
    ),
    "value": _any(r"="),
}

#: Ruby's Psych (Jekyll, Rails), ScalarScanner#tokenize with its default (non-strict) integers.
PSYCH: dict[str, re.Pattern[str]] = {
    "bool": re.compile(r"(?i:yes|true|on|no|false|off)"),
    "null": re.compile(r"(?i:null)|~|"),
    "date": re.compile(r"\d{4}-(?:1[012]|0\d|\d)-(?:[12]\d|3[01]|0\d|\d)"),
    "time": re.compile(
        r"-?\d{4}-\d{1,2}-\d{1,2}(?:[Tt]|\s+)\d{1,2}:\d\d:\d\d(?:\.\d*)?(?:\s*(?:Z|[-+]\d{1,2}:?\d\d))?"
    ),
    "float": _any(r"[-+]?\.(?i:inf)", r"\.(?i:nan)", r"[-+]?([0-9][0-9_,]*)?\.[0-9]*([eE][-+][0-9]+)?"),
    "symbol": re.compile(r":."),
    "sexagesimal": re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9]){1,2}(\.[0-9_]*)?"),
    "int": _any(
        r"[-+]?0b[0-1_,]+", r"[-+]?0[0-7_,]+", r"[-+]?(?:0|[1-9](?:[0-9]|,[0-9]|_[0-9])*)", r"[-+]?0x[0-9a-fA-F_,]+"
    ),
}

READERS = {"YAML 1.1": YAML_1_1_SPEC, "PyYAML": PYYAML, "Psych": PSYCH}


def resolved(plain: str, reader: dict[str, re.Pattern[str]]) -> str:
    """The type ``reader`` gives the plain scalar ``plain``: "str" unless one of its patterns matches."""
    return next((kind for kind, pattern in reader.items() if pattern.fullmatch(plain)), "str")


def plain_scalars(block: str) -> list[str]:
    """The scalars of ``block`` written without quotes (keys and values), in order."""
    events = YAML().parse(block)
    return [event.value for event in events if isinstance(event, ScalarEvent) and event.style is None]


def written(values: dict[str, Any]) -> str:
    return frontmatter.split(frontmatter.update("", values, [], "n.md")).yaml


def read(text: str) -> dict[str, Any]:
    return frontmatter.read(text, "n.md")[0]


# Each of these is text; written plain, some reader would take it for something else.
MISREAD_TEXTS = [
    # YAML 1.1 booleans, in every spelling
    *("yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"),
    *("y", "Y", "n", "N", "true", "True", "TRUE", "false", "False", "FALSE"),
    # Ruby reads booleans and null without regard to case
    "yEs",
    "oFF",
    "nULL",
    # null
    "~",
    "null",
    "Null",
    "NULL",
    "",
    # integers: YAML 1.1 (octal 017, binary, hex, underscores, base 60), YAML 1.2 (0o17, 09), Ruby (commas)
    "0",
    "-7",
    "+12",
    "017",
    "09",
    "0o17",
    "0b1010",
    "0x1F",
    "-0x1f",
    "1_000",
    "190:20:30",
    "12:30",
    "12:30:00",
    "1,000",
    "3,4",
    # floats
    "3.5",
    "1.",
    ".5",
    "-.5",
    "1e3",
    "1E-3",
    "6.8523015e+5",
    "1_000.5",
    "1._5",
    "1.2.3",
    ".",
    "1,000.5",
    "190:20:30.15",
    ".inf",
    "-.inf",
    "+.inf",
    ".Inf",
    "-.INF",
    ".nan",
    ".NaN",
    ".NAN",
    ".iNf",
    # timestamps (not the plain YYYY-MM-DD date, see below), and dates to Ruby
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "2001-12-15T02:59:43.1Z",
    "2001-12-14 21:59:43.10",
    "2001-1-1 1:02:03",
    "2001-12-14 21:59:43+0500",
    "2024-1-5",
    "2024-13-45",
    "2024-02-30",
    # the merge and value keys, and Ruby's symbols
    "<<",
    "=",
    ":symbol",
    ":a",
]

# Each of these stays plain text in every reader: it must not be quoted for nothing.
PLAIN_TEXTS = ["hello", "Borscht", "In progress", "Борщ 🍲", "x-y", "12 apples", "v1.2", "yes please", "2024 plan"]


@pytest.mark.parametrize("text", MISREAD_TEXTS)
def test_text_that_any_reader_would_misread_is_quoted_and_reads_back_the_same(text: str) -> None:
    block = written({"value": text, text: "as a key", "list": [text]})
    assert read(f"---\n{block}---\n") == {"value": text, text: "as a key", "list": [text]}  # YAML 1.2
    for name, reader in READERS.items():
        typed = [(plain, resolved(plain, reader)) for plain in plain_scalars(block)]
        assert all(kind == "str" for _, kind in typed), f"{name} reads {typed} in:\n{block}"
    assert text not in plain_scalars(block)


@pytest.mark.parametrize("text", PLAIN_TEXTS)
def test_ordinary_text_stays_plain(text: str) -> None:
    block = written({"value": text})
    assert block == f"value: {text}\n"
    for reader in READERS.values():
        assert resolved(text, reader) == "str"


@pytest.mark.parametrize(
    ("value", "kind", "text"),
    [
        (10, "int", "10"),
        (-7, "int", "-7"),
        (3.5, "float", "3.5"),
        (1.0, "float", "1.0"),
        (1e20, "float", "1.0e+20"),  # 1e+20 would be text to YAML 1.1: its floats need a dot
        (-2.5e-7, "float", "-2.5e-07"),
        (5e-324, "float", "5.0e-324"),
        (True, "bool", "true"),
        (False, "bool", "false"),
        (None, "null", ""),
    ],
)
def test_numbers_booleans_and_null_read_as_such_in_every_reader(value: Any, kind: str, text: str) -> None:
    block = written({"value": value})
    assert block == f"value: {text}\n".replace(": \n", ":\n")
    assert read(f"---\n{block}---\n") == {"value": value}
    assert resolved(text, YAML_1_1_SPEC) == kind
    assert resolved(text, PYYAML) == kind


def test_a_yyyy_mm_dd_date_is_still_written_as_a_plain_date() -> None:
    # The documented rule: Obsidian's date type. YAML 1.1 readers read a date, YAML 1.2 here the same text.
    block = written({"due": "2026-12-01"})
    assert block == "due: 2026-12-01\n"
    assert read(f"---\n{block}---\n") == {"due": "2026-12-01"}
    assert resolved("2026-12-01", YAML_1_1_SPEC) == "timestamp" and resolved("2026-12-01", PSYCH) == "date"


def test_nested_values_and_keys_are_quoted_too_and_other_lines_stay() -> None:
    note = "---\ntitle: Borscht   # kept as it is\nstatus: draft\n---\nbody\n"
    values = {"status": "on", "flags": {"yes": "no", "list": ["off", 1e21, "1_000", "plain"]}}
    changed = frontmatter.update(note, values, [], "n.md")
    assert changed.startswith("---\ntitle: Borscht   # kept as it is\nstatus: 'on'\n")
    assert read(changed) == {"title": "Borscht", **values}
    block = frontmatter.split(changed).yaml
    for name, reader in READERS.items():
        misread = [plain for plain in plain_scalars(block) if resolved(plain, reader) not in ("str", "float")]
        assert not misread, f"{name} misreads {misread}"
    assert "1.0e+21" in plain_scalars(block)


def test_the_examples_of_the_issue_are_written_quoted() -> None:
    for text in ["yes", "No", "on", "OFF", "y", "n", "~", "null", "0x1F", "0o17", "017", "1_000", ".inf"]:
        assert written({"added": text}) in (f"added: '{text}'\n", f'added: "{text}"\n'), text
