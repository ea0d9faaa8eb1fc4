"""Environments for the program: ``TEAM_VAULT_*`` for a local vault, and a child process's whole environment."""

from __future__ import annotations

import os

from support.children import ROOT
from teamvault_mcp.localvault import LocalVault


def env_for(vault: LocalVault, **overrides: str) -> dict[str, str]:
    """The variables that point the program at ``vault``; ``overrides`` are more, without ``TEAM_VAULT_``
    (``env_for(vault, READ_ONLY="1")``). The content cache is off: a test never writes to the user's cache."""
    values = {
        "TEAM_VAULT_URL": vault.url,
        "TEAM_VAULT_API_KEY": vault.api_key,
        "TEAM_VAULT_PROJECT_ID": vault.project_id,
        "TEAM_VAULT_CACHE_DIR": "off",
    }
    values.update({f"TEAM_VAULT_{name}": value for name, value in overrides.items()})
    return values


def agent_env(vault: LocalVault, home: str, package: str | None = None, **overrides: str) -> dict[str, str]:
    """A whole, minimal environment for a ``teamvault-mcp`` child on ``vault`` (an agent, as the races and the
    benches start them): :func:`env_for` with logs at ``error``, ``HOME`` and ``PATH``, and ``package`` (another
    tree of the package, a bench's ``--package``) first on the path. ``overrides`` as for :func:`env_for`."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, **env_for(vault, LOG_LEVEL="error", **overrides)}
    if package:
        env["PYTHONPATH"] = package
    return env


def child_env(**variables: str) -> dict[str, str]:
    """This process's environment for a child, without its ``TEAM_VAULT_*``, the source tree first on the path,
    the content cache off, and ``variables`` on top."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TEAM_VAULT_")}
    env["PYTHONPATH"] = str(ROOT)
    env["TEAM_VAULT_CACHE_DIR"] = "off"  # a test never writes to the user's cache
    env.update(variables)
    return env
