"""diff_note_versions(since=…) through a real MCP client: what changed in a note since a moment, in one call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.sessions import Session, open_session

pytestmark = pytest.mark.anyio


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path) as running:
        yield running


def stamps(session: Session, path: str) -> list[str]:
    """The createdAt of each version of the note at ``path``, oldest first."""
    versions = session.vault.store.versions(session.vault.project_id, session.file_id(path))
    return sorted(version["createdAt"] for version in versions)


async def three_versions(session: Session) -> list[str]:
    await session.ok("write_note", path="plan.md", content="one\n")
    await session.ok("write_note", path="plan.md", content="one\ntwo\n")
    await session.ok("write_note", path="plan.md", content="one\ntwo\nthree\n")
    return stamps(session, "plan.md")


async def test_since_diffs_from_the_newest_version_at_that_moment_to_the_current_text(session: Session) -> None:
    _, second, _ = await three_versions(session)
    text = await session.ok_text("diff_note_versions", path="plan.md", since=second)
    headline = text.splitlines()[0]
    assert headline.startswith("plan.md: from version 2 (the newest at ")
    assert headline.endswith(") to the current content")
    assert "+three" in text and "+two" not in text


async def test_since_before_the_note_was_made_diffs_from_its_first_version(session: Session) -> None:
    await three_versions(session)
    text = await session.ok_text("diff_note_versions", path="plan.md", since="2020-01-01")
    assert text.splitlines()[0] == (
        "plan.md: from version 1 (the first: the note was made after 2020-01-01T00:00:00Z) to the current content"
    )
    assert "+two" in text and "+three" in text


async def test_since_with_to_diffs_up_to_that_version(session: Session) -> None:
    first, _, _ = await three_versions(session)
    text = await session.ok_text("diff_note_versions", path="plan.md", since=first, to=2)
    assert text.splitlines()[0].endswith(") to version 2")
    assert "+two" in text and "three" not in text


async def test_a_bad_since_and_since_with_from_are_refused_before_any_request(session: Session) -> None:
    await three_versions(session)
    before = len(session.vault.faults.seen)
    text, is_error, _ = await session.call("diff_note_versions", path="plan.md", since="last tuesday")
    assert is_error
    assert text == (
        "since must be a date (2026-12-01), a date-time (2026-12-01T09:00:00Z) or a span back from now "
        "(30m, 24h, 7d, 2w); got 'last tuesday'."
    )
    text, is_error, _ = await session.call("diff_note_versions", path="plan.md", since="24h", **{"from": 1})
    assert is_error
    assert text == "Give from (a version) or since (a time), not both: since picks the version the diff starts from."
    text, is_error, _ = await session.call("diff_note_versions", path="plan.md")
    assert is_error and text.startswith("diff_note_versions needs from (a version number or id) or since")
    assert len(session.vault.faults.seen) == before


async def test_from_still_works_as_before(session: Session) -> None:
    await three_versions(session)
    text = await session.ok_text("diff_note_versions", path="plan.md", **{"from": 1})
    assert text.splitlines()[0] == "plan.md: from version 1 to the current content"
