"""A data directory that cannot hold a local vault (``--local DIR``, ``local-vault --data DIR``): one line, exit 2.

Each case runs the real entry point as a child process, so a traceback or a server that starts anyway shows.
A read-only filesystem is mounted in a private mount namespace (``unshare``), and a directory without
permission is refused to a child that has dropped root's power to ignore permissions (``setpriv``); where
those tools are missing, those two cases are skipped and say why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "TEAM_VAULT_CACHE_DIR": "off", "PYTHONPATH": str(ROOT)}
ENTRY = [sys.executable, "-m", "teamvault_mcp"]
#: Run a command without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH, so that file permissions hold for root too.
WITHOUT_ROOTS_PASS = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def run(command: list[str]) -> tuple[int, str, str]:
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=ENV, cwd=ROOT)
    return result.returncode, result.stdout, result.stderr


def assert_refused(command: list[str], option: str, directory: Path | str, reason: str) -> None:
    code, out, err = run(command)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err == f"teamvault-mcp: cannot use {option} {directory}: {reason}\n"


def commands(directory: Path | str) -> list[tuple[list[str], str]]:
    """The ways to name a data directory: serve, call and check on --local, and the local-vault command."""
    return [
        ([*ENTRY, "--local", str(directory)], "--local"),
        ([*ENTRY, "call", "--local", str(directory), "whoami"], "--local"),
        ([*ENTRY, "check", "--local", str(directory)], "--local"),
        ([*ENTRY, "local-vault", "--data", str(directory), "--port", "0"], "--data"),
    ]


def test_a_file(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("not a directory\n")
    for command, option in commands(file):
        assert_refused(
            command, option, file, "it is a file, not a directory; give a directory (it is created if missing)"
        )
    assert file.read_text() == "not a directory\n"  # nothing lost


def test_a_directory_under_a_file(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("")
    for command, option in commands(file / "vault"):
        assert_refused(command, option, file / "vault", f"{file} is a file, so no directory can be made under it")


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="no sysfs at /sys (not Linux)")
def test_sys() -> None:
    write = "nothing can be written in it (Permission denied); give a directory you can write to"
    for command, option in commands("/sys"):
        assert_refused(command, option, "/sys", write)
    code, _, err = run([*ENTRY, "--local", "/sys/teamvault-mcp-test", "call", "whoami"])
    assert code == 2 and err.startswith(
        "teamvault-mcp: cannot use --local /sys/teamvault-mcp-test: it cannot be created"
    )


def test_a_damaged_database(tmp_path: Path) -> None:
    (tmp_path / "vault.sqlite3").write_text("not a database\n")
    reason = (
        f"its database {tmp_path / 'vault.sqlite3'} cannot be used (file is not a database); "
        "move it away or give another directory"
    )
    for command, option in commands(tmp_path):
        assert_refused(command, option, tmp_path, reason)
    assert (tmp_path / "vault.sqlite3").read_text() == "not a database\n"


def test_a_directory_without_permission(tmp_path: Path) -> None:
    prefix: list[str] = []
    if os.geteuid() == 0:  # root passes every permission check, unless it gives that power up
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv (util-linux): cannot take root's override away")
        prefix = WITHOUT_ROOTS_PASS
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)  # readable, not writable
    try:
        for command, option in commands(locked):
            write = "nothing can be written in it (Permission denied); give a directory you can write to"
            assert_refused([*prefix, *command], option, locked, write)
        create = "it cannot be created (Permission denied); give a directory you can write to"
        assert_refused([*prefix, *ENTRY, "--local", str(locked / "vault")], "--local", locked / "vault", create)
    finally:
        locked.chmod(0o700)


def test_a_read_only_filesystem(tmp_path: Path) -> None:
    if shutil.which("unshare") is None or run(["unshare", "-rm", "true"])[0] != 0:
        pytest.skip("no unprivileged mount namespace here (unshare -rm): cannot mount a read-only filesystem")
    mounted = tmp_path / "read-only"
    mounted.mkdir()
    for command, option in commands(mounted):
        # The tmpfs exists only inside the child's own mount namespace; it is gone when the child ends.
        script = 'mount -t tmpfs -o ro tmpfs "$1" && shift && exec "$@"'
        reason = "nothing can be written in it (Read-only file system); give a directory you can write to"
        assert_refused(["unshare", "-rm", "sh", "-c", script, "sh", str(mounted), *command], option, mounted, reason)
