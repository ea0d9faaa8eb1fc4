"""The audit log (TEAM_VAULT_AUDIT_LOG) and write scopes (TEAM_VAULT_WRITE_PREFIXES).

Tools run through a real MCP client (in-memory streams) against a local vault on
loopback sockets, whose faults the tests script.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import make_config
from mcp import Client
from waiting import await_until

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.localvault.store import Change
from teamvault_mcp.server.audit import AuditLog
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.vault.retry import RetryPolicy, SystemClock

pytestmark = pytest.mark.anyio

#: The production rules with short pauses. The attempt limit stays generous: on a loaded machine a plain attempt
#: can take over a second, and one cut at 0.5 s was retried and answered `replayed` (issue 12).
FAST = RetryPolicy(pauses=(0.01, 0.02), jitter=0.0, key_in_use_pause=0.01, min_time_to_start=0.05, attempt_timeout=30)
FILE = "/api/projects/*/files/*"
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Session:
    def __init__(self, vault: LocalVault, client: Client, runner: ToolRunner, log_path: Path) -> None:
        self.vault = vault
        self.client = client
        self.runner = runner
        self.log_path = log_path

    async def call(self, tool: str, **arguments: Any) -> tuple[str, bool]:
        result = await self.client.call_tool(tool, arguments)
        return result.content[0].text, result.is_error

    async def ok(self, tool: str, **arguments: Any) -> None:
        text, is_error = await self.call(tool, **arguments)
        assert not is_error, text

    def lines(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def last(self) -> dict[str, Any]:
        return self.lines()[-1]

    def seed(self, path: str, content: bytes) -> None:
        """A note put straight into the vault, as a colleague would."""
        store, project_id = self.vault.store, self.vault.project_id
        with store.write() as db:
            store.create(Change(db, project_id, store.owner_of(project_id)), path, content, "text/markdown")

    def writes_sent(self) -> list[tuple[str, str]]:
        return [(method, path) for method, path in self.vault.faults.seen if method in WRITE_METHODS]


async def open_session(tmp_path: Path, **overrides: Any) -> AsyncIterator[Session]:
    log_path = tmp_path / "audit.jsonl"
    with LocalVault(tmp_path / "vault") as vault:
        values: dict[str, Any] = {
            "base_url": vault.url,
            "api_key": vault.api_key,
            "project_id": vault.project_id,
            "call_budget": 5.0,
            "audit_log": log_path,
        }
        values.update(overrides)
        runner = ToolRunner(make_config(**values), clock=SystemClock(), policy=FAST)
        async with Client(build_server(runner), mode="legacy") as client:
            yield Session(vault, client, runner, log_path)


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async for running in open_session(tmp_path):
        yield running


@pytest.fixture
async def scoped(tmp_path: Path) -> AsyncIterator[Session]:
    async for running in open_session(tmp_path, write_prefixes=("agents/", "inbox/")):
        yield running


# -- the audit log --------------------------------------------------------------------------------


async def test_a_write_is_one_line_with_who_what_and_how_it_ended(session: Session) -> None:
    await session.ok("write_note", path="./notes//a.md", content="secret content\n")
    [line] = session.lines()
    assert line["tool"] == "write_note"
    assert line["project"] == session.vault.project_id
    assert line["paths"] == ["notes/a.md"]
    assert uuid.UUID(line["idempotencyKey"])
    assert line["attempts"] == 1
    assert line["outcome"] == "applied"
    assert line["hashBefore"] is None and line["hashAfter"] == digest("secret content\n")
    assert line["time"].endswith("Z") and line["time"][:2] == "20"
    written = session.log_path.read_text()
    assert "secret content" not in written
    assert session.vault.api_key not in written


async def test_the_key_in_the_log_is_the_one_the_server_saw(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="x\n")
    keys = [op["idempotencyKey"] for op in session.vault.store.operations(session.vault.project_id)]
    assert keys == [session.last()["idempotencyKey"]]


async def test_reads_are_not_audited(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="x\n")
    await session.ok("read_note", path="a.md")
    await session.ok("list_notes")
    await session.ok("search_notes", query="x")
    assert [line["tool"] for line in session.lines()] == ["write_note"]


async def test_a_retried_write_answered_by_replay_is_replayed(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")
    session.vault.faults.add("PUT", FILE, Fault.apply_then_close())
    await session.ok("write_note", path="a.md", content="after\n")
    line = session.last()
    assert (line["outcome"], line["attempts"]) == ("replayed", 2)
    assert (line["hashBefore"], line["hashAfter"]) == (digest("before\n"), digest("after\n"))


async def test_a_write_settled_by_a_check_is_applied_and_verified(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")
    session.vault.faults.add("PUT", FILE, Fault.apply_then_close(), times=4)  # 3 attempts + the free resend
    await session.ok("write_note", path="a.md", content="after\n")
    line = session.last()
    assert (line["outcome"], line["attempts"], line["verified"]) == ("applied", 4, True)  # every send counts


async def test_a_conflict_is_failed_with_no_attempt(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")
    _, is_error = await session.call("write_note", path="a.md", content="mine\n", expectedHash="0" * 64)
    assert is_error
    line = session.last()
    assert (line["outcome"], line["attempts"], line["error"]) == ("failed", 0, "ConflictError")


async def test_a_write_of_unknown_outcome_is_uncertain(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")

    def colleague_then_drop(method: str, path: str) -> Fault | None:
        if method != "PUT":
            return None
        store = session.vault.store
        if store.content(session.vault.project_id, file_id)[1] == b"before\n":
            colleague = store.add_user("colleague@x", "Colleague")
            with store.write() as db:
                store.replace(Change(db, session.vault.project_id, colleague), file_id, b"theirs\n")
        return Fault.close_before()

    files = session.vault.store.list_files(session.vault.project_id, path="a.md", prefix=None, include_deleted=False)
    file_id = files[0].id
    session.vault.faults.chooser = colleague_then_drop
    _, is_error = await session.call("write_note", path="a.md", content="mine\n")
    assert is_error
    line = session.last()
    assert (line["outcome"], line["attempts"], line["error"]) == ("uncertain", 4, "NetworkError")


async def test_a_dry_run_and_an_edit_that_changes_nothing_are_noop(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="one two\n")
    await session.ok("edit_note", path="a.md", edits=[{"oldText": "one", "newText": "1"}], dryRun=True)
    assert session.last()["outcome"] == "noop" and session.last()["attempts"] == 0
    await session.ok("edit_note", path="a.md", edits=[{"oldText": "one", "newText": "one"}])
    assert session.last()["outcome"] == "noop"
    assert session.last()["hashBefore"] == session.last()["hashAfter"] == digest("one two\n")


async def test_a_move_names_both_paths_and_a_delete_has_no_hash_after(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="x\n")
    await session.ok("move_note", path="a.md", newPath="done/a.md")
    assert session.last()["paths"] == ["a.md", "done/a.md"]
    assert session.last()["outcome"] == "applied"
    await session.ok("delete_note", path="done/a.md")
    line = session.last()
    assert (line["tool"], line["paths"], line["hashBefore"], line["hashAfter"]) == (
        "delete_note",
        ["done/a.md"],
        digest("x\n"),
        None,
    )


async def test_bad_arguments_to_a_write_are_failed_lines(session: Session) -> None:
    _, is_error = await session.call("write_note", path="../a.md", content="x")
    assert is_error
    line = session.last()
    assert (line["outcome"], line["attempts"], line["error"], line["paths"]) == (
        "failed",
        0,
        "InvalidPathError",
        ["../a.md"],
    )


async def test_a_cancelled_write_is_cancelled(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")
    session.vault.faults.add("PUT", FILE, Fault.hang(at_most=60))
    async with anyio.create_task_group() as group:  # cancel once the vault holds the PUT, however long that takes

        async def write() -> None:
            await session.client.call_tool("write_note", {"path": "a.md", "content": "after\n"})

        group.start_soon(write)
        await await_until(lambda: session.vault.faults.injected, "the PUT reaching the vault")
        group.cancel_scope.cancel()
    await await_until(lambda: len(session.lines()) >= 2, "the cancelled write's audit line")
    line = session.last()
    assert (line["outcome"], line["attempts"], line["error"]) == ("cancelled", 1, "CallCancelledError")


async def test_concurrent_writes_give_one_whole_line_each(session: Session) -> None:
    async def write(number: int) -> None:
        await session.ok("write_note", path=f"n{number}.md", content="x" * 5000)

    async with anyio.create_task_group() as group:
        for number in range(16):
            group.start_soon(write, number)
    lines = session.lines()  # each parses as JSON: none interleaved
    assert sorted(line["paths"][0] for line in lines) == sorted(f"n{number}.md" for number in range(16))
    assert {line["outcome"] for line in lines} == {"applied"}


def test_lines_from_many_threads_never_interleave(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")

    def writer(number: int) -> None:
        for index in range(50):
            audit.record({"tool": "write_note", "paths": [f"{number}/{index}-" + "p" * 3000]})

    threads = [threading.Thread(target=writer, args=(number,)) for number in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert len(lines) == 16 * 50
    assert len({json.loads(line)["paths"][0] for line in lines}) == 16 * 50


def test_the_log_is_appended_to_and_private(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"earlier":"line"}\n')
    AuditLog(path).record({"tool": "write_note"})
    assert path.read_text().splitlines()[0] == '{"earlier":"line"}'
    fresh = tmp_path / "fresh.jsonl"
    AuditLog(fresh).record({"tool": "write_note"})
    assert fresh.stat().st_mode & 0o777 == 0o600


async def test_a_log_that_cannot_be_written_fails_no_call_and_is_reported_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async for session in open_session(tmp_path, audit_log=tmp_path / "missing-folder" / "audit.jsonl"):
        with caplog.at_level(logging.ERROR, logger="teamvault_mcp"):
            await session.ok("write_note", path="a.md", content="x\n")
            await session.ok("write_note", path="b.md", content="y\n")
    reports = [record.getMessage() for record in caplog.records if "audit log" in record.getMessage()]
    assert len(reports) == 1
    assert "cannot write the audit log" in reports[0] and "missing-folder" in reports[0]


async def test_no_audit_log_unless_configured(tmp_path: Path) -> None:
    async for session in open_session(tmp_path, audit_log=None):
        await session.ok("write_note", path="a.md", content="x\n")
        assert session.runner.audit is None
    assert list(tmp_path.glob("*.jsonl")) == []


# -- write scopes ---------------------------------------------------------------------------------


async def test_a_write_outside_the_prefixes_is_refused_before_any_request(scoped: Session) -> None:
    text, is_error = await scoped.call("write_note", path="people/ada.md", content="x\n")
    assert is_error
    assert text == (
        "write_note refused: path 'people/ada.md' is outside the folders this server may write to "
        "(agents/, inbox/; set by TEAM_VAULT_WRITE_PREFIXES). Nothing was sent. Write under one of them instead; "
        "reading stays possible everywhere."
    )
    assert scoped.vault.faults.seen == []
    line = scoped.last()
    assert (line["outcome"], line["error"], line["attempts"]) == ("failed", "WriteScopeError", 0)


async def test_writes_inside_the_prefixes_work(scoped: Session) -> None:
    await scoped.ok("write_note", path="agents/plan.md", content="plan\n")
    await scoped.ok("write_note", path="./inbox//idea.md", content="idea\n")
    await scoped.ok("edit_note", path="agents/plan.md", edits=[{"oldText": "plan", "newText": "the plan"}])
    await scoped.ok("move_note", path="inbox/idea.md", newPath="agents/idea.md")
    await scoped.ok("delete_note", path="agents/idea.md")


@pytest.mark.parametrize(
    ("path", "new_path", "refused"),
    [
        ("agents/a.md", "people/a.md", "newPath 'people/a.md'"),  # the target
        ("people/a.md", "agents/a.md", "path 'people/a.md'"),  # the source
    ],
)
async def test_a_move_needs_both_ends_inside(scoped: Session, path: str, new_path: str, refused: str) -> None:
    scoped.seed(path, b"x\n")
    text, is_error = await scoped.call("move_note", path=path, newPath=new_path)
    assert is_error and f"move_note refused: {refused} is outside" in text
    assert scoped.writes_sent() == []


@pytest.mark.parametrize(
    "path",
    [
        "agents/../people/a.md",  # normalised first, like the server does
        "agentsX/a.md",  # a prefix is a folder, not a string prefix
        "Agents/a.md",  # case counts, as in every vault path
        "agents",  # the folder itself is not under it
    ],
)
async def test_paths_that_only_look_inside_are_refused(scoped: Session, path: str) -> None:
    text, is_error = await scoped.call("write_note", path=path, content="x\n")
    assert is_error and "refused" in text and "Nothing was sent" in text
    assert scoped.writes_sent() == []


async def test_every_write_tool_is_scoped(scoped: Session) -> None:
    scoped.seed("people/a.md", b"x\n")
    calls: dict[str, dict[str, Any]] = {
        "write_note": {"path": "people/a.md", "content": "y"},
        "edit_note": {"path": "people/a.md", "edits": [{"oldText": "x", "newText": "y"}]},
        "update_frontmatter": {"path": "people/a.md", "set": {"status": "done"}},
        "move_note": {"path": "people/a.md", "newPath": "people/b.md"},
        "delete_note": {"path": "people/a.md"},
        "restore_note_version": {"path": "people/a.md", "version": 1},
    }
    assert set(calls) == {name for name, tool in scoped.runner.tools.items() if tool.writes}
    for tool, arguments in calls.items():
        text, is_error = await scoped.call(tool, **arguments)
        assert is_error and text.startswith(f"{tool} refused: path 'people/a.md' is outside"), text
    assert scoped.writes_sent() == []


async def test_reads_stay_unrestricted_and_the_agent_is_told_the_scope(scoped: Session) -> None:
    scoped.seed("people/a.md", b"hello\n")
    text, is_error = await scoped.call("read_note", path="people/a.md")
    assert (text, is_error) == ("hello\n", False)
    assert scoped.client.instructions is not None
    assert "Writes are limited to these folders: agents/, inbox/." in scoped.client.instructions


# -- write scopes per project (issue 13) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "everywhere", "per_project"),
    [
        ("agents/", ("agents/",), ()),
        ("p1:agents/", (), (("p1", "agents/"),)),
        ("agents, p1:inbox, p2:./notes//drafts", ("agents/",), (("p1", "inbox/"), ("p2", "notes/drafts/"))),
        ("p1:/, p2:", (), (("p1", ""), ("p2", ""))),  # all of a project
        (" p1 : agents ", (), (("p1", "agents/"),)),
        ("p1:a, p1:a/", (), (("p1", "a/"),)),
    ],
)
def test_write_prefixes_may_name_their_project(
    raw: str, everywhere: tuple[str, ...], per_project: tuple[tuple[str, str], ...]
) -> None:
    from teamvault_mcp.config import load_config

    config = load_config(
        {"TEAM_VAULT_URL": "https://v.example", "TEAM_VAULT_API_KEY": "k", "TEAM_VAULT_WRITE_PREFIXES": raw}
    )
    assert (config.write_prefixes, config.project_write_prefixes) == (everywhere, per_project)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (":agents/", "':agents/' names no project before the colon (use <projectId>:<folder>)."),
        ("p1:../x", "'p1:../x' is not a folder a note could be in (Parent traversal is not allowed)."),
        ("p1:.obsidian", "'p1:.obsidian' is not a folder a note could be in (Reserved folder name: .obsidian)."),
    ],
)
def test_bad_project_scopes_are_named(raw: str, problem: str) -> None:
    from teamvault_mcp.config import load_config
    from teamvault_mcp.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        load_config(
            {"TEAM_VAULT_URL": "https://v.example", "TEAM_VAULT_API_KEY": "k", "TEAM_VAULT_WRITE_PREFIXES": raw}
        )
    assert f"TEAM_VAULT_WRITE_PREFIXES: {problem}" in str(caught.value)


def test_which_folders_a_project_may_write() -> None:
    config = make_config(write_prefixes=("shared/",), project_write_prefixes=(("p1", "agents/"), ("p2", "")))
    assert config.write_prefixes_for("p1") == ("shared/", "agents/")
    assert config.write_prefixes_for("p2") == ("shared/", "")  # "" opens the whole project
    assert config.write_prefixes_for("p3") == ("shared/",)  # a bare prefix holds in every project
    only_scoped = make_config(project_write_prefixes=(("p1", "agents/"),))
    assert only_scoped.write_prefixes_for("p1") == ("agents/",)
    assert only_scoped.write_prefixes_for("p3") == ()  # fenced, and nothing opened there: no writes
    assert make_config().write_prefixes_for("p1") is None  # not fenced at all


async def open_two_projects(tmp_path: Path, prefixes: str) -> AsyncIterator[tuple[Session, str]]:
    """A session whose key reaches the default project and a second one, with these write prefixes."""
    from teamvault_mcp.config import load_config

    with LocalVault(tmp_path / "vault") as vault:
        other = vault.store.add_project("other", "Other", vault.store.owner_of(vault.project_id))
        prefixes = prefixes.replace("OTHER", other).replace("DEFAULT", vault.project_id)
        environ = {
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": vault.project_id,
            "TEAM_VAULT_CACHE_DIR": "off",
            "TEAM_VAULT_AUDIT_LOG": str(tmp_path / "audit.jsonl"),
            "TEAM_VAULT_WRITE_PREFIXES": prefixes,
        }
        runner = ToolRunner(load_config(environ), clock=SystemClock(), policy=FAST)
        async with Client(build_server(runner), mode="legacy") as client:
            yield Session(vault, client, runner, tmp_path / "audit.jsonl"), other


async def test_a_project_scope_fences_its_project_only_and_bare_prefixes_every_project(tmp_path: Path) -> None:
    async for session, other in open_two_projects(tmp_path, "shared/, OTHER:agents/"):
        await session.ok("write_note", path="shared/a.md", content="x\n")  # the default project: bare prefix
        await session.ok("write_note", path="shared/a.md", content="x\n", projectId=other)
        await session.ok("write_note", path="agents/a.md", content="x\n", projectId=other)
        text, is_error = await session.call("write_note", path="agents/a.md", content="x\n")
        assert is_error
        assert text == (
            f"write_note refused: path 'agents/a.md' is outside the folders this server may write to in project "
            f"{session.vault.project_id} (shared/; set by TEAM_VAULT_WRITE_PREFIXES). Nothing was sent. Write under "
            "one of them instead; reading stays possible everywhere."
        )
        assert [line["outcome"] for line in session.lines()] == ["applied", "applied", "applied", "failed"]
        assert session.client.instructions is not None
        assert (
            f"Writes are limited to these folders: shared/ (every project), agents/ (project {other}). "
            in session.client.instructions
        )


async def test_a_project_no_scope_opens_gets_no_writes_when_others_are_scoped(tmp_path: Path) -> None:
    async for session, other in open_two_projects(tmp_path, "OTHER:agents/"):
        await session.ok("write_note", path="agents/a.md", content="x\n", projectId=other)
        text, is_error = await session.call("write_note", path="agents/a.md", content="x\n")
        assert is_error
        assert text == (
            f"write_note refused: this server may not write in project {session.vault.project_id} at all "
            f"(TEAM_VAULT_WRITE_PREFIXES opens only: agents/ (project {other})). Nothing was sent. Reading stays "
            "possible everywhere; write in a project listed there, or ask whoever runs this server to add this one."
        )
        assert session.writes_sent() == [("POST", f"/api/projects/{other}/files")]
        _, failed = await session.call("list_notes")
        assert not failed  # reads stay unrestricted
        assert session.client.instructions is not None
        assert "; no writes at all in other projects." in session.client.instructions


async def test_a_whole_project_may_be_opened(tmp_path: Path) -> None:
    async for session, other in open_two_projects(tmp_path, "DEFAULT:agents/, OTHER:/"):
        await session.ok("write_note", path="anywhere/deep/a.md", content="x\n", projectId=other)
        text, is_error = await session.call("write_note", path="anywhere/a.md", content="x\n")
        assert is_error and "outside the folders this server may write to in project" in text
