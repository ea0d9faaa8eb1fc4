"""The write pipeline's shape (issue 28): one package, ``tools/writing/``, whose modules import one way, whose
calls never come back (no function calls one that calls it again), whose functions stay short; and the audit
outcome of a write, said by one function for a call and for each note of a write of many notes."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from teamvault_mcp.errors import CallCancelledError, ConflictError, HTTPStatusError
from teamvault_mcp.tools.writing.report import AUDIT_WORDS, AuditOutcome, NoteReport, WriteReport, audit_outcome
from teamvault_mcp.vault.retry import call_failure

WRITING = Path(__file__).resolve().parent.parent / "teamvault_mcp" / "tools" / "writing"
#: The pipeline's modules, each importing only those before it.
ORDER = ("report", "rules", "history", "story", "content", "rewrite", "many")
MAX_FUNCTION_LINES = 80


def tree(name: str) -> ast.Module:
    return ast.parse((WRITING / f"{name}.py").read_text())


def test_the_package_holds_exactly_the_pipelines_modules() -> None:
    assert sorted(path.stem for path in WRITING.glob("*.py")) == sorted([*ORDER, "__init__"])
    assert not [node for node in tree("__init__").body if isinstance(node, ast.Import | ast.ImportFrom)]


def test_each_module_imports_only_the_ones_before_it() -> None:
    for index, name in enumerate(ORDER):
        imported = {
            node.module.rsplit(".", 1)[-1]
            for node in ast.walk(tree(name))
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("teamvault_mcp.tools.writing.")
        }
        assert imported <= set(ORDER[:index]), (name, imported - set(ORDER[:index]))


def test_no_function_of_the_pipeline_calls_back_into_one_that_called_it() -> None:
    """The call path reads top to bottom: among the pipeline's own functions, calls form no cycle."""
    calls: dict[str, set[str]] = {}
    for name in ORDER:
        for node in tree(name).body:
            if isinstance(node, ast.FunctionDef):
                calls[node.name] = {
                    call.func.id
                    for call in ast.walk(node)
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                }
    defined = set(calls)
    for function in calls:
        calls[function] &= defined

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for callee in calls[start] - seen:
            seen.add(callee)
            if callee == goal or reaches(callee, goal, seen):
                return True
        return False

    assert not [function for function in calls if reaches(function, function, set())]


def test_no_function_of_the_pipeline_is_longer_than_80_lines() -> None:
    long = [
        (name, node.name, node.end_lineno - node.lineno + 1)
        for name in ORDER
        for node in ast.walk(tree(name))
        if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long


def test_the_audit_words_are_the_outcomes_a_line_can_have() -> None:
    assert set(AUDIT_WORDS) == set(get_args(AuditOutcome))


@pytest.mark.parametrize(
    ("ended", "replayed", "noop", "said"),
    [
        (None, False, False, "applied"),
        (None, True, False, "replayed"),
        (None, False, True, "noop"),
        (call_failure(HTTPStatusError("PUT", "/api/x", 503, "down"), write_sent=True), False, False, "uncertain"),
        (call_failure(HTTPStatusError("PUT", "/api/x", 503, "down"), write_sent=False), False, False, "failed"),
        (call_failure(ConflictError("a.md", "0" * 64, None, None), write_sent=True), False, False, "failed"),
        (call_failure(CallCancelledError(), write_sent=True), False, False, "cancelled"),
    ],
)
def test_a_calls_audit_outcome(ended: object, replayed: bool, noop: bool, said: str) -> None:
    assert audit_outcome(ended, replayed=replayed, noop=noop) == said  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("outcomes", "said"),
    [
        ((), "noop"),
        (("applied", "failed"), "applied"),
        (("replayed",), "applied"),
        (("failed", "failed"), "failed"),
        (("applied", "uncertain", "failed"), "uncertain"),
    ],
)
def test_a_write_of_many_notes_ends_as_its_notes_did(outcomes: tuple[AuditOutcome, ...], said: str) -> None:
    notes = [NoteReport(f"{index}.md", None, outcome) for index, outcome in enumerate(outcomes)]
    assert audit_outcome(None, notes=notes) == said


def test_the_facts_of_one_of_many_notes_are_that_notes_not_the_calls() -> None:
    report = WriteReport()
    report.many()
    with report.note("a.md", "key-a"):
        report.facts.saw("1" * 64, "2" * 64)
        report.facts.verified = True
    with report.note("b.md", "key-b") as b:
        b.outcome = "applied"
        report.facts.rebased = 2
    line = report.audited(None, replayed=False)
    assert report.paths == ["a.md", "b.md"] and "hashBefore" not in line and "verified" not in line
    assert line["notes"] == [
        {"path": "a.md", "idempotencyKey": "key-a", "hashBefore": "1" * 64, "hashAfter": "2" * 64, "verified": True},
        {"path": "b.md", "idempotencyKey": "key-b", "outcome": "applied", "rebased": 2},
    ]
    assert line["outcome"] == "applied"
