"""The embedded local vault: ``local-vault`` serves one, ``--local DIR`` runs any command on one; and why a
data directory cannot be used, in words.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from teamvault_mcp.commands.shared import PROG, configure_logging, log_level
from teamvault_mcp.commands.signals import EXIT_GRACE, SignalWait, end_within

if TYPE_CHECKING:
    from teamvault_mcp.localvault import LocalVault


def on_local_vault(data_dir: Path, environ: Mapping[str, str], command: Callable[[Mapping[str, str]], int]) -> int:
    """Run ``command`` with TEAM_VAULT_URL and the key of an embedded local vault on a free loopback port.

    The port is new at every start, so the content cache is keyed by the data directory instead.
    """
    import sqlite3

    from teamvault_mcp.localvault import LocalVault

    configure_logging(log_level(environ))
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
        # Logged as the command line, as before the commands had modules of their own.
        logging.getLogger("teamvault_mcp.cli").info("local vault in %s at %s", data_dir, vault.url)
        local = {
            **environ,
            "TEAM_VAULT_URL": vault.url,
            "TEAM_VAULT_API_KEY": vault.api_key,
            "TEAM_VAULT_PROJECT_ID": _project_of(vault, environ.get("TEAM_VAULT_PROJECT_ID", "").strip()),
            "TEAM_VAULT_CACHE_NAMESPACE": f"local vault {vault.data_dir.resolve()}",
            # A local vault holds one project: the tools' schemas need no projectId (README: Configuration).
            "TEAM_VAULT_SINGLE_PROJECT": environ.get("TEAM_VAULT_SINGLE_PROJECT") or "1",
        }
        return command(local)
    finally:
        vault.stop()


def _project_of(vault: LocalVault, inherited: str) -> str:
    """The project the calls use: ``inherited`` (TEAM_VAULT_PROJECT_ID) when it names one of this vault's, else the
    vault's own; an inherited id of another vault (a server's, left in the shell) is said to be ignored."""
    if inherited and inherited != vault.project_id:
        owner = vault.store.owner_of(vault.project_id)
        if any(project["id"] == inherited for project in vault.store.projects_of(owner)):
            return inherited
        sys.stderr.write(
            f"{PROG}: TEAM_VAULT_PROJECT_ID={inherited} is ignored: it names no project of the local vault in "
            f"{vault.data_dir}; the calls use its own project ({vault.project_id})\n"
        )
    return vault.project_id


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


def local_vault(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    import sqlite3

    from teamvault_mcp.localvault import LocalVault

    configure_logging(log_level(environ))
    if args.vault_command == "keys":
        from teamvault_mcp.localvault.keys import run_keys_command

        return run_keys_command(
            args.keys_command,
            args.data,
            label=getattr(args, "label", None),
            prefix=getattr(args, "prefix", None),
            user=getattr(args, "user", None),
            roles=getattr(args, "role", []),
            force=getattr(args, "force", False),
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
    with SignalWait() as signals:
        vault.start()
        sys.stdout.write(
            f"TEAM_VAULT_URL={vault.url}\nTEAM_VAULT_API_KEY={vault.api_key}\nTEAM_VAULT_PROJECT_ID={vault.project_id}\n"
        )
        sys.stdout.flush()
        sys.stderr.write(f"{PROG}: local vault serving {args.data} at {vault.url}; SIGINT or SIGTERM stops it\n")
        signals.wait()
        end_within(EXIT_GRACE, 0, PROG)
        vault.stop()  # a second signal meanwhile changes nothing
    return 0
