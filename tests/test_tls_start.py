"""``serve --http --tls-cert --tls-key`` loads the files before it says it serves (issue 31): a file that is no
certificate, no key, a key of another certificate or an encrypted one is refused in one line naming the file and
its problem, exit code 2, as a missing file is; a good pair serves HTTPS, which ``check --http`` trusts through
``SSL_CERT_FILE``."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from support.children import CONSOLE_SCRIPT, ROOT
from support.env import child_env
from support.tls import CERT, ENCRYPTED_KEY, KEY, OTHER_KEY
from support.waiting import GENEROUS, too_slow

from teamvault_mcp.cli import main

TOKEN = "tls-token-0123456789abcdef"
SERVER_ENV = {"TEAM_VAULT_URL": "http://127.0.0.1:9", "TEAM_VAULT_API_KEY": "osync_" + "1" * 64}


@pytest.fixture
def garbage(tmp_path: Path) -> Path:
    path = tmp_path / "garbage.pem"
    path.write_text("this is not PEM\n")
    return path


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.pem"
    path.write_bytes(b"")
    return path


def refusal(cert: Path | str, key: Path | str, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``serve --http`` refuses to start with, for these files; its exit code must be 2."""
    argv = ["serve", "--http", "127.0.0.1:0", "--tls-cert", str(cert), "--tls-key", str(key)]
    code = main(argv, {**SERVER_ENV, "TEAM_VAULT_HTTP_TOKEN": TOKEN})
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and "serving" not in err and "Traceback" not in err, err
    return err.removeprefix("teamvault-mcp: ").rstrip("\n")


def test_a_certificate_file_that_holds_no_certificate_is_named(
    garbage: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert refusal(garbage, KEY, capsys) == (
        f"--tls-cert {garbage}: no certificate in it (a PEM file with '-----BEGIN CERTIFICATE-----' is expected)."
    )


def test_an_empty_certificate_file_is_named(empty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refusal(empty, KEY, capsys).startswith(f"--tls-cert {empty}: no certificate in it")


def test_a_key_given_as_the_certificate_is_named_as_the_certificate(capsys: pytest.CaptureFixture[str]) -> None:
    assert refusal(KEY, CERT, capsys).startswith(f"--tls-cert {KEY}: no certificate in it")


def test_a_key_file_that_holds_no_key_is_named(garbage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refusal(CERT, garbage, capsys) == (
        f"--tls-key {garbage}: no private key in it (a PEM file with a '-----BEGIN … PRIVATE KEY-----' block is "
        "expected)."
    )


def test_an_empty_key_file_is_named(empty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refusal(CERT, empty, capsys).startswith(f"--tls-key {empty}: no private key in it")


def test_a_key_of_another_certificate_is_said_not_to_belong_to_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert refusal(CERT, OTHER_KEY, capsys) == (
        f"--tls-key {OTHER_KEY} does not belong to the certificate in --tls-cert {CERT}: give the private key that "
        "certificate was made with."
    )


def test_an_encrypted_key_is_refused_without_asking_for_its_passphrase(capsys: pytest.CaptureFixture[str]) -> None:
    line = refusal(CERT, ENCRYPTED_KEY, capsys)
    assert line.startswith(f"--tls-key {ENCRYPTED_KEY}: the key is encrypted, and serve --http takes no passphrase")


def test_a_missing_file_is_refused_in_one_line_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.pem"
    assert refusal(CERT, missing, capsys) == f"--tls-key {missing}: no such file (a PEM file is expected)."


def test_a_good_pair_serves_https_that_check_http_trusts_through_ssl_cert_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = [str(CONSOLE_SCRIPT), "--local", str(tmp_path / "vault"), "serve", "--http", "127.0.0.1:0"]
    command += ["--tls-cert", str(CERT), "--tls-key", str(KEY)]
    env = child_env(TEAM_VAULT_HTTP_TOKEN=TOKEN)
    child = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(child.stderr.readline() if child.stderr else ""))
        reader.start()
        reader.join(GENEROUS)
        assert found, too_slow("serve --http starting with TLS", GENEROUS)
        match = re.search(r"serving MCP over HTTP at (https://127\.0\.0\.1:\d+/mcp) ", found[0])
        assert match, found[0]
        environ = {"TEAM_VAULT_HTTP_TOKEN": TOKEN, "SSL_CERT_FILE": str(CERT)}
        code = main(["check", "--http", match.group(1)], environ)
        out = capsys.readouterr().out
        assert code == 0, out
        assert "All required checks passed." in out
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.communicate(timeout=GENEROUS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise AssertionError(too_slow("serve --http stopping on SIGTERM", GENEROUS)) from None
    assert child.returncode == 128 + signal.SIGTERM
