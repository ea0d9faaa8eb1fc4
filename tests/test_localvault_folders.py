"""``GET /api/projects/:pid/folders/download`` of the local vault against teamvault-api.md §5.3, over real sockets.

The archives are read back with ``zipfile``. Where the framing matters (chunk sizes, a
client that goes away, a second request on the connection) the test speaks HTTP/1.1 on
a raw socket. The 5,000-note folder is seeded once per module.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import random
import socket
import subprocess
import sys
import tracemalloc
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from http.client import HTTPMessage, parse_headers
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote

import pytest
import requests
from support.waiting import GENEROUS, too_slow, wait_until

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.localvault.store import Change
from teamvault_mcp.localvault.streaming import CHUNK_SIZE

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 30.0  # generous, for a loaded machine: answers come in milliseconds
NO_FOLDER = "Folder is empty or not found"
BLOBS_MISSING = "The folder's files are missing from storage"
PROJECT_NOT_FOUND = "Project not found"
BIG_NOTES = 5000


# -- helpers ------------------------------------------------------------------------------------------


@dataclass
class Api:
    """One API key talking to one project of a running vault."""

    vault: LocalVault
    session: requests.Session
    key: str | None
    project: str

    @property
    def download_route(self) -> str:
        return f"/api/projects/{self.project}/folders/download"

    def get(self, route: str, **kw: Any) -> requests.Response:
        return self.request("GET", route, **kw)

    def request(self, method: str, route: str, **kw: Any) -> requests.Response:
        headers = {"X-API-Key": self.key} if self.key is not None else {}
        return self.session.request(method, self.vault.url + route, headers=headers, timeout=TIMEOUT, **kw)

    def download(self, path: str | None) -> requests.Response:
        return self.get(self.download_route, params={} if path is None else {"path": path})

    def archive(self, path: str) -> zipfile.ZipFile:
        response = self.download(path)
        assert response.status_code == 200, response.text
        return zipfile.ZipFile(io.BytesIO(response.content))

    def create(self, path: str, content: bytes | None = None) -> dict[str, Any]:
        content = path.encode() if content is None else content
        files = {"path": (None, path), "file": ("n.md", content, "text/markdown")}
        response = self.session.post(
            f"{self.vault.url}/api/projects/{self.project}/files",
            headers={"X-API-Key": self.key or ""},
            files=files,
            timeout=TIMEOUT,
        )
        assert response.status_code == 201, response.text
        file: dict[str, Any] = response.json()["file"]
        return file

    def delete(self, file_id: str) -> None:
        response = self.request("DELETE", f"/api/projects/{self.project}/files/{file_id}")
        assert response.status_code == 200, response.text

    def listed(self) -> dict[str, dict[str, Any]]:
        response = self.get(f"/api/projects/{self.project}/files")
        return {file["path"]: file for file in response.json()["files"]}


def assert_error(response: requests.Response, status: int, code: str, message: str | None = None) -> None:
    """The §1.4 envelope, exactly ``{"error":{"code","message"}}``."""
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    if message is not None:
        assert body["error"]["message"] == message


def contents(archive: zipfile.ZipFile) -> dict[str, bytes]:
    assert archive.testzip() is None  # every entry's CRC holds
    return {info.filename: archive.read(info) for info in archive.infolist()}


def member(api: Api, role: str | None) -> Api:
    """A new user with its own key: a member with ``role``, or no member at all (None)."""
    store = api.vault.store
    user = store.add_user(f"{role or 'outsider'}-{uuid.uuid4().hex[:8]}@x", role)
    if role is not None:
        store.add_member(api.project, user.id, role)
    return Api(api.vault, api.session, store.add_api_key(user.id), api.project)


def remove_blob(vault: LocalVault, content_hash: str) -> bytes:
    """Delete a blob from disk, as a damaged data directory would have it; returns its bytes."""
    blob = vault.store.blob_path(content_hash)
    content = blob.read_bytes()
    blob.unlink()
    return content


@dataclass
class RawAnswer:
    """An answer read off a raw socket: the head now, the chunks as the test asks for them."""

    sock: socket.socket
    stream: BinaryIO
    status: int
    headers: HTTPMessage

    def chunks(self) -> Iterator[bytes]:
        """Each chunk of a chunked body, as framed by the vault; ends after the last (empty) one."""
        while True:
            size_line = self.stream.readline()
            assert size_line.endswith(b"\r\n"), f"the body ended inside its framing: {size_line!r}"
            size = int(size_line.split(b";")[0], 16)
            data = self.stream.read(size)
            assert len(data) == size and self.stream.read(2) == b"\r\n"
            if size == 0:
                return
            yield data


@contextlib.contextmanager
def raw_get(vault: LocalVault, route: str, key: str, *, receive_buffer: int | None = None) -> Iterator[RawAnswer]:
    """GET ``route`` on a fresh connection; ``receive_buffer`` shrinks the socket's (TCP flow control)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)  # before connect: the window
        sock.settimeout(TIMEOUT)
        sock.connect((vault.host, vault.port))
        with sock.makefile("rb") as stream:
            yield _send_get(sock, stream, route, key)
    finally:
        sock.close()


def _send_get(sock: socket.socket, stream: BinaryIO, route: str, key: str) -> RawAnswer:
    sock.sendall(f"GET {route} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {key}\r\n\r\n".encode())
    status_line = stream.readline()
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    headers = parse_headers(stream)  # type: ignore[arg-type]
    return RawAnswer(sock, stream, int(status_line.split()[1]), headers)


def query(path: str) -> str:
    return "?path=" + quote(path, safe="")


@pytest.fixture(scope="module")
def vault(module_vault: LocalVault) -> LocalVault:
    """The module's one vault: each test gets its own empty project in it."""
    return module_vault


@pytest.fixture
def api(vault: LocalVault, http: requests.Session) -> Api:
    """A new, empty project of the module's vault, spoken to with the vault's key."""
    owner = vault.store.owner_of(vault.project_id)
    project = vault.store.add_project(f"test-{uuid.uuid4().hex[:12]}", "Test project", owner)
    return Api(vault, http, vault.api_key, project)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalVault]:
    """A vault whose folder ``big`` holds 5,000 notes of 8 KB that do not compress: a 40 MB zip."""
    rng = random.Random(16)
    with LocalVault(tmp_path_factory.mktemp("big")) as running, pytest.MonkeyPatch.context() as patch:
        # Each blob is fsynced: 5,000 of them take half a minute on a shared disk. Nothing crashes here.
        patch.setattr(os, "fsync", lambda handle: None)
        owner = running.store.owner_of(running.project_id)
        with running.store.write() as db:
            change = Change(db, running.project_id, owner)
            for number in range(BIG_NOTES):
                content = rng.randbytes(8000)
                running.store.create(change, f"big/part {number % 10}/note {number:04d}.md", content, "text/markdown")
        patch.undo()
        yield running


def big_route(vault: LocalVault) -> str:
    return f"/api/projects/{vault.project_id}/folders/download?path=big"


# -- §5.3: what the archive holds ---------------------------------------------------------------------


def test_entry_names_are_relative_to_the_folders_parent_and_nested_folders_are_included(api: Api) -> None:
    """§5.3: under folder ``team/people``, ``team/people/ada.md`` is ``people/ada.md``."""
    for path in ("team/people/ada.md", "team/people/deep/er/bob.md", "team/x.md", "team/peoplex/no.md", "people/a.md"):
        api.create(path)
    assert contents(api.archive("team/people")) == {
        "people/ada.md": b"team/people/ada.md",
        "people/deep/er/bob.md": b"team/people/deep/er/bob.md",
    }


def test_a_top_level_folders_entries_start_with_its_own_name(api: Api) -> None:
    """§5.3: the parent of ``people`` is the root, so ``people/a.md`` stays ``people/a.md``."""
    for path in ("people/a.md", "people/sub/b.md", "people.md", "peoplex/c.md"):
        api.create(path)
    assert sorted(contents(api.archive("people"))) == ["people/a.md", "people/sub/b.md"]


def test_deleted_files_are_left_out_and_a_folder_of_tombstones_is_404(api: Api) -> None:
    """§5.3: only live files; no live file under the folder → 404 ``not_found``."""
    api.create("notes/keep.md")
    api.delete(api.create("notes/gone.md")["id"])
    api.delete(api.create("old/only.md")["id"])
    assert list(contents(api.archive("notes"))) == ["notes/keep.md"]
    assert_error(api.download("old"), 404, "not_found", NO_FOLDER)


def test_files_missing_on_disk_are_skipped(api: Api) -> None:
    """§5.3: a file whose blob is gone is left out; the rest of the archive is whole."""
    api.create("docs/a.md", b"alpha")
    lost = api.create("docs/b.md", b"bravo")
    api.create("docs/c.md", b"charlie")
    content = remove_blob(api.vault, lost["contentHash"])
    try:
        assert contents(api.archive("docs")) == {"docs/a.md": b"alpha", "docs/c.md": b"charlie"}
    finally:
        api.vault.store.put_blob(content)


def test_a_folder_whose_every_file_is_missing_on_disk_is_404_files_missing_on_disk(api: Api) -> None:
    """§5.3: every blob gone → 404 ``files_missing_on_disk``."""
    lost = [api.create(f"lost/{name}.md", f"lost {name} {uuid.uuid4()}".encode()) for name in "ab"]
    kept = [remove_blob(api.vault, file["contentHash"]) for file in lost]
    try:
        assert_error(api.download("lost"), 404, "files_missing_on_disk", BLOBS_MISSING)
    finally:
        for content in kept:
            api.vault.store.put_blob(content)


def test_each_entrys_time_is_the_notes_updated_at_in_utc(api: Api) -> None:
    """An entry's modification time is the note's ``updatedAt`` (a zip keeps even seconds)."""
    api.create("times/a.md")
    api.create("times/b.md")
    listed = api.listed()
    for info in api.archive("times").infolist():
        moment = datetime.fromisoformat(listed[info.filename]["updatedAt"])
        second = moment.second - moment.second % 2
        assert info.date_time == (moment.year, moment.month, moment.day, moment.hour, moment.minute, second)


def test_entries_are_deflated_and_read_back_byte_for_byte(api: Api) -> None:
    """Deflated at level 1, as the real server does; binary and non-ASCII names survive."""
    picture = bytes(range(256)) * 40
    api.create("mixed/Ёлка и ель.md", "# Ёлка\n".encode() * 200)
    api.create("mixed/pic.png", picture)
    archive = api.archive("mixed")
    assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}
    assert contents(archive) == {"mixed/Ёлка и ель.md": "# Ёлка\n".encode() * 200, "mixed/pic.png": picture}


# -- §5.3: the answer's headers -----------------------------------------------------------------------


def test_the_answer_is_a_chunked_zip_named_after_the_folders_last_segment(api: Api) -> None:
    """§5.3: ``application/zip``; ``filename="folder.zip"; filename*=UTF-8''<name>.zip``, percent-encoded."""
    api.create("Проекты/Ёлка 2026 (план)/a.md")
    response = api.download("Проекты/Ёлка 2026 (план)")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/zip"
    assert response.headers["Transfer-Encoding"] == "chunked" and "Content-Length" not in response.headers
    encoded = "%D0%81%D0%BB%D0%BA%D0%B0%202026%20(%D0%BF%D0%BB%D0%B0%D0%BD).zip"  # encodeURIComponent keeps ( )
    assert response.headers["Content-Disposition"] == f"attachment; filename=\"folder.zip\"; filename*=UTF-8''{encoded}"
    assert "Access-Control-Allow-Origin" not in response.headers  # §1.6: no CORS on this route


def test_a_complete_archive_leaves_the_connection_open_for_the_next_request(api: Api) -> None:
    """The last chunk ends the answer: keep-alive goes on, and the next answer is read whole."""
    api.create("kept/a.md")
    route = api.download_route + query("kept")
    with raw_get(api.vault, route, str(api.key)) as first:
        assert first.status == 200
        body = b"".join(first.chunks())
        assert list(contents(zipfile.ZipFile(io.BytesIO(body)))) == ["kept/a.md"]
        second = _send_get(first.sock, first.stream, route, str(api.key))
        assert second.status == 200 and b"".join(second.chunks())[:2] == b"PK"


# -- §5.3: the path ------------------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["notes/", "notes//", "./notes", "x/../notes"])
def test_the_folder_is_the_stored_form_of_the_path_so_a_trailing_slash_goes(api: Api, given: str) -> None:
    """§2.2: the stored gate normalises the path (``notes/`` is ``notes``)."""
    api.create("notes/a.md")
    response = api.download(given)
    assert response.status_code == 200, response.text
    assert list(contents(zipfile.ZipFile(io.BytesIO(response.content)))) == ["notes/a.md"]
    assert response.headers["Content-Disposition"].endswith("''notes.zip")


@pytest.mark.parametrize("query_string", ["", "?path=", "?other=notes", "?path"])
def test_a_missing_or_empty_path_is_400_missing_path(api: Api, query_string: str) -> None:
    """§5.3: no folder given → 400 ``missing_path`` (an empty ``path=`` too, as ``!raw`` is on the server)."""
    api.create("notes/a.md")
    assert_error(api.get(api.download_route + query_string), 400, "missing_path", "No folder given")


@pytest.mark.parametrize(
    ("given", "rule"),
    [
        (".", "Single-dot segments are not allowed"),
        ("./", "Single-dot segments are not allowed"),
        ("/", "Absolute paths are not allowed"),
        ("/notes", "Absolute paths are not allowed"),
        ("../notes", "Parent traversal is not allowed"),
        ("notes\\..\\x", "Parent traversal is not allowed"),
        ("a/.versions/b", "Reserved folder name: .versions"),
        ("no\0te", "Path contains NUL byte"),
    ],
)
def test_a_path_the_stored_gate_refuses_is_400_invalid_path_with_the_gates_message(
    api: Api, given: str, rule: str
) -> None:
    """§5.3/§2.2: 400 ``invalid_path`` with the gate's own message, not the folder routes' Russian one.

    So ``.`` and ``/`` are no archive of the whole vault, as on the real server: a client asks
    for each top-level folder, and reads the root's own notes one by one.
    """
    api.create("notes/a.md")
    assert_error(api.download(given), 400, "invalid_path", rule)


def test_client_folders_pass_the_stored_gate(api: Api) -> None:
    """§2.2: the stored gate allows ``.obsidian``, ``.trash``: an empty one is 404, not 400."""
    for folder in (".obsidian", ".trash", "notes/.git"):
        assert_error(api.download(folder), 404, "not_found", NO_FOLDER)


def test_a_note_is_no_folder(api: Api) -> None:
    """Only files under ``<folder>/`` count: ``path`` naming a note is 404."""
    api.create("readme.md")
    assert_error(api.download("readme.md"), 404, "not_found", NO_FOLDER)


# -- §1.2: auth and the order of checks -----------------------------------------------------------------


def test_without_a_valid_key_it_is_401_before_any_other_check(api: Api) -> None:
    """§1.2: 401 first, even for a missing path, a refused one or an unknown project."""
    api.create("notes/a.md")
    for key in (None, "osync_" + "0" * 64, str(api.key) + "x"):
        stranger = Api(api.vault, api.session, key, api.project)
        for path in ("notes", None, "../x"):
            assert_error(stranger.download(path), 401, "unauthorized")
        elsewhere = Api(api.vault, api.session, key, "cnosuchproject000000000000")
        assert_error(elsewhere.download("notes"), 401, "unauthorized")


def test_an_unknown_project_or_a_non_member_is_404_before_the_path_is_looked_at(api: Api) -> None:
    """§1.2: 404 "project not found" for a user who is no member (as on every route), before 400 and 403."""
    api.create("notes/a.md")
    outsider = member(api, None)
    elsewhere = Api(api.vault, api.session, api.key, "cnosuchproject000000000000")
    for who in (outsider, elsewhere):
        for path in ("notes", None, "../x"):
            assert_error(who.download(path), 404, "not_found", PROJECT_NOT_FOUND)


@pytest.mark.parametrize("role", ["VIEWER", "EDITOR", "ADMIN"])
def test_view_permission_is_enough_so_every_member_may_download(api: Api, role: str) -> None:
    """§5.3: view permission; a VIEWER (no edit rights, EDIT_ROLES) gets the archive, never 403."""
    api.create("notes/a.md")
    assert list(contents(member(api, role).archive("notes"))) == ["notes/a.md"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "HEAD"])
def test_other_methods_are_405_allowing_get(api: Api, method: str) -> None:
    response = api.request(method, api.download_route + query("notes"))
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET"


# -- fault injection, as on every route ---------------------------------------------------------------


def test_an_injected_status_replaces_the_archive(api: Api) -> None:
    api.create("notes/a.md")
    api.vault.faults.add("GET", "/api/projects/*/folders/download", Fault.answer(503, retry_after="1"))
    response = api.download("notes")
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert api.download("notes").status_code == 200  # once only


def test_a_dripped_archive_comes_a_byte_per_chunk_and_whole(api: Api) -> None:
    """``Fault.drip``: the archive in one-byte chunks, then the connection closed."""
    api.create("drip/a.md", b"x" * 50)
    api.vault.faults.add("GET", "/api/projects/*/folders/download", Fault.drip(0.0005))
    with raw_get(api.vault, api.download_route + query("drip"), str(api.key)) as answer:
        assert answer.status == 200
        chunks = list(answer.chunks())
        assert {len(chunk) for chunk in chunks} == {1}
        assert answer.stream.read(1) == b""  # closed after it
    assert contents(zipfile.ZipFile(io.BytesIO(b"".join(chunks)))) == {"drip/a.md": b"x" * 50}


def test_a_write_landing_just_before_the_download_is_in_the_archive(api: Api) -> None:
    """``Fault.first``: the archive is a snapshot taken when the request is carried out."""
    api.create("first/a.md")

    def colleague_writes() -> None:
        with requests.Session() as session:
            session.trust_env = False
            Api(api.vault, session, api.key, api.project).create("first/b.md")

    api.vault.faults.add("GET", "/api/projects/*/folders/download", Fault.first(colleague_writes))
    assert sorted(contents(api.archive("first"))) == ["first/a.md", "first/b.md"]


def test_a_connection_closed_before_the_answer_gets_nothing(api: Api) -> None:
    api.create("notes/a.md")
    api.vault.faults.add("GET", "/api/projects/*/folders/download", Fault.close_before())
    with pytest.raises(requests.ConnectionError):
        api.download("notes")


# -- the option to run without the route ----------------------------------------------------------------


def test_without_folder_download_the_route_answers_as_an_unknown_route(tmp_path: Path, http: requests.Session) -> None:
    """``LocalVault(folder_download=False)``: the same 404 as any unknown route, before auth; the rest works."""
    with LocalVault(tmp_path / "v", folder_download=False) as without:
        api = Api(without, http, without.api_key, without.project_id)
        api.create("notes/a.md")
        unknown = f"/api/projects/{without.project_id}/folders/nothing"
        for key in (without.api_key, None):
            caller = Api(without, http, key, without.project_id)
            response, expected = caller.download("notes"), caller.get(unknown)
            assert_error(response, 404, "not_found", f"No such route: {api.download_route}")
            assert_error(expected, 404, "not_found", f"No such route: {unknown}")
            assert response.headers.get("Allow") is None
        assert sorted(api.listed()) == ["notes/a.md"]
        assert ("GET", api.download_route) not in without.faults.seen  # as unknown as any other: never routed


def test_the_local_vault_command_without_folder_download_leaves_the_route_out(tmp_path: Path) -> None:
    """``teamvault-mcp local-vault --without-folder-download``."""
    command = [sys.executable, "-m", "teamvault_mcp", "local-vault", "--data", str(tmp_path / "v"), "--port", "0"]
    process = subprocess.Popen(
        [*command, "--without-folder-download"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert process.stdout is not None
        announced = dict(process.stdout.readline().rstrip("\n").split("=", 1) for _ in range(3))
        route = f"{announced['TEAM_VAULT_URL']}/api/projects/{announced['TEAM_VAULT_PROJECT_ID']}/folders/download"
        response = requests.get(
            route, params={"path": "x"}, headers={"X-API-Key": announced["TEAM_VAULT_API_KEY"]}, timeout=TIMEOUT
        )
        assert_error(response, 404, "not_found")
        assert response.json()["error"]["message"].startswith("No such route")
    finally:
        process.terminate()
        process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0


# -- streaming: bounded memory, a client that goes away, a stop ---------------------------------------


def test_a_5000_note_folder_streams_in_bounded_chunks_and_bounded_memory(big: LocalVault, tmp_path: Path) -> None:
    """The zip goes out as it is made: chunks of at most 64 KiB, and the vault never holds the archive.

    The traced peak covers the whole process (the vault's threads and this client) from the request to the
    last chunk. It holds the listing and the central directory (about 1 KB per note), not 40 MB of zip.
    """
    target = tmp_path / "big.zip"
    tracemalloc.start()
    try:
        with raw_get(big, big_route(big), big.api_key) as answer, target.open("wb") as out:
            assert answer.status == 200 and answer.headers["Transfer-Encoding"] == "chunked"
            sizes = []
            for chunk in answer.chunks():
                sizes.append(len(chunk))
                out.write(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    archive_size = target.stat().st_size
    assert archive_size > 40_000_000
    assert max(sizes) <= CHUNK_SIZE and len(sizes) >= archive_size // CHUNK_SIZE
    assert peak < archive_size / 4, f"{peak:,} bytes traced at the peak for a {archive_size:,}-byte archive"
    with zipfile.ZipFile(target) as archive:
        names = archive.namelist()
        assert len(names) == BIG_NOTES and names[0] == "big/part 0/note 0000.md"
        assert archive.testzip() is None


def test_a_client_that_goes_away_mid_archive_stops_the_vault_writing_and_frees_its_connection(
    big: LocalVault, caplog: pytest.LogCaptureFixture
) -> None:
    """TCP flow control holds the vault at a few MB into the 40 MB zip; the close ends the archive there."""
    caplog.set_level(logging.INFO, logger="teamvault_mcp.localvault")
    with raw_get(big, big_route(big), big.api_key, receive_buffer=16 * 1024) as answer:
        assert answer.status == 200
        next(answer.chunks())
    # The close with unread data resets the connection: the vault's next send fails.
    assert big.connections.wait_for(lambda: big.connections.count() == 0, GENEROUS), too_slow(
        "freeing the connection", GENEROUS
    )
    wait_until(lambda: "folder archive of big ended after" in caplog.text, "the vault logging the end")
    ended = next(record for record in caplog.records if "folder archive of big ended" in record.getMessage())
    written, total = ended.args[1:3]  # type: ignore[index]
    assert total == BIG_NOTES and written < BIG_NOTES / 2, ended.getMessage()
    assert "went away" in ended.getMessage()
    with raw_get(big, big_route(big) + "x", big.api_key) as after:  # the vault goes on serving
        assert after.status == 404


def test_a_blob_gone_by_the_time_its_entry_is_written_is_skipped(big: LocalVault) -> None:
    """Flow control holds the vault early in the archive while the last note's blob is removed."""
    [last] = big.store.list_files(big.project_id, path="big/part 9/note 4999.md", prefix=None, include_deleted=False)
    with raw_get(big, big_route(big), big.api_key, receive_buffer=16 * 1024) as answer:
        assert answer.status == 200
        chunks = answer.chunks()
        body = bytearray(next(chunks))
        content = remove_blob(big, last.content_hash)
        try:
            for chunk in chunks:
                body += chunk
        finally:
            big.store.put_blob(content)
    names = zipfile.ZipFile(io.BytesIO(bytes(body))).namelist()
    assert len(names) == BIG_NOTES - 1 and "big/part 9/note 4999.md" not in names


def test_stopping_the_vault_ends_a_streamed_archive_unfinished(tmp_path: Path, http: requests.Session) -> None:
    """A stop ends the stream between chunks; the client sees the body cut short, never a short zip."""
    running = LocalVault(tmp_path / "v").start()
    stopped = False
    try:
        api = Api(running, http, running.api_key, running.project_id)
        api.create("slow/a.md")
        running.faults.add("GET", "/api/projects/*/folders/download", Fault.drip(GENEROUS))  # a byte per 20 s
        with raw_get(running, api.download_route + query("slow"), running.api_key) as answer:
            assert answer.status == 200
            assert next(answer.chunks()) == b"P"
            running.stop()
            stopped = True
            rest = answer.stream.read()  # to the end of the stream: without the stop, a byte per 20 s
        assert not rest.endswith(b"0\r\n\r\n"), "the body was finished"
    finally:
        if not stopped:
            running.stop()
