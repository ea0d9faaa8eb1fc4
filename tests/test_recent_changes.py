"""recent_changes through a real MCP client: one listing, what happened to each note, when, and who.

Against a local vault for the real listing (tombstones, each version's author), and against
``responses`` with fixed dates and the fake clock for ``since``.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import responses
from mcp import Client
from responses import matchers
from support import seeding
from support.fakes import BASE, FILES, FakeClock, file_record, make_config
from support.sessions import Session, open_session

from teamvault_mcp.localvault.store import now_iso
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.text.moments import parse_moment
from teamvault_mcp.vault.records import VaultFile

pytestmark = pytest.mark.anyio


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path) as running:
        yield running


def listings(session: Session) -> list[tuple[str, str]]:
    return [(method, path) for method, path in session.vault.faults.seen if method == "GET"]


async def test_created_updated_and_deleted_by_you_and_by_a_colleague(session: Session) -> None:
    await session.ok("write_note", path="people/ada.md", content="# Ada\n")
    made = session.vault.store.list_files(
        session.vault.project_id, path="people/ada.md", prefix=None, include_deleted=False
    )
    # A moment after ada was made: within the window, a note made before it that changed since is "updated".
    since = (parse_moment(made[0].created_at) + datetime.timedelta(milliseconds=1)).isoformat()  # type: ignore[operator]
    await session.ok("write_note", path="old.md", content="old\n")
    await session.ok("delete_note", path="old.md")
    session.colleague_writes("people/ada.md", "# Ada\n\nA colleague's line.\n")
    session.colleague_writes("people/grace.md", "# Grace\n")
    writers = {
        file.path: file.last_modified_by
        for file in session.vault.store.list_files(
            session.vault.project_id, path=None, prefix=None, include_deleted=False
        )
    }
    text = await session.ok_text("recent_changes", since=since)
    lines = text.splitlines()
    assert lines[0].endswith(" (1 created, 1 updated, 1 deleted); newest first:")
    assert writers["people/grace.md"] != writers["people/ada.md"]  # two colleagues, both named Colleague
    assert [line.split("  ", 1)[1] for line in lines[1:4]] == [
        "created  people/grace.md  by Colleague",
        "updated  people/ada.md  by Colleague",
        "deleted  old.md  (the server does not say by whom)",
    ]
    stamps = [line.split("  ", 1)[0] for line in lines[1:4]]
    assert stamps == sorted(stamps, reverse=True) and all(stamp.endswith("Z") and "T" in stamp for stamp in stamps)
    assert lines[4].startswith("[The server records who wrote each version, not who deleted or moved a note")
    assert lines[5].startswith("What changed in a note: diff_note_versions(path, since=…) or (path, from=…)")


async def test_it_is_one_listing_a_version_list_per_note_shown_and_whoami_once_per_session(
    session: Session,
) -> None:
    session.seed("a.md", "a")
    before = len(listings(session))
    await session.ok_text("recent_changes")
    await session.ok_text("recent_changes", prefix="a")
    requests = listings(session)[before:]
    project = session.vault.project_id
    listing = ("GET", f"/api/projects/{project}/files")
    versions = ("GET", f"/api/projects/{project}/files/{session.file_id('a.md')}/versions")
    assert requests == [listing, ("GET", "/api/auth/me"), versions, listing, versions]


async def test_without_deleted_notes_and_under_a_prefix(session: Session) -> None:
    session.seed("keep/a.md", "a")
    session.seed("keep/b.md", "b")
    session.seed("other.md", "o")
    await session.ok("delete_note", path="keep/b.md")
    text = await session.ok_text("recent_changes", prefix="keep/", includeDeleted=False)
    header, change = text.splitlines()[:2]
    assert header == "1 change under keep/ (1 created); newest first:"
    assert change.endswith("  created  keep/a.md  by you")
    assert "keep/b.md" not in text and "other.md" not in text


async def test_a_bad_since_is_refused_before_any_request(session: Session) -> None:
    before = len(session.vault.faults.seen)
    text, is_error, _ = await session.call("recent_changes", since="yesterday-ish")
    assert is_error
    assert text == (
        "since must be a date (2026-12-01), a date-time (2026-12-01T09:00:00Z) or a span back from now "
        "(30m, 24h, 7d, 2w); got 'yesterday-ish'."
    )
    assert len(session.vault.faults.seen) == before


# -- since, on fixed dates -------------------------------------------------------------------------------------

# FakeClock's wall time starts at 1_800_000_000 = 2027-01-15T08:00:00Z.
RECORDS = [
    file_record("new.md", "f1", createdAt="2027-01-15T07:30:00.000Z", updatedAt="2027-01-15T07:30:00.000Z"),
    file_record("edited.md", "f2", createdAt="2026-12-01T10:00:00.000Z", updatedAt="2027-01-15T06:00:00.000Z"),
    file_record(
        "gone.md",
        "f3",
        createdAt="2026-12-01T10:00:00.000Z",
        updatedAt="2027-01-14T09:00:00.000Z",
        deletedAt="2027-01-14T09:00:00.000Z",
        lastModifiedById="me",
    ),
    file_record("made-and-edited.md", "f4", createdAt="2027-01-15T01:00:00Z", updatedAt="2027-01-15T02:00:00+00:00"),
    file_record("old.md", "f5", createdAt="2026-01-01T00:00:00.000Z", updatedAt="2026-06-01T00:00:00.000Z"),
    file_record("odd.md", "f6", createdAt="soon", updatedAt=None, lastModifiedById=None),
]


def mock_versions(http_mock: responses.RequestsMock, records: list[dict[str, object]]) -> None:
    """Each record's versions as the server lists them: one at createdAt, one at updatedAt when it is later, by u1."""
    for record in records:
        stamps = [record["createdAt"]] + ([record["updatedAt"]] if record["updatedAt"] != record["createdAt"] else [])
        versions = [
            {
                "id": f"{record['id']}v{number}",
                "versionNumber": number,
                "contentHash": "0" * 64,
                "authorId": "u1",
                "message": None,
                "createdAt": stamp,
                "author": {"id": "u1", "name": "Uma", "email": "uma@x"},
            }
            for number, stamp in enumerate(stamps, start=1)
        ]
        http_mock.get(f"{FILES}/{record['id']}/versions", json={"versions": versions[::-1]})


@pytest.fixture
def runner(clock: FakeClock) -> ToolRunner:
    return ToolRunner(make_config(), clock=clock)


async def changes(runner: ToolRunner, **arguments: object) -> str:
    async with Client(build_server(runner), mode="legacy") as client:
        result = await client.call_tool("recent_changes", arguments)
    assert not result.is_error, result.content[0].text
    return result.content[0].text


@pytest.mark.parametrize(
    ("since", "shown"),
    [
        ("3h", ["new.md", "edited.md"]),
        ("2027-01-15", ["new.md", "edited.md", "made-and-edited.md"]),
        ("2027-01-15T01:30", ["new.md", "edited.md", "made-and-edited.md"]),
        ("2027-01-15T03:00:00+02:00", ["new.md", "edited.md", "made-and-edited.md"]),
        ("1d", ["new.md", "edited.md", "made-and-edited.md", "gone.md"]),
        ("1w", ["new.md", "edited.md", "made-and-edited.md", "gone.md"]),
        ("30m", ["new.md"]),
    ],
)
async def test_since_takes_dates_date_times_and_spans_back_from_now(
    runner: ToolRunner, http_mock: responses.RequestsMock, since: str, shown: list[str]
) -> None:
    http_mock.get(FILES, json={"files": RECORDS}, match=[matchers.query_param_matcher({"includeDeleted": "true"})])
    http_mock.get(f"{BASE}/api/auth/me", json={"user": {"id": "me", "email": "me@x", "name": "Me"}})
    mock_versions(http_mock, RECORDS)
    text = await changes(runner, since=since)
    assert [line.split("  ")[2] for line in text.splitlines()[1:] if line[:1].isdigit()] == shown


async def test_what_happened_is_read_from_the_dates(runner: ToolRunner, http_mock: responses.RequestsMock) -> None:
    http_mock.get(FILES, json={"files": RECORDS}, match=[matchers.query_param_matcher({"includeDeleted": "true"})])
    http_mock.get(f"{BASE}/api/auth/me", json={"user": {"id": "me", "email": "me@x", "name": "Me"}})
    mock_versions(http_mock, RECORDS)
    text = await changes(runner, limit=4)
    assert text.splitlines() == [
        "5 changes (1 created, 2 updated, 1 deleted shown); newest first:",
        "2027-01-15T07:30:00Z  created  new.md  by Uma",
        "2027-01-15T06:00:00Z  updated  edited.md  by Uma",
        "2027-01-15T02:00:00Z  updated  made-and-edited.md  by Uma",
        "2027-01-14T09:00:00Z  deleted  gone.md  (the server does not say by whom)",
        "[Cut: the newest 4 of 5 shown. Narrow with since or prefix, or raise limit (at most 500).]",
        "[1 file is not shown: the server gave it no date in a form this server reads.]",
        "[The server records who wrote each version, not who deleted or moved a note: those lines name no one.]",
        "What changed in a note: diff_note_versions(path, since=…) or (path, from=…); who wrote each version: "
        "list_note_versions.",
    ]
    # Within the window, a note whose first version is there counts as created; the later versions are named.
    text = await changes(runner, since="2027-01-15")
    assert "2027-01-15T02:00:00Z  created  made-and-edited.md  by Uma, then updated by Uma" in text


async def test_a_whoami_that_fails_still_shows_the_changes(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    http_mock.get(FILES, json={"files": RECORDS[:1]})
    http_mock.get(f"{BASE}/api/auth/me", status=404, json={"error": {"code": "not_found", "message": "no"}})
    mock_versions(http_mock, RECORDS[:1])
    text = await changes(runner, includeDeleted=False)
    assert text.splitlines()[1] == "2027-01-15T07:30:00Z  created  new.md  by Uma"


async def test_exclude_mine_without_a_whoami_leaves_nothing_out_and_says_so(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    http_mock.get(FILES, json={"files": RECORDS[:1]})
    http_mock.get(f"{BASE}/api/auth/me", status=404, json={"error": {"code": "not_found", "message": "no"}})
    mock_versions(http_mock, RECORDS[:1])
    text = await changes(runner, includeDeleted=False, excludeMine=True)
    assert text.splitlines()[1] == "2027-01-15T07:30:00Z  created  new.md  by Uma"
    assert "[excludeMine: the server would not say whose key this is (whoami failed): nothing left out.]" in text


async def test_a_note_whose_versions_the_server_will_not_list_shows_the_last_writer_id(
    runner: ToolRunner, http_mock: responses.RequestsMock
) -> None:
    http_mock.get(FILES, json={"files": RECORDS[:1]})
    http_mock.get(f"{BASE}/api/auth/me", json={"user": {"id": "me", "email": "me@x", "name": "Me"}})
    http_mock.get(f"{FILES}/f1/versions", status=404, json={"error": {"code": "not_found", "message": "no"}})
    text = await changes(runner, includeDeleted=False)
    assert text.splitlines()[1] == "2027-01-15T07:30:00Z  created  new.md  by user u1"


def test_the_listing_keeps_the_dates_and_the_last_writer() -> None:
    record = VaultFile.from_json(RECORDS[2])
    assert (record.created_at, record.updated_at, record.deleted_at, record.modified_by) == (
        "2026-12-01T10:00:00.000Z",
        "2027-01-14T09:00:00.000Z",
        "2027-01-14T09:00:00.000Z",
        "me",
    )
    odd = VaultFile.from_json({**RECORDS[5], "createdAt": 17, "updatedAt": ["x"], "lastModifiedById": {"id": 1}})
    assert (odd.created_at, odd.updated_at, odd.deleted_at, odd.modified_by) == (None, None, None, None)


# -- who made each change: the versions' own authors -------------------------------------------------------------


def a_moment_from_now() -> str:
    """A moment later than every stamp the local vault has written (its stamps are to the millisecond)."""
    start = now_iso()
    while now_iso() == start:  # at most a millisecond: the next write is stamped at or after the moment returned
        pass
    return now_iso()


async def test_a_delete_by_a_colleague_is_not_credited_to_you(session: Session) -> None:
    await session.ok("write_note", path="plan.md", content="mine\n")
    seeding.deletes_as(session.vault, seeding.user(session.vault, "Bob"), "plan.md")
    text = await session.ok_text("recent_changes")
    assert "deleted  plan.md  (the server does not say by whom)" in text
    assert "by you" not in text


async def test_each_change_names_its_versions_authors_and_created_only_when_the_first_version_is_new(
    session: Session,
) -> None:
    bob, carol = seeding.user(session.vault, "Bob"), seeding.user(session.vault, "Carol")
    seeding.writes_as(session.vault, bob, "old.md", "# Old\n")
    since = a_moment_from_now()
    seeding.writes_as(session.vault, carol, "old.md", "# Old\n\nCarol's line.\n")
    seeding.writes_as(session.vault, bob, "new.md", "# New\n")
    seeding.writes_as(session.vault, carol, "new.md", "# New\n\nCarol's line.\n")
    await session.ok("write_note", path="new.md", content="# New\n\nCarol's line.\nMine.\n")
    lines = (await session.ok_text("recent_changes", since=since)).splitlines()
    assert lines[0].endswith(" (1 created, 1 updated); newest first:")
    assert [line.split("  ", 1)[1] for line in lines[1:3]] == [
        "created  new.md  by Bob, then updated by you and Carol",
        "updated  old.md  by Carol",
    ]


async def test_exclude_mine_leaves_out_the_changes_only_you_made(session: Session) -> None:
    bob = seeding.user(session.vault, "Bob")
    seeding.writes_as(session.vault, bob, "theirs.md", "# Theirs\n")
    await session.ok("write_note", path="mine.md", content="# Mine\n")
    await session.ok("write_note", path="theirs.md", content="# Theirs\n\nMy line.\n")
    text = await session.ok_text("recent_changes", excludeMine=True)
    lines = text.splitlines()
    assert lines[0] == "1 change not by you (1 updated); newest first:"
    assert lines[1].endswith("  updated  theirs.md  by Bob")
    assert "mine.md" not in text
    everything = await session.ok_text("recent_changes", excludeMine=False)
    assert "created  mine.md  by you" in everything and "updated  theirs.md  by you and Bob" in everything


async def test_a_link_rewrite_is_an_update_by_its_writer_not_a_creation(session: Session) -> None:
    bob = seeding.user(session.vault, "Bob")
    seeding.writes_as(session.vault, bob, "ada.md", "# Ada\n")
    seeding.writes_as(session.vault, bob, "plan.md", "See [[ada]].\n")
    since = a_moment_from_now()
    await session.ok("move_note", path="ada.md", newPath="people/ada-lovelace.md")
    text = await session.ok_text("recent_changes", since=since)
    assert "updated  plan.md  by you" in text
    assert "moved  people/ada-lovelace.md  (the server does not say by whom)" in text
    assert "plan.md" not in await session.ok_text("recent_changes", since=since, excludeMine=True)
