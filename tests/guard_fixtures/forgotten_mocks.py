"""Fixture tests for the network guard, run by test_network_guard.py in a child pytest.

Not collected by the main run (the file name does not start with ``test_``). Two of
these must FAIL and two must PASS; the names say which.
"""

from __future__ import annotations

import contextlib

import responses
from support.fakes import API_KEY, BASE, FakeClock
from support.loopback import json_answer, loopback_server

from teamvault_mcp.errors import TeamVaultError
from teamvault_mcp.vault.client import TeamVaultClient
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget, RetryPolicy


def client(base_url: str = BASE) -> TeamVaultClient:
    clock = FakeClock()
    return TeamVaultClient(
        base_url, API_KEY, budget=Budget(45, clock), token=CancelToken(), clock=clock, policy=RetryPolicy()
    )


def test_must_fail_forgotten_mock_even_though_the_error_is_caught() -> None:
    with contextlib.suppress(TeamVaultError):  # the code under test swallows the failure, as a tool would
        client().whoami()  # no mock: this would go to the real network


def test_must_fail_request_the_active_mock_does_not_match(http_mock: responses.RequestsMock) -> None:
    http_mock.get(f"{BASE}/api/projects", json={"projects": []})
    with contextlib.suppress(TeamVaultError):
        client().whoami()  # registered: /api/projects; requested: /api/auth/me


def test_must_pass_mocked_request(http_mock: responses.RequestsMock) -> None:
    http_mock.get(f"{BASE}/api/auth/me", json={"user": {"id": "u1"}})
    assert client().whoami() == {"id": "u1"}


def test_must_pass_loopback_server() -> None:
    with loopback_server() as server:
        server.route("GET", "/api/auth/me", json_answer(200, {"user": {"id": "u2"}}))
        assert client(server.url).whoami() == {"id": "u2"}
