"""``teamvault-mcp check --http URL``: is a running ``serve --http`` endpoint reachable, is the token accepted,
does it list its tools? Three checks, each a :class:`EndpointCheck`; ``cli.py`` prints them as the doctor does.

The token (TEAM_VAULT_HTTP_TOKEN, or a Team Vault key for ``--key-from-client``) is sent as
``Authorization: Bearer`` and never shown. An https endpoint's certificate is checked against ``SSL_CERT_FILE``
when it is set (as httpx2 reads it), else the system's CAs; a handshake that fails says why.
"""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from teamvault_mcp import __version__
from teamvault_mcp.messages import tls_refusal

#: Seconds each step may take.
STEP_TIMEOUT = 15.0

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "teamvault-mcp check", "version": __version__},
    },
}


@dataclass(frozen=True)
class EndpointCheck:
    name: str
    status: str  # "pass", "warn", "fail" or "skip", as the doctor's checks
    detail: str
    hint: str | None = None


def check_endpoint(url: str, secret: str | None, ca_file: str | None = None) -> list[EndpointCheck]:
    """The checks of the endpoint at ``url`` with ``secret`` as the Bearer token, in order; ``ca_file``: the
    CA certificates (PEM) an https endpoint's certificate is checked against (SSL_CERT_FILE)."""
    return anyio.run(_checks, url, secret, ca_file)


async def _checks(url: str, secret: str | None, ca_file: str | None) -> list[EndpointCheck]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return [EndpointCheck("endpoint", "fail", f"{url!r} is not an http(s) URL", "e.g. http://127.0.0.1:8765/mcp")]
    try:
        verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
    except (OSError, ssl.SSLError) as error:
        problem = getattr(error, "strerror", None) or error
        return [EndpointCheck("reachable", "fail", f"SSL_CERT_FILE={ca_file}: cannot be read as PEM ({problem})")]
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    checks = []
    async with httpx2.AsyncClient(headers=headers, timeout=STEP_TIMEOUT, verify=verify) as http:
        try:
            answer = await http.post(
                url,
                content=json.dumps(_INITIALIZE),
                headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
            )
        except httpx2.HTTPError as error:
            return [_unreachable(url, error)]
        checks.append(EndpointCheck("reachable", "pass", f"{url} answered HTTP {answer.status_code}"))
        session = answer.headers.get("mcp-session-id")
        if session:  # the probe's session is not needed any more
            await http.delete(url, headers={"mcp-session-id": session})
        auth = _auth_check(answer.status_code, secret)
        checks.append(auth)
        if auth.status != "pass":
            checks.append(EndpointCheck("tools", "skip", "not listed: the endpoint did not accept the token"))
            return checks
        checks.append(await _tools_check(url, http))
    return checks


def _unreachable(url: str, error: httpx2.HTTPError) -> EndpointCheck:
    """The check of an endpoint that gave no answer: the TLS handshake's refusal named, when it was one."""
    from teamvault_mcp.vault.transport import address_of, refused_handshake

    refused = refused_handshake(error)
    if refused is None:
        return EndpointCheck(
            "reachable",
            "fail",
            f"no answer from {url}: {type(error).__name__}",
            "is `teamvault-mcp serve --http` running there? Check the host, the port and http/https",
        )
    verify_message = refused.verify_message if isinstance(refused, ssl.SSLCertVerificationError) else None
    said, fix = tls_refusal(address_of(url), verify_message, str(refused.reason), trust="SSL_CERT_FILE", url="the URL")
    if verify_message is None:  # serve --http speaks TLS only when it was given a certificate
        fix += "; serve --http speaks HTTPS when started with --tls-cert and --tls-key"
    return EndpointCheck("reachable", "fail", said, fix)


def _auth_check(status: int, secret: str | None) -> EndpointCheck:
    if status == 401:
        if secret is None:
            return EndpointCheck("auth", "fail", "the endpoint wants a Bearer token and none was given", _SECRET_HINT)
        return EndpointCheck("auth", "fail", "the endpoint refused the token (HTTP 401)", _SECRET_HINT)
    if status == 404:
        return EndpointCheck("auth", "fail", "HTTP 404: no MCP endpoint at this path", "the path is /mcp")
    if status >= 400:
        return EndpointCheck("auth", "fail", f"the endpoint answered initialize with HTTP {status}")
    return EndpointCheck("auth", "pass", "the token was accepted")


_SECRET_HINT = (
    "set TEAM_VAULT_HTTP_TOKEN to the server's token, or TEAM_VAULT_API_KEY to your Team Vault key when the server "
    "runs with --key-from-client"
)


async def _tools_check(url: str, http: Any) -> EndpointCheck:
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                tools = (await client.list_tools()).tools
    except TimeoutError:
        return EndpointCheck("tools", "fail", f"tools/list took more than {STEP_TIMEOUT:g} s")
    except (httpx2.HTTPError, MCPError, RuntimeError, OSError, ExceptionGroup) as error:
        return EndpointCheck("tools", "fail", f"tools/list failed: {type(error).__name__}: {str(error)[:200]}")
    if not tools:
        return EndpointCheck("tools", "fail", "tools/list answered no tools")
    names = ", ".join(tool.name for tool in tools[:4])
    return EndpointCheck("tools", "pass", f"{len(tools)} tools listed ({names}, …)")
