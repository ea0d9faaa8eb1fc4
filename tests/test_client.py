"""TeamVaultClient against the REST contract (docs/teamvault-api.md §3, §4, §9), HTTP faked with ``responses``."""

from __future__ import annotations

import json
from urllib.parse import quote, quote_plus

import pytest
import requests
import responses
from responses import matchers
from support.fakes import API_KEY, BASE, FILES, PROJECT, file_record

from teamvault_mcp.errors import HTTPStatusError, NetworkError, UnexpectedAnswerError
from teamvault_mcp.vault.retry import outcome


def test_every_request_carries_the_api_key_header(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(f"{BASE}/api/auth/me", json={"user": {"id": "u1", "email": "a@b.c", "name": None}})
    http_mock.get(f"{BASE}/api/projects", json={"projects": []})
    client = make_client()
    client.whoami()
    client.list_projects()
    assert [call.request.headers["X-API-Key"] for call in http_mock.calls] == [API_KEY, API_KEY]


def test_path_is_resolved_through_the_path_filter(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(
        FILES,
        match=[matchers.query_param_matcher({"path": "dir/a b+c.md"})],
        json={"files": [file_record("dir/a b+c.md", "f7")]},
    )
    found = make_client().find_file(PROJECT, "dir/a b+c.md")
    assert found is not None
    assert found.id == "f7"


def test_an_empty_list_means_no_such_note(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(FILES, json={"files": []})
    assert make_client().find_file(PROJECT, "missing.md") is None


def test_resolution_ignores_records_for_other_paths(http_mock: responses.RequestsMock, make_client) -> None:
    # A server that predates the path filter answers with the whole project.
    http_mock.get(FILES, json={"files": [file_record("a.md", "f1"), file_record("b.md", "f2")]})
    found = make_client().find_file(PROJECT, "b.md")
    assert found is not None and found.id == "f2"


def test_size_arrives_as_a_string_and_becomes_a_number(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(FILES, json={"files": [file_record("a.md", size="1024"), file_record("b.png", size=None)]})
    files = make_client().list_files(PROJECT)
    assert [f.size for f in files] == [1024, None]


def test_prefix_is_sent_as_given(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(FILES, match=[matchers.query_param_matcher({"prefix": "people/"})], json={"files": []})
    assert make_client().list_files(PROJECT, prefix="people/") == []


def test_ids_are_percent_encoded_in_the_url(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(f"{BASE}/api/projects/p%2F1/files/f%3F1", body=b"text")
    assert make_client().download("p/1", "f?1") == b"text"


def test_404_says_in_english_what_it_means_and_quotes_the_server(
    http_mock: responses.RequestsMock, make_client
) -> None:
    envelope = {"error": {"code": "not_found", "message": "Проект не найден"}}
    http_mock.get(f"{BASE}/api/projects/nope/files", status=404, json=envelope)
    with pytest.raises(HTTPStatusError) as caught:
        make_client().list_files("nope", path="a.md")
    error = caught.value
    assert str(error) == (
        "GET /api/projects/nope/files?path=a.md → HTTP 404 (not_found): no such project, or the key's user is not "
        "a member of it. Call list_projects to see the projects this key can use, and pass one as projectId. "
        'Server said: "Проект не найден"'
    )
    assert error.code == "not_found"
    assert error.detail == "Проект не найден"
    assert not outcome(error).retryable


def test_409_path_exists_is_reported_with_its_code(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.post(FILES, status=409, json={"error": {"code": "path_exists", "message": "exists"}})
    with pytest.raises(HTTPStatusError) as caught:
        make_client().create_file(PROJECT, "a.md", b"x", "text/markdown")
    assert caught.value.code == "path_exists"
    assert caught.value.status == 409
    assert not outcome(caught.value).uncertain
    assert len(http_mock.calls) == 1


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("", ""),
        ("<html><body>Bad Gateway</body></html>", ' Server said: "Bad Gateway"'),
        (
            "<!DOCTYPE html><html><head><title>500 &amp; down</title><style>p{}</style></head></html>",
            ' Server said: "500 & down"',
        ),
        ("upstream is down", ' Server said: "upstream is down"'),
    ],
)
def test_error_bodies_may_be_html_text_or_empty(
    http_mock: responses.RequestsMock, make_client, body: str, said: str
) -> None:
    http_mock.get(f"{BASE}/api/auth/me", status=500, body=body)
    with pytest.raises(HTTPStatusError) as caught:
        make_client().whoami()
    expected = (
        "GET /api/auth/me → HTTP 500: the server failed with an internal error (its logs say why). Try again "
        "later; if it keeps failing, tell the vault's administrator."
    )
    assert str(caught.value) == expected + said
    assert caught.value.code is None
    assert outcome(caught.value).uncertain  # a 5xx may come after the work was done


def test_error_body_excerpt_is_capped_at_400_characters(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(f"{BASE}/api/auth/me", status=400, body="x" * 5000)
    with pytest.raises(HTTPStatusError) as caught:
        make_client().whoami()
    assert str(caught.value).endswith(' Server said: "' + "x" * 400 + '…"')


def test_the_servers_words_have_control_characters_escaped_and_whitespace_collapsed(
    http_mock: responses.RequestsMock, make_client
) -> None:
    message = "line one\n\tline two\x1b[31m red \u202e"
    http_mock.get(f"{BASE}/api/auth/me", status=400, json={"error": {"code": "bad\nthing", "message": message}})
    with pytest.raises(HTTPStatusError) as caught:
        make_client().whoami()
    text = str(caught.value)
    assert text.startswith("GET /api/auth/me → HTTP 400 (bad\\nthing): the server refused the request as invalid.")
    assert text.endswith(' Server said: "line one line two\\x1b[31m red \\u202e"')
    assert text.isprintable()


def test_5xx_is_retried_then_reported(http_mock: responses.RequestsMock, make_client) -> None:
    for _ in range(3):
        http_mock.get(f"{BASE}/api/projects", status=502, body="Bad Gateway")
    with pytest.raises(HTTPStatusError) as caught:
        make_client().list_projects()
    assert len(http_mock.calls) == 3
    assert str(caught.value) == (
        "GET /api/projects → HTTP 502: the server is down or restarting: the proxy in front of it got no answer. "
        'Try again in a minute. Server said: "Bad Gateway" (Gave up after 3 attempts in 4.0 s.)'
    )


def test_network_errors_say_network_error_on_method_and_path(http_mock: responses.RequestsMock, make_client) -> None:
    for _ in range(3):
        http_mock.get(FILES, body=requests.ConnectionError("connection refused"))
    with pytest.raises(NetworkError) as caught:
        make_client().list_files(PROJECT)
    assert str(caught.value).startswith(f"Network error on GET /api/projects/{PROJECT}/files: connection refused")
    assert outcome(caught.value).uncertain


def test_a_success_that_is_not_json_is_an_unexpected_answer(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(f"{BASE}/api/projects", body="<html><title>Sign in</title>captive portal</html>")
    with pytest.raises(UnexpectedAnswerError) as caught:
        make_client().list_projects()
    assert str(caught.value) == (
        "GET /api/projects → unexpected answer (HTTP 200, not JSON): this is not what a Team Vault server answers. "
        "If it happens again, run `teamvault-mcp check`: TEAM_VAULT_URL may lead to something else (a login page, "
        'a proxy, another service). Server said: "Sign in"'
    )


def test_redirects_are_not_followed(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(f"{BASE}/api/projects", status=301, headers={"Location": "https://elsewhere.example/api/projects"})
    with pytest.raises(HTTPStatusError) as caught:
        make_client().list_projects()
    assert str(caught.value).startswith(
        "GET /api/projects → HTTP 301: the server redirects this request to https://elsewhere.example/api/projects "
        "instead of answering. Set TEAM_VAULT_URL to the server's final address;"
    )
    assert len(http_mock.calls) == 1  # the API key never travels to the other host


def test_create_sends_multipart_with_path_and_file(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.post(FILES, status=201, json={"file": file_record("dir/новая.md", "f9", size="6")})
    created = make_client().create_file(PROJECT, "dir/новая.md", "привет".encode()[:6], "text/markdown")
    request = http_mock.calls[0].request
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    body = request.body if isinstance(request.body, bytes) else request.body.encode()
    assert 'name="path"\r\n\r\ndir/новая.md\r\n'.encode() in body
    assert b"Content-Type: text/markdown" in body
    assert created.id == "f9" and created.size == 6


def test_replace_sends_raw_bytes(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.put(f"{FILES}/f1", json={"file": file_record("a.md", size="3")})
    make_client().replace_content(PROJECT, "f1", b"abc")
    request = http_mock.calls[0].request
    assert request.body == b"abc"
    assert request.headers["Content-Type"] == "application/octet-stream"


def test_move_sends_new_path_as_json(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.patch(
        f"{FILES}/f1",
        match=[matchers.json_params_matcher({"newPath": "b/c.md"})],
        json={"file": {"id": "f1", "path": "b/c.md"}},
    )
    assert make_client().move_file(PROJECT, "f1", "b/c.md") == {"id": "f1", "path": "b/c.md"}


def test_delete_and_versions(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.delete(f"{FILES}/f1", json={"success": True})
    http_mock.get(f"{FILES}/f1/versions", json={"versions": [{"id": "v2", "versionNumber": 2}]})
    client = make_client()
    client.delete_file(PROJECT, "f1")
    assert client.list_versions(PROJECT, "f1") == [{"id": "v2", "versionNumber": 2}]


def test_the_api_key_is_not_in_the_clients_repr(make_client) -> None:
    assert API_KEY not in repr(make_client())


# -- every error answer in English (issue 12) --------------------------------------------------------------

FILE_URL = f"{FILES}/f1"


@pytest.mark.parametrize(
    ("method", "url", "status", "code", "english"),
    [
        ("GET", f"{BASE}/api/auth/me", 401, "unauthorized", "the server refused the API key"),
        ("GET", FILES, 403, "forbidden", "the key's user is not allowed to read this"),
        ("PUT", FILE_URL, 403, "forbidden", "may read this project but not write to it"),
        ("GET", FILES, 404, "not_found", "no such project, or the key's user is not a member of it"),
        ("GET", FILE_URL, 404, "not_found", "the note is no longer there"),
        ("DELETE", FILE_URL, 404, "not_found", "the note is no longer there: someone deleted or moved it"),
        ("GET", FILE_URL, 404, "file_missing_on_disk", "its content is missing from the server's storage"),
        ("GET", f"{FILE_URL}/versions/v9", 404, "not_found", "that version of the note does not exist"),
        ("GET", f"{BASE}/api/auth/me", 404, None, "there is no Team Vault API at this address"),
        ("POST", FILES, 400, "invalid_path", "the server refused the path"),
        ("POST", FILES, 400, "file_too_large", "larger than this server accepts (its MAX_FILE_SIZE setting)"),
        ("POST", FILES, 400, "path_required", "This is a bug in teamvault-mcp"),
        ("POST", FILES, 400, "expected_multipart", "This is a bug in teamvault-mcp"),
        ("PATCH", FILE_URL, 400, "validation_error", "the server refused the request as invalid"),
        ("POST", FILES, 409, "path_exists", "a note was created at a.md meanwhile. Nothing was written"),
        ("POST", FILES, 409, "path_blocked", "no note can be created at a.md: a folder of that name holds notes"),
        ("PATCH", FILE_URL, 409, "path_exists", "another note already holds b.md (a deleted note keeps its path"),
        ("PATCH", FILE_URL, 409, "path_blocked", "b.md cannot be a note's path: a folder of that name holds notes"),
        ("PUT", FILE_URL, 413, None, "its proxy's body limit: 50 MB"),
        ("PUT", FILE_URL, 422, "idempotency_key_mismatch", "This is a bug in teamvault-mcp"),
        ("GET", FILES, 429, None, "the server is busy"),
        ("GET", FILES, 500, None, "the server failed with an internal error"),
        ("GET", FILES, 502, None, "the server is down or restarting"),
        ("GET", FILES, 503, None, "the server is unavailable"),
        ("GET", FILES, 504, None, "gave up waiting for it"),
        ("GET", FILES, 418, "teapot", "the server refused the request"),
    ],
)
def test_every_error_answer_says_in_english_what_happened_and_what_to_do(
    http_mock: responses.RequestsMock, make_client, method: str, url: str, status: int, code: str | None, english: str
) -> None:
    server_message = "Сообщение сервера"
    envelope = {"error": {"code": code, "message": server_message}} if code else None
    for _ in range(3):
        http_mock.add(method, url, status=status, json=envelope, body=None if envelope else server_message)
    client = make_client()
    calls = {
        ("GET", f"{BASE}/api/auth/me"): client.whoami,
        ("GET", FILES): lambda: client.list_files(PROJECT),
        ("GET", FILE_URL): lambda: client.download(PROJECT, "f1"),
        ("GET", f"{FILE_URL}/versions/v9"): lambda: client.download_version(PROJECT, "f1", "v9"),
        ("POST", FILES): lambda: client.create_file(PROJECT, "a.md", b"x", "text/markdown"),
        ("PUT", FILE_URL): lambda: client.replace_content(PROJECT, "f1", b"x"),
        ("PATCH", FILE_URL): lambda: client.move_file(PROJECT, "f1", "b.md"),
        ("DELETE", FILE_URL): lambda: client.delete_file(PROJECT, "f1"),
    }
    with pytest.raises(HTTPStatusError) as caught:
        calls[(method, url)]()
    text = str(caught.value)
    api_path = url.removeprefix(BASE)
    shown_code = f" ({code})" if code else ""
    if status == 409 and method in ("POST", "PATCH"):
        # Written for this request: it names the paths, so neither the API path's ids nor the server's words
        assert text.startswith(f"HTTP {status}{shown_code}: "), text
        assert english in text and api_path not in text and server_message not in text
        return
    assert text.startswith(f"{method} {api_path} → HTTP {status}{shown_code}: "), text
    assert english in text
    assert f'Server said: "{server_message}"' in text  # the server's words follow, quoted, never alone
    assert text.index(english) < text.index("Server said")
    english_part = text.split(" Server said:")[0]
    assert not any("\u0400" <= ch <= "\u04ff" for ch in english_part)  # no Cyrillic outside the quote


def test_a_refused_key_names_the_variable_and_the_check_command(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(
        f"{BASE}/api/auth/me", status=401, json={"error": {"code": "unauthorized", "message": "Неверный API-ключ"}}
    )
    with pytest.raises(HTTPStatusError) as caught:
        make_client().whoami()
    assert str(caught.value) == (
        "GET /api/auth/me → HTTP 401 (unauthorized): the server refused the API key: it is wrong, revoked or "
        "expired. The key is set in TEAM_VAULT_API_KEY; run `teamvault-mcp check` to diagnose it, or create a new "
        'key in Team Vault (Settings → API keys). Server said: "Неверный API-ключ"'
    )


def test_each_status_meaning_row_is_reachable() -> None:
    """A row hidden behind a more general one above it would never be used."""
    from teamvault_mcp.errors import STATUS_MEANINGS, meaning_of

    for row in STATUS_MEANINGS:
        status = row.status if isinstance(row.status, int) else next(s for s in row.status if s > 0)
        if isinstance(row.status, range):  # a range row is reached by a status no single row names
            singles = {r.status for r in STATUS_MEANINGS if isinstance(r.status, int)}
            status = next(s for s in row.status if s not in singles and s > 0)
        method = row.methods[0] if row.methods else "GET"
        assert meaning_of(status, row.code, row.target, method) == row.text, row


# -- the API key never passes through (issue 13) ------------------------------------------------------------


@pytest.mark.parametrize("spelling", [API_KEY, quote(API_KEY, safe=""), "pre" + API_KEY + "post"])
def test_an_echoed_key_is_scrubbed_from_error_texts(http_mock: responses.RequestsMock, make_client, spelling) -> None:
    echo = f"Request headers: X-API-Key: {spelling}; Accept: application/json"
    http_mock.get(f"{BASE}/api/auth/me", status=400, json={"error": {"code": "bad", "message": echo}})
    http_mock.get(f"{BASE}/api/projects", status=200, body=f"<p>{echo}</p>")
    http_mock.get(FILES, status=302, headers={"Location": f"https://x.example/?key={spelling}"})
    client = make_client()
    for call in (client.whoami, client.list_projects, lambda: client.list_files(PROJECT)):
        with pytest.raises((HTTPStatusError, UnexpectedAnswerError)) as caught:
            call()
        assert API_KEY not in str(caught.value)
        assert "***" in str(caught.value)


def test_a_key_with_characters_that_url_encoding_changes_is_scrubbed_in_both_spellings(
    http_mock: responses.RequestsMock, clock
) -> None:
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.interrupt import CancelToken
    from teamvault_mcp.vault.retry import Budget, RetryPolicy

    key = "k/ey+with=odd&chars"
    body = f"raw {key} encoded {quote(key, safe='')} lower {quote(key, safe='').lower()} plus {quote_plus(key)}"
    http_mock.get(f"{BASE}/api/auth/me", status=400, body=body)
    client = TeamVaultClient(
        BASE, key, budget=Budget(45, clock), token=CancelToken(), clock=clock, policy=RetryPolicy()
    )
    with pytest.raises(HTTPStatusError) as caught:
        client.whoami()
    client.close()
    assert str(caught.value).endswith('Server said: "raw *** encoded *** lower *** plus ***"')


# -- every server answer decoded defensively (issue 13) -------------------------------------------------------


def test_lone_surrogate_escapes_become_replacement_characters(http_mock: responses.RequestsMock, make_client) -> None:
    body = '{"files": [{"id": "f1", "path": "a\\ud800b.md", "fileType": "TEXT", "size": "1", "\\udc00": 1}]}'
    http_mock.get(FILES, body=body)
    http_mock.get(f"{BASE}/api/auth/me", body='{"user": {"id": "u1", "name": "Kuz\\udbffma \\ud83d\\ude00"}}')
    client = make_client()
    [file] = client.list_files(PROJECT)
    assert file.path == "a\ufffdb.md"
    assert client.whoami()["name"] == "Kuz\ufffdma \U0001f600"  # a proper pair stays one character
    file.path.encode("utf-8")  # encodable: it can be sent on


def test_raw_surrogate_bytes_and_invalid_utf8_are_replaced(http_mock: responses.RequestsMock, make_client) -> None:
    body = b'\xef\xbb\xbf{"user": {"id": "u1", "name": "a\xed\xa0\x80b\xff"}}'  # a BOM, CESU-8, a stray byte
    http_mock.get(f"{BASE}/api/auth/me", body=body)
    name = make_client().whoami()["name"]
    name.encode("utf-8")
    assert name.startswith("a") and name.endswith("b\ufffd")


def test_content_hashes_are_lowercased_and_anything_else_is_dropped(
    http_mock: responses.RequestsMock, make_client
) -> None:
    good = "ab" * 32
    hashes = [good.upper(), f" {good} ", "z" * 64, good[:63], 12, None, ["x"]]
    records = [file_record(f"{n}.md", f"f{n}", contentHash=value) for n, value in enumerate(hashes)]
    http_mock.get(FILES, json={"files": records})
    http_mock.get(f"{FILES}/f1/versions", json={"versions": [{"id": "v1", "contentHash": good.upper()}]})
    client = make_client()
    assert [f.content_hash for f in client.list_files(PROJECT)] == [good, good, None, None, None, None, None]
    assert client.list_versions(PROJECT, "f1") == [{"id": "v1", "contentHash": good}]


def test_odd_field_types_are_tolerated(http_mock: responses.RequestsMock, make_client) -> None:
    records = [
        {"id": 7, "path": "a.md", "fileType": "text", "size": 1e999, "mimeType": ["x"]},
        {"id": "f2", "path": "b.md", "fileType": {"x": 1}, "size": True},
        {"id": "f3", "path": "c.md", "size": -4, "contentHash": {"deep": [[[]]]}},
        {"id": "f4", "path": "d.md", "size": "12", "fileType": "BINARY", "mimeType": "image/png"},
    ]
    http_mock.get(FILES, body=json.dumps({"files": records}).replace("Infinity", "1e999"))
    files = make_client().list_files(PROJECT)
    assert [(f.id, f.file_type, f.size, f.mime_type) for f in files] == [
        ("7", "TEXT", None, None),
        ("f2", "BINARY", None, None),
        ("f3", "TEXT", None, None),
        ("f4", "BINARY", 12, "image/png"),
    ]


def test_records_keep_only_plain_fields_in_their_types(http_mock: responses.RequestsMock, make_client) -> None:
    deep: object = "bottom"
    for _ in range(300):
        deep = [deep]
    http_mock.get(f"{BASE}/api/auth/me", json={"user": {"id": "u1", "email": 5, "name": deep, "role": "ADMIN"}})
    http_mock.get(
        f"{BASE}/api/projects",
        body='{"projects": [{"id": "p1", "name": {"x": 1}, "slug": "s", "n": NaN}, {"name": "no id"}, 3]}',
    )
    http_mock.get(
        f"{FILES}/f1/versions",
        json={"versions": [{"id": "v1", "versionNumber": True, "author": {"id": "u", "name": deep}, "x": deep}, {}]},
    )
    http_mock.patch(f"{FILES}/f1", json={"file": {"id": None, "path": deep}})
    client = make_client()
    assert client.whoami() == {"id": "u1", "email": None, "name": None, "role": "ADMIN"}
    assert client.list_projects() == [{"id": "p1", "slug": "s", "name": None, "n": None}]
    assert client.list_versions(PROJECT, "f1") == [
        {"id": "v1", "versionNumber": None, "author": {"id": "u", "name": None, "email": None}}
    ]
    assert client.move_file(PROJECT, "f1", "b.md") == {}


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_json_nested_too_deeply_is_an_unexpected_answer(
    http_mock: responses.RequestsMock, make_client, depth: int
) -> None:
    http_mock.get(f"{BASE}/api/projects", body='{"projects": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(UnexpectedAnswerError, match="nested too deeply"):
        make_client().list_projects()


def test_a_user_without_an_id_is_an_unexpected_answer(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(f"{BASE}/api/auth/me", json={"user": {"email": "a@b.c"}})
    with pytest.raises(UnexpectedAnswerError, match="no 'user' object with an id"):
        make_client().whoami()


def test_an_answer_over_the_size_limit_is_not_read_on(
    http_mock: responses.RequestsMock, make_client, monkeypatch: pytest.MonkeyPatch
) -> None:
    import teamvault_mcp.vault.transport

    monkeypatch.setattr(teamvault_mcp.vault.transport, "MAX_ANSWER_BYTES", 1000)
    http_mock.get(f"{FILES}/f1", body=b"x" * 1001)
    http_mock.get(f"{FILES}/f2", body=b"x" * 1000)
    client = make_client()
    with pytest.raises(UnexpectedAnswerError, match="an answer of more than 1,000 bytes"):
        client.download(PROJECT, "f1")
    assert client.download(PROJECT, "f2") == b"x" * 1000
