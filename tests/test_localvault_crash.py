"""Crash safety: a local vault killed (SIGKILL) in the middle of writes keeps whole notes only."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
from support.children import ROOT, start_local_vault
from support.waiting import wait_until

SIZE = 512 * 1024  # big enough that a write is still going on when the kill lands


def start(data: Path) -> tuple[subprocess.Popen[str], str, str, str]:
    process, env = start_local_vault(data, cwd=ROOT)
    return process, env["TEAM_VAULT_URL"], env["TEAM_VAULT_API_KEY"], env["TEAM_VAULT_PROJECT_ID"]


def finish(process: subprocess.Popen[str], how: int) -> None:
    process.send_signal(how)
    process.wait(timeout=10)
    assert process.stdout is not None
    process.stdout.close()


def content(n: int) -> bytes:
    return (f"version {n}\n".encode() * (SIZE // 10))[:SIZE]


@pytest.mark.parametrize("kill_after", [0.15, 0.35, 0.6])
def test_a_killed_vault_restarts_with_whole_notes_and_every_acknowledged_write(
    tmp_path: Path, kill_after: float
) -> None:
    data = tmp_path / "vault"
    process, url, key, project = start(data)
    headers = {"X-API-Key": key}
    files = f"{url}/api/projects/{project}/files"
    created = requests.post(
        files,
        headers=headers,
        data={"path": "big.md"},
        files={"file": ("big.md", content(0), "text/markdown")},
        timeout=5,
    )
    note = created.json()["file"]["id"]
    acknowledged: list[int] = [0]
    stop = threading.Event()

    def keep_writing() -> None:
        n = 1
        while not stop.is_set():
            try:
                answer = requests.put(f"{files}/{note}", headers=headers, data=content(n), timeout=5)
            except requests.RequestException:
                return  # the vault is gone
            if answer.status_code == 200:
                acknowledged.append(n)
            n += 1

    writer = threading.Thread(target=keep_writing)
    writer.start()
    wait_until(lambda: len(acknowledged) > 1, "a first acknowledged write")  # else the test proves nothing
    time.sleep(kill_after)  # a moment, not an event: where in a later write the kill lands is what varies
    finish(process, signal.SIGKILL)
    stop.set()
    writer.join(timeout=10)

    process, url, key, project = start(data)
    try:
        files = f"{url}/api/projects/{project}/files"
        record = requests.get(files, headers={"X-API-Key": key}, params={"path": "big.md"}, timeout=5).json()["files"][
            0
        ]
        body = requests.get(f"{files}/{note}", headers={"X-API-Key": key}, timeout=5).content
        versions = requests.get(f"{files}/{note}/versions", headers={"X-API-Key": key}, timeout=5).json()["versions"]
        for version in versions:
            version_url = f"{files}/{note}/versions/{version['id']}"
            version_body = requests.get(version_url, headers={"X-API-Key": key}, timeout=5).content
            assert hashlib.sha256(version_body).hexdigest() == version["contentHash"]
    finally:
        finish(process, signal.SIGTERM)
    assert hashlib.sha256(body).hexdigest() == record["contentHash"]  # a whole note, as recorded
    written = int(body.split(b"\n", 1)[0].split()[1])
    assert body == content(written)
    assert written >= acknowledged[-1]  # every acknowledged write survived the kill
