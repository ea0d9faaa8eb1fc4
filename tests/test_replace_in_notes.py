"""replace_in_notes through a real MCP client against a local vault: previews that write nothing, honest applies.

Matching and the compact diff are table-tested in ``test_replace.py`` (pure); here, the tool: the
preview (checked at the vault: no operation), expectedCount, limit, prefix, a colleague's write at
the exact moment of a note's PUT (on servers with and without conditional writes), failures with and
without the uncertain-write hint, write scopes, the audit log.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.fakes import FakeClock
from support.seeding import digest
from support.sessions import CALL_BUDGET, Session, open_session

from teamvault_mcp.errors import UNCERTAIN_WRITE_HINT
from teamvault_mcp.localvault import Fault
from teamvault_mcp.tools.replacing import PREVIEW_NOTES

pytestmark = pytest.mark.anyio

NOTES = {
    "clients/acme.md": "# Client\n\nAcme signed in May. Call Acme in June.\n",
    "meetings/2026-11-02.md": "# Sync\n\n- [ ] Send Acme the invoice\n",
    "meetings/2026-11-09.md": "# Sync\n\nNothing about them.\n",
    "people/ada.md": "# Ada\n\nAda works with ACME and acme.\n",
}


@pytest.fixture(params=[True, False], ids=["conditional", "history"])
async def session(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Session]:
    async with open_session(
        tmp_path, structured_content=True, vault_options={"conditional_writes": request.param}
    ) as running:
        for path, text in NOTES.items():
            running.seed(path, text)
        yield running


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, structured_content=True, audit_log=tmp_path / "audit.jsonl") as running:
        for path, text in NOTES.items():
            running.seed(path, text)
        yield running


def put_of(session: Session, path: str) -> str:
    """The api path a PUT of the note at ``path`` goes to."""
    return f"/api/projects/{session.vault.project_id}/files/{session.file_id(path)}"


def audit_lines(session: Session) -> list[dict[str, Any]]:
    log = session.runner.config.audit_log
    assert log is not None
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# -- the preview ------------------------------------------------------------------------------------------------


async def test_the_preview_is_the_default_and_writes_nothing(session: Session) -> None:
    before = session.operations()
    text, is_error, result = await session.call("replace_in_notes", find="Acme", replace="Globex")
    assert not is_error, text
    assert session.operations() == before and session.writes_sent() == []
    assert text.startswith('Dry run: nothing was written. "Acme" → "Globex": 3 matches in 2 notes (4 notes searched):')
    assert "clients/acme.md (2)\n@@ -3 +3 @@\n-Acme signed in May. Call Acme in June.\n" in text
    assert "+Globex signed in May. Call Globex in June." in text
    assert "meetings/2026-11-02.md (1)" in text and "people/ada.md" not in text  # case counts
    assert text.endswith('Apply with: replace_in_notes(find="Acme", replace="Globex", dryRun=false, expectedCount=3)')
    assert result["matches"] == 3 and [note["path"] for note in result["notes"]] == [
        "clients/acme.md",
        "meetings/2026-11-02.md",
    ]
    assert result["notes"][0]["previousHash"] == digest(NOTES["clients/acme.md"])


async def test_any_case_a_regex_with_groups_and_a_prefix(session: Session) -> None:
    text, _, result = await session.call("replace_in_notes", find="acme", replace="Globex", caseSensitive=False)
    assert result["matches"] == 5 and '"acme" → "Globex" (any case): 5 matches in 3 notes' in text
    text, _, result = await session.call(
        "replace_in_notes", find=r"(\w+) Acme\b", replace="$1 Globex", regex=True, prefix="meetings/"
    )
    assert result["matches"] == 1 and "+- [ ] Send Globex the invoice" in text
    assert 'prefix="meetings/", regex=true, dryRun=false, expectedCount=1)' in text


async def test_no_match_says_so_and_is_not_an_error(session: Session) -> None:
    text, is_error, result = await session.call("replace_in_notes", find="Initech", replace="x")
    assert not is_error and text.startswith('Nothing to replace: "Initech" → "x" has no match')
    assert result["matches"] == 0 and "Apply with" not in text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"find": ""}, "find is empty"),
        ({"find": "a*", "regex": True}, "can match empty text"),
        ({"find": "(a+)+b", "regex": True}, "The regex is refused"),
        ({"find": "(a)", "replace": "\\1", "regex": True}, "Python-style group reference"),
        ({"expectedCount": 0}, "must be at least 1"),
    ],
)
async def test_bad_arguments_are_refused_and_nothing_is_written(
    session: Session, arguments: dict[str, Any], message: str
) -> None:
    before = session.operations()
    text, is_error, _ = await session.call(
        "replace_in_notes", **{"find": "Acme", "replace": "Globex", "dryRun": False, **arguments}
    )
    assert is_error and message in text, text
    assert session.operations() == before


# -- applying ---------------------------------------------------------------------------------------------------


async def test_applying_writes_each_note_once_with_a_key_of_its_own(session: Session) -> None:
    text, is_error, result = await session.call(
        "replace_in_notes", find="Acme", replace="Globex", dryRun=False, expectedCount=3
    )
    assert not is_error, text
    assert session.text("clients/acme.md") == "# Client\n\nGlobex signed in May. Call Globex in June.\n"
    assert session.text("meetings/2026-11-02.md") == "# Sync\n\n- [ ] Send Globex the invoice\n"
    assert (
        text.splitlines()
        == [  # each note's new contentHash in the text itself: a text-only host needs it
            'Replaced "Acme" → "Globex" in 2 of 2 notes (3 of 3 matches).',
            f"Applied: clients/acme.md (2); its contentHash is now {digest(session.text('clients/acme.md'))[:12]}.",
            "Applied: meetings/2026-11-02.md (1); its contentHash is now "
            f"{digest(session.text('meetings/2026-11-02.md'))[:12]}.",
        ]
    )
    assert "structured" not in text
    assert session.text("people/ada.md") == NOTES["people/ada.md"]
    assert [(note["path"], note["status"]) for note in result["notes"]] == [
        ("clients/acme.md", "applied"),
        ("meetings/2026-11-02.md", "applied"),
    ]
    assert result["notes"][0]["contentHash"] == digest(session.content("clients/acme.md"))
    writes = [op for op in session.vault.store.operations(session.vault.project_id) if op["kind"] == "UPDATE"]
    assert len(writes) == 2 and len({op["idempotencyKey"] for op in writes}) == 2


async def test_expected_count_refuses_when_the_notes_changed_since_the_preview(session: Session) -> None:
    await session.ok("replace_in_notes", find="Acme", replace="Globex")
    session.colleague_writes("people/ada.md", "# Ada\n\nAda works with Acme.\n")
    before = session.operations()
    text, is_error, _ = await session.call(
        "replace_in_notes", find="Acme", replace="Globex", dryRun=False, expectedCount=3
    )
    assert is_error
    assert text.startswith("expectedCount is 3, but there are 4 matches now in the 3 notes this call would write")
    assert "Nothing was written." in text and "people/ada.md (1)" in text
    assert 'Apply with: replace_in_notes(find="Acme", replace="Globex", dryRun=false, expectedCount=4)' in text
    assert session.operations() == before


async def test_limit_writes_the_first_notes_by_path_and_says_what_is_left(session: Session) -> None:
    text, _, _ = await session.call("replace_in_notes", find="Acme", replace="Globex", limit=1)
    assert (
        "2 matches in 1 note" in text and "[Past limit=1, not written by this call: meetings/2026-11-02.md (1)]" in text
    )
    assert "limit=1, dryRun=false, expectedCount=2)" in text
    await session.ok("replace_in_notes", find="Acme", replace="Globex", limit=1, dryRun=False, expectedCount=2)
    assert "Globex" in session.text("clients/acme.md") and "Acme" in session.text("meetings/2026-11-02.md")


async def test_a_colleagues_write_at_the_moment_of_one_put_is_that_notes_conflict_and_nothing_is_lost(
    session: Session,
) -> None:
    theirs = "# Sync\n\n- [x] Send Acme the invoice (done by Bo)\n"
    session.vault.faults.add(
        "PUT",
        put_of(session, "meetings/2026-11-02.md"),
        Fault.first(lambda: session.colleague_writes("meetings/2026-11-02.md", theirs)),
    )
    text, is_error, result = await session.call(
        "replace_in_notes", find="Acme", replace="Globex", dryRun=False, expectedCount=3
    )
    assert not is_error, text  # one note applied: the call did something
    assert text.startswith('Replaced "Acme" → "Globex" in 1 of 2 notes (2 of 3 matches); 1 conflict.')
    acme = digest(session.text("clients/acme.md"))[:12]
    assert (
        f"Applied: clients/acme.md (2); its contentHash is now {acme}.\nConflict: meetings/2026-11-02.md (1): " in text
    )
    assert session.text("meetings/2026-11-02.md") == theirs  # theirs stands: never replaced, or put back
    assert "Globex" in session.text("clients/acme.md")
    statuses = {note["path"]: note["status"] for note in result["notes"]}
    assert statuses == {"clients/acme.md": "applied", "meetings/2026-11-02.md": "conflict"}
    assert UNCERTAIN_WRITE_HINT not in text


async def test_a_failed_note_carries_the_uncertain_hint_only_when_its_write_may_have_landed(plain: Session) -> None:
    plain.vault.faults.add("PUT", put_of(plain, "clients/acme.md"), Fault.answer(400))
    colleague = []

    def colleague_then_drop(method: str, path: str) -> Fault | None:
        if method != "PUT" or path != put_of(plain, "meetings/2026-11-02.md"):
            return None
        if not colleague:  # neither ours nor what it was afterwards: it cannot tell
            plain.colleague_writes("meetings/2026-11-02.md", "# Sync\n\nRewritten.\n")
            colleague.append(True)
        return Fault.close_before()

    plain.vault.faults.chooser = colleague_then_drop
    text, is_error, result = await plain.call(
        "replace_in_notes", find="Acme", replace="Globex", dryRun=False, expectedCount=3
    )
    assert is_error  # nothing was applied
    assert text.startswith('Replaced "Acme" → "Globex" in 0 of 2 notes (0 of 3 matches); 2 failed.')
    failed = {note["path"]: note for note in result["notes"]}
    assert UNCERTAIN_WRITE_HINT not in failed["clients/acme.md"]["error"]
    assert failed["meetings/2026-11-02.md"]["error"].endswith(UNCERTAIN_WRITE_HINT)
    assert failed["meetings/2026-11-02.md"]["uncertain"] is True
    line = audit_lines(plain)[-1]
    assert line["outcome"] == "uncertain"
    assert [(note["path"], note["outcome"]) for note in line["notes"]] == [
        ("clients/acme.md", "failed"),
        ("meetings/2026-11-02.md", "uncertain"),
    ]


async def test_a_note_that_is_not_utf8_is_left_alone(plain: Session) -> None:
    plain.seed("latin1.md", "Acme caf\xe9\n".encode("latin-1"), "text/markdown")
    text, _, result = await plain.call("replace_in_notes", find="Acme", replace="Globex")
    assert "[Left alone: latin1.md: not valid UTF-8 text, so replacing in it could damage it]" in text
    assert "latin1.md" not in [note["path"] for note in result["notes"]]


# -- scopes and the audit log ------------------------------------------------------------------------------------


async def test_notes_outside_the_write_scope_are_reported_and_left_alone_and_each_note_written_is_audited(
    tmp_path: Path,
) -> None:
    async with open_session(
        tmp_path, structured_content=True, audit_log=tmp_path / "audit.jsonl", write_prefixes=("meetings/",)
    ) as scoped:
        for path, content in NOTES.items():
            scoped.seed(path, content)
        text, _, result = await scoped.call("replace_in_notes", find="Acme", replace="Globex")
        assert "1 match in 1 note" in text
        assert "[Outside the folders this server may write to, left alone: clients/acme.md (2)]" in text
        assert result["outsideScope"] == [{"path": "clients/acme.md", "matches": 2}]
        text, is_error, _ = await scoped.call(
            "replace_in_notes", find="Acme", replace="Globex", dryRun=False, expectedCount=1
        )
        assert not is_error, text
        assert scoped.text("clients/acme.md") == NOTES["clients/acme.md"]
        assert "Globex" in scoped.text("meetings/2026-11-02.md")
        preview, applied = audit_lines(scoped)
        assert (preview["tool"], preview["paths"], preview["outcome"]) == ("replace_in_notes", [], "noop")
        assert (applied["paths"], applied["outcome"]) == (["meetings/2026-11-02.md"], "applied")
        [note] = applied["notes"]
        assert note["hashBefore"] == digest(NOTES["meetings/2026-11-02.md"])
        assert note["hashAfter"] == digest(scoped.content("meetings/2026-11-02.md"))
        assert note["outcome"] == "applied"
        operations = scoped.vault.store.operations(scoped.vault.project_id)
        assert note["idempotencyKey"] == operations[-1]["idempotencyKey"]


async def test_a_preview_diffs_the_first_notes_and_counts_the_rest(tmp_path: Path) -> None:
    async with open_session(tmp_path, structured_content=True) as session:
        for number in range(PREVIEW_NOTES + 3):
            session.seed(f"n/{number:03d}.md", f"Acme {number}\n")
        text, _, result = await session.call("replace_in_notes", find="Acme", replace="Globex")
        assert text.count("\n+Globex ") == PREVIEW_NOTES
        assert f"[Not shown, 3 more notes: n/{PREVIEW_NOTES:03d}.md (1), " in text
        assert text.endswith(f"expectedCount={PREVIEW_NOTES + 3})")
        assert result["totalNotes"] == len(result["notes"]) == PREVIEW_NOTES + 3


async def test_notes_the_budget_leaves_no_time_for_are_reported_not_reached(tmp_path: Path) -> None:
    clock = FakeClock()
    async with open_session(tmp_path, structured_content=True, clock=clock) as session:
        for path, text in NOTES.items():
            session.seed(path, text)
        # while the first note is written, the budget runs down to less than a write needs
        session.vault.faults.add(
            "PUT", put_of(session, "clients/acme.md"), Fault.first(lambda: clock.advance(CALL_BUDGET - 2.0))
        )
        text, is_error, result = await session.call(
            "replace_in_notes", find="Acme", replace="Globex", dryRun=False, expectedCount=3
        )
        assert not is_error, text
        assert text.startswith('Replaced "Acme" → "Globex" in 1 of 2 notes (2 of 3 matches).')
        assert "[Not reached, the call's time budget ran out: meetings/2026-11-02.md (1). Nothing was written" in text
        assert result["notReached"] == ["meetings/2026-11-02.md"]
        assert session.text("meetings/2026-11-02.md") == NOTES["meetings/2026-11-02.md"]
