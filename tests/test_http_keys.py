"""``serve --http --key-from-client``: each caller's Bearer token is its own Team Vault key, and the vault's
permissions decide. Two users of one local vault, each a member of a project of their own, with one shared
content cache: neither ever sees the other's notes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.http_service import http_service, mcp_client, post

from teamvault_mcp.localvault import LocalUser, LocalVault
from teamvault_mcp.localvault.store import Change
from teamvault_mcp.server.http import HttpService

pytestmark = pytest.mark.anyio

SECRET = "The launch is on the 14th; codename bluefinch.\n"


def seed_in(vault: LocalVault, project_id: str, path: str, content: str) -> None:
    store = vault.store
    with store.write() as db:
        store.create(Change(db, project_id, store.owner_of(project_id)), path, content.encode(), None)


@pytest.fixture
def alice(vault: LocalVault) -> LocalUser:
    return vault.add_user("alice@example.com", "Alice", roles={"alpha": "EDITOR"})


@pytest.fixture
def bob(vault: LocalVault) -> LocalUser:
    return vault.add_user("bob@example.com", "Bob", roles={"beta": "VIEWER"})


@pytest.fixture
def service(vault: LocalVault, tmp_path: Path, alice: LocalUser, bob: LocalUser) -> Iterator[HttpService]:
    seed_in(vault, vault.add_project("alpha"), "plans/alpha.md", "Alpha's plan.\n")
    seed_in(vault, vault.add_project("beta"), "plans/secret.md", SECRET)
    # Structured content on: no note of one key's may reach another's in either half.
    config = {"cache_dir": tmp_path / "cache", "audit_log": tmp_path / "audit.jsonl", "structured_content": True}
    with http_service(vault, key_from_client=True, config=config) as running:
        yield running


async def test_each_key_sees_only_its_own_projects_and_notes(
    vault: LocalVault, service: HttpService, alice: LocalUser, bob: LocalUser
) -> None:
    beta = vault.add_project("beta")
    async with mcp_client(service.url, bob.api_key) as as_bob:
        bobs = await as_bob.call_tool("list_projects", {})
        read = await as_bob.call_tool("read_note", {"path": "plans/secret.md", "projectId": beta})
    assert (read.content[0].text.partition("\n")[2], read.is_error) == (SECRET, False)  # now in the shared cache
    async with mcp_client(service.url, alice.api_key) as as_alice:
        alices = await as_alice.call_tool("list_projects", {})
        denied = await as_alice.call_tool("read_note", {"path": "plans/secret.md", "projectId": beta})
        found = await as_alice.call_tool("search_notes", {"query": "bluefinch", "projectId": beta})
        own = await as_alice.call_tool("read_note", {"path": "plans/alpha.md", "projectId": vault.add_project("alpha")})
    assert [p["slug"] for p in bobs.structured_content["projects"]] == ["beta"]
    assert [p["slug"] for p in alices.structured_content["projects"]] == ["alpha"]
    assert denied.is_error and "bluefinch" not in denied.content[0].text
    assert found.is_error or "bluefinch" not in found.content[0].text
    assert "bluefinch" not in json.dumps(found.structured_content)
    assert (own.content[0].text.partition("\n")[2], own.is_error) == ("Alpha's plan.\n", False)


async def test_the_vault_refuses_a_viewers_write_with_the_viewers_key(
    vault: LocalVault, service: HttpService, bob: LocalUser
) -> None:
    async with mcp_client(service.url, bob.api_key) as as_bob:
        result = await as_bob.call_tool(
            "write_note", {"path": "plans/new.md", "content": "x\n", "projectId": vault.add_project("beta")}
        )
    assert result.is_error
    assert "HTTP 403" in result.content[0].text


async def test_the_audit_log_records_the_callers_user_and_never_a_key(
    vault: LocalVault, service: HttpService, alice: LocalUser, bob: LocalUser, tmp_path: Path
) -> None:
    async with mcp_client(service.url, alice.api_key) as as_alice:
        written = await as_alice.call_tool(
            "write_note", {"path": "plans/b.md", "content": "b\n", "projectId": vault.add_project("alpha")}
        )
    assert not written.is_error, written.content[0].text
    text = (tmp_path / "audit.jsonl").read_text()
    assert [json.loads(line)["user"] for line in text.splitlines()] == [alice.id]
    assert alice.api_key not in text and bob.api_key not in text


def test_a_key_the_vault_refuses_gets_401(service: HttpService) -> None:
    answer = post(service.url, secret="osync_" + "0" * 64)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")


def test_a_session_answers_404_to_another_key(service: HttpService, alice: LocalUser, bob: LocalUser) -> None:
    session = post(service.url, secret=alice.api_key).headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    assert post(service.url, ping, secret=bob.api_key, **headers).status_code == 404
    assert post(service.url, ping, secret=alice.api_key, **headers).status_code == 200


def test_a_key_is_checked_at_the_vault_once_then_remembered(
    vault: LocalVault, service: HttpService, alice: LocalUser
) -> None:
    for _ in range(3):
        assert post(service.url, secret=alice.api_key).status_code == 200
    assert vault.faults.seen.count(("GET", "/api/auth/me")) == 1
    assert service.callers.count() == 1


def test_the_local_vault_refuses_an_unknown_role(vault: LocalVault) -> None:
    with pytest.raises(ValueError, match="unknown role"):
        vault.add_user("carol@example.com", roles={"alpha": "SUPERUSER"})


def test_keys_beyond_the_limit_get_503_while_the_others_are_in_use(
    vault: LocalVault, tmp_path: Path, alice: LocalUser, bob: LocalUser
) -> None:
    with http_service(vault, key_from_client=True, max_sessions=1) as running:
        assert post(running.url, secret=alice.api_key).status_code == 200
        refused = post(running.url, secret=bob.api_key)
        again = post(running.url, secret=alice.api_key, **{"mcp-session-id": "unknown"})
    assert refused.status_code == 503 and refused.headers["retry-after"] == "60"
    assert again.status_code == 404  # alice is still known: her unknown session is the SDK's 404, not a 503


def test_a_vault_that_cannot_be_asked_about_a_key_gives_503_not_401(vault: LocalVault, alice: LocalUser) -> None:
    from teamvault_mcp.localvault import Fault

    with http_service(vault, key_from_client=True) as running:
        vault.faults.add("GET", "/api/auth/me", Fault.answer(500), times=10)
        answer = post(running.url, secret=alice.api_key)
    assert answer.status_code == 503
    assert alice.api_key not in answer.text


async def test_a_key_added_on_the_command_line_with_roles_reaches_only_those_projects(
    vault: LocalVault, service: HttpService, capsys: pytest.CaptureFixture[str]
) -> None:
    from teamvault_mcp.cli import main

    data = str(vault.data_dir)
    command = ["local-vault", "keys", "add", "--data", data, "--user", "carol@example.com", "--role", "gamma:viewer"]
    assert main([*command, "--role", "beta:EDITOR"], {}) == 0
    key = capsys.readouterr().out.strip()
    assert main(["local-vault", "keys", "add", "--data", data, "--role", "gamma:VIEWER"], {}) == 2
    assert "--role goes with --user" in capsys.readouterr().err
    async with mcp_client(service.url, key) as as_carol:
        projects = await as_carol.call_tool("list_projects", {})
    assert sorted(p["slug"] for p in projects.structured_content["projects"]) == ["beta", "gamma"]
    carol = vault.store.user_for_key(key)
    assert carol is not None
    assert [vault.store.role_in(vault.add_project(slug), carol) for slug in ("beta", "gamma")] == ["EDITOR", "VIEWER"]
