"""The content cache of ``teamvault-mcp --local DIR``: one folder per data directory, whatever the port."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from teamvault_mcp.cli import main
from teamvault_mcp.config import load_config

NOTE = "# Plan\nship it\n"


def namespace_folders(cache: Path) -> list[Path]:
    return sorted(path for path in cache.iterdir() if path.is_dir())


def run(capsys: pytest.CaptureFixture[str], environ: dict[str, str], *argv: str) -> tuple[int, str]:
    code = main(list(argv), environ)
    out, _ = capsys.readouterr()
    return code, out


def as_read(text: str) -> str:
    """What ``call read_note`` prints for a note holding ``text``: its one text block, the contentHash line and
    then the text, with a line break at the end (``call`` adds one where the note has none)."""
    header = f"[contentHash: {hashlib.sha256(text.encode()).hexdigest()[:12]}]\n"
    return header + text + ("" if text.endswith("\n") else "\n")


def test_a_restarted_local_vault_reads_from_the_cache_its_last_start_filled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, cache = tmp_path / "vault", tmp_path / "cache"
    environ = {"TEAM_VAULT_CACHE_DIR": str(cache)}
    code, out = run(capsys, environ, "--local", str(data), "call", "write_note", "path=plan.md", f"content={NOTE}")
    assert code == 0, out
    digest = hashlib.sha256(NOTE.encode()).hexdigest()
    assert f"contentHash is {digest[:12]}" in out
    [folder] = namespace_folders(cache)
    assert [entry.name for entry in folder.rglob("*") if entry.is_file()] == [digest]

    # The vault loses the note's bytes: only the cache can answer the next start's read now.
    [blob] = [path for path in data.rglob(digest) if path.is_file()]
    blob.unlink()
    code, out = run(capsys, environ, "--local", str(data), "call", "read_note", "path=plan.md")
    assert (code, out) == (0, as_read(NOTE))
    assert namespace_folders(cache) == [folder]  # no second folder for the new port


def test_the_same_data_directory_spelt_differently_is_one_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    environ = {"TEAM_VAULT_CACHE_DIR": str(cache)}
    (tmp_path / "vault").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "vault")
    monkeypatch.chdir(tmp_path)
    assert run(capsys, environ, "--local", "vault", "call", "write_note", "path=a.md", "content=a")[0] == 0
    read = run(capsys, environ, "--local", str(tmp_path / "link") + "/", "call", "read_note", "path=a.md")
    assert read == (0, as_read("a"))
    assert len(namespace_folders(cache)) == 1


def test_the_cache_namespace_is_read_from_the_environment() -> None:
    base = {"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "k"}
    assert load_config(base).cache_namespace is None
    assert load_config({**base, "TEAM_VAULT_CACHE_NAMESPACE": "  team vault  "}).cache_namespace == "team vault"


def child_call(cache: Path, data: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "TEAM_VAULT_CACHE_DIR": str(cache)}
    try:
        return subprocess.run(
            [sys.executable, "-m", "teamvault_mcp", "--local", str(data), "call", *argv],
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"teamvault-mcp call {argv[0]} hung for 60 s (or the machine is too slow)")


def test_a_fifo_planted_in_the_cache_does_not_hang_a_call(tmp_path: Path) -> None:
    data, cache = tmp_path / "vault", tmp_path / "cache"
    written = child_call(cache, data, "write_note", "path=plan.md", f"content={NOTE}")
    assert written.returncode == 0, written.stderr
    [entry] = [path for path in cache.rglob(hashlib.sha256(NOTE.encode()).hexdigest())]
    entry.unlink()
    os.mkfifo(entry)
    read = child_call(cache, data, "read_note", "path=plan.md")
    assert (read.returncode, read.stdout) == (0, as_read(NOTE)), read.stderr
    assert entry.is_file()  # the FIFO went; the note downloaded again is cached in its place
