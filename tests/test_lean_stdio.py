"""The lean stdio transport (issue 19): what a host sees is the stock transport's, byte for byte, except that
nothing read before the end of input goes unanswered; and no descriptor it shares is left changed.

Over real child processes (``python -m teamvault_mcp``, ``TEAM_VAULT_STDIO=lean`` against ``stock``, each
on a fresh local vault), and in memory over pipes for what a child cannot show (the lines it reads, no
thread per message, the end-of-input limit).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import random
import select
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from support import seeding
from support.children import ENTRY_POINTS, ROOT
from support.env import child_env, env_for
from support.waiting import GENEROUS, too_slow, wait_until

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server import lean
from teamvault_mcp.server.lean import MessageWriter, Stdin, Stdout, Unanswered, _json_line, serve_lean
from teamvault_mcp.server.stdio import WritesOnlyWritable

SERVER = ENTRY_POINTS["python -m teamvault_mcp"]
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def ping(request_id: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"})


def call(request_id: Any, tool: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> str:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def enveloped(request_id: Any, method: str, params: dict[str, Any] | None = None) -> str:
    """A request in the 2026-07-28 per-request envelope (its ``_meta`` names the protocol version)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": HELLO["clientInfo"],
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": meta}}
    )


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


class Child:
    """A server process spoken to in raw bytes; everything it writes to stdout is kept, as written."""

    def __init__(self, env: dict[str, str], **popen: Any) -> None:
        popen.setdefault("stdin", subprocess.PIPE)
        popen.setdefault("stdout", subprocess.PIPE)
        self.process = subprocess.Popen(SERVER, stderr=subprocess.PIPE, env=env, cwd=ROOT, **popen)
        self.out = bytearray()
        #: Bytes that differ between two runs for reasons of no interest here (a vault's project id), and what
        #: to show instead: two runs on two vaults then compare byte for byte.
        self.masks: list[tuple[bytes, bytes]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        if self.process.stdout is not None:
            self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while chunk := self.process.stdout.read1(1 << 20):
            with self._lock:
                self.out += chunk

    def answers(self) -> int:
        with self._lock:
            return self.out.count(b"\n")

    def send(self, data: str | bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((data.encode() if isinstance(data, str) else data) + b"\n")
        self.process.stdin.flush()

    def exchange(self, data: str | bytes, answers: int) -> list[bytes]:
        """Send ``data``; the ``answers`` lines that come back for it."""
        before = self.answers()
        self.send(data)
        wait_until(lambda: self.answers() >= before + answers, f"{answers} answers to {str(data)[:60]!r}")
        with self._lock:
            return lines_of(self._masked())[before:]

    def _masked(self) -> bytes:
        out = bytes(self.out)
        for seen, shown in self.masks:
            out = out.replace(seen, shown)
        return out

    def close(self) -> tuple[int, bytes, str]:
        """Close stdin as a host does; exit code, all of stdout, stderr."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=GENEROUS)
        if self.process.stdout is not None:
            self._reader.join(timeout=GENEROUS)
            self.process.stdout.close()
        with self.process.stderr:
            return code, self._masked(), self.process.stderr.read().decode()

    def end(self) -> None:
        """Kill the process if it still runs, and close every pipe to it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


@contextmanager
def vault_child(tmp_path: Path, transport: str, **overrides: str) -> Iterator[tuple[LocalVault, Child]]:
    """A fresh local vault (a note ``a.md`` in it) and a server on it over the given transport, initialized;
    the vault's project id (in the instructions) masked, no warm-up (its requests would race the test's)."""
    with LocalVault(tmp_path / f"vault-{transport}") as vault:
        seeding.seed(vault, "a.md", "# A\n\nsome words\n")
        child = Child(child_env(**env_for(vault, STDIO=transport, PREFETCH="off", **overrides)))
        child.masks.append((vault.project_id.encode(), b"<project>"))
        try:
            child.exchange(INITIALIZE, 1)
            child.send(INITIALIZED)
            yield vault, child
        finally:
            child.end()


# -- the end of input ----------------------------------------------------------------------------------


def test_every_request_piped_in_before_the_end_of_input_is_answered(tmp_path: Path) -> None:
    # Stock, the same input: 18 to 32 of the 50 pings answered, the calls not at all (TEAM_VAULT_STDIO=stock).
    with LocalVault(tmp_path / "vault") as vault:
        seeding.seed(vault, "a.md", "# A\n")
        script = [INITIALIZE, INITIALIZED, *(ping(n) for n in range(2, 52))]
        script += [call(n, "read_note", {"path": "a.md"}) for n in range(52, 62)]
        result = subprocess.run(
            SERVER,
            input="\n".join(script).encode(),  # the last line has no newline: the end of input ends it
            capture_output=True,
            env=child_env(**env_for(vault)),
            cwd=ROOT,
            timeout=GENEROUS,
        )
    answers = {answer["id"]: answer for answer in map(json.loads, result.stdout.splitlines())}
    assert sorted(answers) == list(range(1, 62)), result.stderr.decode()
    assert all(answers[n]["result"] == {} for n in range(2, 52))
    assert all(answers[n]["result"]["content"][0]["text"].endswith("]\n# A\n") for n in range(52, 62))
    assert result.returncode == 0


@pytest.mark.anyio
async def test_a_request_still_unanswered_at_the_drain_limit_gets_the_sdks_connection_closed() -> None:
    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    server = Server("hangs", on_call_tool=call_tool)
    async with lean_pipes(server, drain_limit=0.2) as wire:
        await wire.send(INITIALIZE)
        await wire.receive()
        await wire.send(INITIALIZED)
        await wire.send(call(2, "hang", {}))
        await wire.send(ping(3))
        assert json.loads(await wire.receive()) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        wire.end_input()
        closed = json.loads(await wire.receive())  # after the drain limit: serve_lean returns then
    assert closed == {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "Connection closed"}}


# -- byte for byte the stock transport's -----------------------------------------------------------------

HOSTILE = [
    ("{this is not json", 1),
    ("", 0),
    (ping(2).encode() + b"\r", 1),  # CRLF: the \r is part of the line ending
    (ping(3).encode() + b"\r" + ping(4).encode(), 2),  # a lone \r ends a line too
    (
        '{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "read_note", "arguments": '
        '{"path": ' + "[" * 250 + '"a.md"' + "]" * 250 + "}}}",
        1,
    ),
    ('{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": ' + "[" * 5_000 + "]" * 5_000 + "}", 1),
    ('{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": {"x": ' + "[" * 300 + "]" * 300 + "}}}", 1),
    ('{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": ' + "[" * 300 + "NaN", 1),
    ("[" * 300, 1),
    ('{"jsonrpc": "2.0", "id": 9, "params": {}}', 1),
    (call(10, "read_note", {"path": "x"}).replace('"x"', '"\\ud800.md"'), 1),
    ('{"jsonrpc": "2.0", "id": "\\udc00", "method": "ping"}', 1),
    (call(12, "read_note", {"path": "PLACEHOLDER"}).encode().replace(b"PLACEHOLDER", b"caf\xc3\xa9\xff.md"), 1),
    (json.dumps({"jsonrpc": "2.0", "id": 13, "method": "no/such_method"}), 1),
    (json.dumps({"jsonrpc": "2.0", "method": "notifications/no_such_thing"}), 0),
    (json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}}), 0),  # an answer to a request never sent
    (json.dumps({"jsonrpc": "2.0", "id": 14, "method": "tools/list"}), 1),
    (call(15, "read_note", {"path": "a.md"}), 1),
    (call("16", "read_note", {"path": "missing.md"}), 1),
    (ping(17), 1),
    (enveloped(18, "ping"), 1),  # the 2026-07-28 envelope on a connection opened with initialize: refused
    (ping(19), 1),
]


def conversation(tmp_path: Path, transport: str, steps: list[tuple[str | bytes, int]]) -> tuple[list[bytes], bytes]:
    """Each step's answers, and all of stdout, on a fresh vault and server."""
    with vault_child(tmp_path, transport) as (_, child):
        answers = [child.exchange(data, count) for data, count in steps]
        code, out, stderr = child.close()
    assert code == 0, stderr
    return answers, out


def test_hostile_and_malformed_lines_get_the_stock_transports_exact_bytes(tmp_path: Path) -> None:
    lean, lean_out = conversation(tmp_path, "lean", HOSTILE)
    stock, stock_out = conversation(tmp_path, "stock", HOSTILE)
    assert lean_out == stock_out
    assert lean == stock  # and each step's answers came back for that step, in the same order
    assert [len(answers) for answers in lean] == [count for _, count in HOSTILE]
    assert json.loads(lean[0][0]) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert [json.loads(line)["id"] for line in lean[3]] == [3, 4]
    assert json.loads(lean[12][0])["result"]["isError"] is True  # the invalid UTF-8 became U+FFFD, as in stock


OPENINGS = {
    "a ping before initialize": [
        (ping(1), 1),
        (INITIALIZE.replace('"id": 1', '"id": 2'), 1),
        (INITIALIZED, 0),
        (ping(3), 1),
    ],
    "the 2026-07-28 era": [(enveloped(1, "tools/list"), 1), (enveloped(2, "ping"), 1), (INITIALIZE, 1), (ping(4), 1)],
    "notifications first": [(INITIALIZED, 0)] * 10 + [(INITIALIZE, 1), (call(2, "read_note", {"path": "a.md"}), 1)],
}


@pytest.mark.parametrize("opening", OPENINGS)
def test_however_a_connection_opens_it_is_answered_in_the_stock_transports_bytes(tmp_path: Path, opening: str) -> None:
    """The lean transport serves a connection opened with initialize on the SDK's handshake loop itself (no
    era-finding relay); any other opening goes to Server.run as under stock, and so do the bytes."""
    outputs = []
    for transport in ("lean", "stock"):
        with LocalVault(tmp_path / f"vault-{transport}") as vault:
            seeding.seed(vault, "a.md", "# A\n\nsome words\n")
            child = Child(child_env(**env_for(vault, STDIO=transport, PREFETCH="off")))
            child.masks.append((vault.project_id.encode(), b"<project>"))
            try:
                answers = [child.exchange(data, count) for data, count in OPENINGS[opening]]
                code, out, stderr = child.close()
            finally:
                child.end()
            assert code == 0, stderr
            outputs.append((answers, out))
    assert outputs[0] == outputs[1]
    assert sum(len(answers) for answers in outputs[0][0]) == sum(count for _, count in OPENINGS[opening])


def test_a_cancelled_call_gets_no_answer_in_the_same_bytes_as_stock(tmp_path: Path) -> None:
    outputs = []
    for transport in ("lean", "stock"):
        with vault_child(tmp_path, transport) as (vault, child):
            vault.faults.add("POST", "/api/projects/*/files", Fault.hang(at_most=60))
            child.send(call(2, "write_note", {"path": "inbox/b.md", "content": "new\n"}))
            wait_until(lambda: vault.faults.injected, "the write reaching the vault")
            child.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}))
            pinged = child.exchange(ping(3), 1)
            wait_until(lambda: vault.faults.hang_ended, "the vault seeing the request dropped")
            after = child.exchange(ping(4), 1)
            code, out, _ = child.close()
        assert (pinged, after, code) == ([ping_answer(3)], [ping_answer(4)], 0)
        outputs.append(out)
    assert outputs[0] == outputs[1]


def ping_answer(request_id: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % request_id


def test_progress_notifications_come_as_stock_sends_them(tmp_path: Path) -> None:
    search = call(2, "search_notes", {"query": "words"}, meta={"progressToken": "p1"})
    outputs = []
    for transport in ("lean", "stock"):
        with vault_child(tmp_path, transport) as (_, child):
            progress, result = child.exchange(search, 2)
            code, out, _ = child.close()
        assert json.loads(progress) == {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {
                "progressToken": "p1",
                "progress": 1.0,
                "total": 1.0,
                "message": "downloaded 1 of 1 notes to search",
            },
        }
        assert json.loads(result)["id"] == 2 and code == 0
        outputs.append(out)
    assert outputs[0] == outputs[1]


def test_a_5_mb_line_each_way_is_carried_whole(tmp_path: Path) -> None:
    content = "".join(f"line {n:07d} of a long note\n" for n in range(180_000))  # 5.04 MB, under the 5 MiB limit
    write = call(2, "write_note", {"path": "big.md", "content": content})
    outputs = []
    for transport in ("lean", "stock"):
        with vault_child(tmp_path, transport, MAX_READ_CHARS="0") as (_, child):  # the read is never cut
            [written] = child.exchange(write, 1)
            [read] = child.exchange(call(3, "read_note", {"path": "big.md"}), 1)
            code, out, _ = child.close()
        assert code == 0
        assert json.loads(written)["result"]["isError"] is False, written[:400]
        assert len(read) > 5_000_000 and json.loads(read)["result"]["content"][0]["text"].partition("\n")[2] == content
        outputs.append(out)
    assert outputs[0] == outputs[1]


def test_300_pipelined_40_kb_calls_are_all_answered_as_stock_answers_them(tmp_path: Path) -> None:
    calls = [call(n, "write_note", {"path": f"p/{n}.md", "content": f"{n}\n" + "x" * 40_000}) for n in range(2, 302)]
    outputs = []
    for transport in ("lean", "stock"):
        with vault_child(tmp_path, transport) as (_, child):
            answers = child.exchange("\n".join(calls), 300)  # sent at once, answered as the calls end
            code, out, _ = child.close()
        assert sorted(json.loads(line)["id"] for line in answers) == list(range(2, 302))
        assert code == 0
        outputs.append(sorted(lines_of(out)))  # up to 8 calls run at once: the order of the answers varies
    assert outputs[0] == outputs[1]


# -- the descriptors a host shares with the server ----------------------------------------------------------


def flags(fd: int) -> int:
    return fcntl.fcntl(fd, fcntl.F_GETFL)


def test_no_flag_of_a_shared_stdin_or_stdout_changes_while_serving_or_after(tmp_path: Path) -> None:
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    shared = {"stdin": read_in, "stdout": write_out}  # the parent keeps these: the same open files as the child's
    before = {name: flags(fd) for name, fd in shared.items()}
    with LocalVault(tmp_path / "vault") as vault:
        child = Child(child_env(**env_for(vault)), stdin=read_in, stdout=write_out)
        try:
            with os.fdopen(write_in, "wb", buffering=0) as host_in, os.fdopen(read_out, "rb", buffering=0) as host_out:
                host_in.write(f"{INITIALIZE}\n{INITIALIZED}\n{ping(2)}\n".encode())
                got = b""
                deadline = time.monotonic() + GENEROUS
                while got.count(b"\n") < 2:  # the parent holds the write end too: a dead child is no EOF
                    ready, _, _ = select.select([host_out], [], [], max(0.0, deadline - time.monotonic()))
                    assert ready, too_slow("the answers to initialize and ping", GENEROUS)
                    got += host_out.read(65536)
                during = {name: flags(fd) for name, fd in shared.items()}
                host_in.close()
                child.process.wait(timeout=GENEROUS)
        finally:
            child.end()
        after = {name: flags(fd) for name, fd in shared.items()}
        os.close(read_in)
        os.close(write_out)
    assert before == during == after
    assert not before["stdin"] & os.O_NONBLOCK and not before["stdout"] & os.O_NONBLOCK
    assert child.process.returncode == 0


def test_a_shared_stdout_already_non_blocking_is_written_whole_and_left_so(tmp_path: Path) -> None:
    # A parent that set O_NONBLOCK on the pipe: writes of a 5 MB answer meet EAGAIN while the host reads slowly.
    read_out, write_out = os.pipe()
    os.set_blocking(write_out, False)
    content = "y" * 5_000_000
    with LocalVault(tmp_path / "vault") as vault:
        seeding.seed(vault, "big.md", content)
        child = Child(child_env(**env_for(vault, MAX_READ_CHARS="0")), stdout=write_out)  # the read is not cut
        try:
            child.send(f"{INITIALIZE}\n{INITIALIZED}\n{call(2, 'read_note', {'path': 'big.md'})}\n{ping(3)}")
            got = b""
            with os.fdopen(read_out, "rb", buffering=0) as host_out:
                while got.count(b"\n") < 3:
                    got += host_out.read(4096)  # slowly: the pipe is full most of the time
                child.process.stdin.close()  # type: ignore[union-attr]
                assert child.process.wait(timeout=GENEROUS) == 0
        finally:
            child.end()
        still_non_blocking = not os.get_blocking(write_out)
        os.close(write_out)
    answers = {answer["id"]: answer for answer in map(json.loads, got.splitlines())}  # the ping may come first
    assert answers[2]["result"]["content"][0]["text"].partition("\n")[2] == content
    assert answers[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert still_non_blocking


def test_a_host_that_closes_stdout_ends_the_server(tmp_path: Path) -> None:
    read_out, write_out = os.pipe()  # read here, by no thread: closing it must not wait for a read in flight
    with LocalVault(tmp_path / "vault") as vault:
        child = Child(child_env(**env_for(vault)), stdout=write_out)
        os.close(write_out)
        child.send(INITIALIZE)
        with os.fdopen(read_out, "rb", buffering=0) as host_out:
            got = b""
            while b"\n" not in got:
                got += host_out.read(65536)
        # The host has stopped listening; stdin stays open.
        child.send(ping(2))  # its answer meets a closed pipe
        try:
            code = child.process.wait(timeout=GENEROUS)
        except subprocess.TimeoutExpired:
            raise AssertionError(too_slow("the server stopping after stdout closed", GENEROUS)) from None
        else:
            assert child.process.stderr is not None
            stderr = child.process.stderr.read().decode()
        finally:
            child.end()
    assert code == 0
    assert "stdout is closed" in stderr and "Traceback" not in stderr


def test_after_ctrl_c_the_server_ends_as_a_program_does_not_by_os_exit(tmp_path: Path) -> None:
    # An atexit hook runs only when the interpreter exits normally: on the stock transport it never did.
    program = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('exited normally\\n'))\n"
        "from teamvault_mcp.cli import main\n"
        "sys.exit(main())\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", program, "--local", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        process.stdin.write(f"{INITIALIZE}\n".encode())
        process.stdin.flush()
        assert b'"serverInfo"' in process.stdout.readline()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=GENEROUS)
    finally:  # a child that did not end is not left to a later test (as a ResourceWarning there)
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
        process.stdout.close()
    with process.stderr:
        stderr = process.stderr.read().decode()
    assert code == 130
    assert stderr == "teamvault-mcp: stopped by SIGINT\nexited normally\n"


# -- in memory, over pipes ---------------------------------------------------------------------------------


class Pipes:
    """The host's ends of two pipes to a server run in this process (non-blocking: the server's ends are not)."""

    def __init__(self) -> None:
        self.server_in, self._to_server = os.pipe()
        self._from_server, self.server_out = os.pipe()
        os.set_blocking(self._to_server, False)
        os.set_blocking(self._from_server, False)
        self._pending = b""

    async def send(self, line: str) -> None:
        data = memoryview(line.encode() + b"\n")
        while data:
            await anyio.wait_writable(self._to_server)
            data = data[os.write(self._to_server, data) :]

    async def receive(self) -> str:
        with anyio.fail_after(GENEROUS):
            while b"\n" not in self._pending:
                await anyio.wait_readable(self._from_server)
                chunk = os.read(self._from_server, 65536)
                assert chunk, "the server closed stdout"
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode()

    def end_input(self) -> None:
        os.close(self._to_server)
        self._to_server = -1

    def close(self) -> None:
        for fd in (self.server_in, self._to_server, self._from_server, self.server_out):
            if fd >= 0:
                os.close(fd)


@asynccontextmanager
async def lean_pipes(server: Server[Any], *, drain_limit: float = 60.0) -> AsyncIterator[Pipes]:
    pipes = Pipes()
    try:
        async with anyio.create_task_group() as group:

            async def serve() -> None:
                wire = (pipes.server_in, pipes.server_out)
                await serve_lean(server, server.create_initialization_options(), wire, drain_limit=drain_limit)

            group.start_soon(serve)
            yield pipes
            if pipes._to_server >= 0:
                pipes.end_input()
    finally:
        pipes.close()


@pytest.mark.anyio
async def test_messages_are_read_and_written_without_a_thread() -> None:
    before = set(threading.enumerate())
    async with lean_pipes(Server("bare")) as wire:
        await wire.send(INITIALIZE)
        await wire.receive()
        for n in range(2, 22):
            await wire.send(ping(n))
            assert json.loads(await wire.receive()) == {"jsonrpc": "2.0", "id": n, "result": {}}
        started = set(threading.enumerate()) - before
    assert not started  # the stock transport starts threads for stdin and stdout ("AnyIO worker thread")


@pytest.mark.anyio
async def test_what_cannot_be_written_is_repaired_as_the_stock_guard_repairs_it() -> None:
    """The lean writer serialises first and repairs only what the serialiser refuses: the bytes are the guard's."""
    bad_text = types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"tools": [{"name": "a\ud800"}]})
    too_deep = types.JSONRPCResponse(jsonrpc="2.0", id=2, result={"x": nested(400)})
    deep_notice = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"x": nested(400)})
    fine = types.JSONRPCResponse(jsonrpc="2.0", id=3, result={})
    messages = (bad_text, too_deep, deep_notice, fine)

    send, receive = anyio.create_memory_object_stream[SessionMessage](10)
    guard = WritesOnlyWritable(send)
    for message in messages:
        await guard.send(SessionMessage(message))
    await send.aclose()
    async with receive:
        guarded = b"".join([_json_line(item.message) async for item in receive])

    read_fd, write_fd = os.pipe()
    try:
        unanswered = Unanswered()
        for message in messages:
            unanswered.read(message)  # as if the host had sent requests 1 to 3
        writer = MessageWriter(Stdout(write_fd, on_broken=lambda: None), unanswered)
        for message in messages:
            await writer.send(SessionMessage(message))
        os.close(write_fd)
        write_fd = -1
        with os.fdopen(read_fd, "rb") as wire:
            read_fd = -1
            written = wire.read()
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.close(fd)
    assert written == guarded
    assert [json.loads(line)["id"] for line in written.splitlines()] == [1, 2, 3]  # the notice was dropped
    assert not unanswered._ids  # each request's id was settled by what was written for it, the repaired one too


def nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.anyio
@pytest.mark.parametrize(("opening", "handshake_loop"), [(INITIALIZE, True), (ping(1), False)])
async def test_a_connection_opened_with_initialize_is_served_on_the_sdks_handshake_loop(
    monkeypatch: pytest.MonkeyPatch, opening: str, handshake_loop: bool
) -> None:
    """initialize first: the SDK's serve_loop, without Server.run's era-finding relay; anything else: Server.run."""
    loops: list[str] = []
    real_loop = lean.serve_loop

    async def watched_loop(*args: Any, **kwargs: Any) -> None:
        loops.append("serve_loop")
        await real_loop(*args, **kwargs)

    monkeypatch.setattr(lean, "serve_loop", watched_loop)
    server = Server("bare")
    real_run = server.run

    async def watched_run(*args: Any, **kwargs: Any) -> None:
        loops.append("Server.run")
        await real_run(*args, **kwargs)

    monkeypatch.setattr(server, "run", watched_run)
    async with lean_pipes(server) as wire:
        await wire.send(opening)
        assert json.loads(await wire.receive())["id"] == 1
    assert loops == (["serve_loop"] if handshake_loop else ["Server.run"])


def test_stdin_is_split_into_lines_as_the_stock_text_wrapper_splits_it() -> None:
    rng = random.Random(19)
    pieces = [b"{}\n", b"a\r\n", b"b\rc\n", b"\r", b"\n", b"caf\xc3\xa9", b"\xff\xfe", b"\xe2\x82", b"\xac\n", b"end"]
    for _ in range(200):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        expected = list(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace"))
        assert read_all_lines(data, rng) == expected, data


def test_stdin_reads_ahead_a_bounded_amount_and_lets_go_of_the_descriptor_when_closed() -> None:
    """Once a read has waited, stdin is read as data comes, but never more than READ_SIZE of whole lines held
    (a host that floods it meets a full pipe, as with the stock transport); after close(), nothing is read."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    line = b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"pad": "' + b"x" * 60 + b'"}}\n'

    async def main() -> tuple[int, list[str], int]:
        stdin = Stdin(read_fd)
        async with anyio.create_task_group() as group:
            first: list[str | None] = []

            async def read_one() -> None:
                first.append(await stdin.readline())

            group.start_soon(read_one)
            await anyio.sleep(0)  # it waits: the descriptor is watched from now on
            os.write(write_fd, line)
        assert first == [line.decode()]
        written = stuck = 0
        while written < 1 << 20 and stuck < 200:  # nobody reads lines now: only the watch takes from the pipe
            try:
                written += os.write(write_fd, line)
                stuck = 0
            except BlockingIOError:
                stuck += 1
            await anyio.sleep(0)
        lines = [await stdin.readline() for _ in range(written // len(line))]
        stdin.close()
        os.write(write_fd, line)
        for _ in range(20):
            await anyio.sleep(0)
        left = int.from_bytes(fcntl.ioctl(read_fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
        return written, [item for item in lines if item is not None], left

    try:
        written, lines, left = anyio.run(main)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert written < 1 << 20, "the watch read the whole flood into memory"
    assert lines == [line.decode()] * (written // len(line))  # every line written came, whole and in order
    assert left == len(line)  # closed: the last line stayed in the pipe


def read_all_lines(data: bytes, rng: random.Random) -> list[str]:
    """What :class:`Stdin` reads from a pipe that ``data`` arrives on in random chunks (a \\r\\n split too)."""
    read_fd, write_fd = os.pipe()
    cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, 4)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True) if b > a]

    async def feed() -> None:
        for chunk in chunks:
            os.write(write_fd, chunk)
            while select.select([read_fd], [], [], 0)[0]:  # until the reader has taken it: one read per chunk
                await anyio.sleep(0)
        os.close(write_fd)

    async def main() -> list[str]:
        stdin = Stdin(read_fd)
        lines: list[str] = []
        async with anyio.create_task_group() as group:
            group.start_soon(feed)
            while (line := await stdin.readline()) is not None:
                lines.append(line)
        return lines

    try:
        return anyio.run(main)
    finally:
        os.close(read_fd)


def test_the_end_of_input_waits_at_most_the_budget_and_its_grace(tmp_path: Path) -> None:
    started = time.monotonic()
    with LocalVault(tmp_path / "vault") as vault:
        vault.faults.add("GET", "/api/projects/*/files", Fault.hang(at_most=60))
        script = [INITIALIZE, INITIALIZED, call(2, "read_note", {"path": "a.md"})]
        result = subprocess.run(
            SERVER,
            input="\n".join(script).encode(),
            capture_output=True,
            env=child_env(**env_for(vault, CALL_BUDGET="3", PREFETCH="off")),  # the read's listing takes the hang
            cwd=ROOT,
            timeout=60,
        )
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2], result.stderr.decode()[-2000:]
    assert answers[1]["result"]["isError"] is True  # its budget ended it, not the end of input
    assert "budget" in answers[1]["result"]["content"][0]["text"], answers[1]
    assert result.returncode == 0
    assert time.monotonic() - started < 55, too_slow("a call of a 3 s budget", 55)


# -- the hot path --------------------------------------------------------------------------------------------


def test_the_sdks_telemetry_middleware_is_skipped_only_while_no_tracer_provider_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry import trace

    from teamvault_mcp.config import load_config
    from teamvault_mcp.server.protocol import build_server
    from teamvault_mcp.server.runner import ToolRunner

    # The public attribute this relies on: if the SDK drops or renames it, clearing it would do nothing.
    assert len(Server("bare").middleware) == 1, "Server.middleware changed in the SDK: review build_server"
    runner = ToolRunner(load_config({"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "osync_t"}))
    try:
        assert build_server(runner).middleware == []
        monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.NoOpTracerProvider())  # one of its own
        assert len(build_server(runner).middleware) == 1
    finally:
        runner.close()


def test_in_a_terminal_the_stock_transport_serves_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    import pty
    import termios

    host, terminal = pty.openpty()
    mode = termios.tcgetattr(terminal)
    mode[1] &= ~termios.OPOST  # no \r added: the answers as written
    mode[3] &= ~termios.ECHO  # lines as typed, Ctrl-D ends the input; nothing echoed
    termios.tcsetattr(terminal, termios.TCSANOW, mode)
    before = (flags(terminal), termios.tcgetattr(terminal))
    with LocalVault(tmp_path / "vault") as vault:
        child = Child(child_env(**env_for(vault, LOG_LEVEL="info")), stdin=terminal, stdout=terminal)
        try:
            os.write(host, f"{INITIALIZE}\n{INITIALIZED}\n{ping(2)}\n".encode())
            got = b""
            while got.count(b"\n") < 2:
                got += os.read(host, 65536)
            os.write(host, b"\x04")  # Ctrl-D: the end of input, as a person ends it
            assert child.process.wait(timeout=GENEROUS) == 0
            assert child.process.stderr is not None
            stderr = child.process.stderr.read().decode()
        finally:
            child.end()
        after = (flags(terminal), termios.tcgetattr(terminal))
    os.close(host)
    os.close(terminal)
    assert got.splitlines()[1] == ping_answer(2).strip()
    assert "stdin or stdout is a terminal: serving over the SDK's stdio transport" in stderr
    assert before == after


# -- the escape hatch ----------------------------------------------------------------------------------------


def test_team_vault_stdio_takes_lean_or_stock_and_names_a_wrong_value() -> None:
    from teamvault_mcp.config import load_config
    from teamvault_mcp.errors import ConfigError

    base = {"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "osync_t"}
    assert load_config(base).stdio == "lean"
    assert load_config({**base, "TEAM_VAULT_STDIO": " Stock "}).stdio == "stock"
    assert load_config({**base, "TEAM_VAULT_STDIO": ""}).stdio == "lean"
    with pytest.raises(ConfigError) as refused:
        load_config({**base, "TEAM_VAULT_STDIO": "sdk"})
    assert str(refused.value) == "TEAM_VAULT_STDIO='sdk' is not one of lean, stock."


def test_a_call_thread_is_kept_for_the_next_call_and_ended_by_close() -> None:
    from teamvault_mcp.config import load_config
    from teamvault_mcp.server.runner import ToolRunner

    runner = ToolRunner(load_config({"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "osync_t"}))

    def call_threads() -> set[threading.Thread]:
        return {thread for thread in threading.enumerate() if thread.name == "teamvault-mcp call"}

    async def two_calls() -> set[threading.Thread]:
        await runner.call("read_note", {"path": "../x.md"})  # refused in its worker thread: no request
        first = call_threads()
        await runner.call("read_note", {"path": "../x.md"})
        assert call_threads() == first  # the same thread took the second call
        return first

    kept = anyio.run(two_calls)
    assert len(kept) == 1
    runner.close()
    for thread in kept:
        thread.join(GENEROUS)
        assert not thread.is_alive(), too_slow("a call thread ending after close", GENEROUS)
