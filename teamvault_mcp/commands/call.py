"""``call``: one tool call through the server's own code path, printed; and ``call --help``'s examples, made from
the tool table so that every argument they name exists.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from teamvault_mcp.commands.shared import PROG, collector_held_off, config_failure, configure_logging
from teamvault_mcp.config import load_config
from teamvault_mcp.errors import ConfigError


def call_examples() -> list[str]:
    """Complete ``call`` command lines, taken from the tool table, that show each kind of value once.

    A tool gives a line when it has an optional argument of a kind not shown yet; the line holds its
    required arguments and those new ones (the first of each kind). The example values are the kinds' own.
    """
    from teamvault_mcp.tools.kinds import KINDS
    from teamvault_mcp.tools.table import TOOLS

    shown: set[str] = set()
    lines = []
    for tool in TOOLS:
        if any(KINDS[param.kind].example is None for param in tool.params if param.required):
            continue
        new: dict[str, str] = {}
        for param in tool.params:
            if not param.required and KINDS[param.kind].example is not None and param.kind not in shown | set(new):
                new[param.kind] = param.name
        if not new:
            continue
        shown |= set(new)
        named = [param for param in tool.params if param.required or param.name in new.values()]
        lines.append(" ".join([PROG, "call", tool.name, *(f"{p.name}={KINDS[p.kind].example}" for p in named)]))
    return lines


def call_epilog() -> str:
    """``call --help``'s closing text; its examples come from the tool table, so every argument they name exists."""
    return "\n".join(
        [
            "Values of text arguments are taken as they are (path=2024.md); numbers, true/false and JSON arrays",
            "and objects are converted for the arguments that take them. Examples:",
            *(f"  {line}" for line in call_examples()),
            "For long content, --json-args - reads the arguments as a JSON object from stdin.",
        ]
    )


def call(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    try:
        config = load_config(environ)
    except ConfigError as error:
        return config_failure(error)
    configure_logging(config.log_level, config.api_key)

    with collector_held_off():
        import anyio

        from teamvault_mcp.server.runner import ToolRunner
        from teamvault_mcp.tools.kinds import read_text

    runner = ToolRunner(config)
    runner.workspace.wait_for_schemas()  # an upsert_<schema> tool exists once its schema note is read
    tool = runner.workspace.tools.get(args.tool)
    try:
        arguments = call_arguments(args.json_args, args.arguments, tool.read_argument if tool else read_text)
    except ValueError as error:
        sys.stderr.write(f"{PROG} call: {error}\n")
        return 2
    try:
        result, stopped_by = anyio.run(_call_until_interrupted, runner, args.tool, arguments)
    except KeyboardInterrupt:  # before the call's own signal handling was in place: nothing was sent
        result, stopped_by = None, signal.SIGINT
    if stopped_by or result is None:
        sys.stderr.write(f"{PROG} call: interrupted; the call was cancelled\n")
        return 128 + stopped_by
    if args.json:
        wire = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        wire.pop("resultType", None)  # the SDK model's own field: the server's answer on the wire has none
        sys.stdout.write(json.dumps(wire, ensure_ascii=False, indent=2) + "\n")
    else:
        text = "\n".join(block.text for block in result.content if block.type == "text")
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 1 if result.is_error else 0


async def _call_until_interrupted(runner: Any, tool: str, arguments: dict[str, Any]) -> tuple[Any, int]:
    """The tool call's result, and the number of the signal (SIGINT, SIGTERM) that cancelled it, or 0.

    The signal cancels the call's scope, exactly as a host's ``notifications/cancelled``
    does in the server: the worker stops and its request in flight is shut down.
    """
    import anyio

    result = None
    stopped_by = 0
    async with anyio.create_task_group() as group:

        async def cancel_on_signal() -> None:
            nonlocal stopped_by
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    stopped_by = signum
                    group.cancel_scope.cancel()
                    return

        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            group.start_soon(cancel_on_signal)
        result = await runner.call(tool, arguments)
        group.cancel_scope.cancel()
    return result, stopped_by


def call_arguments(json_args: str | None, pairs: Sequence[str], read: Callable[[str, str], Any]) -> dict[str, Any]:
    """The arguments of ``call``: the ``--json-args`` object, then each ``key=value`` as ``read(key, value)``
    takes it (the tool's argument kinds: text stays text, the rest is JSON-ish)."""
    arguments: dict[str, Any] = {}
    if json_args is not None:
        raw = sys.stdin.read() if json_args == "-" else json_args
        try:
            arguments = json.loads(raw)
        except ValueError as error:
            raise ValueError(f"--json-args is not valid JSON: {error}") from None
        if not isinstance(arguments, dict):
            raise ValueError('--json-args must be a JSON object, like \'{"path": "inbox/a.md"}\'')
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise ValueError(f"{pair!r} is not key=value (e.g. path=inbox/a.md)")
        arguments[key] = read(key, value)
    return arguments
