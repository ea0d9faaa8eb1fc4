"""The command line: ``teamvault-mcp`` serves MCP over stdio; errors become exit codes.

Exit codes: 0 after a clean shutdown (the host closed stdin), 1 for a bad
configuration, 2 for a bad command line. Logging is configured here and only
here, and goes to stderr: stdout belongs to JSON-RPC.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence

from teamvault_mcp import __version__
from teamvault_mcp.config import Config, load_config
from teamvault_mcp.errors import ConfigError

PROG = "teamvault-mcp"


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="MCP server (stdio) for a Team Vault project. Configured by TEAM_VAULT_* variables.",
        epilog="Required: TEAM_VAULT_URL, TEAM_VAULT_API_KEY. See the README for the optional variables.",
    )
    parser.add_argument("command", nargs="?", choices=["serve"], default="serve", help="serve (the default)")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.parse_args(argv)

    try:
        config = load_config(os.environ if environ is None else environ)
    except ConfigError as error:
        for line in str(error).splitlines():
            sys.stderr.write(f"{PROG}: {line}\n")
        return 1
    _configure_logging(config)

    from teamvault_mcp.server import serve

    serve(config)
    return 0


def _configure_logging(config: Config) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG} %(levelname)s %(name)s: %(message)s"))
    ours = logging.getLogger("teamvault_mcp")
    ours.setLevel(config.log_level.upper())
    ours.addHandler(handler)
    ours.propagate = False
    # Third-party loggers stay at warning: the SDK's debug output would carry note content.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format=f"{PROG} %(levelname)s %(name)s: %(message)s")
