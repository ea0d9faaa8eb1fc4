"""Conditional writes, the local vault's extension of the contract: If-Match on PUT, PATCH and DELETE.

The entity tag of a note is its content hash, ``"<64 hex>"``. A write whose If-Match does
not match is refused with 412 ``precondition_failed`` and the current hash, inside the
write's own transaction; every answer under /api/ says ``X-TeamVault-Conditional-Writes:
if-match`` while the extension is on. Each test is named after the rule it checks.
"""

from __future__ import annotations

import hashlib
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from teamvault_mcp.localvault import LocalVault

TIMEOUT = 10.0
HEADER = "X-TeamVault-Conditional-Writes"
UNKNOWN_ID = "cunknown0000000000000000000"


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def tag(content: bytes) -> str:
    return f'"{sha256(content)}"'


@dataclass
class Client:
    """One key talking to one fresh project of a running vault."""

    vault: LocalVault
    session: requests.Session
    project: str
    key: str

    def request(self, method: str, route: str, *, headers: dict[str, str] | None = None, **kw: Any) -> Any:
        sent = {"X-API-Key": self.key, **(headers or {})}
        return self.session.request(method, self.vault.url + route, headers=sent, timeout=TIMEOUT, **kw)

    @property
    def files(self) -> str:
        return f"/api/projects/{self.project}/files"

    def note(self, file_id: str) -> str:
        return f"{self.files}/{file_id}"

    def create(self, path: str, content: bytes) -> str:
        files = {"path": (None, path), "file": (path, content, "text/markdown")}
        response = self.request("POST", self.files, files=files)
        assert response.status_code == 201, response.text
        return str(response.json()["file"]["id"])

    def put(self, file_id: str, content: bytes, if_match: str | None = None, **headers: str) -> Any:
        sent = {"Content-Type": "application/octet-stream", **headers}
        if if_match is not None:
            sent["If-Match"] = if_match
        return self.request("PUT", self.note(file_id), data=content, headers=sent)

    def move(self, file_id: str, new_path: str, if_match: str | None = None) -> Any:
        headers = {} if if_match is None else {"If-Match": if_match}
        return self.request("PATCH", self.note(file_id), json={"newPath": new_path}, headers=headers)

    def delete(self, file_id: str, if_match: str | None = None) -> Any:
        headers = {} if if_match is None else {"If-Match": if_match}
        return self.request("DELETE", self.note(file_id), headers=headers)

    def content(self, file_id: str) -> bytes:
        response = self.request("GET", self.note(file_id))
        assert response.status_code == 200, response.text
        return bytes(response.content)

    def listed(self) -> list[dict[str, Any]]:
        response = self.request("GET", self.files, params={"includeDeleted": "true"})
        files: list[dict[str, Any]] = response.json()["files"]
        return files

    def operations(self) -> list[str]:
        return [op["kind"] for op in self.vault.store.operations(self.project)]


def assert_precondition_failed(response: Any, current: bytes | None) -> None:
    """412 with ``{"error": {"code": "precondition_failed", "message", "currentHash"}}``, ETag when live."""
    assert response.status_code == 412, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"code", "message", "currentHash"}
    assert error["code"] == "precondition_failed"
    assert isinstance(error["message"], str) and error["message"]
    if current is None:
        assert error["currentHash"] is None
        assert "ETag" not in response.headers
    else:
        assert error["currentHash"] == sha256(current)
        assert response.headers["ETag"] == tag(current)


def project_of(vault: LocalVault, session: requests.Session) -> Client:
    owner = vault.store.owner_of(vault.project_id)
    project = vault.store.add_project(f"cw-{uuid.uuid4().hex[:12]}", "Conditional writes", owner)
    return Client(vault, session, project, vault.api_key)


@pytest.fixture(scope="module")
def vault(module_vault: LocalVault) -> LocalVault:
    """The module's one vault: its conditional writes on."""
    return module_vault


@pytest.fixture(scope="module")
def plain_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalVault]:
    """The extension switched off: the vault behaves as the public server does."""
    with LocalVault(tmp_path_factory.mktemp("plain"), conditional_writes=False) as running:
        yield running


@pytest.fixture
def client(vault: LocalVault, http: requests.Session) -> Client:
    return project_of(vault, http)


@pytest.fixture
def plain(plain_vault: LocalVault, http: requests.Session) -> Client:
    return project_of(plain_vault, http)


# -- PUT --------------------------------------------------------------------------------------------


def test_a_put_whose_if_match_holds_the_current_hash_is_applied_and_answers_the_new_etag(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    response = client.put(file_id, b"two", if_match=tag(b"one"))
    assert response.status_code == 200, response.text
    assert response.headers["ETag"] == tag(b"two")
    assert response.json()["file"]["contentHash"] == sha256(b"two")
    assert client.content(file_id) == b"two"


def test_a_put_whose_if_match_holds_another_hash_is_412_with_the_current_hash_and_changes_nothing(
    client: Client,
) -> None:
    file_id = client.create("a.md", b"one")
    before = (client.listed(), client.operations(), len(list(client.vault.store.blob_dir.rglob("*"))))
    response = client.put(file_id, b"two", if_match=tag(b"something else"))
    assert_precondition_failed(response, b"one")
    assert client.content(file_id) == b"one"
    assert (client.listed(), client.operations(), len(list(client.vault.store.blob_dir.rglob("*")))) == before


def test_if_match_takes_a_list_and_matches_if_any_of_its_tags_does(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    listed = f"{tag(b'x')}, {tag(b'one')} ,{tag(b'y')}"
    assert client.put(file_id, b"two", if_match=listed).status_code == 200
    assert_precondition_failed(client.put(file_id, b"three", if_match=f"{tag(b'x')}, {tag(b'y')}"), b"two")


def test_if_match_fields_sent_twice_are_one_list(client: Client) -> None:
    """RFC 9110 §5.3: a list header may be split over several fields."""
    file_id = client.create("a.md", b"one")
    head = (
        f"PUT {client.note(file_id)} HTTP/1.1\r\nHost: x\r\nX-API-Key: {client.key}\r\n"
        f"If-Match: {tag(b'x')}\r\nIf-Match: {tag(b'one')}\r\nContent-Length: 3\r\nConnection: close\r\n\r\ntwo"
    )
    with socket.create_connection((client.vault.host, client.vault.port), timeout=TIMEOUT) as sock:
        sock.sendall(head.encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert client.content(file_id) == b"two"


def test_if_match_star_matches_any_live_file(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    assert client.put(file_id, b"two", if_match="*").status_code == 200
    assert client.move(file_id, "b.md", if_match="*").status_code == 200
    assert client.delete(file_id, if_match="*").status_code == 200


def test_a_weak_tag_never_matches_even_with_the_current_hash(client: Client) -> None:
    """RFC 9110 §13.1.1: If-Match uses the strong comparison."""
    file_id = client.create("a.md", b"one")
    assert_precondition_failed(client.put(file_id, b"two", if_match=f"W/{tag(b'one')}"), b"one")
    assert_precondition_failed(client.delete(file_id, if_match=f"w/{tag(b'one')}"), b"one")
    assert client.content(file_id) == b"one"


def test_an_unquoted_tag_matches(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    assert client.put(file_id, b"two", if_match=sha256(b"one")).status_code == 200


def test_the_hash_in_a_tag_is_compared_case_insensitively(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    assert client.put(file_id, b"two", if_match=tag(b"one").upper()).status_code == 200
    assert client.put(file_id, b"three", if_match=sha256(b"two").upper()).status_code == 200


@pytest.mark.parametrize(
    "value",
    ["", "abc", '"abc"', "nonsense, more", f'"{"0" * 63}"', f'"{sha256(b"one")}', f'*, "{sha256(b"other")}"', "**"],
    ids=["empty", "short", "short quoted", "words", "63 hex", "one quote", "star in a list", "two stars"],
)
def test_an_if_match_that_is_no_valid_tag_never_matches(client: Client, value: str) -> None:
    """A malformed precondition fails (412) rather than letting the write through unchecked."""
    file_id = client.create("a.md", b"one")
    assert_precondition_failed(client.put(file_id, b"two", if_match=value), b"one")
    assert client.content(file_id) == b"one"


def test_a_put_without_if_match_is_unconditional(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    response = client.put(file_id, b"two")
    assert response.status_code == 200
    assert response.headers["ETag"] == tag(b"two")


def test_if_match_is_checked_before_the_size_limit(tmp_path: Any, http: requests.Session) -> None:
    """RFC 9110 §13.2.2: a precondition is evaluated before the request content is processed."""
    with LocalVault(tmp_path / "small", max_file_size=3) as small:
        client = project_of(small, http)
        file_id = client.create("a.md", b"one")
        assert_precondition_failed(client.put(file_id, b"far too long", if_match=tag(b"x")), b"one")
        assert client.put(file_id, b"far too long", if_match=tag(b"one")).json()["error"]["code"] == "file_too_large"


# -- PATCH and DELETE ---------------------------------------------------------------------------------


def test_a_move_compares_the_current_content_hash(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    assert_precondition_failed(client.move(file_id, "b.md", if_match=tag(b"two")), b"one")
    assert [f["path"] for f in client.listed()] == ["a.md"]
    response = client.move(file_id, "b.md", if_match=tag(b"one"))
    assert response.status_code == 200, response.text
    assert [f["path"] for f in client.listed()] == ["b.md"]


def test_a_failed_precondition_comes_before_a_move_onto_its_own_path_or_a_conflict(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    client.create("taken.md", b"other")
    assert_precondition_failed(client.move(file_id, "a.md", if_match=tag(b"two")), b"one")
    assert_precondition_failed(client.move(file_id, "taken.md", if_match=tag(b"two")), b"one")
    assert client.move(file_id, "taken.md", if_match=tag(b"one")).json()["error"]["code"] == "path_exists"


def test_a_delete_compares_the_current_content_hash(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    assert_precondition_failed(client.delete(file_id, if_match=tag(b"two")), b"one")
    assert client.listed()[0]["deletedAt"] is None
    assert client.delete(file_id, if_match=tag(b"one")).json() == {"success": True}
    assert client.listed()[0]["deletedAt"] is not None


def test_a_tombstone_matches_no_if_match_but_a_delete_without_one_is_still_200(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    assert client.delete(file_id).status_code == 200
    operations = client.operations()
    for value in (tag(b"one"), "*"):
        assert_precondition_failed(client.delete(file_id, if_match=value), None)
    assert client.delete(file_id).json() == {"success": True}
    assert client.operations() == operations


def test_an_unknown_id_is_404_before_if_match_is_looked_at(client: Client) -> None:
    for response in (
        client.put(UNKNOWN_ID, b"x", if_match=tag(b"x")),
        client.move(UNKNOWN_ID, "b.md", if_match=tag(b"x")),
        client.delete(UNKNOWN_ID, if_match=tag(b"x")),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_a_put_or_move_of_a_tombstone_is_404_as_without_if_match(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    client.delete(file_id)
    assert client.put(file_id, b"x", if_match="*").status_code == 404
    assert client.move(file_id, "b.md", if_match="*").status_code == 404


def test_auth_and_permission_come_before_the_precondition(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    stranger = Client(client.vault, client.session, client.project, "osync_" + "0" * 64)
    assert stranger.put(file_id, b"x", if_match=tag(b"x")).status_code == 401
    store = client.vault.store
    viewer = store.add_user(f"viewer-{uuid.uuid4().hex[:8]}@x")
    store.add_member(client.project, viewer.id, "VIEWER")
    as_viewer = Client(client.vault, client.session, client.project, store.add_api_key(viewer.id))
    assert as_viewer.put(file_id, b"x", if_match=tag(b"x")).status_code == 403


def test_if_match_is_ignored_where_it_is_not_part_of_the_extension(client: Client) -> None:
    """Only PUT, PATCH and DELETE of /files/:id honour it; a create and the folder routes do not."""
    files = {"path": (None, "dir/a.md"), "file": ("a.md", b"one", "text/markdown")}
    created = client.request("POST", client.files, files=files, headers={"If-Match": tag(b"x")})
    assert created.status_code == 201
    folders = f"/api/projects/{client.project}/folders"
    moved = client.request("PATCH", folders, json={"path": "dir", "newPath": "new"}, headers={"If-Match": "x"})
    assert moved.status_code == 200 and moved.json()["moved"] == 1
    deleted = client.request("DELETE", folders, params={"path": "new"}, headers={"If-Match": "x"})
    assert deleted.status_code == 200 and deleted.json()["deleted"] == 1


# -- ETag and detection --------------------------------------------------------------------------------


def test_a_download_carries_the_notes_etag(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    response = client.request("GET", client.note(file_id))
    assert response.headers["ETag"] == tag(b"one")
    client.put(file_id, b"two")
    assert client.request("GET", client.note(file_id)).headers["ETag"] == tag(b"two")


def test_every_answer_under_api_says_that_conditional_writes_are_on(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    stranger = Client(client.vault, client.session, client.project, "wrong")
    answers = [
        client.request("GET", "/api/auth/me"),
        client.request("GET", client.files),
        client.request("GET", client.note(file_id)),
        client.request("OPTIONS", client.note(file_id)),
        client.request("GET", "/api/nothing/here"),
        client.request("POST", "/api/auth/me"),
        client.put(file_id, b"two", if_match=tag(b"one")),
        client.put(file_id, b"three", if_match=tag(b"one")),
        client.move(file_id, "b.md"),
        client.delete(UNKNOWN_ID),
        stranger.put(file_id, b"x"),
    ]
    assert [a.status_code for a in answers] == [200, 200, 200, 204, 404, 405, 200, 412, 200, 404, 401]
    assert all(a.headers.get(HEADER) == "if-match" for a in answers), [dict(a.headers) for a in answers]


def test_without_the_extension_if_match_is_ignored_and_nothing_announces_it(plain: Client) -> None:
    file_id = plain.create("a.md", b"one")
    response = plain.put(file_id, b"two", if_match=tag(b"not the current content"))
    assert response.status_code == 200
    assert plain.content(file_id) == b"two"
    assert plain.move(file_id, "b.md", if_match="W/nonsense").status_code == 200
    download = plain.request("GET", plain.note(file_id))
    for answer in (response, download, plain.request("GET", "/api/auth/me"), plain.delete(file_id, if_match="x")):
        assert HEADER not in answer.headers
        assert "ETag" not in answer.headers
        assert answer.status_code == 200
    assert plain.listed()[0]["deletedAt"] is not None


# -- idempotency ----------------------------------------------------------------------------------------


def test_the_same_idempotency_key_with_another_if_match_is_422_mismatch(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    key = str(uuid.uuid4())
    assert client.put(file_id, b"two", if_match=tag(b"one"), **{"Idempotency-Key": key}).status_code == 200
    again = client.put(file_id, b"two", if_match=tag(b"zzz"), **{"Idempotency-Key": key})
    assert again.status_code == 422
    assert again.json()["error"]["code"] == "idempotency_key_mismatch"
    unconditional = client.put(file_id, b"two", **{"Idempotency-Key": key})
    assert unconditional.status_code == 422


def test_a_412_is_a_definite_answer_remembered_and_replayed(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    key = str(uuid.uuid4())
    refused = client.put(file_id, b"three", if_match=tag(b"two"), **{"Idempotency-Key": key})
    assert_precondition_failed(refused, b"one")
    client.put(file_id, b"two")  # now the precondition would hold: the key's answer stays the 412
    replayed = client.put(file_id, b"three", if_match=tag(b"two"), **{"Idempotency-Key": key})
    assert (replayed.status_code, replayed.content) == (412, refused.content)
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.headers["ETag"] == tag(b"one")
    assert client.content(file_id) == b"two"


def test_a_replayed_put_carries_the_etag_of_its_first_answer(client: Client) -> None:
    file_id = client.create("a.md", b"one")
    key = str(uuid.uuid4())
    first = client.put(file_id, b"two", if_match=tag(b"one"), **{"Idempotency-Key": key})
    again = client.put(file_id, b"two", if_match=tag(b"one"), **{"Idempotency-Key": key})
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["ETag"] == first.headers["ETag"] == tag(b"two")
    assert again.headers[HEADER] == "if-match"


# -- atomicity ------------------------------------------------------------------------------------------


def race(client: Client, file_id: str, writes: list[str]) -> list[Any]:
    """Send one write per entry of ``writes`` ("PUT" or "DELETE") at once, each with If-Match of ``base``."""
    start = threading.Barrier(len(writes))
    answers: list[Any] = [None] * len(writes)

    def write(index: int) -> None:
        with requests.Session() as own:
            own.trust_env = False
            mine = Client(client.vault, own, client.project, client.key)
            start.wait(timeout=TIMEOUT)
            if writes[index] == "PUT":
                answers[index] = mine.put(file_id, f"writer {index}".encode(), if_match=tag(b"base"))
            else:
                answers[index] = mine.delete(file_id, if_match=tag(b"base"))

    threads = [threading.Thread(target=write, args=(index,)) for index in range(len(writes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(answer is not None for answer in answers), "a writer got no answer within a minute: too slow?"
    return answers


def test_of_racing_puts_with_the_same_if_match_exactly_one_is_applied(client: Client) -> None:
    """The check runs in the write's own transaction: one winner, every other writer gets 412 naming its hash."""
    file_id = client.create("a.md", b"base")
    answers = race(client, file_id, ["PUT"] * 16)
    assert sorted(a.status_code for a in answers) == [200] + [412] * 15
    [winner] = [index for index, answer in enumerate(answers) if answer.status_code == 200]
    won = f"writer {winner}".encode()
    assert client.content(file_id) == won
    assert all(a.json()["error"]["currentHash"] == sha256(won) for a in answers if a.status_code == 412)
    assert client.operations() == ["CREATE", "UPDATE"]


def test_of_racing_deletes_with_the_same_if_match_exactly_one_is_applied(client: Client) -> None:
    file_id = client.create("a.md", b"base")
    answers = race(client, file_id, ["DELETE"] * 8)
    assert sorted(a.status_code for a in answers) == [200] + [412] * 7
    assert all(a.json()["error"]["currentHash"] is None for a in answers if a.status_code == 412)
    assert client.operations() == ["CREATE", "DELETE"]


def test_of_racing_puts_and_deletes_with_the_same_if_match_exactly_one_is_applied(client: Client) -> None:
    """After a PUT wins the rest fail their precondition; after a DELETE wins a PUT finds no live file (404)."""
    file_id = client.create("a.md", b"base")
    writes = ["PUT", "DELETE"] * 6
    answers = race(client, file_id, writes)
    assert [a.status_code for a in answers].count(200) == 1
    [winner] = [index for index, answer in enumerate(answers) if answer.status_code == 200]
    operations = client.operations()
    assert operations == ["CREATE", "UPDATE" if writes[winner] == "PUT" else "DELETE"]
    for index, answer in enumerate(answers):
        if index != winner:
            refused = 404 if writes[winner] == "DELETE" and writes[index] == "PUT" else 412
            assert answer.status_code == refused, (writes[winner], writes[index], answer.text)
