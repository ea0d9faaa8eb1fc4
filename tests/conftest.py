"""Shared test fixtures: the network guard, a fake clock, the HTTP mock, clients and servers."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import responses
from network_guard import (  # noqa: F401  (hooks imported here are registered by pytest)
    pytest_configure,
    pytest_runtest_call,
    pytest_unconfigure,
    watch_mock,
)

from teamvault_mcp.config import Config
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget, RetryPolicy

BASE = "http://vault.test"
API_KEY = "osync_" + "5ec2e7" * 10 + "abcd"
PROJECT = "proj1"
FILES = f"{BASE}/api/projects/{PROJECT}/files"


class FakeClock:
    """Time that moves only when told to: by a pause of the retry loop or by ``advance``."""

    def __init__(self, random_value: float = 0.0) -> None:
        self.now = 1000.0
        self.wall_start = 1_800_000_000.0  # 2027-01-15, an epoch for Retry-After dates
        self.random_value = random_value
        self.waits: list[float] = []
        #: Called with the pause length before each pause; may set the cancel event.
        self.on_wait: Callable[[float], None] | None = None
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        with self._lock:
            return self.now

    def wall(self) -> float:
        return self.wall_start + self.monotonic() - 1000.0

    def random(self) -> float:
        return self.random_value

    def wait(self, event: threading.Event, seconds: float) -> bool:
        self.waits.append(seconds)
        if self.on_wait is not None:
            self.on_wait(seconds)
        if event.is_set():
            return True
        self.advance(seconds)
        return event.is_set()

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


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
def http_mock() -> Iterator[responses.RequestsMock]:
    """``responses`` for the test; a request it does not match fails the test (network guard)."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        watch_mock(mock)
        yield mock


def make_config(**overrides: Any) -> Config:
    values: dict[str, Any] = {"base_url": BASE, "api_key": API_KEY, "project_id": PROJECT}
    values.update(overrides)
    return Config(**values)


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


def file_record(path: str, file_id: str = "f1", **overrides: Any) -> dict[str, Any]:
    """A file record as ``GET /files`` returns it (size as a string, as the server sends it)."""
    record: dict[str, Any] = {
        "id": file_id,
        "path": path,
        "fileType": "TEXT",
        "contentHash": "0" * 64,
        "size": "5",
        "mimeType": "text/markdown",
        "deletedAt": None,
        "createdAt": "2026-11-30T10:00:00.000Z",
        "updatedAt": "2026-11-30T10:00:00.000Z",
        "lastModifiedById": "u1",
    }
    record.update(overrides)
    return record
