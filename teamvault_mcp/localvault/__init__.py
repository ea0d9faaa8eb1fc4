"""The local vault: a Team Vault–compatible server in one data directory, standard library only.

For people without a Team Vault server at hand, for agents working offline, and for
our own end-to-end tests: ``teamvault-mcp local-vault`` serves it over HTTP, and
``teamvault-mcp --local DIR`` runs the MCP server on top of an embedded one.

    store.py      the SQLite database and the content-addressed blobs; the API's rules
    app.py        the HTTP routes, auth, the idempotency layer, fault injection
    multipart.py  the multipart/form-data parser for POST /files
    faults.py     scripted faults for tests (status codes, dropped connections, drips, hangs)
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

from teamvault_mcp.localvault.app import VaultHandler, VaultState
from teamvault_mcp.localvault.faults import Fault, FaultPlan
from teamvault_mcp.localvault.store import Store, VaultError

__all__ = ["DEFAULT_PORT", "Fault", "FaultPlan", "LocalVault", "Store", "VaultError"]

log = logging.getLogger(__name__)

DEFAULT_PORT = 8787
DEFAULT_EMAIL = "local@teamvault.invalid"
KEY_FILE = "api-key"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class LocalVault:
    """A Team Vault–compatible HTTP server over ``data_dir``; its data survives restarts.

    On first start it creates a user, a project with the slug ``default`` and an API
    key (kept in ``data_dir/api-key``, mode 0600, unless ``api_key`` is given).
    """

    def __init__(
        self,
        data_dir: Path | str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        max_file_size: int | None = None,
        idempotency: bool = True,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.store = Store(self.data_dir, max_file_size=max_file_size)
        self.faults = FaultPlan()
        self.state = VaultState(self.store, self.faults, idempotency=idempotency)
        self.project_id, self.api_key = self._bootstrap(api_key)
        handler = type("Handler", (VaultHandler,), {"state": self.state})
        self._server = _Server((host, port), handler)
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return self.host == "localhost"

    def _bootstrap(self, api_key: str | None) -> tuple[str, str]:
        project_id = self.store.project_by_slug("default")
        if project_id is None:
            user = self.store.add_user(DEFAULT_EMAIL, "Local user")
            project_id = self.store.add_project("default", "Local vault", user)
        owner = self.store.owner_of(project_id)
        key = api_key or self._stored_key()
        if key is None:
            key = self.store.add_api_key(owner.id)
            _write_private(self.data_dir / KEY_FILE, key)
        else:
            self.store.add_api_key(owner.id, key)
        return project_id, key

    def _stored_key(self) -> str | None:
        try:
            return (self.data_dir / KEY_FILE).read_text().strip() or None
        except FileNotFoundError:
            return None

    def start(self) -> LocalVault:
        """Serve in a background thread; returns at once."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="local-vault", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        self.state.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.store.close()

    def __enter__(self) -> LocalVault:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` readable by its owner only (0600) and write ``text`` to it durably."""
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(handle, "w") as out:
        out.write(text + "\n")
        out.flush()
        with contextlib.suppress(OSError):
            os.fsync(out.fileno())
