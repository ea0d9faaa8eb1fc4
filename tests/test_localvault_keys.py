"""API keys of the local vault: ``--api-key`` replaces, ``keys list|add|revoke``, and a revoked key is refused at once.

Through the real command line: ``cli.main([...])`` in this process, and one child process
against a vault running in another one.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from teamvault_mcp import cli
from teamvault_mcp.localvault import LocalVault

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 10.0
ISO_MS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def status(http: requests.Session, vault: LocalVault, key: str) -> int:
    return http.get(f"{vault.url}/api/auth/me", headers={"X-API-Key": key}, timeout=TIMEOUT).status_code


def keys(capsys: pytest.CaptureFixture[str], data: Path, *arguments: str) -> tuple[int, str, str]:
    """``teamvault-mcp local-vault keys ...`` in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    code = cli.main(["local-vault", "keys", *arguments, "--data", str(data)])
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys: pytest.CaptureFixture[str], data: Path) -> list[list[str]]:
    code, out, err = keys(capsys, data, "list")
    assert code == 0, err
    return [line.split("\t") for line in out.splitlines()]


# -- the start key ----------------------------------------------------------------------------------


def test_an_api_key_replaces_the_generated_key_and_a_start_without_one_brings_the_generated_one_back(
    tmp_path: Path, http: requests.Session
) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        generated = vault.api_key
        assert status(http, vault, generated) == 200
    given = "osync_" + "ab" * 32
    with LocalVault(data, api_key=given) as vault:
        assert status(http, vault, given) == 200
        assert status(http, vault, generated) == 401
    with LocalVault(data) as vault:
        assert vault.api_key == generated
        assert status(http, vault, generated) == 200
        assert status(http, vault, given) == 401


def test_a_new_api_key_retires_the_one_of_the_run_before(tmp_path: Path, http: requests.Session) -> None:
    data = tmp_path / "vault"
    first, second = "osync_" + "1" * 64, "osync_" + "2" * 64
    with LocalVault(data, api_key=first) as vault:
        assert status(http, vault, first) == 200
    with LocalVault(data, api_key=second) as vault:
        assert status(http, vault, second) == 200
        assert status(http, vault, first) == 401


def test_keys_from_before_retirement_existed_are_retired_at_the_next_start(
    tmp_path: Path, http: requests.Session
) -> None:
    """A database of an earlier version kept every key ever used: all of them but this run's are retired."""
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        generated = vault.api_key
    old_key = "osync_" + "9" * 64
    with sqlite3.connect(data / "vault.sqlite3") as db:  # back to the old table, with an old --api-key in it
        db.execute("ALTER TABLE api_keys DROP COLUMN kind")
        db.execute("ALTER TABLE api_keys DROP COLUMN label")
        user = db.execute("SELECT user_id FROM api_keys").fetchone()[0]
        db.execute("INSERT INTO api_keys VALUES (?, ?, ?, ?)", (sha256_hex(old_key), old_key[:12], user, "2020"))
    with LocalVault(data) as vault:
        assert status(http, vault, generated) == 200
        assert status(http, vault, old_key) == 401


def test_only_hashes_of_keys_are_stored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        generated = vault.api_key
        code, added, _ = keys(capsys, data, "add")
        assert code == 0
    stored = b"".join(path.read_bytes() for path in data.glob("vault.sqlite3*"))
    for key in (generated, added.strip()):
        assert key.encode() not in stored
        assert key[12:].encode() not in stored
        assert sha256_hex(key).encode() in stored


# -- keys add / list / revoke -----------------------------------------------------------------------


def test_keys_add_prints_only_the_new_key_and_it_is_valid_at_once(
    tmp_path: Path, http: requests.Session, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        code, out, err = keys(capsys, data, "add", "--label", "ci runner")
        assert code == 0, err
        assert re.fullmatch(r"osync_[0-9a-f]{64}\n", out)
        assert "only this once" in err
        assert status(http, vault, out.strip()) == 200  # the running vault takes it without a restart


def test_keys_list_shows_one_line_per_valid_key_and_never_a_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        start = vault.api_key
        added = keys(capsys, data, "add", "--label", "ci runner")[1].strip()
        unlabelled = keys(capsys, data, "add")[1].strip()
    lines = listed(capsys, data)
    assert [line[0] for line in lines] == [start[:12], added[:12], unlabelled[:12]]
    for line in lines:
        assert len(line) == 5
        assert line[1] == "local@teamvault.invalid"
        assert re.fullmatch(ISO_MS, line[2])
    assert [(line[3], line[4]) for line in lines] == [("-", "start"), ("ci runner", "added"), ("-", "added")]
    out = keys(capsys, data, "list")[1]
    assert start not in out and added not in out and unlabelled not in out


def test_added_keys_stay_valid_across_starts_with_and_without_an_api_key(
    tmp_path: Path, http: requests.Session, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "vault"
    with LocalVault(data):
        added = keys(capsys, data, "add")[1].strip()
    with LocalVault(data, api_key="osync_" + "c" * 64) as vault:
        assert status(http, vault, added) == 200
    with LocalVault(data) as vault:
        assert status(http, vault, added) == 200
    assert sorted((line[0], line[4]) for line in listed(capsys, data)) == sorted(
        [(vault.api_key[:12], "start"), (added[:12], "added")]
    )


def test_a_revoked_key_is_refused_at_once_by_the_running_vault(
    tmp_path: Path, http: requests.Session, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        added = keys(capsys, data, "add")[1].strip()
        with requests.Session() as kept:  # a keep-alive connection that was authenticated before
            kept.trust_env = False
            assert kept.get(f"{vault.url}/api/auth/me", headers={"X-API-Key": added}, timeout=TIMEOUT).ok
            code, out, err = keys(capsys, data, "revoke", added[:12])
            assert (code, out) == (0, "")
            assert "revoked the key" in err
            again = kept.get(f"{vault.url}/api/auth/me", headers={"X-API-Key": added}, timeout=TIMEOUT)
        assert again.status_code == 401
        assert status(http, vault, vault.api_key) == 200  # the others are untouched
    assert [line[4] for line in listed(capsys, data)] == ["start"]


def test_revoke_takes_the_whole_listed_prefix_or_the_whole_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "vault"
    with LocalVault(data):
        first = keys(capsys, data, "add")[1].strip()
        second = keys(capsys, data, "add")[1].strip()
    assert keys(capsys, data, "revoke", second)[0] == 0
    assert keys(capsys, data, "revoke", first[:12])[0] == 0
    assert [line[4] for line in listed(capsys, data)] == ["start"]


@pytest.mark.parametrize("given", ["o", "osync_", "first 11"])
def test_a_prefix_shorter_than_listed_is_refused_with_exit_2_and_revokes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    # Issue 31: `keys revoke o` took any unique start, and could revoke the running vault's start key by accident.
    data = tmp_path / "vault"
    with LocalVault(data):
        added = keys(capsys, data, "add")[1].strip()
    before = listed(capsys, data)
    code, out, err = keys(capsys, data, "revoke", added[:11] if given == "first 11" else given)
    assert (code, out) == (2, "")
    assert "is only the start of a prefix" in err and "give the whole prefix `keys list` shows" in err
    assert listed(capsys, data) == before


def test_the_start_key_is_revoked_only_with_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        start = vault.api_key
    before = listed(capsys, data)
    code, out, err = keys(capsys, data, "revoke", start[:12])
    assert (code, out) == (2, "") and "is the start key of the vault in" in err and "Add --force" in err
    assert listed(capsys, data) == before
    assert keys(capsys, data, "revoke", start, "--force")[0] == 0
    assert listed(capsys, data) == []


@pytest.mark.parametrize(("given", "code"), [("nope", 1), ("osync_" + "0" * 64, 1), ("", 2)])
def test_an_unknown_or_empty_prefix_is_refused_and_revokes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str, code: int
) -> None:
    data = tmp_path / "vault"
    with LocalVault(data):
        pass
    before = listed(capsys, data)
    exit_code, out, err = keys(capsys, data, "revoke", given)
    assert (exit_code, out) == (code, "")
    assert err.startswith("teamvault-mcp local-vault keys revoke: ")
    assert listed(capsys, data) == before


def test_revoking_the_generated_start_key_makes_the_next_start_generate_a_new_one(
    tmp_path: Path, http: requests.Session, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        generated = vault.api_key
        code, _, err = keys(capsys, data, "revoke", generated[:12], "--force")
        assert code == 0
        assert "the next start generates a new one" in err
        assert status(http, vault, generated) == 401
        assert not (data / "api-key").exists()
    with LocalVault(data) as vault:
        assert vault.api_key != generated
        assert status(http, vault, vault.api_key) == 200
        assert status(http, vault, generated) == 401


def test_keys_on_a_directory_without_a_vault_exits_1_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["list"], ["add"], ["revoke", "osync_"]):
        code, out, err = keys(capsys, tmp_path / "nothing", *command)
        assert (code, out) == (1, "")
        assert "no local vault in" in err
    assert not (tmp_path / "nothing").exists()


@pytest.mark.parametrize("label", ["tab\there", "new\nline", "x" * 201])
def test_a_label_that_would_break_the_listing_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str
) -> None:
    data = tmp_path / "vault"
    with LocalVault(data):
        pass
    code, out, err = keys(capsys, data, "add", "--label", label)
    assert (code, out) == (2, "")
    assert "--label" in err
    assert len(listed(capsys, data)) == 1


def test_keys_without_a_subcommand_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["local-vault", "keys"])
    assert exit_info.value.code == 2


# -- a child process against a vault running in another ----------------------------------------------


def run(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "teamvault_mcp", "local-vault", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_keys_add_and_revoke_in_child_processes_reach_a_vault_running_in_another(
    tmp_path: Path, http: requests.Session
) -> None:
    data = tmp_path / "vault"
    vault = subprocess.Popen(
        [sys.executable, "-m", "teamvault_mcp", "local-vault", "--data", str(data), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert vault.stdout is not None
        url = vault.stdout.readline().strip().split("=", 1)[1]
        added = run("keys", "add", "--data", str(data), "--label", "child")
        assert added.returncode == 0, added.stderr
        key = added.stdout.strip()
        assert added.stdout == key + "\n"
        me = http.get(f"{url}/api/auth/me", headers={"X-API-Key": key}, timeout=TIMEOUT)
        assert me.status_code == 200
        revoked = run("keys", "revoke", key[:12], "--data", str(data))
        assert (revoked.returncode, revoked.stdout) == (0, "")
        assert http.get(f"{url}/api/auth/me", headers={"X-API-Key": key}, timeout=TIMEOUT).status_code == 401
    finally:
        vault.terminate()
        vault.communicate(timeout=20)
    assert vault.returncode == 0
