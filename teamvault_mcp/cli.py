"""The command line; errors become exit codes.

    teamvault-mcp [serve]            the MCP server over stdio (TEAM_VAULT_* variables)
    teamvault-mcp serve --http [HOST:]PORT   the same server over Streamable HTTP at /mcp
    teamvault-mcp check [--json]     a doctor for the configuration: one line per check
    teamvault-mcp check --http URL   checks a running HTTP endpoint: reachable, auth, tools
    teamvault-mcp call TOOL k=v ...  one tool call, through the server's own code path
    teamvault-mcp --local DIR ...    any of the above on an embedded local vault kept in DIR
                                     (--local may also follow serve, check or call)
    teamvault-mcp local-vault ...    a Team Vault–compatible HTTP server (see --help)

Exit codes: 0 after a clean shutdown (the host closed stdin, or SIGINT/SIGTERM for
the local vault), when every required check passed, or when the tool call
succeeded; 1 for a bad configuration, a failed check or a tool error; 2 for a bad
command line, a data directory that cannot be used included; 128 + the signal's
number (130 for Ctrl-C, 143 for SIGTERM) when ``serve`` or ``call`` is interrupted.
Logging is configured here and only here, and goes to stderr: stdout belongs to
JSON-RPC (or to the printed result).

Past 400 lines on purpose: one concern, the command line, whose commands share the
parser, the exit codes and the signal handling, and read best side by side. What the
commands run lives below (``server/``, ``doctor.py``, ``localvault/``); how ``call`` reads
a value is its argument's kind (``tools/kinds.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from teamvault_mcp import __version__
from teamvault_mcp.config import DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT, LOG_LEVELS, load_config
from teamvault_mcp.errors import ConfigError
from teamvault_mcp.vault.ahead import ConnectionsAhead

PROG = "teamvault-mcp"


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """The program: the command line ``argv`` (default ``sys.argv[1:]``) in ``environ``; the exit code.

    Except after SIGINT or SIGTERM in ``serve`` on the stock transport (or a second signal): then it ends the
    process itself (see ``_ServerStopped``).
    """
    try:
        return _run(argv, environ)
    except _ServerStopped as stopped:
        stopped.report()
        if stopped.ended:
            return stopped.exit_code
        # The SDK's stdio transport reads stdin in a worker thread that no signal wakes; the interpreter
        # would wait for it at exit forever. Everything else has been cleaned up: end the process here.
        sys.stdout.flush()
        logging.shutdown()
        os._exit(stopped.exit_code)
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling was in place
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130


def _run(argv: Sequence[str] | None, environ: Mapping[str, str] | None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)  # `call`'s key=value pairs may come after its options
    if extra and (args.command != "call" or any(item.startswith("-") for item in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra:
        args.arguments = [*args.arguments, *extra]
    local = _local_option(parser, args)
    environ = os.environ if environ is None else environ
    if args.command == "local-vault":
        if local is not None:
            parser.error("--local does not go with local-vault: give the data directory as --data DIR")
        return _local_vault(args, environ)
    commands: dict[str | None, Callable[[argparse.Namespace, Mapping[str, str]], int]] = {
        "check": _check,
        "call": _call,
    }
    command = commands.get(args.command, _serve)
    if local is not None:
        return _on_local_vault(Path(local), environ, lambda local_environ: command(args, local_environ))
    return command(args, environ)


def _local_option(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """``--local DIR`` from before the command or after it (``call --local DIR read_note ...``)."""
    before: str | None = args.local
    after: str | None = getattr(args, "local_after", None)  # serve, check and call have it
    if before is not None and after is not None and before != after:
        parser.error(f"--local is given twice, as {before} and as {after}: give it once")
    return after if after is not None else before


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="MCP server (stdio) for a Team Vault project, configured by TEAM_VAULT_* variables.",
        epilog="Required without --local: TEAM_VAULT_URL, TEAM_VAULT_API_KEY. The README lists the rest.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument(
        "--local",
        metavar="DIR",
        help="serve an embedded local vault kept in DIR (created if missing) instead of a Team Vault server; "
        "it may also follow serve, check or call",
    )
    commands = parser.add_subparsers(dest="command", metavar="{serve,check,call,local-vault}", parser_class=_Parser)
    serve_command = commands.add_parser("serve", help="serve MCP over stdio (the default) or Streamable HTTP")
    serve_command.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        nargs="?",
        const=f"{DEFAULT_HTTP_HOST}:{DEFAULT_HTTP_PORT}",
        help=f"serve MCP over Streamable HTTP at /mcp instead of stdio (default {DEFAULT_HTTP_HOST}:"
        f"{DEFAULT_HTTP_PORT}); clients authenticate with TEAM_VAULT_HTTP_TOKEN or, with --key-from-client, "
        "their own Team Vault key",
    )
    serve_command.add_argument(
        "--key-from-client",
        action="store_true",
        help="with --http: each client's Bearer token is its own Team Vault API key (no server key needed)",
    )
    serve_command.add_argument("--tls-cert", metavar="PEM", help="with --http: serve HTTPS with this certificate")
    serve_command.add_argument("--tls-key", metavar="PEM", help="with --http: the certificate's private key")
    serve_command.add_argument(
        "--insecure-bind",
        action="store_true",
        help="with --http: listen beyond loopback without TLS (only behind a TLS reverse proxy)",
    )
    check = commands.add_parser(
        "check",
        help="check the configuration, the way to the server, the key and the project",
        description="Checks the TEAM_VAULT_* variables, DNS, TCP and TLS to the server, the API key, the default "
        "project, whether the key can write, the latency and Idempotency-Key support. Writes nothing. "
        "Exit code 0 when every required check passes, 1 otherwise.",
    )
    check.add_argument("--json", action="store_true", help="print the checks as JSON")
    check.add_argument(
        "--http",
        metavar="URL",
        help="check a running `serve --http` endpoint instead (TEAM_VAULT_HTTP_TOKEN, else TEAM_VAULT_API_KEY, "
        "is the Bearer token)",
    )
    call = commands.add_parser(
        "call",
        help="run one tool once, as the MCP server would for an agent, and print its result",
        description="Runs one tool call through the MCP server's own code path (same budget, retries and\n"
        "errors) and prints its result. Exit code 1 when the tool reports an error.",
        epilog_factory=call_epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for command in (serve_command, check, call):
        command.add_argument("--local", metavar="DIR", dest="local_after", help="the same as --local DIR before it")
    call.add_argument("tool", help="the tool's name, e.g. read_note")
    call.add_argument("arguments", nargs="*", metavar="key=value", help="the tool's arguments")
    call.add_argument(
        "--json-args",
        metavar="JSON",
        help="the arguments as a JSON object ('-': read it from stdin); key=value pairs are added to it",
    )
    call.add_argument(
        "--json", action="store_true", help="print the whole result (content, structuredContent, isError) as JSON"
    )
    vault = commands.add_parser(
        "local-vault",
        help="run a Team Vault-compatible HTTP server on a local data directory",
        description="A Team Vault-compatible HTTP server. Prints TEAM_VAULT_URL, TEAM_VAULT_API_KEY and "
        "TEAM_VAULT_PROJECT_ID on stdout, then serves until SIGINT or SIGTERM.",
    )
    vault.add_argument("--data", metavar="DIR", type=Path, default=_default_data_dir(), help="data directory")
    vault.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    vault.add_argument("--port", type=int, default=8787, help="port; 0 picks a free one (default: 8787)")
    vault.add_argument(
        "--api-key",
        help="the start key: valid instead of the key generated and kept in DIR (and of any earlier --api-key)",
    )
    vault.add_argument("--max-file-size", type=int, metavar="BYTES", help="refuse larger files (file_too_large)")
    vault.add_argument(
        "--without-idempotency",
        action="store_true",
        help="ignore Idempotency-Key, as the public Team Vault server does: for testing clients against it",
    )
    vault.add_argument(
        "--without-conditional-writes",
        action="store_true",
        help="ignore If-Match (no 412, no ETag), as the public Team Vault server does: for testing clients against it",
    )
    vault.add_argument(
        "--without-folder-download",
        action="store_true",
        help="leave out GET .../folders/download (an unknown route, 404), as on servers without it: "
        "for testing clients against them",
    )
    vault.add_argument(
        "--max-connections",
        type=int,
        metavar="N",
        help="connections open at once; a new one sheds an idle one first (default: from the open-file limit)",
    )
    key_data = _Parser(add_help=False)
    key_data.add_argument("--data", metavar="DIR", type=Path, default=argparse.SUPPRESS, help="data directory")
    keys = vault.add_subparsers(dest="vault_command", metavar="{keys}").add_parser(
        "keys",
        parents=[key_data],
        help="list, add or revoke the API keys of the vault in DIR (running or not)",
        description="The start key (--api-key, or else the generated key) is valid while the vault runs with it; "
        "added keys stay valid until revoked. A revoked key is refused at once, by a running vault too.",
    )
    key_commands = keys.add_subparsers(dest="keys_command", metavar="{list,add,revoke}", required=True)
    key_commands.add_parser(
        "list", parents=[key_data], help="one line per valid key: prefix, user, created, label, start or added"
    )
    key_add = key_commands.add_parser("add", parents=[key_data], help="add a key valid until revoked; print it once")
    key_add.add_argument("--label", help="what the key is for, shown by list")
    key_add.add_argument(
        "--user",
        metavar="EMAIL",
        help="a key of this user (made if new) instead of the local user's: for trying per-user permissions",
    )
    key_add.add_argument(
        "--role",
        metavar="SLUG:ROLE",
        action="append",
        default=[],
        help="with --user: make the user OWNER, ADMIN, EDITOR or VIEWER of the project with this slug (made if "
        "missing); repeatable",
    )
    key_revoke = key_commands.add_parser("revoke", parents=[key_data], help="revoke the key(s) with this prefix")
    key_revoke.add_argument("prefix", help="a key prefix as list shows it, or the whole key")
    return parser


class _Parser(argparse.ArgumentParser):
    """A sub-command's parser whose closing text may be made only when the help is shown."""

    def __init__(self, *args: Any, epilog_factory: Callable[[], str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epilog_factory = epilog_factory

    def format_help(self) -> str:
        if self.epilog_factory is not None:
            self.epilog = self.epilog_factory()
        return super().format_help()


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


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "teamvault-mcp" / "vault"


def _serve(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if getattr(args, "http", None) is not None:
        return _serve_http(args, environ)
    for flag in ("key_from_client", "tls_cert", "tls_key", "insecure_bind"):
        if getattr(args, flag, None):
            sys.stderr.write(f"{PROG}: --{flag.replace('_', '-')} goes with --http only\n")
            return 2
    try:
        config = load_config(environ)
    except ConfigError as error:
        return _config_failure(error)
    _configure_logging(config.log_level, config.api_key)
    # The connections to the server open (TCP, TLS) while the SDK is imported, not after: a call sent the
    # moment initialize is answered finds them ready.
    ahead = ConnectionsAhead(config.base_url)

    with collector_held_off():
        from teamvault_mcp.server.protocol import ServeStop, serve
        from teamvault_mcp.server.runner import CANCEL_GRACE

    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        serve(config, ahead=ahead)
        return 0
    # The server runs in a thread of its own and this one waits for a signal: the SDK's stdio transport reads
    # stdin in a worker thread that a signal does not wake, so under asyncio's own handling the first Ctrl-C
    # was ignored and the second ended in a traceback.
    stop = ServeStop()
    ended = threading.Event()
    signals: list[int] = []
    failures: list[BaseException] = []

    def run() -> None:
        try:
            serve(config, stop, ahead)
        except BaseException as error:  # handed to the main thread, which raises it as before
            failures.append(error)
        finally:
            ended.set()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if signals:  # a second Ctrl-C while the calls in flight are being cancelled: stop waiting for them
            raise _ServerStopped(signals[0], stop.cancelled_calls, waited=False, ended=False)
        signals.append(signum)
        ended.set()

    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}
    server = threading.Thread(target=run, name="teamvault-mcp serve", daemon=True)
    server.start()
    while not ended.wait(3600):
        pass
    if not signals:  # the host closed stdin
        server.join()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if failures:
            raise failures[0]
        return 0
    stop.request()
    ended_in_time = stop.calls_ended.wait(CANCEL_GRACE + 1)
    # On the lean transport serve then returns; on the SDK's, a thread still reads stdin.
    server.join(CANCEL_GRACE + 1 if ended_in_time and stop.returns else 0)
    for signum, handler in previous.items():
        signal.signal(signum, handler)
    raise _ServerStopped(signals[0], stop.cancelled_calls, waited=ended_in_time, ended=not server.is_alive())


def _serve_http(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``serve --http``: until SIGINT or SIGTERM, which stop it cleanly (calls in flight cancelled)."""
    from teamvault_mcp.config import HttpStartError, load_http_config

    try:
        options = load_http_config(
            environ,
            listen=args.http,
            key_from_client=args.key_from_client,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            insecure_bind=args.insecure_bind,
        )
    except HttpStartError as error:
        sys.stderr.write(f"{PROG}: {error}\n")
        return 2
    except ConfigError as error:
        return _config_failure(error)
    try:
        config = load_config(environ, key_required=not options.key_from_client)
    except ConfigError as error:
        return _config_failure(error)
    _configure_logging(config.log_level, config.api_key or None, options.token)

    with collector_held_off():
        from teamvault_mcp.server.http import HttpService

    try:
        service = HttpService(config, options)
    except OSError as error:
        sys.stderr.write(f"{PROG}: cannot listen on {options.host}:{options.port}: {error.strerror or error}\n")
        return 1
    mode = "each client's own Team Vault key" if options.key_from_client else "TEAM_VAULT_HTTP_TOKEN"
    sys.stderr.write(f"{PROG}: serving MCP over HTTP at {service.url} (callers authenticate with {mode})\n")
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        service.run()
        return 0
    signals: list[int] = []
    ended = threading.Event()

    def run() -> None:
        try:
            service.run()
        finally:
            ended.set()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        signals.append(signum)
        service.stop()

    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}
    server = threading.Thread(target=run, name="teamvault-mcp serve --http", daemon=True)
    server.start()
    while not ended.wait(3600):
        pass
    server.join()
    for signum, handler in previous.items():
        signal.signal(signum, handler)
    if signals:
        sys.stderr.write(f"{PROG}: stopped by {signal.Signals(signals[0]).name}\n")
        return 128 + signals[0]
    return 0


class _ServerStopped(Exception):
    """SIGINT or SIGTERM ended ``serve``; raised through the clean-up of ``--local`` to :func:`main`."""

    def __init__(self, signum: int, cancelled_calls: int, *, waited: bool, ended: bool) -> None:
        super().__init__(signum)
        #: Whether serving has ended (the lean transport): then the process exits as a program does.
        self.ended = ended
        self.exit_code = 128 + signum
        self.signal_name = signal.Signals(signum).name
        self.cancelled_calls = cancelled_calls
        self.waited = waited

    def report(self) -> None:
        calls = f"{self.cancelled_calls} tool call{'' if self.cancelled_calls == 1 else 's'}"
        if not self.cancelled_calls:
            detail = ""
        elif self.waited:
            detail = f"; {calls} in flight {'was' if self.cancelled_calls == 1 else 'were'} cancelled"
        else:
            detail = f"; {calls} in flight did not end in time (a write among them may or may not have been applied)"
        sys.stderr.write(f"{PROG}: stopped by {self.signal_name}{detail}\n")


def _on_local_vault(data_dir: Path, environ: Mapping[str, str], command: Callable[[Mapping[str, str]], int]) -> int:
    """Run ``command`` with TEAM_VAULT_URL and the key of an embedded local vault on a free loopback port.

    The port is new at every start, so the content cache is keyed by the data directory instead.
    """
    import sqlite3

    from teamvault_mcp.localvault import LocalVault

    _configure_logging(_log_level(environ))
    problem = _data_dir_problem(data_dir)
    if problem is None:
        try:
            vault = LocalVault(data_dir).start()
        except (OSError, sqlite3.Error) as error:  # a loopback port 0 does not fail: these are the directory's
            problem = _data_dir_failure(data_dir, error)
    if problem is not None:
        sys.stderr.write(f"{PROG}: cannot use --local {data_dir}: {problem}\n")
        return 2
    try:
        logging.getLogger(__name__).info("local vault in %s at %s", data_dir, vault.url)
        local = {
            **environ,
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": environ.get("TEAM_VAULT_PROJECT_ID") or vault.project_id,
            "TEAM_VAULT_CACHE_NAMESPACE": f"local vault {vault.data_dir.resolve()}",
            # A local vault holds one project: the tools' schemas need no projectId (README: Configuration).
            "TEAM_VAULT_SINGLE_PROJECT": environ.get("TEAM_VAULT_SINGLE_PROJECT") or "1",
        }
        return command(local)
    finally:
        vault.stop()


def _data_dir_problem(data_dir: Path) -> str | None:
    """Why a local vault cannot be kept in ``data_dir``, or None. It is created if missing and must be writable."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:  # exist_ok covers directories only
        return "it is a file, not a directory; give a directory (it is created if missing)"
    except NotADirectoryError:
        above = next((str(parent) for parent in data_dir.parents if os.path.isfile(parent)), "a part of the path")
        return f"{above} is a file, so no directory can be made under it"
    except OSError as error:
        return f"it cannot be created ({error.strerror}); give a directory you can write to"
    try:
        with tempfile.TemporaryFile(dir=data_dir):
            pass
    except OSError as error:
        return f"nothing can be written in it ({error.strerror}); give a directory you can write to"
    return None


def _data_dir_failure(data_dir: Path, error: Exception) -> str:
    """What went wrong opening the vault kept in ``data_dir`` (an OSError naming a file, or an sqlite3 error)."""
    if not isinstance(error, OSError):
        database = data_dir / "vault.sqlite3"
        return f"its database {database} cannot be used ({error}); move it away or give another directory"
    where = f" ({error.filename})" if error.filename else ""
    return f"{error.strerror or error}{where}; give a directory you can write to"


def _check(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from teamvault_mcp.doctor import Check, Doctor, report_json, report_text

    if args.http is not None:
        from teamvault_mcp.server.http_check import check_endpoint

        secret = environ.get("TEAM_VAULT_HTTP_TOKEN", "").strip() or environ.get("TEAM_VAULT_API_KEY", "").strip()
        _configure_logging(_log_level(environ), secret or None)
        checks = [Check(c.name, c.status, c.detail, c.hint) for c in check_endpoint(args.http, secret or None)]
        ok = all(check.status == "pass" for check in checks)
        sys.stdout.write(report_json(checks, ok) if args.json else report_text(checks, ok))
        return 0 if ok else 1

    _configure_logging(_log_level(environ), environ.get("TEAM_VAULT_API_KEY", "").strip())
    doctor = Doctor(environ)
    try:
        checks = doctor.run()
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG} check: interrupted\n")
        return 130
    sys.stdout.write(report_json(checks, doctor.ok) if args.json else report_text(checks, doctor.ok))
    return 0 if doctor.ok else 1


def _call(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    try:
        config = load_config(environ)
    except ConfigError as error:
        return _config_failure(error)
    _configure_logging(config.log_level, config.api_key)

    with collector_held_off():
        import anyio

        from teamvault_mcp.server.runner import ToolRunner
        from teamvault_mcp.tools.kinds import read_text

    runner = ToolRunner(config)
    runner.workspace.wait_for_schemas()  # an upsert_<schema> tool exists once its schema note is read
    tool = runner.workspace.tools.get(args.tool)
    try:
        arguments = _call_arguments(args.json_args, args.arguments, tool.read_argument if tool else read_text)
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


def _call_arguments(json_args: str | None, pairs: Sequence[str], read: Callable[[str, str], Any]) -> dict[str, Any]:
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


def _local_vault(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    import sqlite3

    from teamvault_mcp.localvault import LocalVault

    _configure_logging(_log_level(environ))
    if args.vault_command == "keys":
        from teamvault_mcp.localvault.keys import run_keys_command

        return run_keys_command(
            args.keys_command,
            args.data,
            label=getattr(args, "label", None),
            prefix=getattr(args, "prefix", None),
            user=getattr(args, "user", None),
            roles=getattr(args, "role", []),
            out=sys.stdout,
            err=sys.stderr,
        )
    if not 0 <= args.port <= 65535:
        sys.stderr.write(f"{PROG}: --port {args.port} is not a port number (0-65535)\n")
        return 2
    if args.max_connections is not None and args.max_connections < 1:
        sys.stderr.write(f"{PROG}: --max-connections {args.max_connections} must be at least 1\n")
        return 2
    problem = _data_dir_problem(args.data)
    if problem is None:
        try:
            vault = LocalVault(
                args.data,
                host=args.host,
                port=args.port,
                api_key=args.api_key,
                max_file_size=args.max_file_size,
                idempotency=not args.without_idempotency,
                conditional_writes=not args.without_conditional_writes,
                max_connections=args.max_connections,
                folder_download=not args.without_folder_download,
            )
        except (OSError, sqlite3.Error) as error:
            if isinstance(error, OSError) and not error.filename:  # binding the address, not the directory
                sys.stderr.write(f"{PROG}: cannot serve the local vault on {args.host}:{args.port}: {error}\n")
                return 1
            problem = _data_dir_failure(args.data, error)
    if problem is not None:
        sys.stderr.write(f"{PROG}: cannot use --data {args.data}: {problem}\n")
        return 2
    if not vault.is_loopback:
        sys.stderr.write(
            f"{PROG}: warning: listening on {args.host}, not on loopback: anyone who can reach this address "
            "and has the key can read and change the vault\n"
        )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    vault.start()
    sys.stdout.write(
        f"TEAM_VAULT_URL={vault.url}\nTEAM_VAULT_API_KEY={vault.api_key}\nTEAM_VAULT_PROJECT_ID={vault.project_id}\n"
    )
    sys.stdout.flush()
    sys.stderr.write(f"{PROG}: local vault serving {args.data} at {vault.url}; SIGINT or SIGTERM stops it\n")
    while not stop.wait(3600):
        pass
    vault.stop()
    return 0


@contextlib.contextmanager
def collector_held_off() -> Iterator[None]:
    """Hold the cyclic garbage collector off while the SDK and the tools are imported, then freeze what they made.

    The imports make some 90,000 objects that live as long as the process, and the collections they would
    trigger walk them again and again (a full collection of them takes tens of milliseconds): about a tenth
    of start-up. Frozen (``gc.freeze``), they are left out of every later collection too; reference counting
    still frees whatever is dropped. Only a few hundred objects of garbage are made by the imports.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _log_level(environ: Mapping[str, str]) -> str:
    level = environ.get("TEAM_VAULT_LOG_LEVEL", "").strip().lower()
    return level if level in LOG_LEVELS else "warning"


def _config_failure(error: ConfigError) -> int:
    for line in str(error).splitlines():
        sys.stderr.write(f"{PROG}: {line}\n")
    return 1


def _configure_logging(level: str, api_key: str | None = None, token: str | None = None) -> None:
    from teamvault_mcp.text.redact import RedactingFilter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG} %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter(api_key))  # a server's words in a log line may echo the key
    if token is not None:
        handler.addFilter(RedactingFilter(token))
    ours = logging.getLogger("teamvault_mcp")
    ours.setLevel(level.upper())
    for earlier in list(ours.handlers):  # configured again after --local started its vault
        ours.removeHandler(earlier)
    ours.addHandler(handler)
    ours.propagate = False
    # Third-party loggers stay at warning: the SDK's debug output would carry note content.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format=f"{PROG} %(levelname)s %(name)s: %(message)s")
