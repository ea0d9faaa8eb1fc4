"""A cold fetch of a whole vault from the local vault: one request per note against one archive per folder.

Issue 16's first part: the local vault serves ``GET …/folders/download``. This measures what
that route buys a client that needs every note (a cold search), side by side in one run:

- per note: ``GET /files`` once, then ``GET /files/:id`` for every note, 8 keep-alive
  connections in parallel (the MCP server's pool);
- archives: ``GET /files`` once, then one ``GET /folders/download?path=<top-level folder>`` per
  folder on the same 8 connections; each entry is checked against the listing's ``contentHash``.

Each mode gets a fresh vault process (``local-vault --port 0``) on the same data, reached
directly (loopback) and through bench/delay_proxy.py at ``--rtt`` (HTTP, no TLS). The
vault's peak RSS (``VmHWM``) is read after each mode. Seeding skips fsync (a benchmark's
data need not survive a power cut), so that 5,000 notes take seconds, not a minute.

    PYTHONPATH=. .venv/bin/python bench/folder_download_bench.py [--notes 5000] [--folders 10] [--rtt 0.040]
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from unittest import mock
from urllib.parse import quote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from delay_proxy import delay_proxy

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

ROOT = Path(__file__).resolve().parent.parent
CONNECTIONS = 8
WORDS = [
    "team",
    "vault",
    "note",
    "meeting",
    "budget",
    "review",
    "decision",
    "project",
    "people",
    "plan",
    "Ёлка",
    "straße",
]


def seed(data_dir: Path, notes: int, folders: int) -> None:
    rng = random.Random(notes)
    with mock.patch("os.fsync"), LocalVault(data_dir) as vault:
        owner = vault.store.owner_of(vault.project_id)
        with vault.store.write() as db:
            change = Change(db, vault.project_id, owner)
            for number in range(notes):
                text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(10)) for _ in range(60))  # ~4 KB
                path = f"folder-{number % folders:02d}/sub-{number % 7}/note {number:05d}.md"
                vault.store.create(change, path, f"# Note {number}\n{text}\n".encode(), None)


def start_vault(data_dir: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "teamvault_mcp", "local-vault", "--data", str(data_dir), "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert process.stdout is not None
    return process, dict(process.stdout.readline().rstrip("\n").split("=", 1) for _ in range(3))


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Client:
    """8 keep-alive connections; ``run`` spreads GETs over them and counts the requests."""

    def __init__(self, port: int, key: str) -> None:
        self.port, self.key, self.requests = port, key, 0
        self._lock = threading.Lock()

    def get(self, conn: http.client.HTTPConnection, target: str) -> bytes:
        conn.request("GET", target, headers={"X-API-Key": self.key})
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {target}: {response.status} {body[:200]!r}")
        with self._lock:
            self.requests += 1
        return body

    def run(self, targets: list[str], each: Callable[[str, bytes], None]) -> None:
        pending = list(reversed(targets))

        def worker() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            while True:
                with self._lock:
                    if not pending:
                        break
                    target = pending.pop()
                each(target, self.get(conn, target))
            conn.close()

        threads = [threading.Thread(target=worker) for _ in range(CONNECTIONS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def fetch_all(port: int, key: str, project: str, mode: str) -> tuple[float, int, int]:
    """Every note's bytes, checked against the listing: (seconds, requests, notes)."""
    client = Client(port, key)
    started = time.perf_counter()
    listing_conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    files = json.loads(client.get(listing_conn, f"/api/projects/{project}/files"))["files"]
    listing_conn.close()
    hashes = {file["path"]: file["contentHash"] for file in files}
    got: dict[str, bytes] = {}
    if mode == "per note":
        by_target = {f"/api/projects/{project}/files/{file['id']}": file["path"] for file in files}
        client.run(list(by_target), lambda target, body: got.__setitem__(by_target[target], body))
    else:
        folders = sorted({path.split("/", 1)[0] for path in hashes if "/" in path})
        targets = [f"/api/projects/{project}/folders/download?path={quote(folder, safe='')}" for folder in folders]

        def unpack(target: str, body: bytes) -> None:
            with zipfile.ZipFile(io.BytesIO(body)) as archive:
                for info in archive.infolist():
                    got[info.filename] = archive.read(info)  # entries of a top-level folder keep its name

        client.run(targets, unpack)
    elapsed = time.perf_counter() - started
    bad = [path for path, digest in hashes.items() if hashlib.sha256(got.get(path, b"")).hexdigest() != digest]
    if bad:
        raise RuntimeError(f"{mode}: {len(bad)} notes missing or wrong, e.g. {bad[:3]}")
    return elapsed, client.requests, len(got)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--folders", type=int, default=10)
    parser.add_argument("--rtt", type=float, default=0.040, help="round trip through the delay proxy, seconds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        data_dir = Path(temp) / "vault"
        seed(data_dir, args.notes, args.folders)
        print(f"{args.notes} notes of ~4 KB in {args.folders} top-level folders; {CONNECTIONS} connections")
        print(f"{'network':<16} {'mode':<9} {'seconds':>8} {'requests':>9} {'vault peak RSS':>15}")
        for network in ("loopback", f"{args.rtt * 1000:.0f} ms RTT"):
            for mode in ("per note", "archives"):
                process, announced = start_vault(data_dir)
                try:
                    port = urlsplit(announced["TEAM_VAULT_URL"]).port
                    assert port is not None
                    proxy: AbstractContextManager[object] = (
                        delay_proxy(("127.0.0.1", port), args.rtt / 2) if network != "loopback" else nullcontext()
                    )
                    with proxy as running:
                        reach = getattr(running, "port", port)
                        key, project = announced["TEAM_VAULT_API_KEY"], announced["TEAM_VAULT_PROJECT_ID"]
                        seconds, requests, _ = fetch_all(reach, key, project, mode)
                    rss = peak_rss_mib(process.pid)
                finally:
                    process.terminate()
                    process.wait(timeout=30)
                print(f"{network:<16} {mode:<9} {seconds:>8.2f} {requests:>9} {rss:>11.0f} MiB")


if __name__ == "__main__":
    main()
