"""The call pipeline: one tool call from its arguments to its result, in a worker thread.

A call gets one budget (time queued counts too) and one cancel token. Its arguments are
checked against the tool's declaration and, for a write, against TEAM_VAULT_WRITE_PREFIXES
before any request; then the handler runs in a worker thread, under a limiter of its own so
blocking calls can never take the threads the stdio transport reads and writes with. When
the host cancels (``notifications/cancelled`` cancels the request's anyio scope), the
cancellable await sets the token, which wakes the worker's pause and shuts its in-flight
socket down: the worker stops within milliseconds.

Errors of our tree become tool results with ``isError: true`` here, and only here; every
result is made sendable here too (no API key, valid Unicode, bounded nesting). Each write
tool call leaves one audit-log line.

What the calls share (indexes, caches, syncs, the pool, the tools, the audit log) is the
runner's :class:`~teamvault_mcp.server.workspace.Workspace`, not this module's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.from_thread
import anyio.lowlevel
import mcp.types as types

from teamvault_mcp.config import Config
from teamvault_mcp.errors import (
    CallCancelledError,
    CallStop,
    InternalError,
    InvalidPathError,
    NoWorkerError,
    OverdueError,
    TeamVaultError,
    ToolInputError,
    WriteScopeError,
    for_tools,
)
from teamvault_mcp.server.threads import CallThreads
from teamvault_mcp.server.workspace import Workspace
from teamvault_mcp.text.paths import stored_path_of
from teamvault_mcp.text.redact import Redactor
from teamvault_mcp.text.wire import map_strings, nesting_depth, valid_unicode
from teamvault_mcp.tools.context import Progress, ToolOutput
from teamvault_mcp.tools.note_locks import LOCK_RESERVE, NoteLocks
from teamvault_mcp.tools.spec import Tool
from teamvault_mcp.tools.table import not_offered
from teamvault_mcp.tools.writing.report import WriteReport
from teamvault_mcp.vault.ahead import ConnectionsAhead
from teamvault_mcp.vault.background import Foreground, WarmUp
from teamvault_mcp.vault.cache import ProjectCaches
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.observer import NO_OBSERVER
from teamvault_mcp.vault.retry import Budget, CallFailure, Clock, RetryPolicy, call_failure

if TYPE_CHECKING:
    from teamvault_mcp.server.metrics import Metrics
    from teamvault_mcp.vault.client import TeamVaultClient

log = logging.getLogger(__name__)

#: Seconds a cancelled call waits for its worker to stop (it stops within milliseconds: its socket is shut).
CANCEL_GRACE = 10.0


#: Tool calls running at once, each in a thread of ``threads.CallThreads`` (anyio's pool of 40 is left to the rest).
MAX_CONCURRENT_CALLS = 8

#: Deepest nesting of arrays and objects in a tool argument: no tool takes anything near it.
MAX_ARGUMENT_DEPTH = 64

#: Deepest nesting in a tool result (front matter read as JSON, say); the SDK cannot send beyond about 250.
MAX_RESULT_DEPTH = 100


class ToolRunner:
    """Runs tool calls in worker threads, one budget and one cancel token per call, on a :class:`Workspace`."""

    def __init__(
        self,
        config: Config,
        *,
        clock: Clock | None = None,
        policy: RetryPolicy | None = None,
        caches: ProjectCaches | None = None,
        audit_user: str | None = None,
        ahead: ConnectionsAhead | None = None,
        note_locks: NoteLocks | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """A runner on a workspace of its own, made of ``config`` and the rest (see :class:`Workspace`);
        ``metrics`` counts its calls and their requests (``serve --http --metrics``; None: nothing is counted)."""
        #: What the calls share: indexes, caches, syncs, the pool, the schemas and tools, the audit log.
        self.workspace = Workspace(
            config,
            clock=clock,
            policy=policy,
            caches=caches,
            audit_user=audit_user,
            ahead=ahead,
            note_locks=note_locks,
            observer=metrics if metrics is not None else NO_OBSERVER,
        )
        self._metrics = metrics
        self.config = config
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None  # made by the first call
        self._threads = CallThreads()
        self._active: set[CancelToken] = set()
        self._active_lock = threading.Lock()
        self._redactor = Redactor(config.api_key)

    def close(self) -> None:
        """End the call threads, stop the warm-up and close the workspace's pool (the server is going away)."""
        self._threads.close()
        self.workspace.close()

    def active_calls(self) -> int:
        with self._active_lock:
            return len(self._active)

    # -- the workspace's, read through the runner by those who start and stop it -------------------------------

    @property
    def foreground(self) -> Foreground:
        return self.workspace.foreground

    def start_warm_up(self) -> WarmUp:
        return self.workspace.start_warm_up()

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools this runner's calls find (the workspace's; a test's runner may add its own)."""
        return self.workspace.tools

    async def call(
        self, name: str, arguments: dict[str, Any] | None, report: ReportProgress | None = None
    ) -> types.CallToolResult:
        """Run one tool call; ``report`` sends progress to the host (None when it asked for none).

        The result is made safe to send whatever the server answered: never the API key, only
        valid Unicode, and nesting the SDK can serialise.
        """
        metrics = self._metrics
        if metrics is None:
            return self._deliverable(name, await self._call(name, arguments, report))
        started = self.workspace.clock.monotonic()
        outcome = "cancelled"  # unless an answer comes: the host cancelled, or the client went away
        try:
            result = self._deliverable(name, await self._call(name, arguments, report))
            outcome = "error" if result.is_error else "ok"
            return result
        finally:  # an unknown name counts as one label, not one each: clients choose names
            tool = name if name in self.tools else "unknown"
            metrics.tool_call(tool, outcome, self.workspace.clock.monotonic() - started)

    async def _call(self, name: str, arguments: dict[str, Any] | None, report: ReportProgress | None) -> ToolOutput:
        workspace = self.workspace
        budget = Budget(self.config.call_budget, workspace.clock)  # time spent queued counts too
        await workspace.schemas_ready()
        tool = self.tools.get(name)
        if tool is None:
            schemas = workspace.schemas.current.schemas if workspace.schemas is not None else None
            return error_output(not_offered(name, list(self.tools), self.config.read_only, schemas))
        try:
            _check_nesting(arguments or {})
            args = tool.check_arguments(arguments)
            self._check_write_scope(tool, args)
        except ToolInputError as error:
            refused = call_failure(error, write_sent=False)
            if tool.writes:
                self._audit(tool, arguments or {}, refused)
            return failed_output(refused, self.tools)
        token = CancelToken()
        progress = _progress_reporter(report, token) if report is not None else None
        watch = _Watch()
        output: ToolOutput | CallFailure = await self._in_worker(
            lambda: self._execute(tool, args, budget, token, progress, watch),
            token,
            budget,
            watch,
            late=lambda: self._overdue(tool, budget, watch),
        )
        if isinstance(output, CallFailure):
            return failed_output(output, self.tools)
        return output

    def _deliverable(self, name: str, output: ToolOutput) -> types.CallToolResult:
        """The result to send: one text block, and ``structuredContent`` only with TEAM_VAULT_STRUCTURED_CONTENT=on
        (hosts show the model one or the other, and some only a first block: each is whole on its own). Never the
        API key or lone surrogates; a tool error if the data nests too deeply to send."""
        structured = output.structured if self.config.structured_content else None
        if structured is not None and nesting_depth(structured, MAX_RESULT_DEPTH) > MAX_RESULT_DEPTH:
            log.warning("the result of %s nests more than %d levels deep; not sent", name, MAX_RESULT_DEPTH)
            output = error_output(
                f"The result of {name} nests arrays and objects more than {MAX_RESULT_DEPTH} levels deep, deeper "
                "than this server sends. Nothing of it was sent; read the note's text with read_note instead."
            )
            structured = output.structured

        def safe(text: str) -> str:
            return valid_unicode(self._redactor.text(text))

        return types.CallToolResult(
            content=[types.TextContent(type="text", text=safe(output.text))],
            structured_content=map_strings(structured, safe) if structured is not None else None,
            is_error=output.is_error,
        )

    def _check_write_scope(self, tool: Tool, args: dict[str, Any]) -> None:
        """Refuse a write naming any note outside TEAM_VAULT_WRITE_PREFIXES (for the call's project), before
        any request."""
        config = self.config
        project = args.get("projectId") or config.project_id
        prefixes = config.write_prefixes_for(project)
        if prefixes is None or not tool.writes:
            return
        # Name the project only where it matters: when some prefixes hold in one project alone.
        shown = project if config.project_write_prefixes else None
        for name, given in tool.written_paths(args):
            path = stored_path_of(given, incoming=True)
            if not path.startswith(prefixes):
                raise WriteScopeError(tool.name, name, path, prefixes, project=shown, scopes=config.write_scope_text())

    def _audit(
        self,
        tool: Tool,
        args: dict[str, Any],
        failed: CallFailure | None,
        *,
        client: TeamVaultClient | None = None,
        report: WriteReport | None = None,
    ) -> None:
        """One audit-log line for a write tool call, with every fact of its ``report`` (nothing when there is no
        audit log)."""
        audit = self.workspace.audit
        if audit is None:
            return
        report = report or WriteReport()
        replayed = bool(client is not None and client.replayed)
        entry: dict[str, Any] = {
            "tool": tool.name,
            "project": args.get("projectId") or self.config.project_id,
            "paths": report.paths if report.paths is not None else _audited_paths(tool, args),
            "idempotencyKey": client.idempotency_key if client is not None else None,
            "attempts": client.write_attempts if client is not None else 0,
            **report.audited(failed, replayed=replayed),
        }
        if failed is not None:
            entry["error"] = type(failed.error).__name__
        audit.record(entry)

    def _execute(
        self,
        tool: Tool,
        args: dict[str, Any],
        budget: Budget,
        token: CancelToken,
        progress: Progress | None,
        watch: _Watch,
    ) -> ToolOutput | CallFailure:
        """The worker thread's part: one client for the call (shown to ``watch``), the handler, errors as values."""
        with self._active_lock:
            self._active.add(token)
        workspace = self.workspace
        workspace.foreground.enter()
        client = workspace.client(budget, token)
        watch.clients.append(client)
        context = workspace.context(client, budget, token, project_id=args.get("projectId"), progress=progress)
        error: CallStop | None = None
        if tool.writes:  # this call's own reads, and every call after it, see the vault as the write left it
            workspace.kept_listings.forget()
        try:
            with self._notes_held(tool, args, budget, token):
                output = tool.handler(context, args)
        except CallCancelledError as cancelled:
            if watch.overdue.is_set():  # stopped at the end of its budget, not by the host
                error = OverdueError(tool.name, budget.seconds)
            else:
                if tool.writes:
                    log.warning("%s was cancelled; the change may or may not have been applied", tool.name)
                error = cancelled
        except TeamVaultError as failed:
            error = failed
        except RecursionError:  # a parser recursing into data nested hundreds of levels (a note's YAML, say)
            log.warning("%s reached the recursion limit", tool.name, exc_info=True)
            error = InternalError(
                f"{tool.name} stopped: something it read (a note's front matter, say) nests lists or objects "
                "hundreds of levels deep, deeper than this server can process. Read the note with read_note to "
                "see it; fix that text, then try again."
            )
        except Exception as bug:  # the one place a bug becomes a message instead of a dead server
            log.exception("internal error in %s", tool.name)
            error = InternalError(
                f"Internal error in {tool.name}: {type(bug).__name__}: {bug}. "
                "This is a bug in teamvault-mcp; the server keeps running."
            )
        finally:
            if tool.writes:
                workspace.kept_listings.forget()
            client.close()
            workspace.foreground.leave()
            with self._active_lock:
                self._active.discard(token)
        # Only a write request that was sent can have been applied.
        ended = call_failure(error, write_sent=tool.writes and client.write_attempts > 0) if error is not None else None
        if tool.writes:
            self._audit(tool, args, ended, client=client, report=context.report)
        return ended if ended is not None else output

    def _notes_held(
        self, tool: Tool, args: dict[str, Any], budget: Budget, token: CancelToken
    ) -> contextlib.AbstractContextManager[bool]:
        """For a write, the locks of the notes it names, held for the whole call (its reads included): two
        writes of this server to one note never run at once (``tools/note_locks.py``)."""
        if not tool.writes:
            return contextlib.nullcontext(False)
        paths = []
        for _, given in tool.written_paths(args):
            try:
                paths.append(stored_path_of(given))
            except InvalidPathError:
                continue  # the handler refuses it, with the rule
        project = str(args.get("projectId") or self.config.project_id or "")
        return self.workspace.note_locks.holding(
            project, paths, seconds=lambda: budget.remaining() - LOCK_RESERVE, cancelled=lambda: token.cancelled
        )

    async def _in_worker(
        self,
        work: Callable[[], Any],
        token: CancelToken,
        budget: Budget,
        watch: _Watch,
        *,
        late: Callable[[], CallFailure],
    ) -> Any:
        """Run ``work`` in a call thread; if this task is cancelled meanwhile, cancel ``token`` at once.

        After a cancel the thread is not abandoned: the slot and this task both last exactly as
        long as the work does, which then is a few milliseconds. (Waiting for a slot and for the
        work is cancellable, so the cancel reaches the token without a watcher task per call.)
        Work still running when the budget ends is stopped (``watch.overdue`` says why), and
        answered with ``late()`` if it has not stopped ``threads.LATE_GRACE`` seconds later: every
        call is answered by then, whatever its work does (a CPU-bound step the token cannot
        reach runs on). Tools plan to answer a second before the budget ends; this is the backstop.
        """

        def stop() -> None:
            watch.overdue.set()
            token.cancel()

        abandoned = False

        def answer_late() -> CallFailure:
            nonlocal abandoned
            abandoned = True  # its slot is freed when its thread returns, not now: the work is still running
            return late()

        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            # asyncio's semaphore takes a free slot without a turn of the loop (anyio's limiter takes one).
            self._slots = (loop, asyncio.Semaphore(MAX_CONCURRENT_CALLS))
        slots = self._slots[1]
        if slots.locked():  # waiting here is cancellable (a queued call never starts) and bounded by the budget
            try:
                await asyncio.wait_for(slots.acquire(), max(budget.remaining(), 0.0))
            except TimeoutError:
                return call_failure(NoWorkerError(MAX_CONCURRENT_CALLS, budget.seconds), write_sent=False)
        else:
            await slots.acquire()
        try:
            return await self._threads.run(
                work,
                on_cancel=token.cancel,
                grace=CANCEL_GRACE,
                limit=budget.remaining(),
                on_late=stop,
                late=answer_late,
                ended_late=slots.release,
            )
        finally:
            if not abandoned:
                slots.release()

    def _overdue(self, tool: Tool, budget: Budget, watch: _Watch) -> CallFailure:
        """The answer to a call whose work did not stop at the end of its budget (see :meth:`_in_worker`)."""
        log.warning("%s was still working at the end of its budget; answered without it", tool.name)
        sent = tool.writes and any(client.write_attempts > 0 for client in watch.clients)
        return call_failure(OverdueError(tool.name, budget.seconds), write_sent=sent)


@dataclass
class _Watch:
    """What the event loop sees of a call's work in its thread: the call's client, once made (did a write go
    out?), and whether the end of the budget stopped it (then its cancel is not the host's)."""

    clients: list[TeamVaultClient] = field(default_factory=list)
    overdue: threading.Event = field(default_factory=threading.Event)


def error_output(text: str, facts: dict[str, Any] | None = None) -> ToolOutput:
    """A tool error: its message is the text, and the data (when structured content is on) says it again under
    ``error``, with what the error knows as data (``spec.ERROR``: every output schema admits it)."""
    return ToolOutput(text, {"error": {"message": text, **(facts or {})}}, is_error=True)


def failed_output(ended: CallFailure, offered: Collection[str]) -> ToolOutput:
    """The result of a call that failed: the message, worded for the tools ``offered`` (those registered: it
    names no other), and whether the change may or may not have been applied."""
    text = for_tools(ended.text, ended.error, offered)
    return error_output(text, {**ended.error.facts(), "mayHaveBeenApplied": ended.uncertain})


def _audited_paths(tool: Tool, args: dict[str, Any]) -> list[str]:
    """The paths a write names, as the audit log shows them: the stored spelling where valid, else as given."""
    try:
        named = tool.written_paths(args)
    except ToolInputError:  # arguments too broken to make a path of
        return []
    paths = []
    for _, path in named:
        try:
            paths.append(stored_path_of(path, incoming=True))
        except InvalidPathError:
            paths.append(path)
    return paths


ReportProgress = Callable[[float, float | None, str | None], Awaitable[None]]


def _progress_reporter(report: ReportProgress, token: CancelToken) -> Progress:
    """A progress function for worker threads: back to the event loop, and silent once cancelled."""
    loop = anyio.lowlevel.current_token()

    async def send(done: float, total: float | None, message: str) -> None:
        if not token.cancelled:  # checked again on the loop: the cancel is set there too
            await report(done, total, message)

    def progress(done: float, total: float | None, message: str) -> None:
        if not token.cancelled:
            anyio.from_thread.run(send, done, total, message, token=loop)

    return progress


def _check_nesting(arguments: dict[str, Any]) -> None:
    """Refuse an argument nested deeper than :data:`MAX_ARGUMENT_DEPTH` before anything walks it."""
    for name, value in arguments.items():
        if nesting_depth(value, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
            raise ToolInputError(
                f"Argument {valid_unicode(str(name))[:80]!r} nests arrays and objects more than {MAX_ARGUMENT_DEPTH} "
                "levels deep; no argument of any tool goes near that. Nothing was sent."
            )
