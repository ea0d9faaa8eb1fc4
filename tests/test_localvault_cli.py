"""``teamvault-mcp local-vault`` as a child process: the three lines, the key file, the signals."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parent.parent


class VaultProcess:
    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "teamvault_mcp", "local-vault", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )

    def announced(self) -> dict[str, str]:
        """The three lines printed on start, as a dict."""
        assert self.process.stdout is not None
        lines = [self.process.stdout.readline() for _ in range(3)]
        return dict(line.rstrip("\n").split("=", 1) for line in lines)

    def stop(self, how: int = signal.SIGTERM) -> tuple[int, str, str]:
        self.process.send_signal(how)
        out, err = self.process.communicate(timeout=20)
        return self.process.returncode, out, err


def test_start_prints_exactly_three_lines_and_serves_until_sigterm(tmp_path: Path) -> None:
    vault = VaultProcess("--data", str(tmp_path / "v"), "--port", "0")
    announced = vault.announced()
    assert list(announced) == ["TEAM_VAULT_URL", "TEAM_VAULT_API_KEY", "TEAM_VAULT_PROJECT_ID"]
    assert announced["TEAM_VAULT_URL"].startswith("http://127.0.0.1:")
    me = requests.get(
        f"{announced['TEAM_VAULT_URL']}/api/projects/{announced['TEAM_VAULT_PROJECT_ID']}",
        headers={"X-API-Key": announced["TEAM_VAULT_API_KEY"]},
        timeout=5,
    )
    assert me.json()["project"]["slug"] == "default"
    code, rest, err = vault.stop(signal.SIGTERM)
    assert code == 0
    assert rest == ""  # nothing but the three lines on stdout
    assert "Traceback" not in err


def test_sigint_also_stops_it_cleanly(tmp_path: Path) -> None:
    vault = VaultProcess("--data", str(tmp_path / "v"), "--port", "0")
    vault.announced()
    code, _, err = vault.stop(signal.SIGINT)
    assert code == 0
    assert "Traceback" not in err


def test_the_key_is_generated_once_kept_private_and_reused(tmp_path: Path) -> None:
    data = tmp_path / "v"
    first = VaultProcess("--data", str(data), "--port", "0")
    key = first.announced()["TEAM_VAULT_API_KEY"]
    first.stop()
    assert (data / "api-key").stat().st_mode & 0o777 == 0o600
    assert (data / "api-key").read_text().strip() == key
    second = VaultProcess("--data", str(data), "--port", "0")
    again = second.announced()
    second.stop()
    assert again["TEAM_VAULT_API_KEY"] == key


def test_a_given_api_key_is_used_and_not_written_down(tmp_path: Path) -> None:
    data = tmp_path / "v"
    vault = VaultProcess("--data", str(data), "--port", "0", "--api-key", "osync_mine")
    announced = vault.announced()
    answer = requests.get(f"{announced['TEAM_VAULT_URL']}/api/auth/me", headers={"X-API-Key": "osync_mine"}, timeout=5)
    vault.stop()
    assert announced["TEAM_VAULT_API_KEY"] == "osync_mine"
    assert answer.status_code == 200
    assert not (data / "api-key").exists()


def test_a_non_loopback_address_is_announced_on_stderr(tmp_path: Path) -> None:
    vault = VaultProcess("--data", str(tmp_path / "v"), "--host", "0.0.0.0", "--port", "0")
    vault.announced()
    code, _, err = vault.stop()
    assert code == 0
    assert "not on loopback" in err


def test_a_port_in_use_exits_1_saying_so(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        vault = VaultProcess("--data", str(tmp_path / "v"), "--port", str(port))
        out, err = vault.process.communicate(timeout=20)
    assert vault.process.returncode == 1
    assert out == ""
    assert f"127.0.0.1:{port}" in err


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_bad_port_is_a_usage_error(tmp_path: Path, port: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "teamvault_mcp", "local-vault", "--data", str(tmp_path), "--port", port],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
        env={**os.environ},
    )
    assert result.returncode == 2
    assert "port" in result.stderr


def test_without_conditional_writes_if_match_is_ignored_and_not_announced(tmp_path: Path) -> None:
    vault = VaultProcess("--data", str(tmp_path / "v"), "--port", "0", "--without-conditional-writes")
    announced = vault.announced()
    url, key = announced["TEAM_VAULT_URL"], announced["TEAM_VAULT_API_KEY"]
    files = f"{url}/api/projects/{announced['TEAM_VAULT_PROJECT_ID']}/files"
    created = requests.post(
        files, headers={"X-API-Key": key}, files={"path": (None, "a.md"), "file": ("a.md", b"one")}, timeout=5
    )
    file_id = created.json()["file"]["id"]
    put = requests.put(f"{files}/{file_id}", data=b"two", headers={"X-API-Key": key, "If-Match": '"0"'}, timeout=5)
    code, _, err = vault.stop()
    assert code == 0, err
    assert put.status_code == 200
    assert "X-TeamVault-Conditional-Writes" not in put.headers and "ETag" not in put.headers
    assert "X-TeamVault-Conditional-Writes" not in created.headers


def test_by_default_conditional_writes_are_on_and_announced(tmp_path: Path) -> None:
    vault = VaultProcess("--data", str(tmp_path / "v"), "--port", "0")
    announced = vault.announced()
    me = requests.get(
        f"{announced['TEAM_VAULT_URL']}/api/auth/me", headers={"X-API-Key": announced["TEAM_VAULT_API_KEY"]}, timeout=5
    )
    vault.stop()
    assert me.headers["X-TeamVault-Conditional-Writes"] == "if-match"


@pytest.mark.parametrize("count", ["0", "-3"])
def test_a_max_connections_below_1_is_a_usage_error(tmp_path: Path, count: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "teamvault_mcp", "local-vault", "--data", str(tmp_path), "--max-connections", count],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert "--max-connections" in result.stderr
    assert result.stdout == ""
