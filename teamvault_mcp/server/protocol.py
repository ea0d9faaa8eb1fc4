"""The MCP protocol: the server's instructions, ``tools/list`` and ``tools/call`` on the ``mcp`` low-level
``Server``, and serving it over stdio until the host closes stdin or :class:`ServeStop` is requested.

A tool call is handed to :class:`~teamvault_mcp.server.runner.ToolRunner`, which runs it in a
worker thread and turns every error into a tool result; the tools listed and the instructions are
its :class:`~teamvault_mcp.server.workspace.Workspace`'s. The stdio transports are ``lean.py``
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
from teamvault_mcp.server.workspace import Workspace
from teamvault_mcp.tools.context import ToolSet
from teamvault_mcp.tools.spec import Tool, with_errors
from teamvault_mcp.tools.table import TOOLS
from teamvault_mcp.tools.team_note import TEAM_NOTE_LIMIT, TeamNote, load_team_note
from teamvault_mcp.vault.ahead import ConnectionsAhead
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget

#: The server's instructions, clause by clause: (the tools a clause names, its text). A clause is sent only when
#: every tool it names is registered (read-only mode, TEAM_VAULT_TOOLS), so the agent is never sent to a tool
#: that is not there; a bullet whose clauses are all left out goes too.
Clause = tuple[tuple[str, ...], str]

PATHS: tuple[Clause, ...] = (
    (
        (),
        "- Paths: a note is named by its vault path, 'people/ada.md': case-sensitive, '/' between folders; "
        "'./a.md', 'dir\\a.md' and 'dir//a.md' are 'a.md' and 'dir/a.md'.",
    ),
    (("write_note",), "A new note's path without an extension gets '.md'."),
    (("move_note",), "A newPath ending in '/' moves the note into that folder under its own name."),
)
FIND: tuple[Clause, ...] = (
    (
        ("search_notes", "read_note"),
        "- Find: search_notes(query) for what notes say; each hit names its section, which "
        "read_note(path, section=...) reads.",
    ),
    (("search_notes",), "- Find: search_notes(query) for what notes say."),
    (("find_notes",), "find_notes(query) finds a note whose name you roughly know."),
)
#: Said only where a write tool is registered: a read-only server takes no expectedHash.
HASHES: Clause = ((), "Reads give the note's contentHash: the 12 hex digits a text shows are what expectedHash takes.")
READ: tuple[Clause, ...] = (
    (("list_notes",), "- Read frugally: list_notes(prefix='people/', depth=1) shows a folder without its subtree."),
    (("note_outline",), "note_outline(path) gives a note's headings, note_outline(path, tocPath=...) one level down."),
    (
        ("read_note",),
        "read_note(path, section=...) or read_note(path, startLine=, endLine=) reads just that part, "
        "a tocPath being a list of headings or one string 'Runbook > Failover'.",
    ),
    (("read_notes",), "read_notes(paths=[...]) reads several notes at once."),
    ((), "Anything cut says so and gives the call that reads on."),
    HASHES,
    (("read_note",), "read_note's first line, [contentHash: …], is not part of the note."),
)
WRITE: tuple[Clause, ...] = (
    (
        ("edit_note",),
        "- Write carefully: others edit these notes too. Change part of a note with edit_note(path, "
        "edits=[{oldText, newText}], expectedHash=<the contentHash your read gave>) and check the diff it returns; "
        "dryRun=true previews it.",
    ),
    (("edit_note", "write_note"), "Rewrite a whole note with write_note only when you mean to."),
    (("write_note",), "- Write carefully: others edit these notes too; pass expectedHash=<the contentHash you read>."),
    ((), "A conflict means someone changed the note: read it again."),
    (
        ("edit_section",),
        "edit_section(path, section, content) writes into a section without reading the note: by default at the "
        "end of the whole section, subsections included (mode=append_body: before its first subheading; "
        "mode=prepend: under the heading; mode=replace: its body). create=true starts a missing log or daily note.",
    ),
    (
        ("replace_in_notes",),
        "replace_in_notes(find, replace) renames a term everywhere: it previews, then applies with the call the "
        "preview gives.",
    ),
    (
        ("list_note_versions", "diff_note_versions", "restore_note_version"),
        "list_note_versions, diff_note_versions and restore_note_version look back and undo; nothing is ever lost.",
    ),
)
PROPERTIES: tuple[Clause, ...] = (
    (("read_frontmatter",), "- Properties (the YAML front matter at a note's top): read_frontmatter(path)."),
    (
        ("update_frontmatter",),
        "update_frontmatter(path, set={...}, remove=[...]) changes fields; never edit the YAML by hand.",
    ),
)
AFTER: tuple[Clause, ...] = (
    (
        ("read_note",),
        "- After an error that says a change may or may not have been applied, check with read_note before "
        "calling again: a blind retry could apply the change twice.",
    ),
)
STRUCTURE: tuple[Clause, ...] = (
    (("query_notes",), '- The vault\'s structure: query_notes(where={"status": "active"}) finds notes by properties.'),
    (("list_tags",), "list_tags, and list_tags(tag=...), by tag."),
    (("list_tasks",), "list_tasks gives the open checkboxes."),
    (("note_links",), "note_links(path): what links to a note and where its links go."),
    (("broken_links",), "broken_links: links to nothing."),
    (("recent_changes",), 'recent_changes(since="24h"): what colleagues changed, and who.'),
    (
        ("move_note",),
        "move_note rewrites the links to a note it renames (dryRun=true first shows which); never fix them by hand.",
    ),
)

log = logging.getLogger(__name__)


def instructions_for(config: Config, tools: ToolSet, team_note: TeamNote | None = None) -> str:
    """The instructions sent in ``initialize``: how the registered tools fit together, and what this server's
    configuration adds (the write folders, the team's own instructions note)."""
    writes = bool(tools.names - READ_ONLY_TOOLS)
    lines = ["Tools for a Team Vault: a shared Obsidian vault that people edit at the same time."]
    bullets = [
        PATHS,
        _projects(config, tools),
        FIND,
        READ if writes else tuple(clause for clause in READ if clause is not HASHES),
        WRITE if writes else (),
        PROPERTIES,
        STRUCTURE,
        AFTER if writes else (),
    ]
    for bullet in bullets:
        if said := _bullet(bullet, tools):
            lines.append(said)
    if tools.names & {"list_schemas", "reload_schemas"} or any(name.startswith("upsert_") for name in tools.names):
        lines.append(
            "- Structured notes: list_schemas shows the kinds of notes this vault defines (recipes, people, …); "
            "create or update one with its upsert_<name> tool, which checks every field and puts the note where "
            "the schema says."
            if "list_schemas" in tools.names
            else "- Structured notes: create or update one with its upsert_<name> tool, which checks every field."
        )
    if config.writes_fenced and writes:
        only_some_projects = config.project_write_prefixes and not config.write_prefixes
        elsewhere = "; no writes at all in other projects" if only_some_projects else ""
        lines.append(
            f"- Writes are limited to these folders: {config.write_scope_text()}{elsewhere}. "
            "Reading is possible everywhere."
        )
    if team_note is not None and team_note.text is not None:
        lines.append(f"- The team's own instructions, from {team_note.path}:\n{team_note.text}")
    return "\n".join(lines)


#: Tools that change nothing (the write tools' names are the rest).
READ_ONLY_TOOLS = frozenset(tool.name for tool in TOOLS if not tool.writes)


def _projects(config: Config, tools: ToolSet) -> tuple[Clause, ...]:
    if tools.one_project:
        return (((), f"- Every tool works in project {config.project_id}."),)
    default = f"project {config.project_id}" if config.project_id else "TEAM_VAULT_PROJECT_ID's project"
    return (
        ((), f"- Projects: without projectId a tool works in {default}."),
        (("list_projects",), "list_projects gives the ids of the others."),
    )


def _bullet(clauses: tuple[Clause, ...], tools: ToolSet) -> str:
    """The clauses whose tools are registered, joined; a clause starting a bullet ("- ") is used only while no
    earlier one has (the first is the full form, later ones the fallbacks); "" when none is left."""
    said: list[str] = []
    for needs, text in clauses:
        if not tools.has(*needs):
            continue
        if text.startswith("- ") and any(part.startswith("- ") for part in said):
            continue
        said.append(text)
    if said and not said[0].startswith("- "):  # the clause that opens the bullet was left out: open it here
        first = said[0].split(" ", 1)[0]
        is_a_tool = "_" in first or "(" in first  # 'list_tags, …' stays as the tool is spelled
        said[0] = "- " + (said[0] if is_a_tool else said[0][0].upper() + said[0][1:])
    return " ".join(said)


def _tool_definition(tool: Tool, tools: ToolSet) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.describe(tools),
        input_schema=tool.input_schema(tools),
        # Only with TEAM_VAULT_STRUCTURED_CONTENT=on: then every result carries structuredContent of this shape.
        output_schema=with_errors(tool.output_schema) if tools.structured and tool.output_schema else None,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=not tool.writes,
            destructive_hint=tool.destructive if tool.writes else False,
            idempotent_hint=tool.idempotent,
            # Every tool acts on the configured Team Vault server only: a closed domain.
            open_world_hint=False,
        ),
    )


def build_server(runner: ToolRunner, *, runner_for: Callable[[Any], ToolRunner] | None = None) -> Server[Any]:
    """The MCP server for ``runner``'s tools; the transport is the caller's choice.

    ``runner_for(ctx)``: the runner of the request's caller instead (``serve --http --key-from-client``
    runs each key's calls in a runner of its own); ``runner`` then gives the instructions only, without
    the team's instructions note (the server has no key of its own to read it with).
    """
    listings: dict[int, tuple[int, types.ListToolsResult]] = {}  # the workspace's, by its tools' generation

    def pick(ctx: Any) -> ToolRunner:
        return runner_for(ctx) if runner_for is not None else runner

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        current = pick(ctx).workspace
        await current.schemas_ready()
        generation = current.tools_generation
        cached = listings.get(id(current))
        if cached is None or cached[0] != generation:
            registered = current.tool_set()
            tools = [_tool_definition(tool, registered) for tool in current.tools.values()]
            cached = (generation, types.ListToolsResult(tools=tools))
            if runner_for is None:  # per-caller runners come and go: theirs are made anew
                listings[id(current)] = cached
        return cached[1]

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        current = pick(ctx)
        workspace = current.workspace
        wants_progress = params.meta is not None and params.meta.get("progress_token") is not None
        await workspace.schemas_ready()
        generation = workspace.tools_generation
        report = ctx.session.report_progress if wants_progress else None
        result = await current.call(params.name, params.arguments, report)
        if workspace.tools_generation != generation:  # reload_schemas changed the tools
            await ctx.session.send_tool_list_changed()
        return result

    team_note = _team_note(runner.workspace) if runner_for is None else None
    server: Server[Any] = Server(
        "team-vault",
        version=__version__,
        instructions=instructions_for(runner.config, runner.workspace.tool_set(), team_note),
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


def _team_note(workspace: Workspace) -> TeamNote | None:
    """TEAM_VAULT_INSTRUCTIONS_NOTE, read now within the schema notes' start-up limit (None: not configured)."""
    config = workspace.config
    if config.instructions_note is None or config.project_id is None:
        return None
    budget = min(TEAM_NOTE_LIMIT, config.call_budget)
    return load_team_note(
        lambda: workspace.client(Budget(budget, workspace.clock), CancelToken()),
        config.project_id,
        config.instructions_note,
    )


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


def serve(config: Config, stop: ServeStop | None = None, ahead: ConnectionsAhead | None = None) -> None:
    """Serve MCP over stdin/stdout until the host closes stdin (or ``stop`` is requested).

    The transport is TEAM_VAULT_STDIO's: the lean one by default, the SDK's with ``stock``. ``ahead``: the
    connections ``cli.py`` began opening before this module was imported.
    """
    runner = ToolRunner(config, ahead=ahead)
    workspace = runner.workspace
    workspace.start_schema_load()  # meanwhile the host's initialize is answered
    workspace.start_warm_up()  # connections opened ahead, the default project synced: the first calls pay neither
    server = build_server(runner)
    options = server.create_initialization_options(NotificationOptions(tools_changed=workspace.schemas is not None))

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
