"""The audit log (TEAM_VAULT_AUDIT_LOG) and write scopes (TEAM_VAULT_WRITE_PREFIXES).

Tools run through a real MCP client (in-memory streams) against a local vault on
loopback sockets, whose faults the tests script.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from support.fakes import make_config
from support.policies import FAST
from support.seeding import digest
from support.sessions import Session, open_session
from support.waiting import await_until

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.localvault.store import Change
from teamvault_mcp.server.audit import AuditLog
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.vault.retry import SystemClock

pytestmark = pytest.mark.anyio

FILE = "/api/projects/*/files/*"


def log_of(session: Session) -> Path:
    assert session.runner.config.audit_log is not None
    return session.runner.config.audit_log


def logged(session: Session) -> list[dict[str, Any]]:
    """The audit log's lines, parsed (none when it does not exist yet)."""
    path = session.runner.config.audit_log
    if path is None or not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@asynccontextmanager
async def audited(tmp_path: Path, **config: Any) -> AsyncIterator[Session]:
    """A session on a fresh vault whose server keeps its audit log in ``tmp_path``."""
    async with open_session(
        tmp_path, **{"audit_log": tmp_path / "audit.jsonl", "structured_content": True, **config}
    ) as running:
        yield running


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with audited(tmp_path) as running:
        yield running


@pytest.fixture
async def scoped(tmp_path: Path) -> AsyncIterator[Session]:
    async with audited(tmp_path, write_prefixes=("agents/", "inbox/")) as running:
        yield running


# -- the audit log --------------------------------------------------------------------------------


async def test_a_write_is_one_line_with_who_what_and_how_it_ended(session: Session) -> None:
    await session.ok("write_note", path="./notes//a.md", content="secret content\n")
    [line] = logged(session)
    assert line["tool"] == "write_note"
    assert line["project"] == session.vault.project_id
    assert line["paths"] == ["notes/a.md"]
    assert uuid.UUID(line["idempotencyKey"])
    assert line["attempts"] == 1
    assert line["outcome"] == "applied"
    assert line["hashBefore"] is None and line["hashAfter"] == digest("secret content\n")
    assert line["time"].endswith("Z") and line["time"][:2] == "20"
    written = log_of(session).read_text()
    assert "secret content" not in written
    assert session.vault.api_key not in written


async def test_the_key_in_the_log_is_the_one_the_server_saw(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="x\n")
    keys = [op["idempotencyKey"] for op in session.vault.store.operations(session.vault.project_id)]
    assert keys == [logged(session)[-1]["idempotencyKey"]]


async def test_reads_are_not_audited(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="x\n")
    await session.ok("read_note", path="a.md")
    await session.ok("list_notes")
    await session.ok("search_notes", query="x")
    assert [line["tool"] for line in logged(session)] == ["write_note"]


async def test_a_retried_write_answered_by_replay_is_replayed(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")
    session.vault.faults.add("PUT", FILE, Fault.apply_then_close())
    await session.ok("write_note", path="a.md", content="after\n")
    line = logged(session)[-1]
    assert (line["outcome"], line["attempts"]) == ("replayed", 2)
    assert (line["hashBefore"], line["hashAfter"]) == (digest("before\n"), digest("after\n"))


async def test_a_write_settled_by_a_check_is_applied_and_verified(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")
    session.vault.faults.add("PUT", FILE, Fault.apply_then_close(), times=4)  # 3 attempts + the free resend
    await session.ok("write_note", path="a.md", content="after\n")
    line = logged(session)[-1]
    assert (line["outcome"], line["attempts"], line["verified"]) == ("applied", 4, True)  # every send counts


async def test_a_conflict_is_failed_with_no_attempt(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")
    _, is_error, _ = await session.call("write_note", path="a.md", content="mine\n", expectedHash="0" * 64)
    assert is_error
    line = logged(session)[-1]
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
    _, is_error, _ = await session.call("write_note", path="a.md", content="mine\n")
    assert is_error
    line = logged(session)[-1]
    assert (line["outcome"], line["attempts"], line["error"]) == ("uncertain", 4, "NetworkError")


async def test_a_dry_run_and_an_edit_that_changes_nothing_are_noop(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="one two\n")
    await session.ok("edit_note", path="a.md", edits=[{"oldText": "one", "newText": "1"}], dryRun=True)
    assert logged(session)[-1]["outcome"] == "noop" and logged(session)[-1]["attempts"] == 0
    await session.ok("edit_note", path="a.md", edits=[{"oldText": "one", "newText": "one"}])
    assert logged(session)[-1]["outcome"] == "noop"
    assert logged(session)[-1]["hashBefore"] == logged(session)[-1]["hashAfter"] == digest("one two\n")


async def test_a_move_names_both_paths_and_a_delete_has_no_hash_after(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="x\n")
    await session.ok("move_note", path="a.md", newPath="done/a.md")
    assert logged(session)[-1]["paths"] == ["a.md", "done/a.md"]
    assert logged(session)[-1]["outcome"] == "applied"
    await session.ok("delete_note", path="done/a.md")
    line = logged(session)[-1]
    assert (line["tool"], line["paths"], line["hashBefore"], line["hashAfter"]) == (
        "delete_note",
        ["done/a.md"],
        digest("x\n"),
        None,
    )


async def test_bad_arguments_to_a_write_are_failed_lines(session: Session) -> None:
    _, is_error, _ = await session.call("write_note", path="../a.md", content="x")
    assert is_error
    line = logged(session)[-1]
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
    await await_until(lambda: len(logged(session)) >= 2, "the cancelled write's audit line")
    line = logged(session)[-1]
    assert (line["outcome"], line["attempts"], line["error"]) == ("cancelled", 1, "CallCancelledError")


async def test_concurrent_writes_give_one_whole_line_each(session: Session) -> None:
    async def write(number: int) -> None:
        await session.ok("write_note", path=f"n{number}.md", content="x" * 5000)

    async with anyio.create_task_group() as group:
        for number in range(16):
            group.start_soon(write, number)
    lines = logged(session)  # each parses as JSON: none interleaved
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
    async with audited(tmp_path, audit_log=tmp_path / "missing-folder" / "audit.jsonl") as session:
        with caplog.at_level(logging.ERROR, logger="teamvault_mcp"):
            await session.ok("write_note", path="a.md", content="x\n")
            await session.ok("write_note", path="b.md", content="y\n")
    reports = [record.getMessage() for record in caplog.records if "audit log" in record.getMessage()]
    assert len(reports) == 1
    assert "cannot write the audit log" in reports[0] and "missing-folder" in reports[0]


async def test_no_audit_log_unless_configured(tmp_path: Path) -> None:
    async with audited(tmp_path, audit_log=None) as session:
        await session.ok("write_note", path="a.md", content="x\n")
        assert session.runner.workspace.audit is None
    assert list(tmp_path.glob("*.jsonl")) == []


# -- write scopes ---------------------------------------------------------------------------------


async def test_a_write_outside_the_prefixes_is_refused_before_any_request(scoped: Session) -> None:
    text, is_error, _ = await scoped.call("write_note", path="people/ada.md", content="x\n")
    assert is_error
    assert text == (
        "write_note refused: path 'people/ada.md' is outside the folders this server may write to "
        "(agents/, inbox/; set by TEAM_VAULT_WRITE_PREFIXES). Nothing was sent. Write under one of them instead; "
        "reading stays possible everywhere."
    )
    assert scoped.vault.faults.seen == []
    line = logged(scoped)[-1]
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
    text, is_error, _ = await scoped.call("move_note", path=path, newPath=new_path)
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
    text, is_error, _ = await scoped.call("write_note", path=path, content="x\n")
    assert is_error and "refused" in text and "Nothing was sent" in text
    assert scoped.writes_sent() == []


async def test_every_write_tool_is_scoped(scoped: Session) -> None:
    scoped.seed("people/a.md", b"x\n")
    calls: dict[str, dict[str, Any]] = {
        "write_note": {"path": "people/a.md", "content": "y"},
        "edit_note": {"path": "people/a.md", "edits": [{"oldText": "x", "newText": "y"}]},
        "edit_section": {"path": "people/a.md", "section": [], "content": "y"},
        "update_frontmatter": {"path": "people/a.md", "set": {"status": "done"}},
        "move_note": {"path": "people/a.md", "newPath": "people/b.md"},
        "delete_note": {"path": "people/a.md"},
        "restore_note_version": {"path": "people/a.md", "version": 1},
    }
    assert set(calls) | {"replace_in_notes"} == {
        name for name, tool in scoped.runner.workspace.tools.items() if tool.writes
    }
    for tool, arguments in calls.items():
        text, is_error, _ = await scoped.call(tool, **arguments)
        assert is_error and text.startswith(f"{tool} refused: path 'people/a.md' is outside"), text
    # replace_in_notes names no note up front: it finds them, and when every one is outside the scope says so first
    text, is_error, _ = await scoped.call("replace_in_notes", find="x", replace="y", dryRun=False)
    assert is_error and text.startswith("Nothing was written: every note with a match of"), text
    assert "is outside the folders this server may write to (agents/, inbox/;" in text and "people/a.md (1)" in text
    assert scoped.writes_sent() == []


async def test_reads_stay_unrestricted_and_the_agent_is_told_the_scope(scoped: Session) -> None:
    scoped.seed("people/a.md", b"hello\n")
    text, is_error, _ = await scoped.call("read_note", path="people/a.md")
    assert (text.partition("\n")[2], is_error) == ("hello\n", False)  # under its [contentHash: …] line
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
            yield Session(vault, client, runner, []), other


async def test_a_project_scope_fences_its_project_only_and_bare_prefixes_every_project(tmp_path: Path) -> None:
    async for session, other in open_two_projects(tmp_path, "shared/, OTHER:agents/"):
        await session.ok("write_note", path="shared/a.md", content="x\n")  # the default project: bare prefix
        await session.ok("write_note", path="shared/a.md", content="x\n", projectId=other)
        await session.ok("write_note", path="agents/a.md", content="x\n", projectId=other)
        text, is_error, _ = await session.call("write_note", path="agents/a.md", content="x\n")
        assert is_error
        assert text == (
            f"write_note refused: path 'agents/a.md' is outside the folders this server may write to in project "
            f"{session.vault.project_id} (shared/; set by TEAM_VAULT_WRITE_PREFIXES). Nothing was sent. Write under "
            "one of them instead; reading stays possible everywhere."
        )
        assert [line["outcome"] for line in logged(session)] == ["applied", "applied", "applied", "failed"]
        assert session.client.instructions is not None
        assert (
            f"Writes are limited to these folders: shared/ (every project), agents/ (project {other}). "
            in session.client.instructions
        )


async def test_a_project_no_scope_opens_gets_no_writes_when_others_are_scoped(tmp_path: Path) -> None:
    async for session, other in open_two_projects(tmp_path, "OTHER:agents/"):
        await session.ok("write_note", path="agents/a.md", content="x\n", projectId=other)
        text, is_error, _ = await session.call("write_note", path="agents/a.md", content="x\n")
        assert is_error
        assert text == (
            f"write_note refused: this server may not write in project {session.vault.project_id} at all "
            f"(TEAM_VAULT_WRITE_PREFIXES opens only: agents/ (project {other})). Nothing was sent. Reading stays "
            "possible everywhere; write in a project listed there, or ask whoever runs this server to add this one."
        )
        assert session.writes_sent() == [("POST", f"/api/projects/{other}/files")]
        _, failed, _ = await session.call("list_notes")
        assert not failed  # reads stay unrestricted
        assert session.client.instructions is not None
        assert "; no writes at all in other projects." in session.client.instructions


async def test_a_whole_project_may_be_opened(tmp_path: Path) -> None:
    async for session, other in open_two_projects(tmp_path, "DEFAULT:agents/, OTHER:/"):
        await session.ok("write_note", path="anywhere/deep/a.md", content="x\n", projectId=other)
        text, is_error, _ = await session.call("write_note", path="anywhere/a.md", content="x\n")
        assert is_error and "outside the folders this server may write to in project" in text
