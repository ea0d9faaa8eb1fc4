"""What passes through the local vault's pipeline: a :class:`Request` as the routes see it, and an :class:`Answer`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from teamvault_mcp.localvault.faults import Fault
from teamvault_mcp.localvault.preconditions import IfMatch, parse_if_match
from teamvault_mcp.localvault.records import User, VaultError
from teamvault_mcp.localvault.streaming import ChunkedBody

OBSIDIAN_ORIGIN = "app://obsidian.md"
Scope = tuple[str, str, str, str]  # (user id, method, route, Idempotency-Key)


@dataclass
class Answer:
    status: int
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    #: Writes a body made as it is sent, instead of ``body``: it goes out chunked (streaming.py).
    stream: Callable[[ChunkedBody], object] | None = None

    @classmethod
    def json(cls, status: int, payload: Any) -> Answer:
        return cls(status, json.dumps(payload, ensure_ascii=False).encode())

    @classmethod
    def error(cls, error: VaultError) -> Answer:
        answer = cls.json(error.status, {"error": {"code": error.code, "message": error.message, **error.fields}})
        answer.headers = error.headers
        return answer


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    params: tuple[str, ...]
    body: bytes
    content_type: str
    user: User
    key: str | None = None  # the Idempotency-Key of a write
    fault: Fault | None = None
    #: Where a successful write's answer is remembered, in the write's own transaction.
    remember: tuple[Scope, str] | None = None
    #: The If-Match fields as sent, joined; None without them or while conditional writes are off.
    if_match: str | None = None

    def arg(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    @property
    def precondition(self) -> IfMatch | None:
        return None if self.if_match is None else parse_if_match([self.if_match])

    @property
    def project_id(self) -> str:
        return self.params[0]


def cors() -> tuple[tuple[str, str], ...]:
    return (
        ("Access-Control-Allow-Origin", OBSIDIAN_ORIGIN),
        ("Access-Control-Allow-Headers", "X-API-Key, Content-Type"),
        ("Access-Control-Allow-Methods", "GET, OPTIONS"),
    )
