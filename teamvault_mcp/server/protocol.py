"""The MCP protocol: the server's instructions, ``tools/list`` and ``tools/call`` on the ``mcp`` low-level
``Server``, and serving it over stdio until the host closes stdin or :class:`ServeStop` is requested.

A tool call is handed to :class:`~teamvault_mcp.server.runner.ToolRunner`, which runs it in a
worker thread and turns every error into a tool result; the stdio transports are ``lean.py``
(the default) and ``stdio.py`` (the SDK's, with the guards both use).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server

from teamvault_mcp import __version__
from teamvault_mcp.config import Config
from teamvault_mcp.server import lean as lean_stdio
from teamvault_mcp.server.runner import CANCEL_GRACE, ToolRunner
from teamvault_mcp.server.stdio import serve_stdio
from teamvault_mcp.tools.spec import Tool

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
Tools for a Team Vault: a shared Obsidian vault that people edit at the same time.
- Paths: notes are named by vault path ('people/kuzma-minin.md'), case-sensitive, '/' between folders.
- Find: search_notes(query) for what notes say (each hit gives a tocPath to read just that section); \
find_notes(query) for a note whose name you roughly know.
- Read frugally: list_notes(prefix='people/', depth=1) to see a folder without its whole subtree; \
note_outline(path) for a note's headings, note_outline(path, tocPath=[...]) to go one level down; \
then read_note(path, section=[...]) or read_note(path, startLine=, endLine=) for just that part; \
read_notes(paths=[...]) for several notes at once. Anything cut says so and gives the call that reads the rest.
- Write carefully: others edit these notes too. Change part of a note with \
edit_note(path, edits=[{oldText, newText}], expectedHash=<the contentHash your read returned>) rather than rewriting \
it with write_note, and check the diff it returns. A conflict means someone changed the note: read it again. \
list_note_versions, diff_note_versions and restore_note_version look back and undo; nothing is ever lost.
- Properties (the YAML front matter at a note's top): read_frontmatter(path), and \
update_frontmatter(path, set={...}, remove=[...]) to change fields; never rewrite the YAML by hand.
- After an error that says a change may or may not have been applied, check with read_note or list_notes \
before calling again: a blind retry could apply the change twice."""


def _tool_definition(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema(),
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=not tool.writes,
            destructive_hint=tool.destructive if tool.writes else False,
            idempotent_hint=tool.idempotent,
            # Every tool acts on the configured Team Vault server only: a closed domain.
            open_world_hint=False,
        ),
    )


def build_server(runner: ToolRunner) -> Server[Any]:
    """The MCP server for ``runner``'s tools; the transport is the caller's choice."""
    listings: dict[int, types.ListToolsResult] = {}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        await runner.schemas_ready()
        generation = runner.tools_generation
        if generation not in listings:
            listings.clear()
            listings[generation] = types.ListToolsResult(tools=[_tool_definition(t) for t in runner.tools.values()])
        return listings[generation]

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        wants_progress = params.meta is not None and params.meta.get("progress_token") is not None
        await runner.schemas_ready()
        generation = runner.tools_generation
        report = ctx.session.report_progress if wants_progress else None
        result = await runner.call(params.name, params.arguments, report)
        if runner.tools_generation != generation:  # reload_schemas changed the tools
            await ctx.session.send_tool_list_changed()
        return result

    server: Server[Any] = Server(
        "team-vault",
        version=__version__,
        instructions=_instructions(runner.config),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    if not tracing_configured():  # the SDK's one default middleware makes OpenTelemetry spans nobody records
        server.middleware = []
    return server


def tracing_configured() -> bool:
    """Whether this process has an OpenTelemetry tracer provider of its own (the SDK's spans then go somewhere)."""
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _instructions(config: Config) -> str:
    text = INSTRUCTIONS
    if config.schema_dir is not None:
        text += (
            "\n- Structured notes: list_schemas shows the kinds of notes this vault defines (recipes, people, …); "
            "create or update one with its upsert_<name> tool, which checks every field and puts the note where "
            "the schema says."
        )
    if config.writes_fenced and not config.read_only:
        only_some_projects = config.project_write_prefixes and not config.write_prefixes
        elsewhere = "; no writes at all in other projects" if only_some_projects else ""
        text += (
            f"\n- Writes are limited to these folders: {config.write_scope_text()}{elsewhere}. "
            "Reading is possible everywhere."
        )
    return text


class ServeStop:
    """Ends :func:`serve` from another thread: what ``cli.py`` does on Ctrl-C or SIGTERM.

    :meth:`request` cancels the server's scope, so every call in flight is cancelled as a
    host's cancel would cancel it (its request aborted, its audit line written); once they
    have ended, :attr:`calls_ended` is set. On the lean transport ``serve`` then returns;
    on the stock one (:attr:`returns` false) it does not: the SDK's transport reads stdin
    in a worker thread that no signal wakes, so the caller ends the process (``os._exit``).
    """

    def __init__(self) -> None:
        self.calls_ended = threading.Event()
        #: Whether ``serve`` returns after a stop: set by ``serve`` once it knows its transport.
        self.returns = False
        #: How many tool calls were in flight when the stop was requested.
        self.cancelled_calls = 0
        self._lock = threading.Lock()
        self._requested = False
        self._cancel: Callable[[], None] | None = None

    def request(self) -> None:
        """Stop serving; safe from any thread but the event loop's, before, during or after serving."""
        with self._lock:
            self._requested = True
            cancel = self._cancel
        if cancel is not None:
            try:
                cancel()
            except anyio.RunFinishedError:  # the host closed stdin meanwhile: serving has ended anyway
                self.calls_ended.set()

    def _attach(self, scope: anyio.CancelScope, runner: ToolRunner) -> None:
        token = anyio.lowlevel.current_token()

        def cancel_in_loop() -> None:
            self.cancelled_calls = runner.active_calls()
            scope.cancel()

        with self._lock:
            self._cancel = lambda: anyio.from_thread.run_sync(cancel_in_loop, token=token)
            requested = self._requested
        if requested:  # asked before the loop ran
            cancel_in_loop()


def serve(config: Config, stop: ServeStop | None = None) -> None:
    """Serve MCP over stdin/stdout until the host closes stdin (or ``stop`` is requested).

    The transport is TEAM_VAULT_STDIO's: the lean one by default, the SDK's with ``stock``.
    """
    runner = ToolRunner(config)
    runner.start_schema_load()  # meanwhile the host's initialize is answered
    server = build_server(runner)
    options = server.create_initialization_options(NotificationOptions(tools_changed=runner.schemas is not None))

    lean = config.stdio == "lean" and lean_stdio.AVAILABLE  # not on Windows: it polls pipes
    if lean and lean_stdio.on_a_terminal():  # a person typing: the SDK's line-by-line, blocking writes, as ever
        log.info("stdin or stdout is a terminal: serving over the SDK's stdio transport")
        lean = False
    if stop is not None:
        stop.returns = lean

    async def main() -> None:
        hooks: dict[str, Any] = {}
        if stop is not None:  # every handler task has ended when server.run returns: calls_ended then
            hooks = {"on_start": lambda scope: stop._attach(scope, runner), "on_end": stop.calls_ended.set}
        if lean:
            # At the end of input the requests read are answered first: a call ends within its budget.
            await lean_stdio.serve_lean(server, options, drain_limit=config.call_budget + CANCEL_GRACE, **hooks)
        else:
            await serve_stdio(server, options, **hooks)

    try:
        anyio.run(main)
    finally:
        runner.close()
