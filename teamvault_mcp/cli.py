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
Logging is configured by the commands only (``commands/shared.py``), and goes to
stderr: stdout belongs to JSON-RPC (or to the printed result).

Here: the parser (one small function per command) and the choice of the command; each
command lives in ``commands/`` (serve, check, call, local), what they share in
``commands/shared.py``. What the commands run lives below (``server/``, ``doctor.py``,
``localvault/``); how ``call`` reads a value is its argument's kind (``tools/kinds.py``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from teamvault_mcp import __version__
from teamvault_mcp.commands.call import call, call_epilog
from teamvault_mcp.commands.check import check
from teamvault_mcp.commands.local import local_vault, on_local_vault
from teamvault_mcp.commands.serve import ServerStopped, serve
from teamvault_mcp.commands.shared import PROG
from teamvault_mcp.http_config import DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """The program: the command line ``argv`` (default ``sys.argv[1:]``) in ``environ``; the exit code.

    Except after SIGINT or SIGTERM in ``serve`` on the stock transport (or a second signal): then it ends the
    process itself (see ``ServerStopped``).
    """
    try:
        return _run(argv, environ)
    except ServerStopped as stopped:
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
        return local_vault(args, environ)
    commands: dict[str | None, Callable[[argparse.Namespace, Mapping[str, str]], int]] = {
        "check": check,
        "call": call,
    }
    command = commands.get(args.command, serve)
    if local is not None:
        return on_local_vault(Path(local), environ, lambda local_environ: command(args, local_environ))
    return command(args, environ)


def _local_option(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """``--local DIR`` from before the command or after it (``call --local DIR read_note ...``)."""
    before: str | None = args.local
    after: str | None = getattr(args, "local_after", None)  # serve, check, call (and local-vault, to refuse it)
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
    _add_serve(commands)
    _add_check(commands)
    _add_call(commands)
    _add_local_vault(commands)
    return parser


Commands = argparse._SubParsersAction  # what add_subparsers returns: where each command's parser is added


def _add_local_after(command: argparse.ArgumentParser) -> None:
    command.add_argument("--local", metavar="DIR", dest="local_after", help="the same as --local DIR before it")


def _add_serve(commands: Commands[_Parser]) -> None:
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
    serve_command.add_argument(
        "--stateless",
        action="store_true",
        help="with --http: no sessions, every request stands alone (replicas behind a load balancer)",
    )
    serve_command.add_argument(
        "--metrics",
        action="store_true",
        help="with --http: answer GET /metrics in the Prometheus text format (also TEAM_VAULT_HTTP_METRICS=1)",
    )
    _add_local_after(serve_command)


def _add_check(commands: Commands[_Parser]) -> None:
    check_command = commands.add_parser(
        "check",
        help="check the configuration, the way to the server, the key and the project",
        description="Checks the TEAM_VAULT_* variables, DNS, TCP and TLS to the server, the API key, the default "
        "project, whether the key can write, the latency and Idempotency-Key support. Writes nothing. "
        "Exit code 0 when every required check passes, 1 otherwise.",
    )
    check_command.add_argument("--json", action="store_true", help="print the checks as JSON")
    check_command.add_argument(
        "--http",
        metavar="URL",
        help="check a running `serve --http` endpoint instead (TEAM_VAULT_HTTP_TOKEN, else TEAM_VAULT_API_KEY, "
        "is the Bearer token)",
    )
    _add_local_after(check_command)


def _add_call(commands: Commands[_Parser]) -> None:
    call_command = commands.add_parser(
        "call",
        help="run one tool once, as the MCP server would for an agent, and print its result",
        description="Runs one tool call through the MCP server's own code path (same budget, retries and\n"
        "errors) and prints its result. Exit code 1 when the tool reports an error.",
        epilog_factory=call_epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_local_after(call_command)
    call_command.add_argument("tool", help="the tool's name, e.g. read_note")
    call_command.add_argument("arguments", nargs="*", metavar="key=value", help="the tool's arguments")
    call_command.add_argument(
        "--json-args",
        metavar="JSON",
        help="the arguments as a JSON object ('-': read it from stdin); key=value pairs are added to it",
    )
    call_command.add_argument(
        "--json", action="store_true", help="print the whole result (content, structuredContent, isError) as JSON"
    )


def _add_local_vault(commands: Commands[_Parser]) -> None:
    vault = commands.add_parser(
        "local-vault",
        help="run a Team Vault-compatible HTTP server on a local data directory",
        description="A Team Vault-compatible HTTP server. Prints TEAM_VAULT_URL, TEAM_VAULT_API_KEY and "
        "TEAM_VAULT_PROJECT_ID on stdout, then serves until SIGINT or SIGTERM.",
    )
    vault.add_argument("--data", metavar="DIR", type=Path, default=_default_data_dir(), help="data directory")
    # Taken only to be refused with the way to say it (--data DIR), not argparse's "invalid choice: 'DIR'".
    vault.add_argument("--local", metavar="DIR", dest="local_after", help=argparse.SUPPRESS)
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
    _add_keys(vault)


def _add_keys(vault: argparse.ArgumentParser) -> None:
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
    key_revoke.add_argument("prefix", help="a key's prefix as list shows it (all 12 characters), or the whole key")
    key_revoke.add_argument(
        "--force", action="store_true", help="revoke the start key too (the running vault and its clients use it)"
    )


class _Parser(argparse.ArgumentParser):
    """A sub-command's parser whose closing text may be made only when the help is shown."""

    def __init__(self, *args: Any, epilog_factory: Callable[[], str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epilog_factory = epilog_factory

    def format_help(self) -> str:
        if self.epilog_factory is not None:
            self.epilog = self.epilog_factory()
        return super().format_help()


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "teamvault-mcp" / "vault"
