"""The real entry point as a child process, spoken to over stdio with raw JSON-RPC lines."""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.children import CONSOLE_SCRIPT, ENTRY_POINTS, ROOT, StdioChild
from support.env import child_env
from support.fakes import API_KEY
from support.loopback import json_answer, loopback_server
from support.waiting import wait_until

from teamvault_mcp import __version__
from teamvault_mcp.localvault import Fault, LocalVault


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_initialize_and_tools_list_over_stdio(entry: str) -> None:
    if entry == "teamvault-mcp" and not CONSOLE_SCRIPT.exists():
        pytest.fail(f"the console script is not installed next to {sys.executable}: pip install -e .")
    child = StdioChild(ENTRY_POINTS[entry], child_env(TEAM_VAULT_URL="http://127.0.0.1:9", TEAM_VAULT_API_KEY=API_KEY))
    initialized = child.initialize()
    listed = child.request(2, "tools/list")
    code, stderr = child.close()
    assert initialized["result"]["serverInfo"] == {"name": "team-vault", "version": __version__}
    assert len(listed["result"]["tools"]) == 26
    assert code == 0
    assert API_KEY not in stderr


def test_missing_required_variables_exit_1_with_a_usage_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "teamvault_mcp"], env=child_env(), capture_output=True, timeout=20, cwd=ROOT
    )
    assert result.returncode == 1
    assert result.stdout == b""
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert "TEAM_VAULT_URL" in lines[0] and "TEAM_VAULT_API_KEY" in lines[0]


def test_a_malformed_optional_value_exits_1_naming_it() -> None:
    env = child_env(TEAM_VAULT_URL="https://v.example", TEAM_VAULT_API_KEY=API_KEY, TEAM_VAULT_CALL_BUDGET="abc")
    result = subprocess.run([sys.executable, "-m", "teamvault_mcp"], env=env, capture_output=True, timeout=20, cwd=ROOT)
    assert result.returncode == 1
    assert "TEAM_VAULT_CALL_BUDGET='abc'" in result.stderr.decode()


def test_invalid_json_and_unknown_methods_get_json_rpc_errors_and_the_server_keeps_going() -> None:
    child = StdioChild(
        ENTRY_POINTS["python -m teamvault_mcp"],
        child_env(TEAM_VAULT_URL="http://127.0.0.1:9", TEAM_VAULT_API_KEY=API_KEY),
    )
    child.initialize()
    child.send("{this is not json")
    parse_error = child.receive()
    child.send("")  # a blank line is no message: no answer
    child.send('{"jsonrpc": "2.0", "id": 9, "params": {}}')
    invalid = child.receive()
    unknown = child.request(3, "no/such_method")
    still_alive = child.request(4, "ping")
    code, _ = child.close()
    assert parse_error["error"]["code"] == -32700 and parse_error["id"] is None
    assert invalid["error"]["code"] == -32600 and invalid["id"] == 9
    assert unknown["id"] == 3 and unknown["error"]["code"] == -32601
    assert still_alive == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert code == 0


def test_a_tool_call_over_stdio_with_debug_logging_never_shows_the_key() -> None:
    with loopback_server() as server:
        server.route("GET", "/api/auth/me", json_answer(200, {"user": {"id": "u1", "email": "a@b.c", "name": "A"}}))
        child = StdioChild(
            ENTRY_POINTS["python -m teamvault_mcp"],
            child_env(TEAM_VAULT_URL=server.url, TEAM_VAULT_API_KEY=API_KEY, TEAM_VAULT_LOG_LEVEL="debug"),
        )
        child.initialize()
        answer = child.request(2, "tools/call", {"name": "whoami", "arguments": {}})
        code, stderr = child.close()
        sent_key = server.exchanges[0].headers["X-API-Key"]
    assert answer["result"] == {"content": [{"type": "text", "text": "A <a@b.c>, user id u1."}], "isError": False}
    assert sent_key == API_KEY
    assert "GET /api/auth/me → 200" in stderr  # one debug line per attempt
    assert API_KEY not in stderr
    assert code == 0


def test_a_third_party_loggers_warning_never_shows_the_key() -> None:
    """Our logger and the root one (urllib3's, the SDK's warnings) both leave with the key replaced."""
    code = (
        "import logging, sys; from teamvault_mcp.commands.shared import configure_logging; "
        "configure_logging('info', sys.argv[1]); "
        "logging.getLogger('urllib3.connectionpool').warning('sent X-API-Key: %s', sys.argv[1]); "
        "logging.getLogger('teamvault_mcp.x').warning('ours: %s', sys.argv[1])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, API_KEY], env=child_env(), capture_output=True, text=True, timeout=20
    )
    assert "sent X-API-Key:" in result.stderr and "ours:" in result.stderr, result.stderr
    assert API_KEY not in result.stderr


def test_start_up_imports_neither_requests_nor_yaml_nor_regex() -> None:
    # The first request, initialize, needs no HTTP client, YAML parser or regex engine: the first tool call that
    # needs one loads it. What serve imports to answer initialize and tools/list (the whole tool table) is held here.
    heavy = ("requests", "urllib3", "ruamel.yaml", "regex")
    code = (
        "import sys, teamvault_mcp.cli, teamvault_mcp.server.protocol, teamvault_mcp.tools.table; "
        f"print(sorted(name for name in {heavy!r} if name in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=20)
    assert result.stdout.strip() == "[]", result.stderr


#: A child that records the collector's state when serve builds its server (its imports done), then serves until EOF.
WATCH_COLLECTOR = """
import gc, sys
from teamvault_mcp.server import protocol

built = protocol.build_server

def watched(*args, **kwargs):
    sys.stderr.write(f"building: frozen {gc.get_freeze_count()}, collector on {gc.isenabled()}\\n")
    return built(*args, **kwargs)

protocol.build_server = watched
from teamvault_mcp.cli import main
raise SystemExit(main(["serve"]))
"""


def test_serve_imports_with_the_collector_held_off_and_serves_with_it_on() -> None:
    # The SDK and the tools are imported with the cyclic collector held off, and what they made is frozen: the
    # collections the imports triggered were a tenth of start-up. Serving, the collector is on again.
    result = subprocess.run(
        [sys.executable, "-c", WATCH_COLLECTOR],
        env=child_env(TEAM_VAULT_URL="http://127.0.0.1:9", TEAM_VAULT_API_KEY="osync_t", TEAM_VAULT_PREFETCH="off"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    building = next(line for line in result.stderr.splitlines() if line.startswith("building:"))
    frozen = int(building.split()[2].rstrip(","))
    assert frozen > 10_000, building  # the SDK's modules, pydantic's models, the tool table
    assert building.endswith("collector on True"), building


def test_the_collector_is_held_off_only_while_importing_and_as_it_was_after() -> None:
    from teamvault_mcp.commands.shared import collector_held_off

    try:
        with pytest.raises(ImportError), collector_held_off():
            assert not gc.isenabled()
            raise ImportError("a failed import still gives the collector back")
        assert gc.isenabled()
        gc.disable()  # held off by someone else (a search's gc_paused, say): it stays so
        with collector_held_off():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()  # this test process's objects go back to the collector


def test_serve_takes_local_after_the_command(tmp_path: Path) -> None:
    child = StdioChild([*ENTRY_POINTS["python -m teamvault_mcp"], "serve", "--local", str(tmp_path)], child_env())
    child.initialize()
    answer = child.request(2, "tools/call", {"name": "list_projects", "arguments": {}})
    code, stderr = child.close()
    assert "(default)" in answer["result"]["content"][0]["text"], stderr
    assert code == 0


@pytest.mark.parametrize("setting", ["on", "off"])
def test_the_child_sends_structured_content_and_output_schemas_only_when_asked(tmp_path: Path, setting: str) -> None:
    env = child_env(TEAM_VAULT_STRUCTURED_CONTENT=setting)
    child = StdioChild([*ENTRY_POINTS["python -m teamvault_mcp"], "--local", str(tmp_path)], env)
    child.initialize()
    listed = child.request(2, "tools/list", {})["result"]["tools"]
    answer = child.request(3, "tools/call", {"name": "list_projects", "arguments": {}})["result"]
    code, stderr = child.close()
    assert code == 0, stderr
    assert {"outputSchema" in tool for tool in listed} == {setting == "on"}
    assert ("structuredContent" in answer, len(answer["content"])) == (setting == "on", 1)


def test_an_unknown_structured_content_setting_stops_the_start_with_one_line(tmp_path: Path) -> None:
    env = child_env(TEAM_VAULT_STRUCTURED_CONTENT="json")
    done = subprocess.run(
        [*ENTRY_POINTS["python -m teamvault_mcp"], "--local", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1].endswith("TEAM_VAULT_STRUCTURED_CONTENT='json' is not one of off, on.")


# -- Ctrl-C and SIGTERM: the first one ends the server, exit 128 + the signal, no traceback -----------------------

#: Generous: the server stops within milliseconds of the signal; past this the machine is too slow, not the code.
STOP_LIMIT = 20.0


def stopped(process: subprocess.Popen[bytes], how: int, reader: threading.Thread | None = None) -> tuple[int, str]:
    """Send ``how`` once, with stdin still open; the exit code and stderr (its pipes are closed after)."""
    process.send_signal(how)
    try:
        code = process.wait(timeout=STOP_LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"still running {STOP_LIMIT} s after one {signal.Signals(how).name}") from None
    finally:
        if reader is not None:
            reader.join(timeout=5)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()
    assert process.stderr is not None
    with process.stderr:
        return code, process.stderr.read().decode()


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_the_first_signal_ends_the_server_with_stdin_a_pipe_left_open(tmp_path: Path, how: int) -> None:
    child = StdioChild([*ENTRY_POINTS["python -m teamvault_mcp"], "--local", str(tmp_path)], child_env())
    child.initialize()  # serving: its stdin reader is blocked on the open pipe
    code, stderr = stopped(child.process, how, child.reader)
    assert code == 128 + how
    assert stderr == f"teamvault-mcp: stopped by {signal.Signals(how).name}\n"


def test_ctrl_c_ends_the_server_in_a_terminal(tmp_path: Path) -> None:
    leader, terminal = os.openpty()  # the child's stdin and stdout are a terminal, as when run by hand
    process = subprocess.Popen(
        [*ENTRY_POINTS["teamvault-mcp"], "--local", str(tmp_path)],
        stdin=terminal,
        stdout=terminal,
        stderr=subprocess.PIPE,
        env=child_env(),
        cwd=ROOT,
    )
    os.close(terminal)
    try:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        os.write(leader, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode())
        os.write(leader, b"\n")
        seen = b""
        deadline = time.monotonic() + STOP_LIMIT
        while b'"serverInfo"' not in seen:  # the terminal echoes what was typed, then the answer follows
            assert time.monotonic() < deadline, f"no answer to initialize on the terminal: {seen!r}"
            if select.select([leader], [], [], 0.5)[0]:
                seen += os.read(leader, 65536)
        code, stderr = stopped(process, signal.SIGINT)
    finally:
        os.close(leader)
    assert code == 130
    from teamvault_mcp.commands.serve import TERMINAL_HINT

    assert stderr == TERMINAL_HINT + "teamvault-mcp: stopped by SIGINT\n"  # (the hint: stdin is a terminal here)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_cancels_the_calls_in_flight_and_audits_them(tmp_path: Path, how: int) -> None:
    audit = tmp_path / "audit.jsonl"
    with LocalVault(tmp_path / "vault") as vault:
        vault.faults.add("POST", "/api/projects/*/files", Fault.hang(at_most=60))
        env = child_env(
            TEAM_VAULT_URL=vault.url,
            TEAM_VAULT_API_KEY=vault.api_key,
            TEAM_VAULT_PROJECT_ID=vault.project_id,
            TEAM_VAULT_AUDIT_LOG=str(audit),
        )
        child = StdioChild(ENTRY_POINTS["python -m teamvault_mcp"], env)
        child.initialize()
        arguments = {"path": "inbox/a.md", "content": "new\n"}
        child.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "write_note", "arguments": arguments},
            }
        )
        wait_until(lambda: vault.faults.injected, "the write reaching the vault")  # in flight, held there
        signalled_at = time.monotonic()
        code, stderr = stopped(child.process, how, child.reader)
        hang_ended = list(vault.faults.hang_ended)
    assert code == 128 + how
    assert "Traceback" not in stderr
    assert stderr.endswith(
        f"teamvault-mcp: stopped by {signal.Signals(how).name}; 1 tool call in flight was cancelled\n"
    )
    assert hang_ended and hang_ended[0] - signalled_at < STOP_LIMIT  # the request was dropped, not waited out
    [line] = [json.loads(line) for line in audit.read_text().splitlines()]
    assert (line["tool"], line["outcome"], line["paths"]) == ("write_note", "cancelled", ["inbox/a.md"])


def test_started_in_a_terminal_it_says_what_it_is_waiting_for(tmp_path: Path) -> None:
    # Issue 31: a bare `teamvault-mcp` typed in a terminal printed nothing and sat there.
    import pty

    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "teamvault_mcp", "--local", str(tmp_path / "vault")]
    child = subprocess.Popen(command, stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    os.close(follower)
    try:
        said = b""
        while b"Ctrl-C stops it." not in said:
            ready, _, _ = select.select([child.stderr], [], [], 60)
            assert ready, f"nothing more on stderr; so far: {said!r}"
            chunk = os.read(child.stderr.fileno(), 4096)  # type: ignore[union-attr]
            assert chunk, f"stderr closed; it said: {said!r}"
            said += chunk
        text = said.decode()
        assert "speaks MCP (JSON-RPC) on stdin and stdout" in text and "teamvault-mcp call list_notes" in text
    finally:
        child.kill()
        child.communicate(timeout=30)
        os.close(leader)


def test_a_start_without_a_server_names_the_way_to_try_it_without_one() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "teamvault_mcp"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
        env=child_env(), timeout=60,
    )  # fmt: skip
    assert result.returncode != 0 and "TEAM_VAULT_URL and TEAM_VAULT_API_KEY must be set." in result.stderr
    assert "To try it without a server: teamvault-mcp --local DIR" in result.stderr
    assert "JSON-RPC" not in result.stderr  # stdin is no terminal: no hint
