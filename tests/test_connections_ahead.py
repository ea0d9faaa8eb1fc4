"""Connections opened ahead in start-up's first moments (``vault/ahead.py``): before the SDK is imported, and
used by the runner's calls and warm-up, so the first call pays no TCP or TLS set-up.

Orders of events and counts of the TCP connections a loopback server accepted, never timings.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp import Client
from support.env import child_env
from support.fakes import make_config
from support.loopback import json_answer, loopback_server
from support.waiting import GENEROUS, wait_until

from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.server.workspace import WARM_UP_CONNECTIONS
from teamvault_mcp.tools.gathering import WARM_UP_WORKERS
from teamvault_mcp.vault.ahead import CONNECTIONS_AHEAD, ConnectionsAhead

ME = json_answer(200, {"user": {"id": "u1", "email": "a@b.c", "name": "A"}})

#: A child that records what was imported when ``serve`` began connecting ahead, then serves until stdin's EOF.
WATCH_START_UP = """
import sys
from teamvault_mcp.vault import ahead

made = ahead.ConnectionsAhead.__init__

def watched(self, *args, **kwargs):
    loaded = [name for name in ("mcp", "teamvault_mcp.tools.table", "teamvault_mcp.server.protocol")
              if name in sys.modules]
    sys.stderr.write(f"connecting ahead; loaded: {loaded}\\n")
    made(self, *args, **kwargs)

ahead.ConnectionsAhead.__init__ = watched
from teamvault_mcp.cli import main
raise SystemExit(main(["serve"]))
"""


def test_serve_starts_connecting_ahead_before_it_imports_the_sdk_or_the_tools() -> None:
    with loopback_server() as server:
        result = subprocess.run(
            [sys.executable, "-c", WATCH_START_UP],
            env=child_env(TEAM_VAULT_URL=server.url, TEAM_VAULT_API_KEY="osync_t", TEAM_VAULT_PREFETCH="off"),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert "connecting ahead; loaded: []" in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr


@pytest.mark.anyio
async def test_a_runner_given_connections_ahead_calls_and_warms_up_on_them() -> None:
    with loopback_server() as server:
        server.route("GET", "/api/auth/me", ME)
        ahead = ConnectionsAhead(server.url)
        wait_until(ahead.done.is_set, "the connections ahead opening", GENEROUS)
        assert ahead.connections == CONNECTIONS_AHEAD
        # The kernel completes a connect before the server's thread accepts it: the count follows, a little later.
        wait_until(lambda: server.accepted == CONNECTIONS_AHEAD, "the server accepting them", GENEROUS)
        runner = ToolRunner(make_config(base_url=server.url, prefetch=False), ahead=ahead)
        try:
            report = runner.start_warm_up()
            wait_until(report.done.is_set, "the warm-up ending", GENEROUS)
            assert report.connections == CONNECTIONS_AHEAD  # the warm-up opened none of its own
            async with Client(build_server(runner), mode="legacy") as client:
                for _ in range(3):
                    assert not (await client.call_tool("whoami", {})).is_error
            assert server.accepted == CONNECTIONS_AHEAD  # the calls found them open: no new connection
            assert len(server.exchanges) == 3
        finally:
            runner.close()


def test_the_connections_ahead_are_the_warm_up_s_workers_and_one_more() -> None:
    assert WARM_UP_CONNECTIONS == CONNECTIONS_AHEAD == WARM_UP_WORKERS + 1


def test_a_server_that_cannot_be_reached_leaves_no_connection_and_calls_make_their_own_attempts() -> None:
    with loopback_server() as server:
        url = server.url
    ahead = ConnectionsAhead(url)  # the server is gone: every connect is refused
    wait_until(ahead.done.is_set, "the connections ahead failing", GENEROUS)
    assert ahead.connections == 0
    assert ahead.pool() is not None  # the pool is there for the calls, which meet the failure themselves
