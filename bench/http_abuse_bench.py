"""``serve --http`` under the two attacks of issue 27, each against a ``serve --http`` child on a local vault:

a. slowloris: ``--slow`` connections (300) send their request head a byte a second, to a child whose
   open-file limit is ``--fd-limit`` (256, as measured in the issue); meanwhile a normal client sends
   ``initialize``: served or not, its status and how long it took (it gives up after 30 s);
b. one member takes the sessions (``--key-from-client``): a viewer's key opens ``--sessions`` (100)
   sessions as fast as it can, then another member sends ``initialize``: its status and time.

    .venv/bin/python bench/http_abuse_bench.py [--package DIR] [--slow 300] [--sessions 100] [--fd-limit 256]

``--package DIR`` runs the child from an older tree ("before"), e.g. one made with
``git -C /work/main archive main teamvault_mcp | tar -x -C DIR``; without it, this tree.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2

from teamvault_mcp.localvault import LocalVault

TOKEN = "bench-token-0123456789abcdef"
GIVE_UP = 30.0
POST_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
ROOT = Path(__file__).resolve().parent.parent


def start(
    package: Path, env: dict[str, str], workdir: Path, fd_limit: int, *extra: str
) -> tuple[subprocess.Popen[str], str]:
    """``python -m teamvault_mcp serve --http 127.0.0.1:0`` from ``package``, with at most ``fd_limit`` open files."""

    def limit_files() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, hard))

    command = [sys.executable, "-m", "teamvault_mcp", "serve", "--http", "127.0.0.1:0", *extra]
    child = subprocess.Popen(
        command,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package), "TEAM_VAULT_CACHE_DIR": "off", **env},
        cwd=workdir,  # not the source tree: ``-m`` imports from the current directory first
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        preexec_fn=limit_files,
    )
    assert child.stderr is not None
    line = child.stderr.readline()
    match = re.search(r"at (http://\S+/mcp) ", line)
    if match is None:
        child.kill()
        raise RuntimeError(f"serve --http did not start: {line}")
    threading.Thread(target=child.stderr.read, daemon=True).start()  # keep its stderr drained
    return child, match.group(1)


def stop(child: subprocess.Popen[str]) -> None:
    child.terminate()
    try:
        child.wait(10)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def initialize(url: str, secret: str) -> tuple[int | str, float]:
    """A normal client's ``initialize``: its status (or the error's name) and seconds taken."""
    started = time.monotonic()
    headers = {**POST_HEADERS, "Authorization": f"Bearer {secret}"}
    try:
        answer = httpx2.post(url, content=json.dumps(INITIALIZE).encode(), headers=headers, timeout=GIVE_UP)
        outcome: int | str = answer.status_code
    except httpx2.HTTPError as error:
        outcome = type(error).__name__
    return outcome, time.monotonic() - started


def part_a(package: Path, vault: LocalVault, workdir: Path, slow: int, fd_limit: int) -> None:
    env = {
        "TEAM_VAULT_URL": vault.url,
        "TEAM_VAULT_API_KEY": vault.api_key,
        "TEAM_VAULT_PROJECT_ID": vault.project_id,
        "TEAM_VAULT_HTTP_TOKEN": TOKEN,
    }
    child, url = start(package, env, workdir, fd_limit)
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    sockets: list[socket.socket] = []
    done = threading.Event()

    def drip() -> None:
        while not done.wait(1.0):
            for sock in sockets:
                with contextlib.suppress(OSError):  # the server closed it
                    sock.send(b"x")

    try:
        for _ in range(slow):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            sockets.append(sock)
        threading.Thread(target=drip, daemon=True).start()
        time.sleep(1.0)  # let the server take in what it will
        outcome, seconds = initialize(url, TOKEN)
        closed = sum(1 for sock in sockets if _closed(sock))
        served = "served" if outcome == 200 else "NOT served"
        print(
            f"a. slowloris: {slow} slow connections (child open-file limit {fd_limit}); a normal initialize: "
            f"{served} ({outcome}) in {seconds:.2f} s; {closed} of the slow connections closed by the server"
        )
    finally:
        done.set()
        for sock in sockets:
            sock.close()
        stop(child)


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (end of file, a reset, or its 503 then end of file: anything to read)."""
    sock.setblocking(False)
    try:
        sock.recv(4096)
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def part_b(package: Path, vault: LocalVault, workdir: Path, sessions: int, fd_limit: int) -> None:
    viewer = vault.add_user("viewer@example.com", "Viewer", roles={"beta": "VIEWER"})
    member = vault.add_user("member@example.com", "Member", roles={"alpha": "EDITOR"})
    child, url = start(package, {"TEAM_VAULT_URL": vault.url}, workdir, max(fd_limit, 1024), "--key-from-client")
    try:
        started = time.monotonic()
        opened = 0
        with httpx2.Client(headers={**POST_HEADERS, "Authorization": f"Bearer {viewer.api_key}"}, timeout=60) as http:
            for _ in range(sessions):
                opened += http.post(url, content=json.dumps(INITIALIZE).encode()).status_code == 200
        took = time.monotonic() - started
        outcome, seconds = initialize(url, member.api_key)
        served = "served" if outcome == 200 else "NOT served"
        print(
            f"b. lockout: a viewer's key opened {opened} of {sessions} sessions in {took:.2f} s; another member's "
            f"initialize: {served} ({outcome}) in {seconds:.2f} s"
        )
    finally:
        stop(child)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", type=Path, help='a directory holding an older teamvault_mcp ("before")')
    parser.add_argument("--slow", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--fd-limit", type=int, default=256)
    args = parser.parse_args()
    package = args.package.resolve() if args.package is not None else ROOT
    print(f"package: {package}")
    with tempfile.TemporaryDirectory() as scratch, LocalVault(Path(scratch) / "vault") as vault:
        workdir = Path(scratch) / "work"
        workdir.mkdir()
        part_a(package, vault, workdir, args.slow, args.fd_limit)
        part_b(package, vault, workdir, args.sessions, args.fd_limit)


if __name__ == "__main__":
    main()
