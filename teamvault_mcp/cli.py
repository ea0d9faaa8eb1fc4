"""The command line; errors become exit codes.

    teamvault-mcp [serve]            the MCP server over stdio (TEAM_VAULT_* variables)
    teamvault-mcp --local DIR        the same, on an embedded local vault kept in DIR
    teamvault-mcp local-vault ...    a Team Vault–compatible HTTP server (see --help)

Exit codes: 0 after a clean shutdown (the host closed stdin, or SIGINT/SIGTERM for
the local vault), 1 for a bad configuration, 2 for a bad command line. Logging is
configured here and only here, and goes to stderr: stdout belongs to JSON-RPC.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType

from teamvault_mcp import __version__
from teamvault_mcp.config import LOG_LEVELS, load_config
from teamvault_mcp.errors import ConfigError

PROG = "teamvault-mcp"


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    args = _parser().parse_args(argv)
    environ = os.environ if environ is None else environ
    if args.command == "local-vault":
        return _local_vault(args, environ)
    if args.local is not None:
        return _serve_local(Path(args.local), environ)
    return _serve(environ)


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
        help="serve an embedded local vault kept in DIR (created if missing) instead of a Team Vault server",
    )
    commands = parser.add_subparsers(dest="command", metavar="{serve,local-vault}")
    commands.add_parser("serve", help="serve MCP over stdio (the default)")
    vault = commands.add_parser(
        "local-vault",
        help="run a Team Vault-compatible HTTP server on a local data directory",
        description="A Team Vault-compatible HTTP server. Prints TEAM_VAULT_URL, TEAM_VAULT_API_KEY and "
        "TEAM_VAULT_PROJECT_ID on stdout, then serves until SIGINT or SIGTERM.",
    )
    vault.add_argument("--data", metavar="DIR", type=Path, default=_default_data_dir(), help="data directory")
    vault.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    vault.add_argument("--port", type=int, default=8787, help="port; 0 picks a free one (default: 8787)")
    vault.add_argument("--api-key", help="use this API key instead of the one generated and kept in DIR")
    vault.add_argument("--max-file-size", type=int, metavar="BYTES", help="refuse larger files (file_too_large)")
    vault.add_argument(
        "--without-idempotency",
        action="store_true",
        help="ignore Idempotency-Key, as the public Team Vault server does: for testing clients against it",
    )
    return parser


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "teamvault-mcp" / "vault"


def _serve(environ: Mapping[str, str]) -> int:
    try:
        config = load_config(environ)
    except ConfigError as error:
        return _config_failure(error)
    _configure_logging(config.log_level)

    from teamvault_mcp.server import serve

    serve(config)
    return 0


def _serve_local(data_dir: Path, environ: Mapping[str, str]) -> int:
    """MCP over stdio on an embedded local vault on a free loopback port."""
    from teamvault_mcp.localvault import LocalVault

    _configure_logging(_log_level(environ))
    vault = LocalVault(data_dir).start()
    try:
        local = {
            **environ,
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": environ.get("TEAM_VAULT_PROJECT_ID") or vault.project_id,
        }
        try:
            config = load_config(local)
        except ConfigError as error:
            return _config_failure(error)
        logging.getLogger(__name__).info("local vault in %s at %s", data_dir, vault.url)

        from teamvault_mcp.server import serve

        serve(config)
        return 0
    finally:
        vault.stop()


def _local_vault(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    import sqlite3

    from teamvault_mcp.localvault import LocalVault

    _configure_logging(_log_level(environ))
    if not 0 <= args.port <= 65535:
        sys.stderr.write(f"{PROG}: --port {args.port} is not a port number (0-65535)\n")
        return 2
    try:
        vault = LocalVault(
            args.data,
            host=args.host,
            port=args.port,
            api_key=args.api_key,
            max_file_size=args.max_file_size,
            idempotency=not args.without_idempotency,
        )
    except (OSError, sqlite3.Error) as error:
        sys.stderr.write(f"{PROG}: cannot serve the local vault on {args.host}:{args.port}: {error}\n")
        return 1
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


def _log_level(environ: Mapping[str, str]) -> str:
    level = environ.get("TEAM_VAULT_LOG_LEVEL", "").strip().lower()
    return level if level in LOG_LEVELS else "warning"


def _config_failure(error: ConfigError) -> int:
    for line in str(error).splitlines():
        sys.stderr.write(f"{PROG}: {line}\n")
    return 1


def _configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG} %(levelname)s %(name)s: %(message)s"))
    ours = logging.getLogger("teamvault_mcp")
    ours.setLevel(level.upper())
    ours.addHandler(handler)
    ours.propagate = False
    # Third-party loggers stay at warning: the SDK's debug output would carry note content.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format=f"{PROG} %(levelname)s %(name)s: %(message)s")
