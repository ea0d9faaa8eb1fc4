"""The local vault under malformed and hostile input: a definite answer, fast, no traceback, no change to the data.

Every test snapshots the project (files with tombstones, the operation log, the blob files on
disk) before and after the bad request and asserts that nothing moved. Every request and raw
socket has a timeout of a few seconds, so a vault that waits for a body that never comes fails
the test instead of hanging it.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from support.waiting import assert_within

from teamvault_mcp.localvault import LocalVault

#: How long a test waits for an answer that comes at once: generous, for a loaded machine. The vault waits
#: 120 s for a body that does not come, so an answer within this was given without waiting for it.
TIMEOUT = 30.0
UNKNOWN_ID = "cunknown0000000000000000000"


@dataclass
class Project:
    """One empty project of the shared vault, with a live note ``a.md`` and a live folder ``dir``."""

    vault: LocalVault
    session: requests.Session
    id: str
    note_id: str = ""

    @property
    def files(self) -> str:
        return f"/api/projects/{self.id}/files"

    @property
    def folders(self) -> str:
        return f"/api/projects/{self.id}/folders"

    @property
    def note(self) -> str:
        return f"{self.files}/{self.note_id}"

    def request(self, method: str, route: str, *, headers: dict[str, str] | None = None, **kw: Any) -> Any:
        sent = {"X-API-Key": self.vault.api_key, **(headers or {})}
        return self.session.request(method, self.vault.url + route, headers=sent, timeout=TIMEOUT, **kw)

    def create(self, path: str, content: bytes = b"note", **kw: Any) -> Any:
        files = {"path": (None, path), "file": ("n.md", content, "text/markdown")}
        return self.request("POST", self.files, files=files, **kw)


@dataclass(frozen=True)
class State:
    files: list[Any]
    operations: list[dict[str, Any]]
    blobs: frozenset[str]


def snapshot(project: Project) -> State:
    """What a request could have changed: the project's files (tombstones too), its operation log, the blob files."""
    store = project.vault.store
    blob_dir = project.vault.data_dir / "blobs"
    return State(
        store.list_files(project.id, path=None, prefix=None, include_deleted=True),
        store.operations(project.id),
        frozenset(str(path.relative_to(blob_dir)) for path in blob_dir.rglob("*")),
    )


def assert_no_traceback(body: bytes) -> None:
    assert b"Traceback" not in body
    assert b'File "' not in body
    assert b"Error:" not in body or body.startswith(b'{"error"')


def assert_error(response: Any, status: int, code: str | None, message: str | None = None) -> None:
    """teamvault-api.md §1.4: ``{"error":{"code","message"}}`` as JSON, and nothing that looks like a traceback."""
    assert_no_traceback(response.content)
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    if code is not None:  # None: the contract names no code
        assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if message is not None:
        assert body["error"]["message"] == message


@pytest.fixture(scope="module")
def vault(module_vault: LocalVault) -> LocalVault:
    """The module's one vault: each test gets its own project in it."""
    return module_vault


@pytest.fixture
def project(vault: LocalVault) -> Iterator[Project]:
    owner = vault.store.owner_of(vault.project_id)
    project_id = vault.store.add_project(f"bad-{uuid.uuid4().hex[:12]}", "Bad input", owner)
    with requests.Session() as session:
        session.trust_env = False
        made = Project(vault, session, project_id)
        created = made.create("a.md", b"original")
        assert created.status_code == 201, created.text
        made.note_id = created.json()["file"]["id"]
        assert made.create("dir/b.md").status_code == 201
        yield made


@pytest.fixture
def unchanged(project: Project) -> Iterator[Project]:
    """The project, checked after the test to be exactly as before it."""
    before = snapshot(project)
    yield project
    assert snapshot(project) == before
    assert project.request("GET", project.note).content == b"original"


# -- raw sockets ------------------------------------------------------------------------------------


@dataclass
class RawAnswer:
    status: int
    headers: dict[str, str]
    body: bytes
    elapsed: float


def raw_exchange(vault: LocalVault, data: bytes, *, timeout: float = TIMEOUT) -> tuple[RawAnswer, socket.socket]:
    """Send ``data`` as is and read one HTTP answer; the caller gets the socket to look at it further."""
    sock = socket.create_connection((vault.host, vault.port), timeout=timeout)
    try:
        started = time.monotonic()
        sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            assert chunk, f"the vault closed the connection without an answer: {received!r}"
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            assert chunk, "the vault closed the connection in the middle of its answer"
            body += chunk
    except BaseException:
        sock.close()
        raise
    return RawAnswer(int(status_line.split()[1]), headers, body[:length], time.monotonic() - started), sock


def closed_by_peer(sock: socket.socket, within: float = TIMEOUT) -> bool:
    """Whether the vault closes the connection (EOF or reset) within ``within`` seconds."""
    sock.settimeout(within)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def request_head(project: Project, method: str, route: str, *extra: str) -> bytes:
    lines = [f"{method} {route} HTTP/1.1", f"Host: {project.vault.host}", f"X-API-Key: {project.vault.api_key}"]
    return ("\r\n".join([*lines, *extra]) + "\r\n\r\n").encode()


# -- multipart ----------------------------------------------------------------------------------------

GOOD_PARTS = (
    b'--B\r\nContent-Disposition: form-data; name="path"\r\n\r\nnew.md\r\n'
    b'--B\r\nContent-Disposition: form-data; name="file"; filename="new.md"\r\nContent-Type: text/markdown\r\n\r\n'
    b"hello"
)

MALFORMED_MULTIPART = {
    "no boundary parameter": ("multipart/form-data", GOOD_PARTS + b"\r\n--B--\r\n"),
    "an empty boundary": ('multipart/form-data; boundary=""', GOOD_PARTS + b"\r\n--B--\r\n"),
    "a boundary that never occurs": ("multipart/form-data; boundary=OTHER", GOOD_PARTS + b"\r\n--B--\r\n"),
    "the boundary never closed": ("multipart/form-data; boundary=B", GOOD_PARTS),
    "the last part cut short": ("multipart/form-data; boundary=B", GOOD_PARTS + b"\r\n--"),
    "a part without headers": (
        "multipart/form-data; boundary=B",
        b"--B\r\n\r\nnew.md\r\n--B\r\n\r\nhello\r\n--B--\r\n",
    ),
    "a part with no header block at all": ("multipart/form-data; boundary=B", b"--B\r\nnew.md\r\n--B--\r\n"),
    "a header line without a colon": (
        "multipart/form-data; boundary=B",
        b"--B\r\nContent-Disposition form-data\r\n\r\nnew.md\r\n--B--\r\n",
    ),
    "a part that is not form-data": (
        "multipart/form-data; boundary=B",
        b'--B\r\nContent-Disposition: attachment; name="path"\r\n\r\nnew.md\r\n--B--\r\n',
    ),
    "a boundary not followed by CRLF": ("multipart/form-data; boundary=B", b"--Bxx" + GOOD_PARTS[3:]),
    "garbage bytes": ("multipart/form-data; boundary=B", bytes(range(256)) * 8),
    "an empty body": ("multipart/form-data; boundary=B", b""),
    "a boundary of 300 characters": ("multipart/form-data; boundary=" + "x" * 300, b"--" + b"x" * 300 + b"--\r\n"),
}


@pytest.mark.parametrize("case", MALFORMED_MULTIPART, ids=list(MALFORMED_MULTIPART))
def test_a_malformed_multipart_body_is_400_expected_multipart(unchanged: Project, case: str) -> None:
    """§3.2 step 1: a body that is not well-formed multipart/form-data is refused as ``expected_multipart``."""
    content_type, body = MALFORMED_MULTIPART[case]
    response = unchanged.request("POST", unchanged.files, data=body, headers={"Content-Type": content_type})
    assert_error(response, 400, "expected_multipart", "multipart/form-data is expected")


def test_a_multipart_body_without_the_closing_boundary_does_not_hang_on_keep_alive(unchanged: Project) -> None:
    """A refused body is consumed: the next request on the same connection is answered normally."""
    content_type, body = MALFORMED_MULTIPART["the boundary never closed"]
    for _ in range(3):
        response = unchanged.request("POST", unchanged.files, data=body, headers={"Content-Type": content_type})
        assert response.status_code == 400
        assert unchanged.request("GET", unchanged.files).status_code == 200


# -- JSON bodies --------------------------------------------------------------------------------------

BAD_JSON = {
    "empty": b"",
    "broken": b'{"newPath": "b.md"',
    "not JSON": b"newPath=b.md",
    "an array": b'["b.md"]',
    "a string": b'"b.md"',
    "null": b"null",
    "invalid UTF-8": b'{"newPath": "\xff\xfe.md"}',
    "a BOM and garbage": b"\xef\xbb\xbf\x00\x01",
    "nested 100 000 deep": b"[" * 100_000,
    "a trailing comma": b'{"newPath": "b.md",}',
}


@pytest.mark.parametrize("case", BAD_JSON, ids=list(BAD_JSON))
def test_bad_json_for_a_file_patch_is_400(unchanged: Project, case: str) -> None:
    """§3.5/§1.4: invalid JSON is the ``parseJsonBody`` error (inferred 400), never a 500."""
    response = unchanged.request(
        "PATCH", unchanged.note, data=BAD_JSON[case], headers={"Content-Type": "application/json"}
    )
    assert_error(response, 400, None)


@pytest.mark.parametrize("case", BAD_JSON, ids=list(BAD_JSON))
def test_bad_json_for_a_folder_patch_is_400(unchanged: Project, case: str) -> None:
    """§5.1/§1.4: as for files."""
    response = unchanged.request(
        "PATCH", unchanged.folders, data=BAD_JSON[case], headers={"Content-Type": "application/json"}
    )
    assert_error(response, 400, None)


def test_a_new_path_with_a_lone_surrogate_is_refused_as_an_invalid_path(unchanged: Project) -> None:
    """Not in the contract: a JSON ``\\ud800`` cannot be stored; it is refused as 400 invalid_path."""
    body = json.dumps({"newPath": "\ud800.md"}).encode()  # ASCII-safe: {"newPath": "\\ud800.md"}
    response = unchanged.request("PATCH", unchanged.note, data=body, headers={"Content-Type": "application/json"})
    assert_no_traceback(response.content)
    assert_error(response, 400, "invalid_path")


# -- sizes and framing --------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_a_huge_content_length_is_413_at_once_without_waiting_for_the_body(unchanged: Project, method: str) -> None:
    """§1.5/§12: a body over 50 MB is refused before it is read: 413 (no JSON needed), and the connection closed."""
    route = {"POST": unchanged.files, "PUT": unchanged.note, "PATCH": unchanged.note}[method]
    head = request_head(unchanged, method, route, "Content-Type: application/octet-stream", "Content-Length: 60000000")
    answer, sock = raw_exchange(unchanged.vault, head + b"only a few bytes")
    with sock:
        assert answer.status == 413
        assert_within(answer.elapsed, TIMEOUT, "an answer the vault gives at once")
        assert_no_traceback(answer.body)
        assert closed_by_peer(sock)


def test_a_chunked_upload_is_refused_at_once_with_411(unchanged: Project) -> None:
    """Not in the contract (§1.5 lists no 411): the vault refuses a chunked body before reading it, and closes."""
    head = request_head(
        unchanged,
        "POST",
        unchanged.files,
        "Content-Type: multipart/form-data; boundary=B",
        "Transfer-Encoding: chunked",
    )
    answer, sock = raw_exchange(unchanged.vault, head + b"5\r\n--B\r\n\r\n")  # one chunk; the body never ends
    with sock:
        assert answer.status == 411
        assert_within(answer.elapsed, TIMEOUT, "an answer the vault gives at once")
        assert_no_traceback(answer.body)
        assert closed_by_peer(sock)


def test_a_chunked_upload_through_requests_is_refused_with_411(unchanged: Project) -> None:
    def chunks() -> Iterator[bytes]:
        yield GOOD_PARTS
        yield b"\r\n--B--\r\n"

    response = unchanged.request(
        "POST", unchanged.files, data=chunks(), headers={"Content-Type": "multipart/form-data; boundary=B"}
    )
    assert response.status_code == 411
    assert_no_traceback(response.content)


BAD_LENGTHS = ["abc", "-1", "1e3", "+5", "1_0", "5,5", "5 5", "0x5", "5.0", "\u0665", "", "\r\n 5"]


@pytest.mark.parametrize("length", BAD_LENGTHS, ids=[ascii(length) for length in BAD_LENGTHS])
def test_a_bad_content_length_is_400_at_once(unchanged: Project, length: str) -> None:
    """Only 1*DIGIT frames a body (RFC 9112 §6.3); ``int()`` takes ``+5`` and ``1_0``, a proxy may not."""
    head = request_head(unchanged, "PUT", unchanged.note, f"Content-Length: {length}")
    answer, sock = raw_exchange(unchanged.vault, head + b"xyz")
    with sock:
        assert answer.status == 400
        assert_within(answer.elapsed, TIMEOUT, "an answer the vault gives at once")
        assert_no_traceback(answer.body)
        assert closed_by_peer(sock)


def hidden_delete(project: Project) -> bytes:
    """A second request, to be smuggled inside the first one's body."""
    return request_head(project, "DELETE", project.note, "Content-Length: 0")


@pytest.mark.parametrize(
    "framing",
    ["Content-Length: 0\r\nContent-Length: {n}", "Content-Length: {n}\r\nContent-Length: 0", "Content-Length : {n}"],
    ids=["duplicate, the first 0", "duplicate, the second 0", "a space before the colon"],
)
def test_an_ambiguous_length_cannot_smuggle_a_hidden_second_request(unchanged: Project, framing: str) -> None:
    """Where a proxy takes one length and the vault another, the rest of the stream would be a second request."""
    hidden = hidden_delete(unchanged)
    head = request_head(
        unchanged, "PUT", unchanged.note, "Content-Type: application/octet-stream", framing.format(n=len(hidden))
    )
    answer, sock = raw_exchange(unchanged.vault, head + hidden)
    with sock:
        assert answer.status == 400
        assert_no_traceback(answer.body)
        assert closed_by_peer(sock)  # nothing after the refusal is read as a request


def test_the_same_content_length_twice_is_refused_too(unchanged: Project) -> None:
    head = request_head(unchanged, "PUT", unchanged.note, "Content-Length: 3", "Content-Length: 3")
    answer, sock = raw_exchange(unchanged.vault, head + b"xyz")
    with sock:
        assert answer.status == 400
        assert closed_by_peer(sock)


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        (("Transfer-Encoding: identity",), 411),
        (("Transfer-Encoding: gzip",), 411),
        (("Transfer-Encoding: chunked", "Content-Length: 3"), 400),
        (("Content-Length: 3", "Transfer-Encoding: chunked"), 400),
        (("Transfer-Encoding:",), 411),
    ],
    ids=["identity", "gzip", "chunked and a length", "a length and chunked", "empty"],
)
def test_any_transfer_encoding_is_refused_and_the_connection_closed(
    unchanged: Project, extra: tuple[str, ...], status: int
) -> None:
    head = request_head(unchanged, "PUT", unchanged.note, *extra)
    answer, sock = raw_exchange(unchanged.vault, head + b"3\r\nxyz\r\n0\r\n\r\n")
    with sock:
        assert answer.status == status
        assert_no_traceback(answer.body)
        assert closed_by_peer(sock)


@pytest.mark.parametrize(
    "line", ["No colon here", " X-Folded: continued", "X-API-Key : wrong"], ids=["no colon", "leading space", "space"]
)
def test_a_header_line_that_is_no_header_is_refused(unchanged: Project, line: str) -> None:
    """Python's parser would take such a line, and every header after it, as the start of a body."""
    head = f"PUT {unchanged.note} HTTP/1.1\r\nHost: x\r\n{line}\r\nX-API-Key: {unchanged.vault.api_key}\r\n"
    answer, sock = raw_exchange(unchanged.vault, (head + "Content-Length: 3\r\n\r\nxyz").encode())
    with sock:
        assert answer.status == 400
        assert closed_by_peer(sock)


def test_a_head_ended_by_the_end_of_the_stream_is_not_carried_out(unchanged: Project) -> None:
    """A DELETE whose head never reached its empty line is no request: nothing answered, nothing deleted."""
    head = request_head(unchanged, "DELETE", unchanged.note).removesuffix(b"\r\n")
    with socket.create_connection((unchanged.vault.host, unchanged.vault.port), timeout=TIMEOUT) as sock:
        sock.sendall(head)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(TIMEOUT)
        assert sock.recv(65536) == b""


def test_a_body_cut_short_by_the_end_of_the_stream_is_not_applied(unchanged: Project) -> None:
    head = request_head(unchanged, "PUT", unchanged.note, "Content-Length: 10")
    with socket.create_connection((unchanged.vault.host, unchanged.vault.port), timeout=TIMEOUT) as sock:
        sock.sendall(head + b"short")
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(TIMEOUT)
        assert sock.recv(65536) == b""


# -- no body before the key -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", [None, "osync_" + "0" * 64], ids=["no key", "a wrong key"])
def test_without_a_valid_key_the_body_is_not_read_the_answer_is_401_and_the_connection_closed(
    unchanged: Project, key: str | None
) -> None:
    """The answer comes before a byte of the announced 40 MB has been sent: nothing of it is read or buffered."""
    lines = [f"PUT {unchanged.note} HTTP/1.1", "Host: x", "Content-Length: 40000000"]
    if key is not None:
        lines.append(f"X-API-Key: {key}")
    answer, sock = raw_exchange(unchanged.vault, ("\r\n".join(lines) + "\r\n\r\n").encode())
    with sock:
        assert answer.status == 401
        assert answer.headers["connection"] == "close"
        assert json.loads(answer.body)["error"]["code"] == "unauthorized"
        assert closed_by_peer(sock)


def test_a_small_body_without_a_key_still_gets_its_401_through_requests(unchanged: Project) -> None:
    response = unchanged.session.put(
        unchanged.vault.url + unchanged.note, data=b"x" * 100_000, headers={"X-API-Key": "wrong"}, timeout=TIMEOUT
    )
    assert response.status_code == 401
    assert unchanged.request("GET", unchanged.files).status_code == 200  # the session reconnects


def test_expect_100_continue_is_answered_only_once_the_key_is_checked(project: Project) -> None:
    with socket.create_connection((project.vault.host, project.vault.port), timeout=TIMEOUT) as sock:
        sock.sendall(request_head(project, "PUT", project.note, "Content-Length: 3", "Expect: 100-continue"))
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"new")
        received = b""
        while b"\r\n\r\n" not in received:
            received += sock.recv(65536)
        assert received.startswith(b"HTTP/1.1 200")
    stranger = f"PUT {project.note} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"
    answer, sock = raw_exchange(project.vault, stranger.encode())
    with sock:
        assert answer.status == 401  # no "100 Continue" first: the body is never asked for
        assert closed_by_peer(sock)
    assert project.request("GET", project.note).content == b"new"


@pytest.mark.parametrize(
    "data",
    [b"BREW /api/auth/me HTTP/1.1\r\n\r\n", b"GET /a b c HTTP/1.1\r\n\r\n"],
    ids=["an unknown method", "too many words"],
)
def test_a_garbage_request_line_is_refused_at_once(project: Project, data: bytes) -> None:
    """Not an API request at all: an HTTP error status at once, and the connection closed; never a crash."""
    with socket.create_connection((project.vault.host, project.vault.port), timeout=TIMEOUT) as sock:
        sock.sendall(data)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    assert received.startswith(b"HTTP/1.")
    assert 400 <= int(received.split()[1]) < 600
    assert_no_traceback(received)


def test_a_header_line_over_64_kib_is_refused_at_once(project: Project) -> None:
    data = request_head(project, "GET", project.files, "X-Long: " + "y" * 70_000)
    with socket.create_connection((project.vault.host, project.vault.port), timeout=TIMEOUT) as sock:
        sock.sendall(data)
        received = sock.recv(65536)
    assert received.startswith(b"HTTP/1.")
    assert 400 <= int(received.split()[1]) < 500
    assert_no_traceback(received)


# -- routes and methods -------------------------------------------------------------------------------


def unknown_routes(project: Project) -> list[tuple[str, str]]:
    return [
        ("GET", "/"),
        ("GET", "/api"),
        ("GET", "/api/nope"),
        ("POST", "/api/auth/me/extra"),
        ("GET", f"/api/projects/{project.id}/nothing"),
        ("GET", f"{project.note}/versions/{UNKNOWN_ID}/extra"),
        ("DELETE", f"/api/projects/{project.id}/files//versions"),
        ("GET", "/api/projects//files"),
    ]


@pytest.mark.parametrize("with_key", [True, False], ids=["with a key", "without a key"])
def test_an_unknown_route_is_404_in_the_json_envelope(project: Project, with_key: bool) -> None:
    for method, route in unknown_routes(project):
        headers: dict[str, Any] = {} if with_key else {"X-API-Key": None}
        response = project.request(method, route, headers=headers, data=b"some body")
        assert_error(response, 404, "not_found")


@pytest.mark.parametrize(
    ("method", "route", "allowed"),
    [
        ("DELETE", "{files}", {"GET", "POST"}),
        ("PUT", "{files}", {"GET", "POST"}),
        ("PUT", "/api/auth/me", {"GET"}),
        ("POST", "/api/projects", {"GET"}),
        ("DELETE", "/api/projects/{project}", {"GET"}),
        ("POST", "{note}", {"GET", "PUT", "PATCH", "DELETE", "OPTIONS"}),
        ("GET", "{folders}", {"PATCH", "DELETE"}),
        ("POST", "{folders}", {"PATCH", "DELETE"}),
        ("DELETE", "{note}/versions", {"GET"}),
    ],
)
def test_a_wrong_method_is_405_with_an_allow_header(
    project: Project, method: str, route: str, allowed: set[str]
) -> None:
    """The route exists but not for this method: 405 naming the allowed ones; the connection stays usable."""
    url = route.format(files=project.files, folders=project.folders, note=project.note, project=project.id)
    response = project.request(method, url, data=b'{"newPath": "elsewhere.md"}')
    assert response.status_code == 405
    assert_no_traceback(response.content)
    assert {name.strip() for name in response.headers["Allow"].split(",")} == allowed
    if response.content:
        assert_error(response, 405, None)
    assert project.request("GET", project.files).status_code == 200  # the body was consumed


@pytest.mark.parametrize("file_id", ["%00", "..%2F..%2Fetc", "%zz", "%ff%fe", "x" * 2000, "'; DROP TABLE files; --"])
def test_a_malformed_file_id_is_404_never_400_or_500(project: Project, file_id: str) -> None:
    """§1.1: an unknown id gives a 404, never a 400."""
    route = f"{project.files}/{file_id}"
    assert_error(project.request("GET", route), 404, "not_found")
    assert_error(project.request("PUT", route, data=b"x"), 404, "not_found")
    assert_error(project.request("DELETE", route), 404, "not_found")
    assert_error(project.request("PATCH", route, json={"newPath": "z.md"}), 404, "not_found")


# -- paths ----------------------------------------------------------------------------------------------

REFUSED_PATHS = {
    "a\0b.md": "Path contains NUL byte",
    "dir/\0": "Path contains NUL byte",
    "../a.md": "Parent traversal is not allowed",
    "dir/../../a.md": "Parent traversal is not allowed",
    "..\\a.md": "Parent traversal is not allowed",
    "..": "Parent traversal is not allowed",
    ".obsidian/app.json": "Reserved folder name: .obsidian",
    ".OBSIDIAN/x.md": "Reserved folder name: .OBSIDIAN",
    "notes/.git/HEAD": "Reserved folder name: .git",
    ".trash/x.md": "Reserved folder name: .trash",
    ".versions/a.md": "Reserved folder name: .versions",
    "dir/.staging/x": "Reserved folder name: .staging",
    ".obſidian/x": "Reserved folder name: .obſidian",
    ".tra\u200csh/x.md": "Reserved folder name: .tra\u200csh",
    "OBSIDI~1/x.md": "Name a Windows client can't keep: OBSIDI~1",
    "desktop.ini::$DATA": "Name a Windows client can't keep: desktop.ini::$DATA",
}


@pytest.mark.parametrize("path", REFUSED_PATHS, ids=[ascii(p) for p in REFUSED_PATHS])
def test_post_with_a_nul_traversal_or_reserved_path_is_400_invalid_path(project: Project, path: str) -> None:
    """§2.3/§3.2: 400 ``invalid_path`` with the gate's message."""
    assert_error(project.create(path), 400, "invalid_path", REFUSED_PATHS[path])


@pytest.mark.parametrize("path", REFUSED_PATHS, ids=[ascii(p) for p in REFUSED_PATHS])
def test_patch_to_a_nul_traversal_or_reserved_path_is_400_invalid_path(project: Project, path: str) -> None:
    """§2.3/§3.5: ``newPath`` goes through the incoming gate."""
    response = project.request("PATCH", project.note, json={"newPath": path})
    assert_error(response, 400, "invalid_path", REFUSED_PATHS[path])


@pytest.mark.parametrize("path", REFUSED_PATHS, ids=[ascii(p) for p in REFUSED_PATHS])
def test_folder_patch_to_a_nul_traversal_or_reserved_path_is_400_invalid_path(project: Project, path: str) -> None:
    """§5.1: a refused ``newPath`` → 400 ``invalid_path``, "invalid folder path"."""
    response = project.request("PATCH", project.folders, json={"path": "dir", "newPath": path})
    assert_error(response, 400, "invalid_path", "Invalid folder path")


STORED_GATE_REFUSALS = ["a\0b.md", "../a.md", "..", "/a.md", ".versions/a.md", "dir/.staging/x", "x\\..\\a.md"]


@pytest.mark.parametrize("path", STORED_GATE_REFUSALS, ids=[ascii(p) for p in STORED_GATE_REFUSALS])
def test_list_with_a_refused_path_answers_no_files(project: Project, path: str) -> None:
    """§3.1: the stored gate's refusal lists nothing, with 200."""
    response = project.request("GET", project.files, params={"path": path, "includeDeleted": "true"})
    assert response.status_code == 200
    assert response.json() == {"files": []}


@pytest.mark.parametrize("path", [".obsidian/x.md", ".Trash/x.md", "a:b.md"])
def test_list_of_a_client_reserved_name_is_allowed_on_reads(project: Project, path: str) -> None:
    """§2.2: reads use the stored gate, which lets client folders and Windows names through (nothing there here)."""
    response = project.request("GET", project.files, params={"path": path})
    assert (response.status_code, response.json()) == (200, {"files": []})


@pytest.mark.parametrize("path", STORED_GATE_REFUSALS, ids=[ascii(p) for p in STORED_GATE_REFUSALS])
def test_folder_delete_of_a_refused_path_is_400_invalid_path(project: Project, path: str) -> None:
    """§5.2: ``path`` refused by the stored gate → 400 ``invalid_path``."""
    response = project.request("DELETE", project.folders, params={"path": path})
    assert_error(response, 400, "invalid_path", "Invalid folder path")


# -- Idempotency-Key ------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["", "k" * 256], ids=["empty", "256 characters"])
def test_an_invalid_idempotency_key_is_400_and_nothing_is_applied(project: Project, key: str) -> None:
    """§11.2 profile: a key that cannot be a UUID-like token is refused before any work."""
    headers = {"Idempotency-Key": key}
    attempts = [
        project.create("new.md", headers=headers),
        project.request("PUT", project.note, data=b"changed", headers=headers),
        project.request("PATCH", project.note, json={"newPath": "moved.md"}, headers=headers),
        project.request("DELETE", project.note, headers=headers),
        project.request("DELETE", project.folders, params={"path": "dir"}, headers=headers),
    ]
    for response in attempts:
        assert_error(response, 400, "invalid_idempotency_key")


def test_an_idempotency_key_on_a_read_is_ignored(project: Project) -> None:
    """§11.2: the header matters on writes only."""
    response = project.request("GET", project.files, headers={"Idempotency-Key": ""})
    assert response.status_code == 200
    assert [file["path"] for file in response.json()["files"]] == ["a.md", "dir/b.md"]


def test_snapshot_sees_a_change(project: Project) -> None:
    """The helper itself: a real write changes every part of the snapshot."""
    before = snapshot(project)
    assert project.create("fresh.md", uuid.uuid4().bytes).status_code == 201
    after = snapshot(project)
    assert after.files != before.files
    assert after.operations != before.operations
    assert after.blobs > before.blobs
