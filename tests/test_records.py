"""The server's users, projects and versions as typed records (issue 28), read as tolerantly as files are.

Fields docs/teamvault-api.md calls inferred (a version's number and author, a user's name) may be missing or of
another type: the attribute is then None, and the record is still what the server sent, as tools show it.
"""

from __future__ import annotations

import random

import pytest

from teamvault_mcp.vault.records import VaultFile, VaultProject, VaultUser, VaultVersion, VersionAuthor

HASH = "ab" * 32


def test_a_version_reads_its_fields_as_attributes() -> None:
    raw = {
        "id": "v2",
        "versionNumber": 2,
        "contentHash": HASH.upper(),
        "createdAt": "2026-12-01T09:14:05.123Z",
        "authorId": "u1",
        "message": "tidy",
        "author": {"id": "u1", "name": "Ada", "email": "ada@example.org"},
    }
    version = VaultVersion.from_json(raw)
    assert version is not None
    assert (version.id, version.number, version.content_hash) == ("v2", 2, HASH)
    assert (version.created_at, version.author_id, version.message) == ("2026-12-01T09:14:05.123Z", "u1", "tidy")
    assert version.author == VersionAuthor("u1", "Ada", "ada@example.org")


def test_a_version_without_its_inferred_fields_has_none_for_them() -> None:
    version = VaultVersion.from_json({"id": 7})
    assert version is not None
    assert version.id == "7"  # a number is taken as its digits
    assert (version.number, version.content_hash, version.created_at, version.author) == (None, None, None, None)
    assert (version.author_id, version.message) == (None, None)


def test_a_version_with_fields_of_other_types_has_none_for_them_and_keeps_them_out_of_its_record() -> None:
    raw = {"id": "v1", "versionNumber": True, "contentHash": "not a hash", "author": "Ada", "message": 3, "n": [1]}
    version = VaultVersion.from_json(raw)
    assert version is not None
    assert (version.number, version.content_hash, version.author, version.message) == (None, None, None, None)
    assert dict(version) == {"id": "v1", "versionNumber": None, "contentHash": None, "message": None, "author": None}


def test_a_version_keeps_the_servers_other_plain_fields_in_order_as_list_note_versions_shows_them() -> None:
    version = VaultVersion.from_json({"size": "12", "id": "v1", "fileId": "f1", "versionNumber": 1})
    assert version is not None
    assert list(version.items()) == [("size", "12"), ("id", "v1"), ("fileId", "f1"), ("versionNumber", 1)]


def test_a_record_without_an_id_is_none() -> None:
    assert VaultVersion.from_json({"versionNumber": 1}) is None
    assert VaultVersion.from_json(["v1"]) is None
    assert VaultUser.from_json({"email": "ada@example.org"}) is None
    assert VaultProject.from_json("p1") is None


def test_a_user_and_a_project_read_their_fields_as_attributes_none_where_missing() -> None:
    user = VaultUser.from_json({"id": "u1", "email": "ada@example.org", "role": "ADMIN"})
    assert user is not None
    assert (user.id, user.email, user.name) == ("u1", "ada@example.org", None)
    project = VaultProject.from_json({"id": "p1", "slug": "team", "name": 5})
    assert project is not None
    assert (project.id, project.slug, project.name, project.role) == ("p1", "team", None, None)


class _Dict(dict):  # type: ignore[type-arg]
    """A record that is not exactly a dict: VaultFile.from_json reads it the general way, field by field."""


def test_the_quick_reading_of_a_file_record_is_the_general_one() -> None:
    """``from_json`` takes a well-typed record in one step; any record reads the same either way."""
    rng = random.Random(30)
    good: dict[str, list[object]] = {
        "id": ["c1", "x" * 30],
        "path": ["a.md", "dir/ü.md"],
        "fileType": ["TEXT", "BINARY"],
        "size": ["4431", "0012", "0", "99999999999999999999"],
        "contentHash": ["a" * 64, "0123456789abcdef" * 4],
        "mimeType": ["text/markdown", None, ""],
        "createdAt": ["2026-12-02T04:22:12.301Z", "x" * 40, None],
        "updatedAt": ["2026-12-02T04:22:12.301Z", None],
        "deletedAt": [None],
        "lastModifiedById": ["u1", None],
    }
    odd: dict[str, list[object]] = {
        "id": ["", 7, True, None],
        "path": ["", None, 3],
        "fileType": ["text", " TEXT ", "", None, "IMAGE", 1],
        "size": ["", "-1", "４", "1.5", 12, True, None, " 12"],
        "contentHash": ["A" * 64, " " + "b" * 64, "g" * 64, "a" * 63, None, 5],
        "mimeType": [3, ["text/plain"]],
        "createdAt": ["", "x" * 41, 5],
        "updatedAt": ["", 0],
        "deletedAt": ["2026-12-02T04:22:12.301Z", ""],
        "lastModifiedById": ["", 12, False],
    }
    quick = 0
    for _ in range(4000):
        record = {
            name: rng.choice(good[name] if rng.random() < 0.9 else odd[name]) for name in good if rng.random() < 0.98
        }
        try:
            general = VaultFile.from_json(_Dict(record))
        except ValueError:
            with pytest.raises(ValueError):
                VaultFile.from_json(record)
            continue
        assert VaultFile.from_json(record) == general, record
        quick += all(name in record and record[name] in good[name] for name in good)
    assert quick > 300  # the quick reading was taken often enough to be compared
