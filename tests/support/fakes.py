"""Stand-ins for tests without a server: the fake clock, a test configuration, the records a mocked server sends."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from teamvault_mcp.config import Config

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


def make_config(**overrides: Any) -> Config:
    """A configuration for the mocked server at :data:`BASE` (or the one ``overrides`` name)."""
    values: dict[str, Any] = {"base_url": BASE, "api_key": API_KEY, "project_id": PROJECT}
    values.update(overrides)
    return Config(**values)


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
