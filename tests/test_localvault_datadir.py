"""The data directory is private (0700/0600) whatever made it, and a crash's temp files are removed at start."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from teamvault_mcp.localvault import LocalVault


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def write_note(vault: LocalVault, path: str, content: bytes) -> None:
    with requests.Session() as session:
        session.trust_env = False
        response = session.post(
            f"{vault.url}/api/projects/{vault.project_id}/files",
            headers={"X-API-Key": vault.api_key},
            files={"path": (None, path), "file": (path, content, "text/markdown")},
            timeout=10,
        )
    assert response.status_code == 201, response.text


def vault_paths(data: Path) -> tuple[list[Path], list[Path]]:
    """The vault's own directories and files under ``data``."""
    blobs = data / "blobs"
    directories = [data, blobs, *(path for path in blobs.rglob("*") if path.is_dir())]
    files = [path for path in data.glob("vault.sqlite3*")] + [data / "api-key"]
    files += [path for path in blobs.rglob("*") if path.is_file()]
    return directories, files


@pytest.fixture
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_a_world_readable_data_directory_from_before_is_made_private_at_start(
    tmp_path: Path, loose_umask: None
) -> None:
    """Modes are fixed even for a directory that already existed: database, WAL, SHM, key file, blobs."""
    data = tmp_path / "vault"
    with LocalVault(data) as running:  # keeps the -wal and -shm files in place
        write_note(running, "a.md", b"secret note")
        directories, files = vault_paths(data)
        assert {path.name for path in files} >= {"vault.sqlite3", "vault.sqlite3-wal", "vault.sqlite3-shm"}
        for path in directories:
            path.chmod(0o755)  # as an earlier version, or a loose umask, left them
        for path in files:
            path.chmod(0o644)
        with LocalVault(data):
            for path in directories:
                assert mode(path) == 0o700, path
            for path in files:
                assert mode(path) == 0o600, path


def test_what_a_vault_creates_under_a_loose_umask_is_private(tmp_path: Path, loose_umask: None) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        write_note(vault, "a.md", b"first")
        write_note(vault, "b.md", b"second")
        directories, files = vault_paths(data)
        assert len([path for path in files if path.parent.parent.name == "blobs"]) == 2
        assert {mode(path) for path in directories} == {0o700}
        assert {mode(path) for path in files} == {0o600}


def test_files_that_are_not_the_vaults_and_links_are_left_alone(tmp_path: Path) -> None:
    data = tmp_path / "vault"
    data.mkdir()
    mine = data / "notes.txt"
    mine.write_text("not the vault's")
    mine.chmod(0o644)
    outside = tmp_path / "outside.txt"
    outside.write_text("elsewhere")
    outside.chmod(0o644)
    (data / "blobs").mkdir()
    (data / "blobs" / "link").symlink_to(outside)
    with LocalVault(data):
        pass
    assert mode(mine) == 0o644
    assert mode(outside) == 0o644
    assert mode(data) == 0o700


def test_temp_files_left_by_a_crash_mid_write_are_removed_at_start(tmp_path: Path) -> None:
    data = tmp_path / "vault"
    with LocalVault(data) as vault:
        write_note(vault, "a.md", b"kept")
    [blob] = [path for path in (data / "blobs").rglob("*") if path.is_file()]
    leftovers = [blob.parent / ".incoming-abc123", data / "blobs" / "ff" / ".incoming-x"]
    leftovers[1].parent.mkdir(mode=0o700)
    for path in leftovers:
        path.write_bytes(b"half a note")
    with LocalVault(data) as vault:
        assert not any(path.exists() for path in leftovers)
        assert blob.read_bytes() == b"kept"
        assert vault.store.get_blob(blob.name) == b"kept"


def test_temp_files_are_kept_while_another_vault_runs_on_the_directory(tmp_path: Path) -> None:
    """A running vault may be writing its temp file right now; only a start with no other vault removes them."""
    data = tmp_path / "vault"
    with LocalVault(data) as first:
        write_note(first, "a.md", b"x")
        leftover = next((data / "blobs").iterdir()) / ".incoming-in-flight"
        leftover.write_bytes(b"being written")
        with LocalVault(data):
            assert leftover.exists()
    with LocalVault(data):
        assert not leftover.exists()
