"""The local vault as one object: :class:`LocalVault` serves a data directory over HTTP until stopped.

It opens the data directory (datadir.py) and its :class:`~teamvault_mcp.localvault.store.Store`,
makes the start user, project and key on first start (keys.py), and runs a thread per connection,
admitted or shed by the connection limits (limits.py). The package's ``__init__`` re-exports it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from teamvault_mcp.localvault.app import VaultHandler
from teamvault_mcp.localvault.datadir import open_data_dir
from teamvault_mcp.localvault.faults import FaultPlan
from teamvault_mcp.localvault.keys import KEY_FILE, add_user_key, use_start_key
from teamvault_mcp.localvault.limits import (
    DEFAULT_HEAD_TIMEOUT,
    LISTEN_BACKLOG,
    Connections,
    Limits,
    default_max_connections,
)
from teamvault_mcp.localvault.records import new_api_key
from teamvault_mcp.localvault.state import VaultState
from teamvault_mcp.localvault.store import Store

log = logging.getLogger(__name__)

DEFAULT_PORT = 8787
DEFAULT_EMAIL = "local@teamvault.invalid"
#: The answer to a connection that finds every slot busy with a request (limits.py); then it is closed.
_BUSY_TEXT = b"every connection slot is busy with a request; try again\n"
_ALL_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_TEXT), _BUSY_TEXT)
)


class _Server(ThreadingHTTPServer):
    """A thread per connection, admitted (or shed, or refused) by :class:`Connections`."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], handler: type[VaultHandler], connections: Connections) -> None:
        self.connections = connections
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.connections.admit(request):
            with contextlib.suppress(OSError):
                request.setblocking(False)
                request.send(_ALL_BUSY)  # a fresh socket's send buffer is empty: this cannot block
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)  # starts the connection's thread
        except BaseException:
            self.connections.leave(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.connections.leave(request)  # before the close: a shed must not reach a reused descriptor
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, OSError):  # the client went away, or was shed
            log.debug("connection from %s ended: %s", client_address, error)
        else:
            log.exception("internal error on a connection from %s", client_address)


@dataclass(frozen=True)
class LocalUser:
    """A user :meth:`LocalVault.add_user` made: its id, email and API key."""

    id: str
    email: str
    api_key: str = field(repr=False)


class LocalVault:
    """A Team Vault–compatible HTTP server over ``data_dir``; its data survives restarts.

    On first start it creates a user, a project with the slug ``default`` and an API
    key (kept in ``data_dir/api-key``, mode 0600). ``api_key`` replaces that key for as
    long as this vault runs: the start key is the only one of its kind (keys.py).
    ``conditional_writes`` turns the If-Match extension on (preconditions.py);
    ``max_connections`` (default: from the open-file limit) and ``head_timeout`` bound
    what clients can hold (limits.py). ``folder_download=False`` leaves out
    ``GET …/folders/download`` (archives.py), to stand in for servers without it.
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
        conditional_writes: bool = True,
        max_connections: int | None = None,
        head_timeout: float = DEFAULT_HEAD_TIMEOUT,
        folder_download: bool = True,
    ) -> None:
        self.data_dir = Path(data_dir)
        cap = default_max_connections() if max_connections is None else max_connections
        self.limits = Limits(cap, head_timeout=head_timeout)
        self._lock = open_data_dir(self.data_dir)
        store: Store | None = None
        try:
            self.store = store = Store(self.data_dir, max_file_size=max_file_size)
            self.faults = FaultPlan()
            self.connections = Connections(self.limits)
            self.state = VaultState(
                self.store,
                self.faults,
                idempotency=idempotency,
                conditional_writes=conditional_writes,
                connections=self.connections,
                folder_download=folder_download,
            )
            self.project_id, self.api_key = self._bootstrap(api_key)
            handler = type("Handler", (VaultHandler,), {"state": self.state})
            self._server = _Server((host, port), handler, self.connections)
        except BaseException:
            if store is not None:
                store.close()
            self._lock.release()
            raise
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None
        self._serving = False

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
            key = new_api_key()
            _write_private(self.data_dir / KEY_FILE, key)
        use_start_key(self.store, owner, key)
        return project_id, key

    def add_user(self, email: str, name: str | None = None, *, roles: dict[str, str] | None = None) -> LocalUser:
        """A user with an API key of their own (valid until revoked), a member of each project in ``roles``
        (slug → ``OWNER``, ``ADMIN``, ``EDITOR`` or ``VIEWER``); a slug no project has yet gets a new project,
        owned by the vault's first user. ``local-vault keys add --user EMAIL --role SLUG:ROLE`` does the same."""
        user, key = add_user_key(self.store, email, name=name, roles=roles or {}, label=f"user {email}")
        return LocalUser(user.id, email, key)

    def add_project(self, slug: str, name: str | None = None) -> str:
        """The id of the project with ``slug``, made (owned by the vault's first user) if there is none."""
        project_id = self.store.project_by_slug(slug)
        if project_id is None:
            project_id = self.store.add_project(slug, name or slug, self.store.owner_of(self.project_id))
        return project_id

    def _stored_key(self) -> str | None:
        try:
            return (self.data_dir / KEY_FILE).read_text().strip() or None
        except FileNotFoundError:
            return None

    def start(self) -> LocalVault:
        """Serve in a background thread; returns at once."""
        self._serving = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="local-vault", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._serving = True
        self._server.serve_forever()

    def stop(self) -> None:
        self.state.stopping.set()
        if self._serving:
            self._server.shutdown()  # waits for serve_forever to return: only if it ran
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.store.close()
        self._lock.release()

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
