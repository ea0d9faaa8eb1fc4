"""The local vault does not leak: a client per request (as the MCP does) must not cost a file descriptor each."""

from __future__ import annotations

import os
import resource
import sqlite3
from pathlib import Path

import pytest
import requests

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.localvault.store import Store


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_new_connection_per_request_opens_no_new_database_connection_each(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        url = f"{vault.url}/api/projects/{vault.project_id}/files"
        requests.get(url, headers={"X-API-Key": vault.api_key}, timeout=5)  # warm up
        before = open_descriptors()
        for _ in range(200):  # each call opens and closes its own TCP connection: a new server thread
            with requests.Session() as session:
                assert session.get(url, headers={"X-API-Key": vault.api_key}, timeout=5).status_code == 200
        after = open_descriptors()
        assert vault.store.connections() <= 3
    assert after - before < 20


def test_a_hang_works_on_descriptors_above_1023(tmp_path: Path) -> None:
    # select.select() refuses descriptors >= 1024; a long-running vault gets there.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(2048, hard), hard))
    spare = [os.open(os.devnull, os.O_RDONLY) for _ in range(1030 - open_descriptors())]
    try:
        with LocalVault(tmp_path / "vault") as vault:
            vault.faults.add("GET", "/api/auth/me", Fault.hang(at_most=0.3))
            with pytest.raises(requests.ConnectionError):  # a hang ends by dropping the connection
                requests.get(f"{vault.url}/api/auth/me", headers={"X-API-Key": vault.api_key}, timeout=2)
            assert vault.faults.hang_ended  # it waited, saw the time run out, and let go without an error
    finally:
        for descriptor in spare:
            os.close(descriptor)


def test_closing_the_store_never_closes_a_connection_a_request_is_still_using(tmp_path: Path) -> None:
    """The vault stops while a request thread may still be inside SQLite (its threads are not joined): closing
    that thread's connection under it crashed the process. It is closed when the request gives it back."""
    store = Store(tmp_path / "data")
    with store.read() as db:
        store.close()  # as LocalVault.stop() does while this request runs
        assert db.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(sqlite3.ProgrammingError):  # given back, and closed then
        db.execute("SELECT 1")
    with pytest.raises(sqlite3.OperationalError, match="the vault is closed"), store.read():
        pass
