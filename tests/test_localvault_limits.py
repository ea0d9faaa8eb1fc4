"""No way to lock the local vault up: a connection cap with shedding, head deadlines, a long listen backlog.

Real sockets throughout. Tests assert the order of events (which connection the vault
closes, and when relative to what the client sent), never how fast something is; where a
wait is needed its limit is generous and its failure message says what it means.
"""

from __future__ import annotations

import contextlib
import select
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.localvault.limits import BUSY, HEAD, IDLE, Limits, default_max_connections

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 20.0
SLOW = "the machine is too slow (or the vault never did it)"


def connect(vault: LocalVault, timeout: float = TIMEOUT) -> socket.socket:
    return socket.create_connection((vault.host, vault.port), timeout=timeout)


def request_bytes(vault: LocalVault, route: str = "/api/auth/me", *, close: bool = False) -> bytes:
    lines = [f"GET {route} HTTP/1.1", "Host: x", f"X-API-Key: {vault.api_key}"]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_answer(sock: socket.socket) -> bytes:
    """One whole HTTP answer (head and Content-Length body) from ``sock``."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"the vault closed the connection without an answer: {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
        0,
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the vault closed the connection in the middle of its answer"
        body += chunk
    return head + b"\r\n\r\n" + body


def closed_by_vault(sock: socket.socket, within: float = TIMEOUT) -> bool:
    """Whether the vault ends the connection (end of file or reset) within ``within`` seconds."""
    sock.settimeout(within)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def still_open(sock: socket.socket) -> bool:
    """Nothing (no end of file) waiting on ``sock`` right now."""
    return not select.select([sock], [], [], 0)[0]


# -- the default cap -----------------------------------------------------------------------------------


def test_the_default_cap_leaves_room_for_the_database_and_the_blobs_within_the_open_file_limit() -> None:
    assert default_max_connections(1024) == 464
    assert default_max_connections(256) == 80
    assert default_max_connections(100) == 16  # never below 16
    assert default_max_connections(1_000_000) == 1024  # nor above 1,024 threads
    for soft in (256, 1024, 4096):
        assert 2 * default_max_connections(soft) + 96 <= soft


def test_limits_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="max_connections"):
        Limits(max_connections=0)
    with pytest.raises(ValueError, match="positive"):
        Limits(max_connections=4, head_timeout=0)


# -- shedding --------------------------------------------------------------------------------------------


def test_many_half_open_connections_do_not_lock_out_a_client_with_a_key(tmp_path: Path, http: requests.Session) -> None:
    """Connections that send nothing (or half a head) are shed, oldest first, when a new one needs the slot."""
    with LocalVault(tmp_path / "vault", max_connections=16) as vault:
        idle = [connect(vault) for _ in range(40)]
        for index, sock in enumerate(idle):
            if index % 2:
                sock.sendall(b"GET /api/auth/me HTTP/1.1\r\nHost: x\r\n")  # half a head, and no key
        try:
            assert vault.connections.wait_for(lambda: vault.connections.closed["shed_head"] >= 24, TIMEOUT), SLOW
            response = http.get(f"{vault.url}/api/auth/me", headers={"X-API-Key": vault.api_key}, timeout=TIMEOUT)
            assert response.status_code == 200
            assert vault.connections.closed["shed_head"] >= 25
            assert all(closed_by_vault(sock) for sock in idle[:24]), "the oldest connections were shed first"
            assert vault.connections.count() <= 16
        finally:
            for sock in idle:
                sock.close()


def test_idle_keep_alive_connections_are_shed_before_connections_still_sending_their_head(tmp_path: Path) -> None:
    """Near the cap (7 of 8) a newcomer sheds the longest-idle keep-alive connection; at the cap, the oldest head."""
    with LocalVault(tmp_path / "vault", max_connections=8) as vault:
        connections = vault.connections
        opened: list[socket.socket] = []
        try:
            keep_alive = []
            for count in range(1, 5):
                sock = connect(vault)
                opened.append(sock)
                sock.sendall(request_bytes(vault))
                assert read_answer(sock).startswith(b"HTTP/1.1 200")
                assert connections.wait_for(lambda n=count: connections.count(IDLE) == n, TIMEOUT), SLOW
                keep_alive.append(sock)
            heads = []
            for count in range(1, 4):
                heads.append(connect(vault))
                opened.append(heads[-1])
                assert connections.wait_for(lambda n=count: connections.count(HEAD) == n, TIMEOUT), SLOW
            assert connections.count() == 7
            for shed in range(1, 5):  # four newcomers: each sheds one idle connection, the longest idle first
                newcomer = connect(vault)
                opened.append(newcomer)
                heads.append(newcomer)
                assert connections.wait_for(lambda n=shed: connections.closed["shed_idle"] == n, TIMEOUT), SLOW
                assert closed_by_vault(keep_alive[shed - 1])
                assert all(still_open(sock) for sock in keep_alive[shed:])
            assert connections.closed["shed_head"] == 0
            assert all(still_open(sock) for sock in heads)
            opened.append(connect(vault))  # the 8th slot is free: nobody is shed
            assert connections.wait_for(lambda: connections.count() == 8, TIMEOUT), SLOW
            opened.append(connect(vault))  # at the cap with nobody idle: the oldest head goes
            assert connections.wait_for(lambda: connections.closed["shed_head"] == 1, TIMEOUT), SLOW
            assert closed_by_vault(heads[0])
            assert all(still_open(sock) for sock in heads[1:])
        finally:
            for sock in opened:
                sock.close()


def test_when_every_connection_is_busy_with_a_request_a_new_one_gets_503_and_is_closed(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault", max_connections=2) as vault:
        vault.faults.add("GET", "/api/projects", Fault.hang(at_most=30), times=2)
        busy = [connect(vault), connect(vault)]
        try:
            for sock in busy:
                sock.sendall(request_bytes(vault, "/api/projects"))
            assert vault.connections.wait_for(lambda: vault.connections.count(BUSY) == 2, TIMEOUT), SLOW
            with connect(vault) as refused:
                answer = read_answer(refused)
                assert answer.startswith(b"HTTP/1.1 503")
                assert b"Retry-After: 1" in answer
                assert closed_by_vault(refused)
            assert vault.connections.closed["refused"] == 1
        finally:
            for sock in busy:
                sock.close()
        assert vault.connections.wait_for(lambda: vault.connections.count() == 0, TIMEOUT), SLOW
        with connect(vault) as again:  # once the hangs end, the slots are free again
            again.sendall(request_bytes(vault))
            assert read_answer(again).startswith(b"HTTP/1.1 200")


def test_at_an_open_file_limit_of_256_hundreds_of_half_open_connections_do_not_lock_out_a_client(
    tmp_path: Path, http: requests.Session
) -> None:
    """The review's lockout: ~250 half-open connections used up a 256-descriptor vault. The default cap prevents it."""
    limited = (
        "import resource, sys\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "from teamvault_mcp.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", limited, "local-vault", "--data", str(tmp_path / "vault"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    opened: list[socket.socket] = []
    try:
        assert process.stdout is not None
        announced = dict(process.stdout.readline().strip().split("=", 1) for _ in range(3))
        url, key = announced["TEAM_VAULT_URL"], announced["TEAM_VAULT_API_KEY"]
        host, port = url.removeprefix("http://").split(":")
        for index in range(400):
            sock = socket.create_connection((host, int(port)), timeout=TIMEOUT)
            opened.append(sock)
            if index % 2:
                sock.sendall(b"GET /api/auth/me HTTP/1.1\r\n")
        response = http.get(f"{url}/api/auth/me", headers={"X-API-Key": key}, timeout=TIMEOUT)
        assert response.status_code == 200
    finally:
        for sock in opened:
            sock.close()
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Traceback" not in err


# -- the head deadline ------------------------------------------------------------------------------------


def test_a_head_dripped_a_byte_at_a_time_is_closed_at_its_deadline_not_per_receive(tmp_path: Path) -> None:
    """Every byte comes well within any per-receive timeout; the whole head still has to end by the deadline."""
    with LocalVault(tmp_path / "vault", head_timeout=0.5) as vault:
        head = request_bytes(vault) + b"X-Padding: " + b"p" * 400 + b"\r\n\r\n"
        events = []
        with connect(vault) as sock:
            for byte in head:  # 0.05 s between bytes: the head would take over 20 s
                try:
                    sock.sendall(bytes([byte]))
                except (BrokenPipeError, ConnectionResetError):
                    events.append("closed")
                    break
                events.append("sent")
                if select.select([sock], [], [], 0.05)[0]:
                    events.append("closed" if closed_by_vault(sock, 1.0) else "answered")
                    break
        assert events[-1] == "closed", events[-5:]
        assert 2 <= events.count("sent") < len(head)
        assert vault.connections.closed["head_deadline"] == 1
        with connect(vault) as prompt:  # a client that sends its head at once is not affected
            prompt.sendall(request_bytes(vault))
            assert read_answer(prompt).startswith(b"HTTP/1.1 200")


def test_a_connection_that_sends_nothing_is_closed_at_the_head_deadline(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault", head_timeout=0.3) as vault, connect(vault) as silent:
        assert closed_by_vault(silent), SLOW
        assert vault.connections.closed["head_deadline"] == 1


def test_a_keep_alive_connection_waits_idle_and_its_next_head_gets_a_deadline_of_its_own(tmp_path: Path) -> None:
    """Idle time between requests does not count against the next head's deadline."""
    with LocalVault(tmp_path / "vault", head_timeout=0.3) as vault, connect(vault) as sock:
        sock.sendall(request_bytes(vault))
        assert read_answer(sock).startswith(b"HTTP/1.1 200")
        assert not closed_by_vault(sock, within=1.0), "an idle keep-alive connection was closed at the head deadline"
        sock.sendall(request_bytes(vault))
        assert read_answer(sock).startswith(b"HTTP/1.1 200")
        assert vault.connections.closed["head_deadline"] == 0


# -- the listen backlog -----------------------------------------------------------------------------------


def test_a_burst_of_200_connects_waits_in_the_listen_backlog_and_every_one_is_served(tmp_path: Path) -> None:
    """With the vault not accepting yet, the kernel must hold all 200 (a backlog of 5 held 6, then dropped SYNs)."""
    vault = LocalVault(tmp_path / "vault", max_connections=256)  # listening, not yet accepting
    burst: list[socket.socket] = []
    try:
        for index in range(200):
            try:
                burst.append(connect(vault, timeout=2.5))  # a dropped SYN is retried only after 1 s, then 3 s
            except TimeoutError:
                pytest.fail(
                    f"connect {index + 1} was not taken into the listen backlog (or the machine is far too slow)"
                )
        for sock in burst:
            sock.sendall(request_bytes(vault, close=True))
        vault.start()
        answers = [read_answer(sock) for sock in burst]
        assert all(answer.startswith(b"HTTP/1.1 200") for answer in answers)
    finally:
        for sock in burst:
            with contextlib.suppress(OSError):
                sock.close()
        vault.stop()


def test_a_cap_below_one_connection_is_refused_not_replaced_by_the_default(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_connections"):
        LocalVault(tmp_path / "vault", max_connections=0)
    with LocalVault(tmp_path / "vault", max_connections=1) as vault:  # the refusal left nothing locked or open
        assert vault.limits.max_connections == 1
