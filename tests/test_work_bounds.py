"""Bounded work for every call (issue 27): a change is sized before it is built, and a diff is bounded.

Through a real MCP client on a local vault: a replacement (``replace_in_notes``, ``edit_note`` with
``replaceAll``) whose result would pass the 5 MiB a note may have is refused from its computed size,
dry runs included, without the memory it would take; an edit that changes lines all over a long note
is written, and its answer counts the changed lines instead of a diff difflib would take minutes on.
The bounds are counts (matcher work, bytes), never the machine's speed; ``test_diff.py`` and
``test_replace.py`` hold the pure rules.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.sessions import Session, open_session

pytestmark = pytest.mark.anyio

#: A note of 100,000 ``x``: 100,000 matches of ``x``; as 100 lines of 1,000 for a regex, which gets a line of more
#: than 1,000 characters (for this pattern) 0.2 s of CPU time, and tracemalloc slows it past that.
XS = "x" * 100_000
XS_LINES = ("x" * 1_000 + "\n") * 100
#: Memory a refused call may take at its peak, everything the call does included (a regex keeps a match
#: object per match, about 36 MB for 100,000): far below what its result would have needed (10 GB, 500 MB, 100 MB).
PEAK_BYTES = 64 * 1024 * 1024
#: 40,000 lines, every other one holding "even": a replaceAll of it changes 20,000 lines apart from each other.
SCATTERED = "".join(f"line {number} {'even' if number % 2 == 0 else 'odd'} of the log\n" for number in range(40_000))
SUMMARY = "20,000 lines changed; diff too large to show — read_note to check"


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, structured_content=True) as running:
        yield running


async def peak_of(session: Session, tool: str, **arguments: object) -> tuple[str, bool, int]:
    """The call's text, whether it failed, and the most memory Python held during it (tracemalloc)."""
    tracemalloc.start()
    try:
        text, is_error, _ = await session.call(tool, **arguments)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return text, is_error, peak


# -- a result past 5 MiB is refused before it is built ----------------------------------------------------


@pytest.mark.parametrize(
    ("note", "find", "replace", "regex", "size"),
    [
        (XS, "x", "y" * 100_000, False, "10,000,000,000 bytes (9,536.7 MiB)"),
        (XS_LINES, "(x)", "$1" * 5_000, True, "500,000,100 bytes (476.8 MiB)"),
    ],
    ids=["literal", "regex-template"],
)
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "apply"])
async def test_replace_in_notes_refuses_a_result_past_5_mib_without_building_it(
    session: Session, note: str, find: str, replace: str, regex: bool, size: str, dry_run: bool
) -> None:
    session.seed("big.md", note)
    text, is_error, peak = await peak_of(
        session, "replace_in_notes", find=find, replace=replace, regex=regex, dryRun=dry_run
    )
    assert is_error, text[:300]
    assert text == (
        f"The replacement (100,000 matches) would make big.md {size}, more than the 5,242,880 bytes (5.0 MiB) a "
        "note may have after a change. Nothing was written, and the new text was not built. Make the change "
        "smaller (fewer matches, a shorter replacement), or split the note."
    )
    assert peak < PEAK_BYTES, f"the refused call held {peak:,} bytes at its peak"
    assert session.writes_sent() == [] and session.text("big.md") == note


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "apply"])
async def test_edit_note_refuses_a_replace_all_past_5_mib_without_building_it(session: Session, dry_run: bool) -> None:
    session.seed("big.md", XS)
    edits = [{"oldText": "x", "newText": "y" * 1_000, "replaceAll": True}]
    text, is_error, peak = await peak_of(session, "edit_note", path="big.md", edits=edits, dryRun=dry_run)
    assert is_error, text[:300]
    assert text.startswith(
        "The edit (replaceAll, 100,000 matches) would make big.md 100,000,000 bytes (95.4 MiB), more than the "
        "5,242,880 bytes (5.0 MiB) a note may have after a change. Nothing was written"
    )
    assert peak < PEAK_BYTES, f"the refused call held {peak:,} bytes at its peak"
    assert session.writes_sent() == [] and session.text("big.md") == XS


async def test_a_replacement_up_to_the_limit_is_made(session: Session) -> None:
    session.seed("big.md", XS)
    edits = [{"oldText": "x", "newText": "y" * 50, "replaceAll": True}]  # 5,000,000 bytes: under 5 MiB
    result = await session.ok("edit_note", path="big.md", edits=edits)
    assert result["changed"] and session.text("big.md") == "y" * 5_000_000


# -- a diff too costly to compute is a count of the changed lines; the write lands ---------------------------------


async def test_edit_note_changing_lines_all_over_a_long_note_is_written_with_a_count_for_its_diff(
    session: Session,
) -> None:
    session.seed("log.md", SCATTERED)
    edits = [{"oldText": "even", "newText": "EVEN", "replaceAll": True}]
    preview = await session.ok("edit_note", path="log.md", edits=edits, dryRun=True)
    assert preview["diff"] == SUMMARY and session.writes_sent() == []
    text = await session.ok_text("edit_note", path="log.md", edits=edits)
    assert text.startswith("Edited log.md; its contentHash is now ") and text.endswith(f"\n{SUMMARY}")
    assert session.text("log.md") == SCATTERED.replace("even", "EVEN")


async def test_replace_in_notes_changing_lines_all_over_a_long_note_previews_a_count_and_applies(
    session: Session,
) -> None:
    session.seed("log.md", SCATTERED)
    text, is_error, _ = await session.call("replace_in_notes", find="even", replace="EVEN")
    assert not is_error, text[:300]
    assert f"log.md (20000)\n{SUMMARY}\n" in text
    applied = await session.ok_text("replace_in_notes", find="even", replace="EVEN", dryRun=False, expectedCount=20_000)
    assert applied.startswith('Replaced "even" → "EVEN" in 1 of 1 note (20,000 of 20,000 matches).')
    assert session.text("log.md") == SCATTERED.replace("even", "EVEN")


async def test_a_note_past_limit_is_not_refused_for_the_notes_the_call_writes(session: Session) -> None:
    session.seed("a.md", "one x\n")
    session.seed("big.md", XS)
    result = await session.ok("replace_in_notes", find="x", replace="y" * 100_000, limit=1)
    assert [note["path"] for note in result["notes"]] == ["a.md"] and result["pastLimit"]["notes"] == 1
