"""A URL that leads to an HTTP server which is not Team Vault (issue 31): a tool call says so, as ``check`` does.

One rule decides it (``messages.not_team_vault``): a 404 on the account or the project list, or a 404 on a
project's files without the code of Team Vault's error envelope. A real Team Vault's 404 (the local vault's)
keeps its own meaning.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support.env import env_for

from teamvault_mcp.cli import main
from teamvault_mcp.localvault import LocalVault

NOT_TEAM_VAULT = "there is no Team Vault API at this address"
NO_SUCH_PROJECT = "no such project, or the key's user is not a member of it"

#: (Content-Type, body) of another server's 404: a web server's page, another application's JSON.
HTML_PAGE = ("text/html", b"<!DOCTYPE html><html><head><title>404 Not Found</title></head><body>nginx</body></html>")
OTHER_JSON = ("application/json", b'{"detail": "Not Found"}')

#: What answers a request: (status, Content-Type, body) for its path.
Answers = Callable[[str], tuple[int, str, bytes]]


@contextmanager
def other_server(answers: Answers) -> Iterator[str]:
    """A plain HTTP server on 127.0.0.1 answering every GET with ``answers(path)``; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, content_type, body = answers(self.path)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def environment(url: str) -> dict[str, str]:
    return {
        "TEAM_VAULT_URL": url,
        "TEAM_VAULT_API_KEY": "osync_" + "1" * 64,
        "TEAM_VAULT_PROJECT_ID": "p1",
        "TEAM_VAULT_CACHE_DIR": "off",
    }


@pytest.mark.parametrize("page", [HTML_PAGE, OTHER_JSON], ids=["html page", "another application's json"])
def test_a_tool_call_against_a_server_that_is_not_team_vault_says_there_is_no_team_vault_api(
    page: tuple[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    with other_server(lambda path: (404, *page)) as url:
        code = main(["call", "list_notes"], environment(url))
    out, _ = capsys.readouterr()
    assert code == 1
    assert out.startswith(f"GET /api/projects/p1/files → HTTP 404: {NOT_TEAM_VAULT}. "), out
    assert "TEAM_VAULT_URL must be the address of the Team Vault web app" in out
    assert NO_SUCH_PROJECT not in out


def test_a_real_team_vault_404_still_says_no_such_project(
    vault: LocalVault, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["call", "list_notes", "projectId=nope"], env_for(vault))
    out, _ = capsys.readouterr()
    assert code == 1
    assert NO_SUCH_PROJECT in out and NOT_TEAM_VAULT not in out


def test_check_applies_the_same_rule_to_a_project_listing(capsys: pytest.CaptureFixture[str]) -> None:
    """A server that answers the account and the project list as Team Vault does, but its files with a page."""
    user = json.dumps({"user": {"id": "u1", "email": "a@example.com"}}).encode()
    projects = json.dumps({"projects": [{"id": "p1", "name": "P"}]}).encode()

    def answers(path: str) -> tuple[int, str, bytes]:
        found = {"/api/auth/me": user, "/api/projects": projects}.get(path.split("?")[0])
        return (200, "application/json", found) if found else (404, *HTML_PAGE)

    with other_server(answers) as url:
        code = main(["check", "--json"], environment(url))
    checks = {check["name"]: check for check in json.loads(capsys.readouterr().out)["checks"]}
    assert code == 1
    assert checks["key"]["status"] == "pass"
    assert checks["project"]["detail"].startswith(
        "no Team Vault API at this address: GET /api/projects/p1/files → HTTP 404"
    )
    assert "without /api" in checks["project"]["hint"]
