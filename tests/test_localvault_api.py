"""The local vault against its contract, teamvault-api.md (latest server, V3), over real loopback HTTP.

Every test is named after the rule it checks; the § in its docstring points at the contract.
"""

from __future__ import annotations

import hashlib
import re
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from support.waiting import GENEROUS, too_slow, wait_until

from teamvault_mcp.localvault import Fault, LocalVault

#: How long a test waits for the vault's answer: generous, for a loaded machine (answers come in milliseconds).
TIMEOUT = 30.0
UNKNOWN_ID = "cunknown0000000000000000000"
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
LIST_FIELDS = {
    "id",
    "path",
    "fileType",
    "contentHash",
    "size",
    "mimeType",
    "deletedAt",
    "createdAt",
    "updatedAt",
    "lastModifiedById",
}
CREATE_FIELDS = {"id", "path", "fileType", "contentHash", "size", "mimeType", "createdAt", "updatedAt"}
REPLACE_FIELDS = {"id", "path", "fileType", "contentHash", "size", "mimeType", "updatedAt"}
PROJECT_NOT_FOUND = "Project not found"
FILE_NOT_FOUND = "File not found"
FOLDER_NOT_FOUND = "Folder is empty or not found"
BAD_FOLDER_PATH = "Invalid folder path"


# -- helpers ------------------------------------------------------------------------------------------


@dataclass
class Api:
    """One API key talking to one project of a running vault."""

    vault: LocalVault
    session: requests.Session
    key: str | None
    project: str = ""

    def __post_init__(self) -> None:
        self.project = self.project or self.vault.project_id

    @property
    def files_route(self) -> str:
        return f"/api/projects/{self.project}/files"

    @property
    def folders_route(self) -> str:
        return f"/api/projects/{self.project}/folders"

    def file_route(self, file_id: str) -> str:
        return f"{self.files_route}/{file_id}"

    def request(self, method: str, route: str, *, headers: dict[str, str] | None = None, **kw: Any) -> Any:
        sent = {"X-API-Key": self.key} if self.key is not None else {}
        sent.update(headers or {})
        return self.session.request(method, self.vault.url + route, headers=sent, timeout=TIMEOUT, **kw)

    def list(self, **params: str) -> Any:
        return self.request("GET", self.files_route, params=params)

    def paths(self, **params: str) -> list[str]:
        response = self.list(**params)
        assert response.status_code == 200, response.text
        return [file["path"] for file in response.json()["files"]]

    def create(
        self, path: str, content: bytes = b"note", mime: str | None = "text/markdown", **kw: Any
    ) -> requests.Response:
        name = path.rsplit("/", 1)[-1] or "note"
        part = (name, content) if mime is None else (name, content, mime)
        return self.request("POST", self.files_route, files={"path": (None, path), "file": part}, **kw)

    def created(self, path: str, content: bytes = b"note", mime: str | None = "text/markdown") -> dict[str, Any]:
        response = self.create(path, content, mime)
        assert response.status_code == 201, response.text
        file: dict[str, Any] = response.json()["file"]
        return file

    def replace(self, file_id: str, content: bytes, **kw: Any) -> Any:
        headers = {"Content-Type": "application/octet-stream", **kw.pop("headers", {})}
        return self.request("PUT", self.file_route(file_id), data=content, headers=headers, **kw)

    def move(self, file_id: str, new_path: Any, **kw: Any) -> Any:
        return self.request("PATCH", self.file_route(file_id), json={"newPath": new_path}, **kw)

    def delete(self, file_id: str, **kw: Any) -> Any:
        return self.request("DELETE", self.file_route(file_id), **kw)

    def download(self, file_id: str) -> Any:
        return self.request("GET", self.file_route(file_id))

    def versions(self, file_id: str) -> list[dict[str, Any]]:
        response = self.request("GET", f"{self.file_route(file_id)}/versions")
        assert response.status_code == 200, response.text
        versions: list[dict[str, Any]] = response.json()["versions"]
        return versions

    def move_folder(self, path: str, new_path: str, **kw: Any) -> Any:
        return self.request("PATCH", self.folders_route, json={"path": path, "newPath": new_path}, **kw)

    def delete_folder(self, path: str | None, **kw: Any) -> Any:
        return self.request("DELETE", self.folders_route, params={} if path is None else {"path": path}, **kw)


def assert_error(response: Any, status: int, code: str | None, message: str | None = None) -> str:
    """The §1.4 envelope, exactly ``{"error":{"code","message"}}``, as JSON; returns the message."""
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    if code is not None:  # None: the contract names no code
        assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if message is not None:
        assert body["error"]["message"] == message
    return str(body["error"]["message"])


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def operations(api: Api) -> list[dict[str, Any]]:
    return api.vault.store.operations(api.project)


def member(api: Api, role: str) -> Api:
    """A new user with ``role`` in the test's project, and their own API key."""
    store = api.vault.store
    user = store.add_user(f"{role.lower()}-{uuid.uuid4().hex[:8]}@x", role.title())
    key = store.add_api_key(user.id)
    store.add_member(api.project, user.id, role)
    return Api(api.vault, api.session, key, api.project)


def outsider(api: Api) -> Api:
    """A user with a valid key who is no member of the test's project."""
    user = api.vault.store.add_user(f"out-{uuid.uuid4().hex[:8]}@x", "Outsider")
    return Api(api.vault, api.session, api.vault.store.add_api_key(user.id), api.project)


def multipart(boundary: str, path: str, content: bytes, mime: str = "text/markdown") -> tuple[str, bytes]:
    """A hand-built multipart body, so that a test chooses the boundary."""
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="path"\r\n\r\n{path}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="n.md"\r\n'
        f"Content-Type: {mime}\r\n\r\n"
    ).encode() + content
    body += f"\r\n--{boundary}--\r\n".encode()
    return f"multipart/form-data; boundary={boundary}", body


@pytest.fixture(scope="module")
def vault(module_vault: LocalVault) -> LocalVault:
    """The module's one vault: each test gets its own empty project in it."""
    return module_vault


def fresh_project(vault: LocalVault, session: requests.Session) -> Api:
    """A new, empty project owned by the vault's user, spoken to with the vault's API key."""
    owner = vault.store.owner_of(vault.project_id)
    project = vault.store.add_project(f"test-{uuid.uuid4().hex[:12]}", "Test project", owner)
    return Api(vault, session, vault.api_key, project)


@pytest.fixture
def api(vault: LocalVault, http: requests.Session) -> Api:
    return fresh_project(vault, http)


# -- §1.2 authentication and the order of checks -----------------------------------------------------


def every_route(api: Api) -> list[tuple[str, str]]:
    file_route = api.file_route(UNKNOWN_ID)
    return [
        ("GET", "/api/auth/me"),
        ("GET", "/api/projects"),
        ("GET", f"/api/projects/{api.project}"),
        ("GET", api.files_route),
        ("POST", api.files_route),
        ("GET", file_route),
        ("PUT", file_route),
        ("PATCH", file_route),
        ("DELETE", file_route),
        ("GET", f"{file_route}/versions"),
        ("GET", f"{file_route}/versions/{UNKNOWN_ID}"),
        ("PATCH", api.folders_route),
        ("DELETE", api.folders_route),
    ]


def test_a_request_without_an_api_key_is_401_unauthorized_on_every_route(api: Api) -> None:
    """§1.2: missing credentials → 401 ``unauthorized``."""
    anonymous = Api(api.vault, api.session, None)
    for method, route in every_route(api):
        assert_error(anonymous.request(method, route), 401, "unauthorized")


def test_a_request_with_a_wrong_api_key_is_401_unauthorized_on_every_route(api: Api) -> None:
    """§1.2: invalid credentials → 401; a well-formed key that was never issued is invalid."""
    for bad in ("osync_" + "0" * 64, "nonsense", api.vault.api_key + "x"):
        stranger = Api(api.vault, api.session, bad)
        for method, route in every_route(api):
            assert_error(stranger.request(method, route), 401, "unauthorized")


def test_authentication_is_checked_before_the_project_is_loaded(api: Api) -> None:
    """§1.2: 401 comes before the 404 of an unknown project."""
    stranger = Api(api.vault, api.session, "osync_" + "1" * 64, project="cnosuchproject")
    assert_error(stranger.list(), 401, "unauthorized")
    assert_error(stranger.create("../bad.md"), 401, "unauthorized")


@pytest.fixture
def seeded(api: Api) -> str:
    """A live note ``a.md`` and a live folder ``dir``; returns the note's id."""
    api.created("dir/x.md")
    return str(api.created("a.md")["id"])


#: Writes that would each fail validation, lookup or a conflict check if the caller were allowed to write.
WRITES: dict[str, Callable[[Api, str], Any]] = {
    "POST a valid new note": lambda api, fid: api.create("new.md"),
    "POST an invalid path": lambda api, fid: api.create("../a.md"),
    "POST without multipart": lambda api, fid: api.request("POST", api.files_route, json={"path": "a.md"}),
    "POST without a path": lambda api, fid: api.request("POST", api.files_route, files={"file": ("a", b"x")}),
    "POST onto a live path": lambda api, fid: api.create("a.md"),
    "PUT a live note": lambda api, fid: api.replace(fid, b"changed"),
    "PUT an unknown id": lambda api, fid: api.replace(UNKNOWN_ID, b"changed"),
    "PATCH with bad JSON": lambda api, fid: api.request("PATCH", api.file_route(fid), data=b"{"),
    "PATCH to an invalid path": lambda api, fid: api.move(fid, "../x.md"),
    "PATCH an unknown id": lambda api, fid: api.move(UNKNOWN_ID, "b.md"),
    "PATCH onto a taken path": lambda api, fid: api.move(fid, "dir/x.md"),
    "DELETE a live note": lambda api, fid: api.delete(fid),
    "DELETE an unknown id": lambda api, fid: api.delete(UNKNOWN_ID),
    "PATCH a folder into itself": lambda api, fid: api.move_folder("dir", "dir/sub"),
    "PATCH a folder with bad JSON": lambda api, fid: api.request("PATCH", api.folders_route, data=b"]"),
    "PATCH an unknown folder": lambda api, fid: api.move_folder("nope", "other"),
    "DELETE a folder": lambda api, fid: api.delete_folder("dir"),
    "DELETE a folder without a path": lambda api, fid: api.delete_folder(None),
}


@pytest.mark.parametrize("write", WRITES, ids=list(WRITES))
def test_a_viewer_gets_403_forbidden_on_every_write_before_any_validation(
    api: Api, seeded: str, http: requests.Session, write: str
) -> None:
    """§1.2: VIEWER gets 403 on every write; 403 comes before 400, the file's 404 and 409."""
    viewer = member(api, "VIEWER")
    before = operations(api)
    assert_error(WRITES[write](viewer, seeded), 403, "forbidden")
    assert operations(api) == before


@pytest.mark.parametrize("write", WRITES, ids=list(WRITES))
def test_a_non_member_gets_404_for_the_project_before_any_other_check(
    api: Api, seeded: str, http: requests.Session, write: str
) -> None:
    """§1.2: a user who is no member sees 404 ``not_found`` "project not found" (inferred), before 403/400/409."""
    before = operations(api)
    assert_error(WRITES[write](outsider(api), seeded), 404, "not_found", PROJECT_NOT_FOUND)
    assert operations(api) == before


@pytest.mark.parametrize("write", WRITES, ids=list(WRITES))
def test_an_unknown_project_is_404_before_any_other_check(api: Api, seeded: str, write: str) -> None:
    """§1.2/§1.1: an unknown project id is 404 ``not_found``, never 400."""
    elsewhere = Api(api.vault, api.session, api.key, project="cnosuchproject000000000000")
    assert_error(WRITES[write](elsewhere, seeded), 404, "not_found", PROJECT_NOT_FOUND)


def test_an_unknown_project_is_404_on_reads(api: Api) -> None:
    elsewhere = Api(api.vault, api.session, api.key, project="cnosuchproject000000000000")
    assert_error(elsewhere.list(), 404, "not_found", PROJECT_NOT_FOUND)
    assert_error(elsewhere.request("GET", f"/api/projects/{elsewhere.project}"), 404, "not_found")
    assert_error(elsewhere.download(UNKNOWN_ID), 404, "not_found", PROJECT_NOT_FOUND)


def test_a_viewer_can_read_everything(api: Api, seeded: str, http: requests.Session) -> None:
    """§1.2: read routes need only view permission."""
    viewer = member(api, "VIEWER")
    assert viewer.paths() == ["a.md", "dir/x.md"]
    assert viewer.download(seeded).content == b"note"
    assert len(viewer.versions(seeded)) == 1
    assert viewer.request("GET", f"/api/projects/{api.project}").json()["project"]["id"] == api.project


@pytest.mark.parametrize("role", ["EDITOR", "ADMIN"])
def test_editors_and_admins_may_write(api: Api, http: requests.Session, role: str) -> None:
    """§1.2 (inferred): owner, ADMIN and EDITOR may edit."""
    writer = member(api, role)
    file = writer.created("by-writer.md")
    assert writer.replace(file["id"], b"v2").status_code == 200
    assert writer.delete(file["id"]).status_code == 200


def test_request_validation_comes_before_the_file_lookup(api: Api) -> None:
    """§1.2/§3.5: an invalid body on an unknown file id is 400, not 404."""
    assert_error(api.move(UNKNOWN_ID, "../x.md"), 400, "invalid_path", "Parent traversal is not allowed")
    response = api.request("PATCH", api.file_route(UNKNOWN_ID), data=b"not json")
    assert_error(response, 400, None)


def test_the_file_lookup_comes_before_conflicts(api: Api, seeded: str) -> None:
    """§1.2: an unknown id moved onto a taken path is 404, not 409."""
    assert_error(api.move(UNKNOWN_ID, "a.md"), 404, "not_found", FILE_NOT_FOUND)


# -- §1.3 JSON conventions, §3.1/§3.2/§3.4 field sets -------------------------------------------------


def test_post_answers_carry_exactly_the_create_fields_with_size_as_a_string(api: Api) -> None:
    """§3.2: 201 ``{"file":{id,path,fileType,contentHash,size,mimeType,createdAt,updatedAt}}``."""
    response = api.create("dir/a.md", b"hello")
    assert response.status_code == 201
    assert response.headers["Content-Type"].startswith("application/json")
    assert set(response.json()) == {"file"}
    file = response.json()["file"]
    assert set(file) == CREATE_FIELDS
    assert file["size"] == "5"
    assert file["path"] == "dir/a.md"
    assert file["contentHash"] == sha256(b"hello")
    assert ISO_MS.match(file["createdAt"]) and ISO_MS.match(file["updatedAt"])


def test_put_answers_carry_exactly_the_replace_fields_with_size_as_a_string(api: Api) -> None:
    """§3.4: 200 ``{"file":{id,path,fileType,contentHash,size,mimeType,updatedAt}}``, no createdAt."""
    file = api.created("a.md")
    response = api.replace(file["id"], b"x" * 1234)
    assert response.status_code == 200
    assert set(response.json()) == {"file"}
    replaced = response.json()["file"]
    assert set(replaced) == REPLACE_FIELDS
    assert replaced["size"] == "1234"
    assert replaced["contentHash"] == sha256(b"x" * 1234)
    assert ISO_MS.match(replaced["updatedAt"])


def test_list_answers_carry_all_ten_fields_with_size_as_a_string(api: Api) -> None:
    """§3.1: every record has the ten list fields; ``size`` a decimal string; timestamps ISO with ms and Z."""
    api.created("a.md", b"")
    gone = api.created("b.md", b"12345678901")
    api.delete(gone["id"])
    response = api.list(includeDeleted="true")
    assert response.headers["Content-Type"].startswith("application/json")
    assert set(response.json()) == {"files"}
    files = response.json()["files"]
    assert [set(file) for file in files] == [LIST_FIELDS, LIST_FIELDS]
    assert [file["size"] for file in files] == ["0", "11"]
    assert files[0]["deletedAt"] is None and ISO_MS.match(files[1]["deletedAt"])
    assert files[0]["lastModifiedById"] == api.request("GET", "/api/auth/me").json()["user"]["id"]
    assert all(re.fullmatch(r"[0-9a-f]{64}", file["contentHash"]) for file in files)


# -- §3.1 list filters --------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["dir/a.md", "./dir//a.md", "dir\\a.md", "x/../dir/a.md", "dir/./a.md"])
def test_list_path_is_normalised_with_the_stored_gate(api: Api, spelling: str) -> None:
    """§3.1/§2.3: ``path=`` is normalised before the lookup, and returns at most one record."""
    api.created("dir/a.md")
    api.created("dir/a.md.bak")
    assert api.paths(path=spelling) == ["dir/a.md"]


@pytest.mark.parametrize("refused", ["../a.md", "/a.md", ".versions/a.md", "a/.staging/x", "x\\..\\a.md", "a\0.md"])
def test_list_with_a_refused_path_answers_200_with_no_files(api: Api, refused: str) -> None:
    """§3.1/§2.3: a path the stored gate refuses gives ``200 {"files":[]}``, never an error."""
    api.created("a.md")
    response = api.list(path=refused)
    assert response.status_code == 200
    assert response.json() == {"files": []}


def test_list_of_a_missing_path_answers_200_with_no_files(api: Api) -> None:
    """§3.1: a missing path is 200 ``{"files":[]}``, never 404."""
    response = api.list(path="nothing/here.md")
    assert response.status_code == 200
    assert response.json() == {"files": []}


def test_list_ignores_an_empty_path_filter(api: Api) -> None:
    """§3.1/§2.3: ``path=`` with an empty value lists the whole project."""
    api.created("a.md")
    api.created("b/c.md")
    assert api.paths(path="") == ["a.md", "b/c.md"]


def test_list_prefix_is_raw_case_sensitive_and_ignores_folder_boundaries(api: Api) -> None:
    """§3.1: ``prefix`` is not normalised, is case-sensitive, and ``notes`` matches ``notes-old.md``."""
    for path in ("notes/a.md", "notes-old.md", "Notes/b.md", "other.md", "notes/sub/c.md"):
        api.created(path)
    assert api.paths(prefix="notes") == ["notes-old.md", "notes/a.md", "notes/sub/c.md"]
    assert api.paths(prefix="notes/") == ["notes/a.md", "notes/sub/c.md"]
    assert api.paths(prefix="Notes") == ["Notes/b.md"]
    assert api.paths(prefix="./notes") == []
    assert api.paths(prefix="notes//") == []
    assert api.paths(prefix="") == ["Notes/b.md", "notes-old.md", "notes/a.md", "notes/sub/c.md", "other.md"]


def test_list_with_path_and_prefix_applies_only_the_prefix(api: Api) -> None:
    """§3.1: the second filter overwrites the first: ``path`` + ``prefix`` → prefix only."""
    for path in ("a.md", "b/one.md", "b/two.md"):
        api.created(path)
    assert api.paths(path="a.md", prefix="b/") == ["b/one.md", "b/two.md"]
    assert api.paths(path="b/one.md", prefix="zzz") == []


def test_list_includes_tombstones_only_for_include_deleted_exactly_true(api: Api) -> None:
    """§3.1/§7: only the exact string ``true`` includes tombstones, also together with ``path=``."""
    api.created("live.md")
    api.delete(api.created("gone.md")["id"])
    assert api.paths(includeDeleted="true") == ["gone.md", "live.md"]
    for other in ("True", "TRUE", "1", "yes", "", "true "):
        assert api.paths(includeDeleted=other) == ["live.md"], other
    assert api.paths(path="gone.md") == []
    assert api.paths(path="gone.md", includeDeleted="true") == ["gone.md"]


def test_list_is_ordered_by_path(api: Api) -> None:
    """§3.1: ``path`` ascending, whatever the creation order."""
    for path in ("c.md", "a/z.md", "b.md", "a.md", "a/b/c.md"):
        api.created(path)
    assert api.paths() == ["a.md", "a/b/c.md", "a/z.md", "b.md", "c.md"]


# -- §3.3 download ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "content", "mime"),
    [
        ("img.png", bytes(range(256)) + b"\r\n\x00", "image/png"),
        ("note.md", "Ёлка\r\n\ufeffline\n".encode(), "text/markdown"),
        ("page.txt", b"plain", "text/plain; charset=utf-8"),
    ],
)
def test_download_returns_the_raw_bytes_with_the_stored_mime_type(
    api: Api, path: str, content: bytes, mime: str
) -> None:
    """§3.3: 200 with the exact bytes; ``Content-Type`` is the stored mime type."""
    file = api.created(path, content, mime)
    response = api.download(file["id"])
    assert response.status_code == 200
    assert response.content == content
    assert response.headers["Content-Type"] == mime
    assert response.headers["Content-Length"] == str(len(content))


def test_download_of_a_tombstone_is_404_not_found(api: Api) -> None:
    """§3.3/§7: a tombstone's id downloads as 404 ``not_found``."""
    file = api.created("a.md")
    api.delete(file["id"])
    assert_error(api.download(file["id"]), 404, "not_found", FILE_NOT_FOUND)


def test_download_of_an_unknown_id_is_404_not_found(api: Api) -> None:
    """§1.1/§3.3: an unknown id is 404, never 400."""
    assert_error(api.download(UNKNOWN_ID), 404, "not_found", FILE_NOT_FOUND)
    assert_error(api.download("not-even-a-cuid"), 404, "not_found")


def test_an_empty_file_downloads_as_zero_bytes(api: Api) -> None:
    """§3.3: an empty file is a 0-byte body."""
    file = api.created("empty.md", b"")
    assert file["size"] == "0"
    response = api.download(file["id"])
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["Content-Length"] == "0"


# -- §3.2 create --------------------------------------------------------------------------------------


def test_post_creates_a_note_with_201(api: Api) -> None:
    """§3.2: a new note answers 201; the note is then listed and downloadable."""
    response = api.create("notes/new.md", b"# Title\n")
    assert response.status_code == 201
    file = response.json()["file"]
    assert api.paths() == ["notes/new.md"]
    assert api.download(file["id"]).content == b"# Title\n"
    assert [op["kind"] for op in operations(api)] == ["CREATE"]


@pytest.mark.parametrize(
    ("given", "stored"),
    [("./dir//a.md", "dir/a.md"), ("dir\\a.md", "dir/a.md"), ("x/../dir/a.md", "dir/a.md"), ("a/b/c/", "a/b/c")],
)
def test_post_stores_the_normalised_path(api: Api, given: str, stored: str) -> None:
    """§2.3: the stored path is the gate's normal form."""
    assert api.created(given)["path"] == stored


def test_post_onto_a_tombstone_revives_the_same_id_with_201(api: Api) -> None:
    """§3.2/§7: POST on a tombstoned path revives the same id, status 201, type and mime re-detected."""
    old = api.created("a.md", b"one", "text/markdown")
    assert api.delete(old["id"]).status_code == 200
    response = api.create("a.md", b"\x89PNG", "image/png")
    assert response.status_code == 201
    revived = response.json()["file"]
    assert revived["id"] == old["id"]
    assert revived["contentHash"] == sha256(b"\x89PNG")
    assert revived["size"] == "4"
    assert revived["mimeType"] == "image/png"
    assert revived["fileType"] == "TEXT"  # the .md suffix still makes it TEXT (§6)
    listed = api.list(path="a.md").json()["files"]
    assert [(file["id"], file["deletedAt"]) for file in listed] == [(old["id"], None)]
    assert api.download(old["id"]).content == b"\x89PNG"


def test_post_onto_a_live_path_is_409_path_exists_even_with_identical_bytes(api: Api) -> None:
    """§3.2 step 6: the REST create is not idempotent."""
    file = api.created("a.md", b"same")
    assert_error(api.create("a.md", b"same"), 409, "path_exists", "A file with this path already exists")
    assert_error(api.create("./a.md", b"other"), 409, "path_exists")
    assert api.download(file["id"]).content == b"same"
    assert len(operations(api)) == 1


@pytest.mark.parametrize("target", ["dir", "dir/", "./dir"])
def test_post_onto_a_folder_with_live_files_is_409_path_blocked(api: Api, target: str) -> None:
    """§3.2 step 7: live files under ``path/`` block a file at ``path``."""
    api.created("dir/sub/a.md")
    message = assert_error(api.create(target), 409, "path_blocked")
    assert "dir/sub/a.md" in message
    assert api.paths() == ["dir/sub/a.md"]


def test_post_below_a_file_is_409_path_blocked(api: Api) -> None:
    """§3.2 step 7 (inferred): a parent segment that is a live file blocks the path."""
    api.created("a", b"file named a")
    message = assert_error(api.create("a/b/c.md"), 409, "path_blocked")
    assert "“a”" in message
    assert api.paths() == ["a"]


def test_post_onto_a_folder_of_tombstones_only_is_allowed(api: Api) -> None:
    """§3.2 step 7: only *live* files under ``path/`` block it."""
    api.delete(api.created("dir/a.md")["id"])
    assert api.create("dir").status_code == 201


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../a.md", "Parent traversal is not allowed"),
        ("x\\..\\dir\\a.md", "Parent traversal is not allowed"),
        ("/a.md", "Absolute paths are not allowed"),
        ("\\a.md", "Absolute paths are not allowed"),
        ("a/..", "Single-dot segments are not allowed"),
        (".", "Single-dot segments are not allowed"),
        ("a\0b.md", "Path contains NUL byte"),
        (".obsidian/x.md", "Reserved folder name: .obsidian"),
        (".Trash/note.md", "Reserved folder name: .Trash"),
        ("notes/.git/HEAD", "Reserved folder name: .git"),
        (".versions/x", "Reserved folder name: .versions"),
        (".ＧＩＴ/config", "Reserved folder name: .ＧＩＴ"),
        ("\u200c\ufeff/x.md", "Empty path segment"),
        ("a:b.md", "Name a Windows client can't keep: a:b.md"),
        ("OBSIDI~1/x.md", "Name a Windows client can't keep: OBSIDI~1"),
        ("Why?.md", "Name a Windows client can't keep: Why?.md"),
        ("a.md.", "Name a Windows client can't keep: a.md."),
        ("Notes /x.md", "Name a Windows client can't keep: Notes "),
        ("x" * 256 + ".md", "Path segment too long"),
    ],
)
def test_post_with_a_refused_path_is_400_invalid_path_with_the_gates_message(api: Api, path: str, message: str) -> None:
    """§3.2 step 4/§2.3: 400 ``invalid_path`` carrying the gate's English message."""
    assert_error(api.create(path), 400, "invalid_path", message)
    assert api.paths(includeDeleted="true") == []


def test_post_accepts_names_that_only_look_reserved(api: Api) -> None:
    """§2.3: only whole segments are reserved; no trimming, case folding or percent-decoding."""
    kept = [".gitignore", ".obsidian-notes/idea.md", "  lead.md", "%2e%2e/a.md", "Chapter~1.md", "x" * 255, "A.md"]
    for path in kept:
        assert api.created(path)["path"] == path
    assert api.created("a.md")["path"] == "a.md"  # A.md and a.md coexist


@pytest.mark.parametrize("path", [None, ""])
def test_post_without_a_path_is_400_path_required(api: Api, path: str | None) -> None:
    """§3.2 step 2: ``path`` missing or empty → 400 ``path_required``."""
    files: dict[str, Any] = {"file": ("a.md", b"x", "text/markdown")}
    if path is not None:
        files["path"] = (None, path)
    assert_error(
        api.request("POST", api.files_route, files=files), 400, "path_required", "The path parameter is required"
    )


def test_post_with_the_path_sent_as_a_file_is_400_path_required(api: Api) -> None:
    """§3.2 step 2: ``path`` that is not a string field."""
    files = {"path": ("p.txt", b"a.md", "text/plain"), "file": ("a.md", b"x", "text/markdown")}
    assert_error(api.request("POST", api.files_route, files=files), 400, "path_required")


def test_post_without_a_file_is_400_file_required(api: Api) -> None:
    """§3.2 step 3: ``file`` missing, or a plain field instead of a file part."""
    missing = api.request("POST", api.files_route, files={"path": (None, "a.md")})
    assert_error(missing, 400, "file_required", "A file is required")
    plain = api.request("POST", api.files_route, files={"path": (None, "a.md"), "file": (None, "text")})
    assert_error(plain, 400, "file_required")
    assert api.paths() == []


def test_post_checks_path_required_before_file_required_before_invalid_path(api: Api) -> None:
    """§3.2: the checks run in the documented order."""
    assert_error(api.request("POST", api.files_route, files={"other": (None, "x")}), 400, "path_required")
    assert_error(api.request("POST", api.files_route, files={"path": (None, "../a")}), 400, "file_required")


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/json", b'{"path": "a.md"}'),
        ("application/x-www-form-urlencoded", b"path=a.md&file=x"),
        ("text/plain", b"a.md"),
        ("", b""),
    ],
)
def test_post_without_multipart_is_400_expected_multipart(api: Api, content_type: str, body: bytes) -> None:
    """§3.2 step 1: a Content-Type that is not multipart/form-data → 400 ``expected_multipart``."""
    response = api.request("POST", api.files_route, data=body, headers={"Content-Type": content_type})
    assert_error(response, 400, "expected_multipart", "multipart/form-data is expected")


def test_post_accepts_multipart_in_any_letter_case(api: Api) -> None:
    """§3.2 step 1: the multipart test is case-insensitive."""
    _, body = multipart("XyZ", "case.md", b"hi")
    headers = {"Content-Type": "Multipart/Form-Data; boundary=XyZ"}
    response = api.request("POST", api.files_route, data=body, headers=headers)
    assert response.status_code == 201, response.text


@pytest.fixture(scope="module")
def limited_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalVault]:
    with LocalVault(tmp_path_factory.mktemp("limited"), max_file_size=10) as running:
        yield running


@pytest.fixture
def small_vault(limited_vault: LocalVault, http: requests.Session) -> Api:
    """A fresh project in a vault with ``MAX_FILE_SIZE=10``."""
    return fresh_project(limited_vault, http)


def test_post_over_max_file_size_is_400_file_too_large_and_equal_is_allowed(small_vault: Api) -> None:
    """§3.2 step 5/§12: size > MAX_FILE_SIZE → 400 ``file_too_large``; exactly the limit is allowed."""
    assert_error(small_vault.create("big.md", b"x" * 11), 400, "file_too_large", "File larger than 10 bytes")
    assert small_vault.create("ten.md", b"x" * 10).status_code == 201
    assert small_vault.paths() == ["ten.md"]


def test_post_checks_invalid_path_before_file_too_large_before_conflicts(small_vault: Api) -> None:
    """§3.2: invalid_path (4) → file_too_large (5) → path_exists (6) / path_blocked (7)."""
    small_vault.created("a.md", b"x")
    small_vault.created("dir/b.md", b"x")
    assert_error(small_vault.create("../a.md", b"x" * 11), 400, "invalid_path")
    assert_error(small_vault.create("a.md", b"x" * 11), 400, "file_too_large")
    assert_error(small_vault.create("dir", b"x" * 11), 400, "file_too_large")


@pytest.mark.parametrize(
    ("path", "part_type", "file_type", "mime_type"),
    [
        ("a.md", "application/octet-stream", "TEXT", "application/octet-stream"),
        ("A.MD", "application/octet-stream", "BINARY", "application/octet-stream"),
        ("A.MD", "text/markdown", "TEXT", "text/markdown"),
        ("a.md", None, "TEXT", "text/markdown"),
        ("pic.png", None, "BINARY", "image/png"),
        ("pic.png", "text/plain", "TEXT", "text/plain"),
        ("data.json", "application/json", "TEXT", "application/json"),
        ("c.yml", "application/octet-stream", "TEXT", "application/octet-stream"),
        ("c.yaml", "application/octet-stream", "TEXT", "application/octet-stream"),
        ("t.csv", "application/octet-stream", "TEXT", "application/octet-stream"),
        ("t.txt", "application/octet-stream", "TEXT", "application/octet-stream"),
        ("a.markdown", "application/octet-stream", "BINARY", "application/octet-stream"),
        ("noext", None, "BINARY", "application/octet-stream"),
        ("doc.pdf", "application/pdf", "BINARY", "application/pdf"),
    ],
)
def test_post_detects_text_by_text_mime_or_a_case_sensitive_suffix(
    api: Api, path: str, part_type: str | None, file_type: str, mime_type: str
) -> None:
    """§6: mime = the part's type, else by extension, else octet-stream; TEXT for ``text/*`` or a suffix."""
    file = api.created(path, b"content", part_type)
    assert (file["fileType"], file["mimeType"]) == (file_type, mime_type)


# -- §3.4 replace -------------------------------------------------------------------------------------


def test_put_replaces_the_content_with_200_and_keeps_file_type_and_mime_type(api: Api) -> None:
    """§3.4: new hash and size; ``fileType``/``mimeType`` unchanged whatever is sent."""
    file = api.created("pic.png", b"\x89PNG", "image/png")
    response = api.replace(file["id"], b"now text", headers={"Content-Type": "text/markdown"})
    assert response.status_code == 200
    replaced = response.json()["file"]
    assert replaced["id"] == file["id"]
    assert replaced["path"] == "pic.png"
    assert (replaced["fileType"], replaced["mimeType"]) == ("BINARY", "image/png")
    assert (replaced["contentHash"], replaced["size"]) == (sha256(b"now text"), "8")
    assert api.download(file["id"]).content == b"now text"
    assert [op["kind"] for op in operations(api)] == ["CREATE", "UPDATE"]


def test_put_sets_last_modified_by_to_the_writer(api: Api, http: requests.Session) -> None:
    """§3.4: ``lastModifiedById`` is the last writer."""
    file = api.created("a.md")
    editor = member(api, "EDITOR")
    editor.replace(file["id"], b"edited")
    editor_id = editor.request("GET", "/api/auth/me").json()["user"]["id"]
    assert api.list(path="a.md").json()["files"][0]["lastModifiedById"] == editor_id


def test_put_with_an_empty_body_writes_a_zero_byte_file(api: Api) -> None:
    """§3.4: an empty body is allowed."""
    file = api.created("a.md", b"something")
    response = api.replace(file["id"], b"")
    assert response.status_code == 200
    assert response.json()["file"]["size"] == "0"
    assert response.json()["file"]["contentHash"] == sha256(b"")
    assert api.download(file["id"]).content == b""


def test_put_on_a_tombstone_or_an_unknown_id_is_404_not_found(api: Api) -> None:
    """§3.4/§7: the file must exist and be live."""
    file = api.created("a.md", b"kept")
    api.delete(file["id"])
    before = operations(api)
    assert_error(api.replace(file["id"], b"new"), 404, "not_found", FILE_NOT_FOUND)
    assert_error(api.replace(UNKNOWN_ID, b"new"), 404, "not_found", FILE_NOT_FOUND)
    assert operations(api) == before
    assert api.list(path="a.md", includeDeleted="true").json()["files"][0]["contentHash"] == sha256(b"kept")


def test_put_over_max_file_size_is_400_file_too_large_and_equal_is_allowed(small_vault: Api) -> None:
    """§3.4/§12: too large → 400 ``file_too_large``; the existence check comes first."""
    file = small_vault.created("a.md", b"x")
    assert_error(small_vault.replace(file["id"], b"y" * 11), 400, "file_too_large")
    assert small_vault.download(file["id"]).content == b"x"
    assert small_vault.replace(file["id"], b"y" * 10).status_code == 200
    assert_error(small_vault.replace(UNKNOWN_ID, b"y" * 11), 404, "not_found")


# -- §3.5 move ----------------------------------------------------------------------------------------


def test_patch_moves_a_note_with_200_and_answers_only_id_and_path(api: Api) -> None:
    """§3.5: 200 ``{"file":{"id","path"}}`` with the normalised new path; the id and content stay."""
    file = api.created("a.md", b"body")
    response = api.move(file["id"], "./sub//b.md")
    assert response.status_code == 200
    assert response.json() == {"file": {"id": file["id"], "path": "sub/b.md"}}
    assert api.paths(includeDeleted="true") == ["sub/b.md"]
    assert api.download(file["id"]).content == b"body"
    move = operations(api)[-1]
    assert (move["kind"], move["path"], move["newPath"]) == ("MOVE", "a.md", "sub/b.md")


def test_patch_ignores_extra_fields(api: Api) -> None:
    """§3.5: extra JSON fields are ignored (zod object)."""
    file = api.created("a.md")
    response = api.request("PATCH", api.file_route(file["id"]), json={"newPath": "b.md", "path": "zzz", "x": 1})
    assert response.json() == {"file": {"id": file["id"], "path": "b.md"}}


@pytest.mark.parametrize("spelling", ["a.md", "./a.md", "x/../a.md"])
def test_patch_onto_its_own_path_is_200_and_changes_nothing(api: Api, spelling: str) -> None:
    """§3.5: ``newPath`` normalising to the current path → 200, no change, no operation."""
    file = api.created("a.md")
    before = operations(api)
    response = api.move(file["id"], spelling)
    assert response.status_code == 200
    assert response.json() == {"file": {"id": file["id"], "path": "a.md"}}
    assert operations(api) == before


def test_patch_onto_a_live_note_is_409_path_exists(api: Api) -> None:
    """§3.5: a live file at ``newPath`` → 409, nothing changes."""
    file = api.created("a.md")
    api.created("b.md")
    assert_error(api.move(file["id"], "b.md"), 409, "path_exists", "A file with this path already exists")
    assert api.paths() == ["a.md", "b.md"]


def test_patch_onto_a_tombstone_is_409_path_exists(api: Api) -> None:
    """§3.5/§7: the tombstone holds its path; the REST move does not drop it."""
    file = api.created("a.md")
    api.delete(api.created("b.md")["id"])
    assert_error(api.move(file["id"], "b.md"), 409, "path_exists")
    assert api.paths(includeDeleted="true") == ["a.md", "b.md"]


def test_patch_onto_a_folder_or_below_a_file_is_409_path_blocked(api: Api) -> None:
    """§3.5: ``newPath`` with live files under it, or with a file as a parent segment → 409 ``path_blocked``."""
    file = api.created("a.md")
    api.created("dir/x.md")
    api.created("plain")
    assert_error(api.move(file["id"], "dir"), 409, "path_blocked")
    assert_error(api.move(file["id"], "plain/a.md"), 409, "path_blocked")
    assert api.paths() == ["a.md", "dir/x.md", "plain"]


@pytest.mark.parametrize(
    ("new_path", "message"),
    [
        ("../a.md", "Parent traversal is not allowed"),
        ("/abs.md", "Absolute paths are not allowed"),
        (".obsidian/a.md", "Reserved folder name: .obsidian"),
        (".staging/a.md", "Reserved folder name: .staging"),
        ("a\0.md", "Path contains NUL byte"),
        ("c:/a.md", "Name a Windows client can't keep: c:"),
        ("a.", "Name a Windows client can't keep: a."),
    ],
)
def test_patch_to_a_refused_path_is_400_invalid_path(api: Api, new_path: str, message: str) -> None:
    """§3.5/§2.2: ``newPath`` goes through the incoming gate."""
    file = api.created("a.md")
    assert_error(api.move(file["id"], new_path), 400, "invalid_path", message)
    assert api.paths() == ["a.md"]


@pytest.mark.parametrize(
    "body",
    [b"{}", b'{"newPath": ""}', b'{"newPath": null}', b'{"newPath": 5}', b'{"newPath": ["a.md"]}', b"{", b"[]", b""],
    ids=["missing", "empty", "null", "number", "list", "broken JSON", "array body", "no body"],
)
def test_patch_without_a_non_empty_new_path_is_400(api: Api, body: bytes) -> None:
    """§3.5: a missing or empty ``newPath``, or invalid JSON → the ``parseJsonBody`` error (inferred 400)."""
    file = api.created("a.md")
    response = api.request("PATCH", api.file_route(file["id"]), data=body, headers={"Content-Type": "application/json"})
    assert_error(response, 400, None)
    assert api.paths() == ["a.md"]


def test_patch_of_a_tombstone_or_an_unknown_id_is_404_not_found(api: Api) -> None:
    """§3.5 (inferred for a tombstone): the source must be a live file."""
    file = api.created("a.md")
    api.delete(file["id"])
    assert_error(api.move(file["id"], "b.md"), 404, "not_found", FILE_NOT_FOUND)
    assert_error(api.move(UNKNOWN_ID, "b.md"), 404, "not_found", FILE_NOT_FOUND)
    assert api.paths(includeDeleted="true") == ["a.md"]


# -- §3.6 delete, §7 tombstones -------------------------------------------------------------------


def test_delete_answers_200_success_true_and_leaves_a_tombstone(api: Api) -> None:
    """§3.6: 200 ``{"success": true}``; the row keeps its path, with ``deletedAt`` set."""
    file = api.created("a.md")
    response = api.delete(file["id"])
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert api.paths() == []
    [tombstone] = api.list(includeDeleted="true").json()["files"]
    assert (tombstone["id"], tombstone["path"]) == (file["id"], "a.md")
    assert ISO_MS.match(tombstone["deletedAt"])


def test_delete_of_a_tombstone_is_200_again_and_a_no_op(api: Api) -> None:
    """§3.6: DELETE is naturally idempotent; no second operation."""
    file = api.created("a.md")
    api.delete(file["id"])
    before = operations(api)
    response = api.delete(file["id"])
    assert (response.status_code, response.json()) == (200, {"success": True})
    assert operations(api) == before


def test_delete_of_an_unknown_id_is_404_not_found(api: Api) -> None:
    assert_error(api.delete(UNKNOWN_ID), 404, "not_found", FILE_NOT_FOUND)


def test_a_deleted_path_stays_held_by_its_tombstone(api: Api) -> None:
    """§7: the tombstone holds the path: a move onto it is refused, a POST revives it."""
    gone = api.created("held.md")
    api.delete(gone["id"])
    other = api.created("other.md")
    assert_error(api.move(other["id"], "held.md"), 409, "path_exists")
    assert api.created("held.md")["id"] == gone["id"]


# -- §4 versions --------------------------------------------------------------------------------------


def test_versions_are_newest_first_and_numbered_from_1(api: Api) -> None:
    """§4.1/§4.3: one version per POST/PUT of new content, newest first, ``versionNumber`` from 1."""
    file = api.created("a.md", b"one")
    api.replace(file["id"], b"two")
    api.replace(file["id"], b"three")
    versions = api.versions(file["id"])
    assert [v["versionNumber"] for v in versions] == [3, 2, 1]
    assert [v["contentHash"] for v in versions] == [sha256(b"three"), sha256(b"two"), sha256(b"one")]
    me = api.request("GET", "/api/auth/me").json()["user"]
    for version in versions:
        assert set(version) >= {"id", "versionNumber", "contentHash", "authorId", "message", "createdAt", "author"}
        assert version["authorId"] == me["id"]
        assert version["author"] == {"id": me["id"], "name": me["name"], "email": me["email"]}
        assert ISO_MS.match(version["createdAt"])


def test_writing_the_same_bytes_again_adds_no_version(api: Api) -> None:
    """§4.3 (inferred): no new version when the hash equals the latest version's; the UPDATE op is still logged."""
    file = api.created("a.md", b"same")
    api.replace(file["id"], b"same")
    api.replace(file["id"], b"same")
    assert [v["versionNumber"] for v in api.versions(file["id"])] == [1]
    assert [op["kind"] for op in operations(api)] == ["CREATE", "UPDATE", "UPDATE"]
    api.replace(file["id"], b"other")
    api.replace(file["id"], b"same")  # back to older content: new relative to the latest version
    assert [v["contentHash"] for v in api.versions(file["id"])] == [sha256(b"same"), sha256(b"other"), sha256(b"same")]


def test_a_versions_bytes_download_exactly(api: Api) -> None:
    """§4.2: the raw bytes of the version, whose hash is its ``contentHash``; no line-ending or BOM changes."""
    first = b"\xef\xbb\xbfline one\r\nline two\r\n"
    second = b"no trailing newline"
    file = api.created("a.md", first)
    api.replace(file["id"], second)
    for version, expected in zip(api.versions(file["id"]), (second, first), strict=True):
        response = api.request("GET", f"{api.file_route(file['id'])}/versions/{version['id']}")
        assert response.status_code == 200
        assert response.content == expected
        assert sha256(response.content) == version["contentHash"]


def test_moves_and_deletes_add_no_version(api: Api) -> None:
    """§4.3: only POST and PUT record versions; a revive records one."""
    file = api.created("a.md", b"one")
    api.move(file["id"], "b.md")
    assert len(api.versions(file["id"])) == 1
    api.delete(file["id"])
    api.created("b.md", b"two")
    assert [v["versionNumber"] for v in api.versions(file["id"])] == [2, 1]


def test_versions_of_an_unknown_file_or_version_are_404(api: Api) -> None:
    """§4.1/§4.2 (inferred): 404 ``not_found``."""
    file = api.created("a.md")
    assert_error(api.request("GET", f"{api.file_route(UNKNOWN_ID)}/versions"), 404, "not_found")
    assert_error(api.request("GET", f"{api.file_route(file['id'])}/versions/{UNKNOWN_ID}"), 404, "not_found")


# -- §5 folders ---------------------------------------------------------------------------------------


def test_folder_patch_moves_every_live_note_below_and_answers_path_moved_failed(api: Api) -> None:
    """§5.1: every live file under ``path/`` (nested included) moves, keeping its id."""
    a = api.created("dir/a.md")
    b = api.created("dir/sub/b.md")
    api.created("dirx.md")
    api.delete(api.created("dir/gone.md")["id"])
    response = api.move_folder("dir/", "new/place")
    assert response.status_code == 200
    assert response.json() == {"path": "new/place", "moved": 2, "failed": []}
    assert api.paths() == ["dirx.md", "new/place/a.md", "new/place/sub/b.md"]
    assert [f["id"] for f in api.list(prefix="new/").json()["files"]] == [a["id"], b["id"]]


@pytest.mark.parametrize("new_path", ["dir", "dir/", "./dir"])
def test_folder_patch_onto_the_same_path_moves_nothing(api: Api, new_path: str) -> None:
    """§5.1: ``path == newPath`` after normalisation → 200 ``{"path","moved":0}``."""
    api.created("dir/a.md")
    before = operations(api)
    response = api.move_folder("dir", new_path)
    assert response.status_code == 200
    assert response.json() == {"path": "dir", "moved": 0}
    assert operations(api) == before


def test_folder_patch_into_itself_is_400_invalid_path(api: Api) -> None:
    """§5.1: ``a`` → ``a/b`` is refused."""
    api.created("a/x.md")
    assert_error(api.move_folder("a", "a/b"), 400, "invalid_path", "A folder cannot be moved into itself")
    assert api.paths() == ["a/x.md"]


def test_folder_patch_of_an_empty_or_unknown_folder_is_404(api: Api) -> None:
    """§5.1: no live files under ``path/`` → 404 ``not_found``."""
    api.delete(api.created("empty/a.md")["id"])
    api.created("emptyish.md")
    assert_error(api.move_folder("empty", "other"), 404, "not_found", FOLDER_NOT_FOUND)
    assert_error(api.move_folder("unknown", "other"), 404, "not_found", FOLDER_NOT_FOUND)
    assert_error(api.move_folder("emptyish.md", "other"), 404, "not_found", FOLDER_NOT_FOUND)


def test_folder_patch_onto_a_taken_target_is_409_path_exists_and_moves_nothing(api: Api) -> None:
    """§5.1: all targets are checked before the first move; the message lists the taken paths."""
    api.created("src/a.md")
    api.created("src/b.md")
    api.created("dst/b.md")
    before = operations(api)
    message = assert_error(api.move_folder("src", "dst"), 409, "path_exists")
    assert message == "The path is already taken: dst/b.md"
    assert operations(api) == before
    assert api.paths() == ["dst/b.md", "src/a.md", "src/b.md"]


def test_folder_patch_below_a_file_is_409_path_blocked(api: Api) -> None:
    """§5.1: a target whose parent is a file → 409 ``path_blocked``."""
    api.created("src/a.md")
    api.created("blocker")
    assert_error(api.move_folder("src", "blocker"), 409, "path_blocked")
    assert api.paths() == ["blocker", "src/a.md"]


@pytest.mark.parametrize(
    ("path", "new_path"), [("../x", "y"), (".versions", "y"), ("src", ".obsidian"), ("src", "a:b")]
)
def test_folder_patch_with_a_refused_path_is_400_invalid_path(api: Api, path: str, new_path: str) -> None:
    """§5.1: ``path`` through the stored gate, ``newPath`` through the incoming one; "invalid folder path"."""
    api.created("src/a.md")
    assert_error(api.move_folder(path, new_path), 400, "invalid_path", BAD_FOLDER_PATH)


def test_folder_delete_soft_deletes_every_live_note_below_and_answers_the_count(api: Api) -> None:
    """§5.2: 200 ``{"path","deleted"}``; each file becomes a tombstone."""
    api.created("dir/a.md")
    api.created("dir/sub/b.md")
    api.created("dirx.md")
    response = api.delete_folder("dir/")
    assert response.status_code == 200
    assert response.json() == {"path": "dir", "deleted": 2}
    assert api.paths() == ["dirx.md"]
    assert api.paths(includeDeleted="true") == ["dir/a.md", "dir/sub/b.md", "dirx.md"]
    assert [op["kind"] for op in operations(api)][-2:] == ["DELETE", "DELETE"]


@pytest.mark.parametrize("path", [None, "", "../x", ".staging"])
def test_folder_delete_without_a_valid_path_is_400_invalid_path(api: Api, path: str | None) -> None:
    """§5.2: ``path`` missing or refused → 400 ``invalid_path``."""
    api.created("dir/a.md")
    assert_error(api.delete_folder(path), 400, "invalid_path", BAD_FOLDER_PATH)
    assert api.paths() == ["dir/a.md"]


def test_folder_delete_of_an_unknown_or_empty_folder_is_404(api: Api) -> None:
    api.delete(api.created("empty/a.md")["id"])
    assert_error(api.delete_folder("unknown"), 404, "not_found", FOLDER_NOT_FOUND)
    assert_error(api.delete_folder("empty"), 404, "not_found", FOLDER_NOT_FOUND)


# -- §9 other endpoints -------------------------------------------------------------------------------


def test_auth_me_answers_the_keys_user(api: Api, http: requests.Session) -> None:
    """§9: ``{"user":{"id","email","name",…}}`` for the key's user."""
    me = api.request("GET", "/api/auth/me")
    assert me.status_code == 200
    user = me.json()["user"]
    assert {"id", "email", "name"} <= set(user)
    assert user["id"] == api.vault.store.owner_of(api.project).id
    viewer = member(api, "VIEWER")
    assert viewer.request("GET", "/api/auth/me").json()["user"]["email"].startswith("viewer-")


def test_projects_lists_the_projects_the_user_can_access(api: Api) -> None:
    """§9: ``{"projects":[{"id","slug","name","description","iconEmoji",…}]}``, only the user's projects."""
    viewer = member(api, "VIEWER")
    response = viewer.request("GET", "/api/projects")
    assert response.status_code == 200
    [project] = response.json()["projects"]
    assert {"id", "slug", "name", "description", "iconEmoji"} <= set(project)
    assert project["id"] == api.project
    assert project["slug"].startswith("test-")
    owned = api.request("GET", "/api/projects").json()["projects"]
    assert {api.project, api.vault.project_id} <= {p["id"] for p in owned}
    assert outsider(api).request("GET", "/api/projects").json() == {"projects": []}


def test_project_by_id_answers_the_project_or_404(api: Api, http: requests.Session) -> None:
    """§9: ``{"project":{…same fields…}}``; 404 ``not_found`` if unknown (or not a member)."""
    response = api.request("GET", f"/api/projects/{api.project}")
    assert response.status_code == 200
    [listed] = [p for p in api.request("GET", "/api/projects").json()["projects"] if p["id"] == api.project]
    assert response.json() == {"project": listed}
    assert_error(api.request("GET", "/api/projects/cnosuchproject"), 404, "not_found")
    assert_error(outsider(api).request("GET", f"/api/projects/{api.project}"), 404, "not_found")


# -- §11.2 idempotency --------------------------------------------------------------------------------


def keyed(key: str) -> dict[str, dict[str, str]]:
    return {"headers": {"Idempotency-Key": key}}


REPLAYS: dict[str, tuple[Callable[[Api, str, str], Any], str]] = {
    "POST": (lambda api, fid, key: api.create("b.md", b"bee", **keyed(key)), "CREATE"),
    "PUT": (lambda api, fid, key: api.replace(fid, b"new", **keyed(key)), "UPDATE"),
    "PATCH": (lambda api, fid, key: api.move(fid, "moved.md", **keyed(key)), "MOVE"),
    "DELETE": (lambda api, fid, key: api.delete(fid, **keyed(key)), "DELETE"),
}


@pytest.mark.parametrize("method", REPLAYS)
def test_a_repeated_idempotency_key_replays_the_original_answer_and_applies_once(api: Api, method: str) -> None:
    """§11.2: same key and fingerprint → the original status and body, ``Idempotent-Replayed: true``, applied once."""
    send, kind = REPLAYS[method]
    file_id = api.created("a.md")["id"]
    before = len(operations(api))
    key = str(uuid.uuid4())
    first = send(api, file_id, key)
    assert first.status_code < 300, first.text
    assert "Idempotent-Replayed" not in first.headers
    for _ in range(2):
        again = send(api, file_id, key)
        assert again.status_code == first.status_code
        assert again.content == first.content
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["Content-Type"] == first.headers["Content-Type"]
    applied = operations(api)[before:]
    assert [(op["kind"], op["idempotencyKey"]) for op in applied] == [(kind, key)]


def test_a_write_without_an_idempotency_key_is_processed_normally(api: Api) -> None:
    """§11.2: without the header nothing is deduplicated (a second PUT is a second UPDATE)."""
    file_id = api.created("a.md")["id"]
    api.replace(file_id, b"x")
    second = api.replace(file_id, b"x")
    assert second.status_code == 200 and "Idempotent-Replayed" not in second.headers
    assert [op["kind"] for op in operations(api)] == ["CREATE", "UPDATE", "UPDATE"]


def test_the_same_key_with_a_different_body_is_422_idempotency_key_mismatch(api: Api) -> None:
    """§11.2: same key, different fingerprint → 422; the second request is not applied."""
    key = str(uuid.uuid4())
    assert api.create("b.md", b"one", **keyed(key)).status_code == 201
    assert_error(api.create("c.md", b"one", **keyed(key)), 422, "idempotency_key_mismatch")
    assert_error(api.create("b.md", b"two", **keyed(key)), 422, "idempotency_key_mismatch")
    assert_error(api.create("b.md", b"one", mime="text/plain", **keyed(key)), 422, "idempotency_key_mismatch")
    file_id = api.created("a.md", b"a")["id"]
    other = str(uuid.uuid4())
    assert api.replace(file_id, b"first", **keyed(other)).status_code == 200
    assert_error(api.replace(file_id, b"second", **keyed(other)), 422, "idempotency_key_mismatch")
    assert api.paths() == ["a.md", "b.md"]
    assert api.download(file_id).content == b"first"


def test_the_same_key_on_another_route_is_independent(api: Api) -> None:
    """§11.2: the scope is (user, method, route with ids, key)."""
    key = str(uuid.uuid4())
    a = api.created("a.md")["id"]
    b = api.created("b.md")["id"]
    before = len(operations(api))
    for response in (
        api.replace(a, b"same", **keyed(key)),
        api.replace(b, b"same", **keyed(key)),
        api.move(a, "a2.md", **keyed(key)),
        api.delete(b, **keyed(key)),
        api.create("c.md", b"c", **keyed(key)),
    ):
        assert response.status_code < 300, response.text
        assert "Idempotent-Replayed" not in response.headers
    assert [op["kind"] for op in operations(api)[before:]] == ["UPDATE", "UPDATE", "MOVE", "DELETE", "CREATE"]


def test_the_same_key_from_another_user_is_independent(api: Api, http: requests.Session) -> None:
    """§11.2: the scope includes the authenticated user."""
    key = str(uuid.uuid4())
    file_id = api.created("a.md")["id"]
    editor = member(api, "EDITOR")
    assert api.replace(file_id, b"owner", **keyed(key)).status_code == 200
    response = editor.replace(file_id, b"editor", **keyed(key))
    assert response.status_code == 200 and "Idempotent-Replayed" not in response.headers
    assert api.download(file_id).content == b"editor"


def test_a_multipart_post_retried_with_another_boundary_is_a_replay(api: Api) -> None:
    """§11.2: the multipart fingerprint is the fields and the file, not the raw bytes."""
    key = str(uuid.uuid4())
    answers = []
    for boundary in ("----first-boundary-1111", "----second-boundary-2222"):
        content_type, body = multipart(boundary, "m.md", b"multipart body")
        headers = {"Content-Type": content_type, "Idempotency-Key": key}
        answers.append(api.request("POST", api.files_route, data=body, headers=headers))
    assert [a.status_code for a in answers] == [201, 201]
    assert answers[1].content == answers[0].content
    assert answers[1].headers["Idempotent-Replayed"] == "true"
    assert [op["kind"] for op in operations(api)] == ["CREATE"]


def test_a_key_whose_first_attempt_is_still_running_is_409_idempotency_key_in_use(api: Api) -> None:
    """§11.2: same key and fingerprint while the first attempt is in flight → 409 ``idempotency_key_in_use``."""
    vault = api.vault
    file_id = api.created("a.md")["id"]
    key = str(uuid.uuid4())
    held = 5.0  # the second request must come while the first is held: generous, for a loaded machine
    vault.faults.add("PUT", f"/api/projects/{api.project}/files/*", Fault.delay(held))
    dealt = len(vault.faults.injected)
    first: list[Any] = []

    def send_first() -> None:
        with requests.Session() as own:
            own.trust_env = False
            first.append(Api(vault, own, api.key, api.project).replace(file_id, b"slow", **keyed(key)))

    thread = threading.Thread(target=send_first)
    thread.start()
    try:
        # until the vault has received the first attempt and is holding it
        wait_until(lambda: len(vault.faults.injected) > dealt, "the first attempt reaching the vault")
        sent_at = time.monotonic()
        second = api.replace(file_id, b"slow", **keyed(key))
        answered_after = time.monotonic() - sent_at
    finally:
        thread.join(timeout=held + GENEROUS)
        vault.faults.clear()
    assert second.status_code == 409 or answered_after < held, too_slow("the second request", held)
    assert_error(second, 409, "idempotency_key_in_use")
    assert first[0].status_code == 200
    assert [op["kind"] for op in operations(api)] == ["CREATE", "UPDATE"]
    after = api.replace(file_id, b"slow", **keyed(key))
    assert after.content == first[0].content and after.headers["Idempotent-Replayed"] == "true"


def test_a_4xx_answer_is_remembered_and_replayed(api: Api) -> None:
    """§11.2: a definite 4xx answer (here 409 ``path_exists``) is stored and replayed, even after the cause is gone."""
    existing = api.created("a.md")["id"]
    key = str(uuid.uuid4())
    refused = api.create("a.md", b"again", **keyed(key))
    assert_error(refused, 409, "path_exists")
    api.delete(existing)
    replayed = api.create("a.md", b"again", **keyed(key))
    assert (replayed.status_code, replayed.content) == (409, refused.content)
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert api.paths() == []
    assert [op["kind"] for op in operations(api)] == ["CREATE", "DELETE"]


def test_idempotency_keys_survive_a_restart_of_the_vault(tmp_path: Path, http: requests.Session) -> None:
    """§11.2: retention is at least hours; a restart on the same data directory keeps the answers."""
    key = str(uuid.uuid4())
    with LocalVault(tmp_path / "vault") as vault:
        first = Api(vault, http, vault.api_key).create("a.md", b"x", **keyed(key))
        assert first.status_code == 201
    with LocalVault(tmp_path / "vault") as vault:
        again = Api(vault, http, vault.api_key).create("a.md", b"x", **keyed(key))
        assert (again.status_code, again.content) == (201, first.content)
        assert again.headers["Idempotent-Replayed"] == "true"
        assert [op["kind"] for op in vault.store.operations(vault.project_id)] == ["CREATE"]


@pytest.mark.parametrize(("who", "status", "code"), [("viewer", 403, "forbidden"), ("outsider", 404, "not_found")])
def test_an_invalid_idempotency_key_is_validated_after_the_permission_check(
    api: Api, http: requests.Session, who: str, status: int, code: str
) -> None:
    """§1.2: 404 project → 403 permission → 400 validation; a bad header is request validation."""
    file_id = api.created("a.md")["id"]
    caller = member(api, "VIEWER") if who == "viewer" else outsider(api)
    assert_error(caller.replace(file_id, b"x", headers={"Idempotency-Key": ""}), status, code)
    assert_error(caller.replace(file_id, b"x", headers={"Idempotency-Key": "k" * 300}), status, code)


# -- persistence --------------------------------------------------------------------------------------


def test_notes_versions_and_the_api_key_survive_a_restart(tmp_path: Path, http: requests.Session) -> None:
    """The local vault keeps its data in one directory across restarts."""
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        api = Api(vault, http, vault.api_key)
        file_id = api.created("dir/a.md", b"one")["id"]
        api.replace(file_id, b"two")
        api.delete(api.created("gone.md")["id"])
        key, project = vault.api_key, vault.project_id
        listed = api.list(includeDeleted="true").json()
    with LocalVault(data) as vault:
        assert (vault.api_key, vault.project_id) == (key, project)
        api = Api(vault, http, key)
        assert api.list(includeDeleted="true").json() == listed
        assert api.download(file_id).content == b"two"
        versions = api.versions(file_id)
        assert [v["versionNumber"] for v in versions] == [2, 1]
        oldest = api.request("GET", f"{api.file_route(file_id)}/versions/{versions[1]['id']}")
        assert oldest.content == b"one"


def test_the_generated_api_key_is_kept_in_a_file_of_mode_0600(tmp_path: Path) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        key_file = data / "api-key"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert key_file.read_text().strip() == vault.api_key
        assert re.fullmatch(r"osync_[0-9a-f]{64}", vault.api_key)


def test_a_given_api_key_is_not_written_to_the_key_file(tmp_path: Path, http: requests.Session) -> None:
    given = "osync_" + "ab" * 32
    with LocalVault(tmp_path / "fresh", api_key=given) as vault:
        assert vault.api_key == given
        assert not (tmp_path / "fresh" / "api-key").exists()
        assert Api(vault, http, given).request("GET", "/api/auth/me").status_code == 200
    with LocalVault(tmp_path / "old") as vault:
        generated = vault.api_key
    with LocalVault(tmp_path / "old", api_key=given) as vault:
        assert vault.api_key == given
        assert (tmp_path / "old" / "api-key").read_text().strip() == generated


def test_the_local_vault_speaks_english() -> None:
    # Issue 31: it answered "Требуется авторизация", "Нет такого маршрута"; the codes and shapes stay the real server's.
    import teamvault_mcp.localvault as package

    cyrillic = re.compile("[\u0400-\u04ff]")
    said = {
        source.name: [line.strip() for line in source.read_text().splitlines() if cyrillic.search(line)]
        for source in Path(package.__file__).parent.glob("*.py")
    }
    assert {name: lines for name, lines in said.items() if lines} == {}
