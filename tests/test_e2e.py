"""End to end over real sockets: an MCP client → ``teamvault-mcp`` over stdio → the local vault.

The vault runs in this process, so a test can script its faults and look at its
data; the MCP server is the real entry point in a child process.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from support.waiting import GENEROUS, assert_within, await_until

from teamvault_mcp.errors import UNCERTAIN_WRITE_HINT
from teamvault_mcp.localvault import Fault, LocalVault

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
FILES = "/api/projects/*/files"
FILE = "/api/projects/*/files/*"


@asynccontextmanager
async def mcp_over_stdio(args: list[str], env: dict[str, str]) -> AsyncIterator[Client]:
    env = {"TEAM_VAULT_CACHE_DIR": "off", **env}  # a test never writes to the user's cache
    params = StdioServerParameters(command=sys.executable, args=["-m", "teamvault_mcp", *args], env=env, cwd=ROOT)
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            yield client


def vault_env(vault: LocalVault, **extra: str) -> dict[str, str]:
    """The child's environment for ``vault``; structured content on, since these tests read results as data (the
    text is the same either way: ``test_host_views.py``)."""
    return {
        "TEAM_VAULT_URL": vault.url,
        "TEAM_VAULT_API_KEY": vault.api_key,
        "TEAM_VAULT_PROJECT_ID": vault.project_id,
        "TEAM_VAULT_STRUCTURED_CONTENT": "on",
        **extra,
    }


def read_text(text: str) -> str:
    """read_note's text without the ``[contentHash: …]`` line it starts with."""
    header, _, body = text.partition("\n")
    assert header.startswith("[contentHash: "), text[:200]
    return body


async def call(client: Client, tool: str, **arguments: Any) -> tuple[str, bool, Any]:
    result = await client.call_tool(tool, arguments)
    return result.content[0].text, result.is_error, result.structured_content


def live_notes(vault: LocalVault) -> dict[str, bytes]:
    files = vault.store.list_files(vault.project_id, path=None, prefix=None, include_deleted=False)
    return {file.path: vault.store.content(vault.project_id, file.id)[1] for file in files}


def writes_logged(vault: LocalVault) -> list[tuple[str, str | None]]:
    return [(op["kind"], op["idempotencyKey"]) for op in vault.store.operations(vault.project_id)]


async def test_every_tool_end_to_end(vault: LocalVault) -> None:
    async with mcp_over_stdio([], vault_env(vault)) as client:
        _, is_error, me = await call(client, "whoami")
        assert not is_error and me["email"] == "local@teamvault.invalid"
        _, _, projects = await call(client, "list_projects")
        assert [p["id"] for p in projects["projects"]] == [vault.project_id]

        _, is_error, created = await call(client, "write_note", path="people\\kuzma.md", content="# Kuzma\n")
        assert not is_error
        assert (created["path"], created["action"], created["size"]) == ("people/kuzma.md", "created", 8)
        _, _, updated = await call(client, "write_note", path="./people/kuzma.md", content="# Kuzma Minin\n")
        assert updated["action"] == "updated"
        text, _, _ = await call(client, "read_note", path="people//kuzma.md")
        assert read_text(text) == "# Kuzma Minin\n"
        _, _, notes = await call(client, "list_notes", prefix="people/")
        assert notes["notes"] == [{"path": "people/kuzma.md", "type": "TEXT", "size": 14}]
        _, _, versions = await call(client, "list_note_versions", path="people/kuzma.md")
        assert [v["versionNumber"] for v in versions["versions"]] == [2, 1]

        long_note = "# Kuzma Minin\nintro\n## Life\nborn\n## Legacy\nmonument\n"
        await call(client, "write_note", path="people/kuzma.md", content=long_note)
        _, _, outline = await call(client, "note_outline", path="people/kuzma.md", tocPath=["Kuzma Minin"])
        assert [h["title"] for h in outline["headings"]] == ["Life", "Legacy"]
        text, _, _ = await call(client, "read_note", path="people/kuzma.md", section=["Kuzma Minin", "Legacy"])
        assert read_text(text) == "## Legacy\nmonument\n"
        text, _, _ = await call(client, "read_note", path="people/kuzma.md", startLine=3, endLine=4)
        assert read_text(text) == "## Life\nborn\n"
        _, _, batch = await call(client, "read_notes", paths=["people/kuzma.md", "people/nobody.md"])
        fields = [sorted(note) for note in batch["notes"]]
        assert fields == [["chars", "contentHash", "path", "text"], ["error", "path"]]
        _, _, shallow = await call(client, "list_notes", depth=1)
        assert shallow["notes"] == [{"folder": "people/", "notes": 1}]

        _, _, moved = await call(client, "move_note", path="people/kuzma.md", newPath="archive/kuzma.md")
        assert moved["path"] == "archive/kuzma.md"
        _, _, deleted = await call(client, "delete_note", path="archive/kuzma.md")
        assert (deleted["path"], deleted["action"]) == ("archive/kuzma.md", "deleted")
        text, is_error, _ = await call(client, "read_note", path="archive/kuzma.md")
        assert is_error and text.startswith("Note not found: archive/kuzma.md — it was deleted on "), text
    assert live_notes(vault) == {}
    assert [kind for kind, _ in writes_logged(vault)] == ["CREATE", "UPDATE", "UPDATE", "MOVE", "DELETE"]
    assert all(key for _, key in writes_logged(vault))  # every write carried an Idempotency-Key


async def test_cancel_during_a_hanging_request_reaches_the_vault_at_once(vault: LocalVault) -> None:
    vault.faults.add("GET", FILES, Fault.hang(at_most=60))
    # No warm-up: its listing would be one more request (and could meet the hang first).
    async with mcp_over_stdio([], vault_env(vault, TEAM_VAULT_PREFETCH="off")) as client:
        async with anyio.create_task_group() as group:  # cancel once the vault holds the request

            async def read() -> None:
                await client.call_tool("read_note", {"path": "a.md"})

            group.start_soon(read)
            await await_until(lambda: vault.faults.injected, "the read reaching the vault")
            group.cancel_scope.cancel()
        cancelled_at = time.monotonic()
        await await_until(lambda: vault.faults.hang_ended, "the vault seeing the client go away")
        # Milliseconds in practice (the README's figure); the hang itself would last 60 s.
        assert_within(vault.faults.hang_ended[0] - cancelled_at, GENEROUS, "the disconnect after a cancel")
        # A retry would come after the 1 s pause (plus jitter); wait that long, then look.
        await anyio.sleep(1.3)
        _, is_error, _ = await call(client, "whoami")
    assert not is_error
    assert vault.faults.seen == [("GET", vault_files_path(vault)), ("GET", "/api/auth/me")]


def vault_files_path(vault: LocalVault) -> str:
    return f"/api/projects/{vault.project_id}/files"


async def test_a_dripping_body_is_cut_at_the_attempt_limit_and_retried(vault: LocalVault) -> None:
    body = "x" * 400
    async with mcp_over_stdio([], vault_env(vault, TEAM_VAULT_ATTEMPT_TIMEOUT="1")) as client:
        await call(client, "write_note", path="slow.md", content=body)
        vault.faults.add("GET", FILE, Fault.drip(0.05))  # 400 bytes at 20 per second: 20 s
        started = time.monotonic()
        text, is_error, _ = await call(client, "read_note", path="slow.md")
        elapsed = time.monotonic() - started
    assert (read_text(text), is_error) == (body, False)
    downloads = [entry for entry in vault.faults.seen if entry[0] == "GET" and entry[1].count("/") == 5]
    assert len(downloads) == 2  # the dripping one, cut at its limit, and the retry (uncut it would take 20 s)
    assert elapsed >= 2.0  # 1 s cut attempt + 1 s pause, then a quick second attempt
    assert_within(elapsed, 2.0 + GENEROUS / 2, "a 1 s attempt, a 1 s pause and a quick one")


@pytest.mark.parametrize(("existing", "action"), [(False, "created"), (True, "updated")])
async def test_apply_then_close_is_retried_and_replayed_applied_exactly_once(
    vault: LocalVault, existing: bool, action: str
) -> None:
    async with mcp_over_stdio([], vault_env(vault)) as client:
        if existing:
            await call(client, "write_note", path="n.md", content="before\n")
        method, pattern = ("PUT", FILE) if existing else ("POST", FILES)
        vault.faults.add(method, pattern, Fault.apply_then_close())
        text, is_error, result = await call(client, "write_note", path="n.md", content="after\n")
    assert not is_error, text
    assert result["action"] == action
    assert live_notes(vault) == {"n.md": b"after\n"}
    last_write = writes_logged(vault)[-1]
    assert sum(1 for entry in writes_logged(vault) if entry == last_write) == 1  # applied once
    assert [m for m, _ in vault.faults.seen].count(method) == 2  # the first attempt and the replayed one


async def test_an_unanswered_write_found_unchanged_is_a_clean_failure(vault: LocalVault) -> None:
    # Three closes: the first one, on a kept-alive connection, gets a free resend; then two attempts.
    vault.faults.add("PUT", FILE, Fault.close_before(), times=3)
    # A 5 s budget leaves room for two attempts and the 1 s pause, not for the 3 s one; then a look.
    async with mcp_over_stdio([], vault_env(vault, TEAM_VAULT_CALL_BUDGET="5")) as client:
        await call(client, "write_note", path="n.md", content="before\n")
        text, is_error, _ = await call(client, "write_note", path="n.md", content="after\n")
    assert is_error
    assert "Gave up after 2 attempts" in text
    assert "A check right after found the note unchanged" in text and "was not applied" in text
    assert UNCERTAIN_WRITE_HINT not in text
    assert live_notes(vault) == {"n.md": b"before\n"}


async def test_an_unanswered_write_that_may_still_run_keeps_the_hint(vault: LocalVault) -> None:
    vault.faults.add("PUT", FILE, Fault.hang(at_most=3), times=3)
    env = vault_env(vault, TEAM_VAULT_CALL_BUDGET="4", TEAM_VAULT_ATTEMPT_TIMEOUT="1")
    async with mcp_over_stdio([], env) as client:
        await call(client, "write_note", path="n.md", content="before\n")
        text, is_error, _ = await call(client, "write_note", path="n.md", content="after\n")
    assert is_error
    assert "timed out" in text
    assert text.endswith(UNCERTAIN_WRITE_HINT)  # found unchanged, but a timed-out attempt may yet land


async def test_local_mode_runs_on_an_embedded_vault_that_keeps_its_notes(tmp_path: Path) -> None:
    data = tmp_path / "my-vault"
    async with mcp_over_stdio(["--local", str(data)], {}) as client:  # the default: results are text alone
        said, is_error, written = await call(client, "write_note", path="inbox/idea.md", content="an idea\n")
        assert not is_error and written is None
        assert said.startswith("Created inbox/idea.md (8 bytes); its contentHash is ")
    async with mcp_over_stdio(["--local", str(data)], {}) as client:
        result = await client.call_tool("read_note", {"path": "inbox/idea.md"})
    assert [block.text for block in result.content] == [f"[contentHash: {said[-13:-1]}]\nan idea\n"]
    assert (result.is_error, result.structured_content) == (False, None)
    assert (data / "api-key").stat().st_mode & 0o777 == 0o600


async def test_a_refused_key_and_an_unknown_project_are_explained_in_english(vault: LocalVault) -> None:
    env = {**vault_env(vault), "TEAM_VAULT_API_KEY": "osync_" + "0" * 64}
    async with mcp_over_stdio([], env) as client:
        refused, refused_error, _ = await call(client, "whoami")
    async with mcp_over_stdio([], vault_env(vault)) as client:
        unknown, unknown_error, _ = await call(client, "read_note", path="a.md", projectId="no-such-project")
    assert refused_error and unknown_error
    assert refused == (
        "GET /api/auth/me → HTTP 401 (unauthorized): the server refused the API key: it is wrong, revoked or "
        "expired. The key is set in TEAM_VAULT_API_KEY; run `teamvault-mcp check` to diagnose it, or create a new "
        'key in Team Vault (Settings → API keys). Server said: "Authentication required"'
    )
    assert unknown.startswith(
        "GET /api/projects/no-such-project/files?path=a.md → HTTP 404 (not_found): no such project, or the key's "
        "user is not a member of it. Call list_projects"
    )
    assert unknown.endswith('Server said: "Project not found"')
