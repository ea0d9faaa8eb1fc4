"""Within one process, writes to one note never race (issue 26, part 2): they take turns, note by note.

A host sends parallel calls, and a team's agents share one ``serve --http``: without conditional writes (as
today's Team Vault server) two writes of one process to one note at once used to meet at the server, and
the one that lost needed the version history to repair it. Now each write call holds the lock of the notes
it names for the whole call, read included, and each content write holds its note's lock while it writes
and checks (``tools/note_locks.py``). Proven here by counting: every acknowledged change is in the note
exactly once, conflicts are said before anything is written, and no repair write is ever needed (as many
PUTs as changes). The warm-up is off (``TEAM_VAULT_PREFETCH``): these tests count the vault's requests.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.fakes import make_config
from support.sessions import Session, open_session
from support.waiting import GENEROUS

from teamvault_mcp.errors import CallCancelledError, NoteBusyError
from teamvault_mcp.http_config import HttpConfig
from teamvault_mcp.server.http import Callers
from teamvault_mcp.tools.note_locks import NoteLocks

pytestmark = pytest.mark.anyio

WRITERS = 16
LOG = "# Team log\n\n## Log\n\n## Done\n"


@pytest.fixture(params=[False, True], ids=["history", "conditional"])
async def session(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Session]:
    options = {"conditional_writes": request.param}
    async with open_session(tmp_path, vault_options=options, prefetch=False, call_budget=60.0) as running:
        yield running


async def all_at_once(session: Session, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, bool]]:
    """The calls sent together, as a host sends parallel calls; (text, is_error) of each, in order."""
    results: list[tuple[str, bool]] = [("", True)] * len(calls)

    async def one(index: int, tool: str, arguments: dict[str, Any]) -> None:
        results[index] = await session.texts(tool, **arguments)

    async with anyio.create_task_group() as group:
        for index, (tool, arguments) in enumerate(calls):
            group.start_soon(one, index, tool, arguments)
    return results


def puts(session: Session) -> int:
    return sum(1 for method, _ in session.writes_sent() if method == "PUT")


def entries(text: str) -> Counter[str]:
    return Counter(line for line in text.splitlines() if line.startswith("- entry"))


async def test_sixteen_parallel_appends_each_land_once_with_no_repair(session: Session) -> None:
    session.seed("log.md", LOG)
    calls = [
        ("edit_note", {"path": "log.md", "edits": [{"oldText": "## Log\n", "newText": f"## Log\n- entry {n}\n"}]})
        for n in range(WRITERS)
    ]
    results = await all_at_once(session, calls)
    assert [text for text, is_error in results if is_error] == []
    assert entries(session.text("log.md")) == Counter(f"- entry {n}" for n in range(WRITERS))
    assert puts(session) == WRITERS  # one write each: none had to be made again or put back


async def test_the_readme_recipe_in_one_process_is_exact_and_conflicts_write_nothing(session: Session) -> None:
    """Read, edit with the hash, read again on a conflict: sixteen agents of one host at once."""
    session.seed("recipe.md", "# Log\n")
    pending = set(range(WRITERS))
    conflicts = 0
    for _ in range(4 * WRITERS):
        if not pending:
            break
        agents = sorted(pending)
        reads = await all_at_once(session, [("read_note", {"path": "recipe.md"})] * len(agents))
        hashes = [re.match(r"\[contentHash: ([0-9a-f]{12})\]", text).group(1) for text, _ in reads]  # type: ignore[union-attr]
        edits = [
            (
                "edit_note",
                {
                    "path": "recipe.md",
                    "edits": [{"oldText": "# Log\n", "newText": f"# Log\n- entry {agent}\n"}],
                    "expectedHash": expected,
                },
            )
            for agent, expected in zip(agents, hashes, strict=True)
        ]
        for agent, (text, is_error) in zip(agents, await all_at_once(session, edits), strict=True):
            if is_error:
                assert text.startswith("Conflict: recipe.md has changed since you read it"), text
                conflicts += 1
            else:
                pending.discard(agent)
    assert not pending
    assert entries(session.text("recipe.md")) == Counter(f"- entry {n}" for n in range(WRITERS))
    assert puts(session) == WRITERS and conflicts > 0  # a conflict is found before its write: nothing to undo


async def test_different_tools_on_one_note_at_once_each_land_once(session: Session) -> None:
    session.seed("plan.md", "---\nstatus: draft\n---\n# Plan\n\n## Tasks\n- [ ] one\n\n## Notes\n")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("edit_note", {"path": "plan.md", "edits": [{"oldText": "- [ ] one", "newText": "- [x] one"}]}),
        ("edit_section", {"path": "plan.md", "section": ["Plan", "Notes"], "content": "- noted"}),
        ("update_frontmatter", {"path": "plan.md", "set": {"status": "active", "owner": "Ada"}}),
        ("edit_section", {"path": "plan.md", "section": ["Plan", "Tasks"], "content": "- [ ] two"}),
    ]
    results = await all_at_once(session, calls)
    assert [text for text, is_error in results if is_error] == []
    text = session.text("plan.md")
    for line in ("- [x] one", "- noted", "status: active", "owner: Ada", "- [ ] two"):
        assert text.count(line) == 1, (line, text)
    assert puts(session) == len(calls)


async def test_a_write_that_cannot_have_its_note_in_time_fails_and_writes_nothing(tmp_path: Path) -> None:
    async with open_session(tmp_path, prefetch=False, call_budget=3.0) as session:
        session.seed("log.md", LOG)
        held, release = threading.Event(), threading.Event()

        def hold() -> None:  # another call of this server, writing the note for longer than the budget
            with session.runner.workspace.note_locks.holding(
                session.vault.project_id, ["log.md"], seconds=lambda: 60.0, cancelled=lambda: False
            ):
                held.set()
                release.wait(60)

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            assert held.wait(GENEROUS), "the other call never took the lock (or the machine is too slow)"
            edit = {"oldText": "## Log\n", "newText": "## Log\n- mine\n"}
            text, is_error = await session.texts("edit_note", path="log.md", edits=[edit])
        finally:
            release.set()
            holder.join()
        assert is_error and text.startswith("log.md is being written by another call of this server"), text
        assert "nothing was written" in text and "may or may not" not in text
        assert session.writes_sent() == [] and session.text("log.md") == LOG
        assert len(session.runner.workspace.note_locks) == 0  # nothing kept once nobody holds or waits


def test_a_lock_is_reentrant_kept_only_while_held_and_a_wait_ends_on_cancel() -> None:
    locks = NoteLocks()
    with locks.holding("p", ["a.md", "b.md"], seconds=lambda: 1.0, cancelled=lambda: False) as fresh:
        assert fresh and len(locks) == 2
        with locks.holding("p", ["a.md"], seconds=lambda: 1.0, cancelled=lambda: False) as again:
            assert not again  # this thread holds it already
        outcome: list[BaseException] = []

        def other(cancelled: bool) -> None:
            try:
                with locks.holding("p", ["b.md"], seconds=lambda: 0.2, cancelled=lambda: cancelled):
                    pass
            except (NoteBusyError, CallCancelledError) as error:
                outcome.append(error)

        for cancelled in (False, True):
            waiter = threading.Thread(target=other, args=(cancelled,))
            waiter.start()
            waiter.join(10)
        assert [type(error) for error in outcome] == [NoteBusyError, CallCancelledError]
    assert len(locks) == 0


def test_every_runner_of_one_http_server_shares_the_note_locks() -> None:
    """``serve --http --key-from-client`` runs each key's calls in a runner of its own: a team's agents writing
    one note take turns all the same."""
    http = HttpConfig(host="127.0.0.1", port=0, token=None, key_from_client=True)
    callers = Callers(make_config(api_key="", project_id=None), http)
    try:
        first, second = callers._runner(callers.config, "u1"), callers._runner(callers.config, "u2")
        assert first.workspace.note_locks is second.workspace.note_locks is callers.template.workspace.note_locks
    finally:
        callers.close()
