"""The audit log: one JSON line per write tool call, appended to ``TEAM_VAULT_AUDIT_LOG``.

A line says when, which tool, which project and paths, the Idempotency-Key, how many
HTTP attempts the write took, the outcome (``applied``, ``replayed``, ``failed``,
``uncertain``, ``cancelled``, or ``noop`` for a dry run or a change to the same
content: ``tools/writing/report.py`` decides it) and every fact the write pipeline
learnt: the content hash before and after when known, ``verified``, ``rebased``,
``replacedMeanwhile``, and for a write of many notes one entry per note. Never the API key, never
note content. Each line is written with one ``write`` to a file opened for appending
(and under a lock), so concurrent calls never interleave. A log that cannot be written
never fails a tool call; the first failure is reported on stderr.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class AuditLog:
    """``user``: the caller's Team Vault user id, on every line (``serve --http --key-from-client``)."""

    def __init__(self, path: Path, *, user: str | None = None) -> None:
        self.path = path
        self.user = user
        self._lock = threading.Lock()
        self._reported = False

    def record(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` (plus the time) as one line."""
        caller = {"user": self.user} if self.user is not None else {}
        line = json.dumps({"time": _now(), **caller, **entry}, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        with self._lock:
            try:
                handle = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    written = os.write(handle, data)
                finally:
                    os.close(handle)
                if written != len(data):
                    raise OSError(f"only {written} of {len(data)} bytes written")
            except OSError as error:
                if not self._reported:
                    self._reported = True
                    log.error("cannot write the audit log %s (%s); tool calls go on without it", self.path, error)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
