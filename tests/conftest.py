"""The fixtures every test file may ask for, and the network guard; the helpers themselves are in ``support/``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from support.fakes import API_KEY, BASE, FakeClock
from support.network_guard import (  # noqa: F401  (hooks imported here are registered by pytest)
    pytest_configure,
    pytest_runtest_call,
    pytest_unconfigure,
    watch_mock,
)

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget, RetryPolicy


@pytest.fixture(autouse=True)
def _close_http_pools() -> Iterator[None]:
    """Pooled keep-alive connections outlive a call; they are closed when the test ends."""
    yield
    from teamvault_mcp.vault.transport import close_all_pools

    close_all_pools()


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """``cli.main`` run in-process configures the package's logger; later tests get it back as it was."""
    ours = logging.getLogger("teamvault_mcp")
    handlers, level, propagate = list(ours.handlers), ours.level, ours.propagate
    yield
    ours.handlers[:] = handlers
    ours.setLevel(level)
    ours.propagate = propagate


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[LocalVault]:
    """A running local vault of the test's own, empty, in ``tmp_path / "vault"``.

    A file whose tests need more builds on it under the same name and says what it adds
    (``def vault(vault): seed(vault, …); return vault``); one that shares a vault across its
    tests asks for :func:`module_vault` the same way.
    """
    with LocalVault(tmp_path / "vault") as running:
        yield running


@pytest.fixture(scope="module")
def module_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalVault]:
    """One running local vault for every test of a module (starting one per test is slow): its tests keep
    apart by project or by path, or set the state they need."""
    with LocalVault(tmp_path_factory.mktemp("vault")) as running:
        yield running


@pytest.fixture
def http() -> Iterator[requests.Session]:
    """A ``requests`` session for speaking to a local vault straight, without the package."""
    with requests.Session() as session:
        session.trust_env = False  # loopback only: no proxy from the environment
        yield session


@pytest.fixture
def http_mock() -> Iterator[responses.RequestsMock]:
    """``responses`` for the test; a request it does not match fails the test (network guard)."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        watch_mock(mock)
        yield mock


@pytest.fixture
def make_client(clock: FakeClock) -> Iterator[Callable[..., Any]]:
    """Build a TeamVaultClient on the fake clock: ``make_client(budget=45, policy=RetryPolicy())``."""
    from teamvault_mcp.vault.client import TeamVaultClient

    made: list[TeamVaultClient] = []

    def make(budget: float = 45.0, policy: RetryPolicy | None = None, token: CancelToken | None = None) -> Any:
        client = TeamVaultClient(
            BASE,
            API_KEY,
            budget=Budget(budget, clock),
            token=token or CancelToken(),
            clock=clock,
            policy=policy or RetryPolicy(),
        )
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
