"""Tool calls through a real MCP client (in-memory streams) to a :class:`ToolRunner` on a local vault."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client

from support import seeding
from support.fakes import make_config
from support.policies import FAST
from teamvault_mcp.config import Config
from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.server.workspace import Workspace
from teamvault_mcp.vault.retry import Clock, RetryPolicy, SystemClock

#: A call's budget unless a test says otherwise: short, as the vault is local.
CALL_BUDGET = 5.0
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def runner_on(
    vault: LocalVault, *, clock: Clock | None = None, policy: RetryPolicy = FAST, **config: Any
) -> ToolRunner:
    """A runner for ``vault`` on the real clock and :data:`FAST`; ``config`` overrides the configuration."""
    return ToolRunner(config_on(vault, **config), clock=clock or SystemClock(), policy=policy)


def workspace_on(
    vault: LocalVault, *, clock: Clock | None = None, policy: RetryPolicy = FAST, **config: Any
) -> Workspace:
    """What a runner for ``vault`` would share between its calls, without the runner (a handler called directly)."""
    return Workspace(config_on(vault, **config), clock=clock or SystemClock(), policy=policy)


def config_on(vault: LocalVault, **config: Any) -> Config:
    """The configuration of a server on ``vault``, with :data:`CALL_BUDGET`; ``config`` overrides it."""
    values = {
        "base_url": vault.url,
        "api_key": vault.api_key,
        "project_id": vault.project_id,
        "call_budget": CALL_BUDGET,
        **config,
    }
    return make_config(**values)


class Session:
    """A local vault and an MCP client talking to a runner on it; ``messages``: what the server sent unasked
    (when the session collects them)."""

    def __init__(self, vault: LocalVault, client: Client, runner: ToolRunner, messages: list[Any]) -> None:
        self.vault = vault
        self.client = client
        self.runner = runner
        self.messages = messages

    async def call(self, tool: str, **arguments: Any) -> tuple[str, bool, Any]:
        """The result's text, whether it is an error, and its structured content."""
        result = await self.client.call_tool(tool, arguments)
        return result.content[0].text, result.is_error, result.structured_content

    async def texts(self, tool: str, **arguments: Any) -> tuple[str, bool]:
        """What a text-only host shows the model: every text block, joined by blank lines, and the error flag;
        never ``structuredContent``."""
        result = await self.client.call_tool(tool, arguments)
        return "\n\n".join(block.text for block in result.content if block.type == "text"), result.is_error

    async def text_ok(self, tool: str, **arguments: Any) -> str:
        """The joined text blocks of a call that must succeed (see :meth:`texts`)."""
        text, is_error = await self.texts(tool, **arguments)
        assert not is_error, text
        return text

    async def ok(self, tool: str, **arguments: Any) -> Any:
        """The structured content of a call that must succeed."""
        text, is_error, structured = await self.call(tool, **arguments)
        assert not is_error, text
        return structured

    async def ok_text(self, tool: str, **arguments: Any) -> str:
        """The text of a call that must succeed."""
        text, is_error, _ = await self.call(tool, **arguments)
        assert not is_error, text
        return text

    async def read(self, path: str, **arguments: Any) -> str:
        """The note's text as ``read_note`` gives it, after the ``[contentHash: …]`` line it starts with."""
        text = await self.text_ok("read_note", path=path, **arguments)
        header, _, body = text.partition("\n")
        assert re.fullmatch(r"\[contentHash: [0-9a-f]{12}\]", header), text[:200]
        return body

    async def tool_names(self) -> list[str]:
        return [tool.name for tool in (await self.client.list_tools()).tools]

    # -- the vault's side, straight in its store -------------------------------------------------------------

    def seed(self, path: str, content: str | bytes, mime_type: str | None = None) -> None:
        seeding.seed(self.vault, path, content, mime_type)

    def colleague_writes(self, path: str, content: str | bytes) -> None:
        seeding.colleague_writes(self.vault, path, content)

    def content(self, path: str) -> bytes:
        return seeding.content(self.vault, path)

    def text(self, path: str) -> str:
        return seeding.content(self.vault, path).decode()

    def file_id(self, path: str) -> str:
        return seeding.file_id(self.vault, path)

    def operations(self) -> list[str]:
        return seeding.operations(self.vault)

    def writes_sent(self) -> list[tuple[str, str]]:
        """(method, path) of every write request the vault saw, in order."""
        return [(method, path) for method, path in self.vault.faults.seen if method in WRITE_METHODS]


@asynccontextmanager
async def session_on(vault: LocalVault, *, collect_messages: bool = False, **options: Any) -> AsyncIterator[Session]:
    """A :class:`Session` on ``vault``; ``options`` go to :func:`runner_on` (``clock``, ``policy``, configuration)."""
    runner = runner_on(vault, **options)
    messages: list[Any] = []

    async def on_message(message: Any) -> None:
        messages.append(message)

    handler = on_message if collect_messages else None
    async with Client(build_server(runner), mode="legacy", message_handler=handler) as client:
        yield Session(vault, client, runner, messages)


@asynccontextmanager
async def open_session(
    tmp_path: Path, *, vault_options: dict[str, Any] | None = None, **options: Any
) -> AsyncIterator[Session]:
    """A fresh local vault in ``tmp_path`` (made with ``vault_options``) and a :class:`Session` on it."""
    with LocalVault(tmp_path / "vault", **(vault_options or {})) as vault:
        async with session_on(vault, **options) as session:
            yield session


async def call_once(runner: ToolRunner, tool: str, **arguments: Any) -> tuple[str, bool, Any]:
    """One call through a client of its own to ``runner`` (text, is_error, structured content)."""
    async with Client(build_server(runner), mode="legacy") as client:
        result = await client.call_tool(tool, arguments)
    return result.content[0].text, result.is_error, result.structured_content
