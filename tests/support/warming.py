"""A search sent beside the warm-up, and a vault that holds the warm-up's archives until that search waits in
the warm-up's sync: the search meets the archives in flight by the order of events, not by a slow drip."""

from __future__ import annotations

import fnmatch
import threading
from typing import Any

import anyio
from mcp import Client

from support.waiting import GENEROUS, await_until
from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner

ARCHIVE = "/api/projects/*/folders/download"


async def search_beside_the_warm_up(
    runner: ToolRunner, vault: LocalVault, searching: threading.Event | None = None
) -> dict[str, Any]:
    """A search sent while the warm-up runs; ``searching`` is set once the call waits in the warm-up's sync
    (so it meets the archive in flight, whenever that lands). Its result's data, and the progress it reported."""
    progress: list[float] = []
    result: dict[str, Any] = {}

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with Client(build_server(runner), mode="legacy") as client, anyio.create_task_group() as group:

        async def search() -> None:
            answer = await client.call_tool("search_notes", {"query": "needle"}, progress_callback=on_progress)
            result.update(answer.structured_content or {"error": answer.content[0].text})

        group.start_soon(search)
        if searching is not None:
            sync = await sync_of(runner, vault)
            await await_until(lambda: sync.participants() == 2, "the search joining the warm-up's sync")
            searching.set()
    return {**result, "progress": progress}


def hold_archives_until(vault: LocalVault, searching: threading.Event, *, refuse: bool) -> None:
    """The vault answers an archive request only once ``searching`` is set: 404 (``refuse``, as a server
    without the route answers, and its probe too) or the archive."""

    def chooser(method: str, path: str) -> Fault | None:
        if not fnmatch.fnmatchcase(path, ARCHIVE):
            return None
        assert searching.wait(GENEROUS), "the search never joined the sync (or the machine is too slow)"
        return Fault.answer(404) if refuse else None

    vault.faults.chooser = chooser


def archive_requests(vault: LocalVault) -> int:
    """How many archive requests the vault has received (held ones too)."""
    return sum(1 for _, path in vault.faults.seen if fnmatch.fnmatchcase(path, ARCHIVE))


async def sync_of(runner: ToolRunner, vault: LocalVault) -> Any:
    """The warm-up's sync of the vault's project, once it exists."""
    await await_until(lambda: runner.workspace.sync.existing(vault.project_id) is not None, "the warm-up's sync")
    return runner.workspace.sync.existing(vault.project_id)
