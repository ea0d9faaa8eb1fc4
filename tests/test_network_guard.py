"""The network guard: its parts, and a child pytest run proving that a forgotten mock fails a test."""

from __future__ import annotations

import socket
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from support.network_guard import is_loopback, take_violations

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.1", "::1", "localhost", None])
def test_loopback_hosts_are_allowed(host: str | None) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["vault.example.com", "10.0.0.1", "8.8.8.8", "::ffff:8.8.8.8", "0.0.0.0"])
def test_other_hosts_are_not(host: str) -> None:
    assert not is_loopback(host)


def test_a_dns_lookup_beyond_loopback_is_refused_and_recorded() -> None:
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("vault.example.com", 443)
    assert take_violations() == ["DNS lookup of 'vault.example.com'"]


def test_a_connection_beyond_loopback_is_refused_and_recorded() -> None:
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("192.0.2.1", 80))
    assert take_violations() == ["connect to ('192.0.2.1', 80)"]


def test_a_forgotten_mock_fails_its_test_in_a_real_pytest_run(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/guard_fixtures/forgotten_mocks.py",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    outcomes = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        outcomes[case.get("name")] = "failed" if failed else "passed"
    assert outcomes == {
        "test_must_fail_forgotten_mock_even_though_the_error_is_caught": "failed",
        "test_must_fail_request_the_active_mock_does_not_match": "failed",
        "test_must_pass_mocked_request": "passed",
        "test_must_pass_loopback_server": "passed",
    }, result.stdout
    assert "network guard" in result.stdout
    assert result.returncode == 1
