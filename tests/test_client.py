"""TeamVaultClient against the REST contract (teamvault-api.md §3, §4, §9), HTTP faked with ``responses``."""

from __future__ import annotations

import json

import pytest
import requests
import responses
from conftest import API_KEY, BASE, FILES, PROJECT, file_record
from responses import matchers

from teamvault_mcp.errors import HTTPStatusError, NetworkError, UnexpectedAnswerError


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


def test_404_gives_the_method_path_status_and_body(http_mock: responses.RequestsMock, make_client) -> None:
    envelope = {"error": {"code": "not_found", "message": "Проект не найден"}}
    http_mock.get(f"{BASE}/api/projects/nope/files", status=404, json=envelope)
    with pytest.raises(HTTPStatusError) as caught:
        make_client().list_files("nope", path="a.md")
    error = caught.value
    assert str(error) == f"GET /api/projects/nope/files?path=a.md → HTTP 404: {json.dumps(envelope)}"
    assert error.code == "not_found"
    assert not error.retryable


def test_409_path_exists_is_reported_with_its_code(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.post(FILES, status=409, json={"error": {"code": "path_exists", "message": "exists"}})
    with pytest.raises(HTTPStatusError) as caught:
        make_client().create_file(PROJECT, "a.md", b"x", "text/markdown")
    assert caught.value.code == "path_exists"
    assert caught.value.status == 409
    assert not caught.value.uncertain
    assert len(http_mock.calls) == 1


@pytest.mark.parametrize("body", ["", "<html><body>Bad Gateway</body></html>", "upstream is down"])
def test_error_bodies_may_be_html_text_or_empty(http_mock: responses.RequestsMock, make_client, body: str) -> None:
    http_mock.get(f"{BASE}/api/auth/me", status=500, body=body)
    with pytest.raises(HTTPStatusError) as caught:
        make_client().whoami()
    expected = "GET /api/auth/me → HTTP 500" + (f": {body}" if body else "")
    assert str(caught.value) == expected
    assert caught.value.code is None
    assert caught.value.uncertain  # a 5xx may come after the work was done


def test_error_body_excerpt_is_capped_at_400_characters(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(f"{BASE}/api/auth/me", status=400, body="x" * 5000)
    with pytest.raises(HTTPStatusError) as caught:
        make_client().whoami()
    assert str(caught.value).endswith(": " + "x" * 400)


def test_5xx_is_retried_then_reported(http_mock: responses.RequestsMock, make_client) -> None:
    for _ in range(3):
        http_mock.get(f"{BASE}/api/projects", status=502, body="Bad Gateway")
    with pytest.raises(HTTPStatusError) as caught:
        make_client().list_projects()
    assert len(http_mock.calls) == 3
    assert str(caught.value).startswith("GET /api/projects → HTTP 502: Bad Gateway")


def test_network_errors_say_network_error_on_method_and_path(http_mock: responses.RequestsMock, make_client) -> None:
    for _ in range(3):
        http_mock.get(FILES, body=requests.ConnectionError("connection refused"))
    with pytest.raises(NetworkError) as caught:
        make_client().list_files(PROJECT)
    assert str(caught.value).startswith(f"Network error on GET /api/projects/{PROJECT}/files: connection refused")
    assert caught.value.uncertain


def test_a_success_that_is_not_json_is_an_unexpected_answer(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(f"{BASE}/api/projects", body="<html>captive portal</html>")
    with pytest.raises(UnexpectedAnswerError, match="not a JSON object"):
        make_client().list_projects()


def test_redirects_are_not_followed(http_mock: responses.RequestsMock, make_client) -> None:
    http_mock.get(f"{BASE}/api/projects", status=301, headers={"Location": "https://elsewhere.example/api/projects"})
    with pytest.raises(HTTPStatusError) as caught:
        make_client().list_projects()
    assert "redirected to https://elsewhere.example/api/projects" in str(caught.value)
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
