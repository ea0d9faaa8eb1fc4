"""``serve --http`` in-process on 127.0.0.1 (a free port), and clients for it: the SDK's Streamable HTTP client
and plain ``httpx2`` requests for what a client library would not send (no token, a foreign Origin)."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support.fakes import make_config
from support.policies import FAST
from support.sessions import CALL_BUDGET
from support.waiting import GENEROUS, too_slow
from teamvault_mcp.http_config import HttpConfig
from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.server.http import HttpService
from teamvault_mcp.vault.retry import Clock

#: The shared token of token mode in tests.
TOKEN = "test-token-0123456789abcdef"

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
#: What a Streamable HTTP client sends with every POST.
POST_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextmanager
def http_service(
    vault: LocalVault,
    *,
    key_from_client: bool = False,
    config: dict[str, Any] | None = None,
    clock: Clock | None = None,
    **options: Any,
) -> Iterator[HttpService]:
    """``serve --http 127.0.0.1:0`` for ``vault`` (token :data:`TOKEN`, or ``key_from_client``) until the block ends.

    ``config`` overrides the server's configuration, ``options`` its :class:`HttpConfig`; ``clock`` is the server's.
    """
    values: dict[str, Any] = {
        "base_url": vault.url,
        "api_key": "" if key_from_client else vault.api_key,
        "project_id": None if key_from_client else vault.project_id,
        "call_budget": CALL_BUDGET,
        **(config or {}),
    }
    http = HttpConfig(
        host="127.0.0.1", port=0, token=None if key_from_client else TOKEN, key_from_client=key_from_client, **options
    )
    service = HttpService(make_config(**values), http, policy=FAST, clock=clock)
    thread = threading.Thread(target=service.run, name="serve --http (test)", daemon=True)
    thread.start()
    try:
        assert service.started.wait(GENEROUS), too_slow("serve --http starting", GENEROUS)
        yield service
    finally:
        service.stop()
        thread.join(GENEROUS)
        assert not thread.is_alive(), too_slow("serve --http stopping", GENEROUS)


@asynccontextmanager
async def mcp_client(url: str, secret: str | None = TOKEN, **headers: str) -> AsyncIterator[Client]:
    """The SDK's client over Streamable HTTP at ``url``, ``secret`` as the Bearer token (the legacy handshake)."""
    if secret is not None:
        headers = {"Authorization": f"Bearer {secret}", **headers}
    timeout = httpx2.Timeout(GENEROUS, read=GENEROUS * 3)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


def post(url: str, body: Any = INITIALIZE, *, secret: str | None = TOKEN, **headers: str) -> httpx2.Response:
    """One raw POST to the endpoint (a JSON-RPC message by default ``initialize``)."""
    sent = {**POST_HEADERS, **headers}
    if secret is not None:
        sent["Authorization"] = f"Bearer {secret}"
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(url, content=content, headers=sent, timeout=GENEROUS)
