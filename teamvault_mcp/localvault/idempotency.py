"""The local vault's idempotency layer (teamvault-api.md §11.2): keyed writes answered once, replayed after.

A write with an ``Idempotency-Key`` is fingerprinted (method, route, query, If-Match, body); while it runs its
key is in flight (409 to a second attempt), and its answer — a success, or a definite 4xx refusal — is
remembered in the ``idempotency`` table and replayed to a retry with the same fingerprint (422 to another one).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from teamvault_mcp.localvault.database import Database
from teamvault_mcp.localvault.exchange import Answer, Request, Scope
from teamvault_mcp.localvault.multipart import MultipartError, parse_form
from teamvault_mcp.localvault.records import VaultError
from teamvault_mcp.localvault.state import VaultState


@dataclass(frozen=True)
class RememberedAnswer:
    """A keyed write's answer as stored for replay (teamvault-api.md §11.2), with its ``ETag``."""

    fingerprint: str
    status: int
    content_type: str | None
    body: bytes
    headers: tuple[tuple[str, str], ...]


def idempotent(state: VaultState, request: Request, run: Callable[[Request], Answer]) -> Answer:
    """``run(request)``, through the idempotency layer of teamvault-api.md §11.2 if it is a write with a key."""
    key = request.key
    if key is None or not state.idempotency:
        return run(request)
    if not key.strip() or len(key) > 255:
        return Answer.error(VaultError(400, "invalid_idempotency_key", "Invalid Idempotency-Key"))
    scope: Scope = (request.user.id, request.method, request.path, key)
    fingerprint = fingerprint_of(request)
    # Under the lock, a key is either running (in_flight) or answered (remembered): an
    # attempt removes itself from in_flight only after its answer is committed.
    with state.lock:
        running = state.in_flight.get(scope)
        remembered = None
        if running is None:
            remembered = remembered_answer(state.store, *scope, retention=state.idempotency_retention)
            if remembered is None:
                state.in_flight[scope] = fingerprint
    if running is not None:
        if running != fingerprint:
            return key_mismatch()
        return Answer.error(VaultError(409, "idempotency_key_in_use", "A request with this key is still in progress"))
    if remembered is not None:
        if remembered.fingerprint != fingerprint:
            return key_mismatch()
        headers = (("Idempotent-Replayed", "true"), *remembered.headers)
        return Answer(remembered.status, remembered.body, remembered.content_type, headers)
    try:
        _purge_old_answers(state)
        request.remember = (scope, fingerprint)
        answer = run(request)
        if 400 <= answer.status < 500:  # a definite refusal is an answer too; nothing was applied
            with state.store.write() as db:
                remember_answer(
                    db, *scope, fingerprint, answer.status, answer.content_type, answer.body, answer.headers
                )
        return answer
    finally:
        with state.lock:
            state.in_flight.pop(scope, None)


def _purge_old_answers(state: VaultState) -> None:
    if time.monotonic() - state.last_purge > 60:
        state.last_purge = time.monotonic()
        forget_answers_older_than(state.store, state.idempotency_retention)


def fingerprint_of(request: Request) -> str:
    """Method, route, query and a digest of the body; for multipart the fields, not the boundary."""
    digest = hashlib.sha256()
    digest.update(f"{request.method} {request.path}?{sorted(request.query.items())}\n".encode())
    if request.if_match is not None:  # the same key with another precondition is another request
        digest.update(f"If-Match: {request.if_match}\n".encode("utf-8", errors="surrogateescape"))
    form = None
    if request.content_type.lower().startswith("multipart/"):
        try:
            form = parse_form(request.content_type, request.body)
        except MultipartError:
            form = None
    if form is None:
        digest.update(request.body)
    else:
        for name in sorted(form):
            part = form[name]
            digest.update(f"{name}\0{part.content_type}\0{len(part.data)}\0".encode())
            digest.update(part.data)
    return digest.hexdigest()


def key_mismatch() -> Answer:
    return Answer.error(VaultError(422, "idempotency_key_mismatch", "The key was already used for another request"))


def remembered_answer(
    database: Database, user_id: str, method: str, route: str, key: str, *, retention: float
) -> RememberedAnswer | None:
    with database.read() as db:
        row = db.execute(
            "SELECT fingerprint, status, content_type, body, headers FROM idempotency "
            "WHERE user_id = ? AND method = ? AND route = ? AND key = ? AND created_at >= ?",
            (user_id, method, route, key, time.time() - retention),
        ).fetchone()
    if row is None:
        return None
    headers = tuple((str(name), str(value)) for name, value in json.loads(row[4] or "[]"))
    return RememberedAnswer(row[0], row[1], row[2], bytes(row[3]), headers)


def remember_answer(
    db: sqlite3.Connection,
    user_id: str,
    method: str,
    route: str,
    key: str,
    fingerprint: str,
    status: int,
    content_type: str | None,
    body: bytes,
    headers: tuple[tuple[str, str], ...] = (),
) -> None:
    db.execute(
        "INSERT OR REPLACE INTO idempotency "
        "(user_id, method, route, key, fingerprint, status, content_type, body, created_at, headers) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (user_id, method, route, key, fingerprint, status, content_type, body, time.time(), json.dumps(headers)),
    )


def forget_answers_older_than(database: Database, seconds: float) -> None:
    with database.write() as db:
        db.execute("DELETE FROM idempotency WHERE created_at < ?", (time.time() - seconds,))
