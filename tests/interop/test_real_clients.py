"""Interop: MCP clients nobody on the team wrote, against the real server over stdio.

- the official TypeScript SDK client (``@modelcontextprotocol/sdk``), scripted by
  ``sdk_client.mjs``, one JSON command and reply per line;
- the MCP Inspector CLI (``@modelcontextprotocol/inspector``), as a user would run it.

Both spawn ``python -m teamvault_mcp`` themselves; it talks to a local vault that runs in
this process, so a test can script the vault's faults and look at what it stored.
Versions are pinned in ``package.json``. The tests need ``node`` (>= 20) and
``npm ci --prefix tests/interop``; without them they skip, unless ``TEAMVAULT_INTEROP=required``
(as CI sets it), in which case they fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from support.seeding import seed
from support.waiting import wait_until

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.tools.table import tools_for

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NODE_MODULES = HERE / "node_modules"
INSTALL = "run `npm ci --prefix tests/interop`"
SERVER = [sys.executable, "-m", "teamvault_mcp"]
INSPECTOR = NODE_MODULES / ".bin" / "mcp-inspector"
TOOL_NAMES = [tool.name for tool in tools_for(read_only=False)]
REPLY_TIMEOUT = 20.0


def missing_clients() -> str | None:
    """Why the clients cannot run here, or None when they can."""
    node = shutil.which("node")
    if node is None:
        return "node is not on PATH (install Node >= 20)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    major = re.match(r"v(\d+)\.", version)
    if major is None or int(major.group(1)) < 20:
        return f"node {version or '(unknown version)'} is too old (install Node >= 20)"
    if not NODE_MODULES.is_dir():
        return f"tests/interop/node_modules is missing: {INSTALL}"
    pinned: dict[str, str] = json.loads((HERE / "package.json").read_text())["dependencies"]
    for name, wanted in pinned.items():
        manifest = NODE_MODULES / name / "package.json"
        if not manifest.is_file():
            return f"{name} is not installed in tests/interop/node_modules: {INSTALL}"
        found = json.loads(manifest.read_text())["version"]
        if found != wanted:
            return f"{name} {found} is installed but {wanted} is pinned: {INSTALL}"
    return None


@pytest.fixture(scope="session")
def node() -> str:
    """The ``node`` binary, once the pinned clients are installed; otherwise skip (or fail if required)."""
    reason = missing_clients()
    if reason is None:
        return str(shutil.which("node"))
    if os.environ.get("TEAMVAULT_INTEROP") == "required":
        pytest.fail(f"interop tests cannot run: {reason} (TEAMVAULT_INTEROP=required)", pytrace=False)
    pytest.skip(f"interop tests skipped: {reason}")


def server_env(vault: LocalVault) -> dict[str, str]:
    return {
        "TEAM_VAULT_URL": vault.url,
        "TEAM_VAULT_API_KEY": vault.api_key,
        "TEAM_VAULT_PROJECT_ID": vault.project_id,
        "TEAM_VAULT_CACHE_DIR": "off",  # a test never writes to the user's cache
        # No warm-up: its listing at start-up would race the requests these tests count and hang at the vault.
        "TEAM_VAULT_PREFETCH": "off",
    }


def stored(vault: LocalVault, path: str) -> bytes | None:
    files = vault.store.list_files(vault.project_id, path=path, prefix=None, include_deleted=False)
    return vault.store.content(vault.project_id, files[0].id)[1] if files else None


class SdkClient:
    """``sdk_client.mjs`` in a child process: the TS SDK client, connected to our server."""

    def __init__(
        self,
        node: str,
        vault: LocalVault,
        errlog: IO[str],
        *,
        http: tuple[str, str] | None = None,
        settings: dict[str, str] | None = None,
    ) -> None:
        """``http``: (URL, token) of a ``serve --http`` endpoint to connect to instead of spawning the server;
        ``settings``: more TEAM_VAULT_* variables for the server it spawns."""
        env = {key: value for key, value in os.environ.items() if not key.startswith("TEAM_VAULT_")}
        env.update({**server_env(vault), **(settings or {})})  # the script hands TEAM_VAULT_* on to the server
        target = SERVER
        if http is not None:
            target = ["--http", http[0]]
            env["TEAM_VAULT_HTTP_TOKEN"] = http[1]
        self.errlog = errlog
        self.process = subprocess.Popen(
            [node, str(HERE / "sdk_client.mjs"), *target],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,  # the script's and the server's
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        try:
            self.ready: dict[str, Any] = self._reply()["ready"]
        except BaseException:
            self.finish()
            raise

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _reply(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=REPLY_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"sdk_client.mjs gave no reply in {REPLY_TIMEOUT} s; {self.stderr()}") from None
        if line is None:
            raise AssertionError(f"sdk_client.mjs exited with {self.process.wait()}; {self.stderr()}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def stderr(self) -> str:
        self.errlog.flush()
        self.errlog.seek(0)
        return "stderr:\n" + self.errlog.read()

    def __call__(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.process.stdin.flush()
        reply = self._reply()
        assert "thrown" not in reply, f"{op} threw {reply['thrown']}; {self.stderr()}"
        return reply

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        """A ``tools/call``; its result is checked against the tool's ``outputSchema`` by the SDK."""
        result: dict[str, Any] = self("call", name=name, arguments=arguments)["result"]
        return result

    def finish(self) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()  # the script ends at EOF, closing the server first
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.reader.join(timeout=10)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture
def sdk(node: str, vault: LocalVault, tmp_path: Path) -> Iterator[Callable[..., SdkClient]]:
    """Start the TS SDK client (and through it the server) on the test's vault; keyword arguments are more
    TEAM_VAULT_* settings for the server."""
    started: list[SdkClient] = []
    with open(tmp_path / "sdk_client.stderr", "w+") as errlog:

        def start(**settings: str) -> SdkClient:
            started.append(SdkClient(node, vault, errlog, settings=settings))
            return started[-1]

        yield start
        for client in started:
            client.finish()


def text_of(result: dict[str, Any]) -> str:
    """The result's one text block."""
    content = result["content"]
    assert [block["type"] for block in content] == ["text"], content
    text: str = content[0]["text"]
    return text


def read_text(result: dict[str, Any]) -> str:
    """A read's note exactly as stored: its one text block after the ``[contentHash: …]`` line."""
    header, _, note = text_of(result).partition("\n")
    assert re.fullmatch(r"\[contentHash: [0-9a-f]{12}\]", header), header
    return note


def test_ts_sdk_lists_the_tools_writes_and_reads(sdk: Callable[..., SdkClient], vault: LocalVault) -> None:
    client = sdk(TEAM_VAULT_STRUCTURED_CONTENT="on")
    assert client.ready["server"]["name"] == "team-vault"
    assert client.ready["protocolVersion"] == client.ready["offered"]  # the SDK's latest, accepted as is

    tools = client("list")["tools"]
    assert [tool["name"] for tool in tools] == TOOL_NAMES
    assert all(tool["inputSchema"]["type"] == "object" for tool in tools)
    assert all("outputSchema" in tool for tool in tools)  # so the SDK validates the results below

    note = "# From TypeScript\nЁлка 🎄\n"
    written = client.call("write_note", path="interop/ts.md", content=note)
    assert not written["isError"], text_of(written)
    assert written["structuredContent"]["action"] == "created"
    assert stored(vault, "interop/ts.md") == note.encode()

    read = client.call("read_note", path="interop/ts.md")
    assert (read_text(read), read["isError"]) == (note, False)
    assert read["structuredContent"]["contentHash"] == written["structuredContent"]["contentHash"]
    assert read["structuredContent"]["text"] == note

    missing = client.call("read_note", path="interop/nobody.md")  # a tool error is a result, not a throw
    assert text_of(missing).startswith("Note not found: interop/nobody.md") and missing["isError"]
    assert client("close") == {"op": "close", "unexpected": [], "answeredAfterCancel": []}


def test_ts_sdk_abort_stops_the_vault_request_at_once_and_the_server_keeps_serving(
    sdk: Callable[..., SdkClient], vault: LocalVault
) -> None:
    client = sdk()
    vault.faults.add("GET", "/api/projects/*/files", Fault.hang(at_most=60))
    started = client("start", name="read_note", arguments={"path": "slow.md"})
    wait_until(lambda: vault.faults.injected, "read_note reaching the vault")

    aborted_at = time.monotonic()
    aborted = client("abort", reason="stopped by the interop test")
    # The SDK rejects at once, locally, with an McpError whose code is RequestTimeout (-32001) even for
    # an abort, and tells the server with notifications/cancelled.
    assert aborted["rejected"] == {
        "name": "McpError",
        "code": -32001,
        "message": "MCP error -32001: stopped by the interop test",
    }
    assert aborted["cancelledSent"] == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": started["requestId"], "reason": "stopped by the interop test"},
        }
    ]
    # The server drops the vault request it had in flight: the vault sees its client go away.
    # Milliseconds in practice; the bound is for a loaded machine, far below the 60 s the hang would last.
    wait_until(lambda: vault.faults.hang_ended, "the vault seeing the server's request go away")
    assert vault.faults.hang_ended[0] - aborted_at < 20, "the machine is too slow"
    # No second attempt: a retry would follow a pause of 1 s plus up to 0.25 s of jitter.
    time.sleep(max(0.0, vault.faults.hang_ended[0] + 1.5 - time.monotonic()))
    files = f"/api/projects/{vault.project_id}/files"
    assert vault.faults.seen == [("GET", files)]

    written = client.call("write_note", path="after.md", content="still serving\n")
    assert not written["isError"], text_of(written)
    assert stored(vault, "after.md") == b"still serving\n"
    read = client.call("read_note", path="after.md")
    assert (read_text(read), read["isError"]) == ("still serving\n", False)
    assert "structuredContent" not in read  # the default: the text alone
    # No answer ever came for the cancelled request, and the SDK saw nothing amiss.
    assert client("close") == {"op": "close", "unexpected": [], "answeredAfterCancel": []}


def test_ts_sdk_over_streamable_http_lists_writes_reads_and_cancels(
    node: str, vault: LocalVault, tmp_path: Path
) -> None:
    """The TS SDK's StreamableHTTPClientTransport against ``serve --http`` (token mode), in-process."""
    from support.http_service import TOKEN, http_service

    config = {"call_budget": 300.0, "attempt_timeout": 300.0}  # only the cancel can end the hang below
    with http_service(vault, config=config) as service, open(tmp_path / "sdk_http.stderr", "w+") as errlog:
        client = SdkClient(node, vault, errlog, http=(service.url, TOKEN))
        try:
            assert client.ready["server"]["name"] == "team-vault"
            assert [tool["name"] for tool in client("list")["tools"]] == TOOL_NAMES
            written = client.call("write_note", path="interop/http.md", content="over HTTP\n")
            assert not written["isError"], text_of(written)
            assert stored(vault, "interop/http.md") == b"over HTTP\n"
            read = client.call("read_note", path="interop/http.md")
            assert (read_text(read), read["isError"]) == ("over HTTP\n", False)
            missing = client.call("read_note", path="interop/nobody.md")
            assert text_of(missing).startswith("Note not found: interop/nobody.md") and missing["isError"]

            vault.faults.add("GET", "/api/projects/*/files", Fault.hang(at_most=300))
            started = client("start", name="read_note", arguments={"path": "slow.md"})
            wait_until(lambda: vault.faults.injected, "read_note reaching the vault")
            aborted = client("abort", reason="stopped over HTTP")
            assert aborted["cancelledSent"][0]["params"]["requestId"] == started["requestId"]
            wait_until(lambda: vault.faults.hang_ended, "the vault seeing the request go away")
            after = client.call("whoami")
            assert not after["isError"], text_of(after)
            # Over Streamable HTTP the Python SDK ends the cancelled request's stream with a -32800 "Request
            # cancelled" error (it must end the POST's stream somehow); the TS SDK, which already rejected, notes it.
            unexpected = client("close")["unexpected"]
            assert all("Request cancelled" in line for line in unexpected), unexpected
        finally:
            client.finish()


def inspector(
    node: str, vault: LocalVault, tmp_path: Path, *method: str, more: dict[str, str] | None = None
) -> tuple[int, Any, str]:
    """Run the Inspector CLI once against the server (``more``: more TEAM_VAULT_* settings for it); return its exit
    code, JSON output and stderr."""
    env = {**server_env(vault), **(more or {})}
    settings = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    home = tmp_path / "home"  # whatever the Inspector keeps in ~ stays in the test's folder
    home.mkdir(exist_ok=True)
    done = subprocess.run(
        [node, str(INSPECTOR), "--cli", "-q", "--format", "json", *settings, *SERVER, *method],
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(home)},  # the server's settings come from -e
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, output, done.stderr


def tools_call(name: str, *arguments: str) -> list[str]:
    return ["--method", "tools/call", "--tool-name", name, *arguments]


def test_inspector_lists_the_tools(node: str, vault: LocalVault, tmp_path: Path) -> None:
    code, output, stderr = inspector(node, vault, tmp_path, "--method", "tools/list")
    assert code == 0, stderr
    assert [tool["name"] for tool in output["result"]["tools"]] == TOOL_NAMES


def test_every_tool_schema_compiles_under_ajv_strict_mode(node: str, vault: LocalVault, tmp_path: Path) -> None:
    """Strict validators (Ajv's strict mode, the Inspector's --strict) refuse union types (``"type": [...]``) and
    unknown keywords: every input and output schema, a schema note's generated tool included, compiles cleanly."""
    seed(vault, "Schemas/recipe.md", STRICT_RECIPE)
    code, listed, stderr = inspector(
        node, vault, tmp_path, "--method", "tools/list", more={"TEAM_VAULT_SCHEMA_DIR": "Schemas"}
    )
    assert code == 0, stderr
    assert "upsert_recipe" in [tool["name"] for tool in listed["result"]["tools"]]
    checked = subprocess.run(
        [node, str(HERE / "strict_schemas.mjs")],
        input=json.dumps(listed["result"]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout) == []


#: A schema note with a field of each kind a generated tool's schema is made from (enum, date, array, object).
STRICT_RECIPE = """# Recipe schema

```yaml schema
metadata:
  schemaName: recipe
  identifierField: recipe_id
  pathTemplate: Recipes/${recipe_id}.md
  pathComponents: [recipe_id]
fields:
  recipe_id: {type: string}
  course: {type: enum, values: [soup, 2, true]}
  servings: {type: integer, minimum: 1, optional: true}
  tried: {type: date, optional: true}
  tags: {type: array, items: {type: string}, default: [recipe]}
  source:
    type: object
    optional: true
    properties:
      book: {type: string}
```
"""


def test_inspector_calls_a_write_tool_and_a_read_tool(node: str, vault: LocalVault, tmp_path: Path) -> None:
    note = "# From the Inspector\nline two\n"
    arguments = json.dumps({"path": "interop/inspector.md", "content": note})
    code, written, stderr = inspector(node, vault, tmp_path, *tools_call("write_note", "--tool-args-json", arguments))
    assert code == 0, stderr
    assert text_of(written["result"]).startswith("Created interop/inspector.md ")  # the default: text alone
    assert stored(vault, "interop/inspector.md") == note.encode()

    read_args = tools_call("read_note", "--tool-arg", "path=interop/inspector.md")  # the k=v form
    code, read, stderr = inspector(node, vault, tmp_path, *read_args)
    assert code == 0, stderr
    digest = hashlib.sha256(note.encode()).hexdigest()
    assert read["result"]["content"] == [{"type": "text", "text": f"[contentHash: {digest[:12]}]\n{note}"}]
    assert read["result"]["isError"] is False


def test_inspector_exits_5_on_a_tool_error(node: str, vault: LocalVault, tmp_path: Path) -> None:
    code, output, stderr = inspector(node, vault, tmp_path, *tools_call("read_note", "--tool-arg", "path=nobody.md"))
    assert code == 5, stderr
    assert output["result"] == {"content": [{"type": "text", "text": "Note not found: nobody.md"}], "isError": True}
    assert json.loads(stderr)["error"]["code"] == "tool_is_error"


def test_ts_sdk_accepts_every_result_of_the_host_views_suite_with_structured_content_on(
    sdk: Callable[..., SdkClient], vault: LocalVault
) -> None:
    """The TypeScript SDK checks every result's structured content against the tool's outputSchema, error results
    included (the Python SDK checks only the others): the whole task suite of issue 25 passes it, and every view
    of every answer holds its facts."""
    from support.host_views import SCHEMA_DIR, Vault, run_suite, seed_team_vault

    seed_team_vault(vault)
    client = sdk(TEAM_VAULT_STRUCTURED_CONTENT="on", TEAM_VAULT_SCHEMA_DIR=SCHEMA_DIR)
    tools = client("list")["tools"]  # the SDK keeps each tool's outputSchema from here on
    assert all("outputSchema" in tool for tool in tools)

    async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = client("call", name=tool, arguments=arguments)["result"]  # a mismatch throws
        return result

    outcomes = anyio.run(run_suite, call, Vault(vault))
    assert {outcome.task.name: outcome.missing for outcome in outcomes if not outcome.green} == {}
    assert client("close") == {"op": "close", "unexpected": [], "answeredAfterCancel": []}
