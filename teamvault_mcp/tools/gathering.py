"""The notes of a project, gathered cheaply within the call's budget: what search and the link index read.

One listing gives every note's ``contentHash``; a note is taken from the in-memory index, else
from the disk cache, else downloaded (8 at a time) and then cached. Downloading stops when the
call's budget runs low or the host cancels; the caller then answers with what it has, marked
partial. Shared by the tool families that read every note of a folder or vault (search_notes,
replace_in_notes, the link index), so it imports none of them.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import queue
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from teamvault_mcp.errors import CallCancelledError, TeamVaultError
from teamvault_mcp.text.search import Indexed, SearchIndex
from teamvault_mcp.tools.context import ToolContext

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import VaultFile

PARALLEL_DOWNLOADS = 8
#: Downloads stop when less than this is left of the call's budget: time to search, rank and answer.
RESERVE_SECONDS = 2.5
#: At most one progress notification per this many seconds.
PROGRESS_EVERY = 0.25


@dataclass
class Gathered:
    """The notes a search can look at, and what it could not get."""

    ready: list[tuple[VaultFile, Indexed]]
    not_searched: int = 0
    downloaded: int = 0
    why_partial: str = ""


class _CollectorPause:
    """Counts the searches that hold off the cyclic garbage collector; the last one out resumes it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders = 0
        self.resume = False


_collector = _CollectorPause()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector while a search scores notes (reference counting still frees).

    Full collections walk every object, and the search index holds many: on a 10,000-note
    vault they cost a third of a warm search. Nested and concurrent pauses are counted.
    """
    with _collector.lock:
        if _collector.holders == 0:
            _collector.resume = gc.isenabled()
            gc.disable()
        _collector.holders += 1
    try:
        yield
    finally:
        with _collector.lock:
            _collector.holders -= 1
            if _collector.holders == 0 and _collector.resume:
                gc.enable()


def gather(ctx: ToolContext, project_id: str, files: list[VaultFile]) -> Gathered:
    """Every note's content: from memory, from the disk cache, or downloaded while the budget allows."""
    index = ctx.index if ctx.index is not None else SearchIndex()
    cache = ctx.cache_for(project_id) if ctx.cache_for is not None else None
    gathered = Gathered([])
    missing: list[VaultFile] = []
    for file in files:
        entry = index.get(file.content_hash) if file.content_hash else None
        if entry is None and cache is not None and file.content_hash:
            data = cache.get(file.content_hash, file.size)
            if data is not None:
                entry = index.add(file.content_hash, data.decode("utf-8", errors="replace"))
        if entry is None:
            missing.append(file)
        else:
            gathered.ready.append((file, entry))
    if missing:
        _download(ctx, project_id, missing, gathered, index)
    return gathered


def _download(
    ctx: ToolContext, project_id: str, missing: list[VaultFile], gathered: Gathered, index: SearchIndex
) -> None:
    """Fetch ``missing`` with up to 8 workers, each with a client of its own; stop early rather than run out."""
    cache = ctx.cache_for(project_id) if ctx.cache_for is not None else None
    todo: queue.SimpleQueue[VaultFile] = queue.SimpleQueue()
    for file in missing:
        todo.put(file)
    lock = threading.Lock()
    stopped: list[str] = []
    last_report = [0.0]

    def keep_going() -> bool:
        if ctx.token is not None and ctx.token.cancelled:
            stopped.append("the call was cancelled")
        elif ctx.budget is not None and ctx.budget.remaining() < RESERVE_SECONDS:
            stopped.append("the call's time budget ran out")
        return not stopped

    def worker() -> None:
        client = ctx.client.fork()
        try:
            while keep_going():
                try:
                    file = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    data = client.download(project_id, file.id)
                except CallCancelledError:
                    stopped.append("the call was cancelled")
                    return
                except TeamVaultError:
                    continue  # counted as not searched below; one unreadable note does not stop the search
                content_hash = hashlib.sha256(data).hexdigest()
                if cache is not None:
                    cache.put(content_hash, data)
                entry = index.add(content_hash, data.decode("utf-8", errors="replace"))
                with lock:
                    gathered.ready.append((file, entry))
                    gathered.downloaded += 1
                    done = gathered.downloaded
                _report(ctx, done, len(missing), last_report, lock)
        finally:
            client.close()

    with ThreadPoolExecutor(max_workers=min(PARALLEL_DOWNLOADS, len(missing)), thread_name_prefix="search") as pool:
        for _ in range(min(PARALLEL_DOWNLOADS, len(missing))):
            pool.submit(worker)
    gathered.not_searched = len(missing) - gathered.downloaded
    if gathered.not_searched:
        gathered.why_partial = stopped[0] if stopped else "some notes could not be downloaded"


def _report(ctx: ToolContext, done: int, total: int, last: list[float], lock: threading.Lock) -> None:
    if ctx.progress is None:
        return
    now = time.monotonic()
    with lock:
        if done < total and now - last[0] < PROGRESS_EVERY:
            return
        last[0] = now
    ctx.progress(done, total, f"downloaded {done} of {total} notes to search")
