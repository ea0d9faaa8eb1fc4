"""Connections to the server opened in the first moments of start-up, before the MCP SDK is imported.

``serve`` reads its configuration, then imports the SDK (about half a second) and answers
``initialize``. :class:`ConnectionsAhead` is started right after the configuration is read: in a
thread of its own it imports ``requests``, makes the keep-alive pool and opens
:data:`CONNECTIONS_AHEAD` connections (TCP, TLS), while the main thread goes on with the imports,
so a call sent the moment ``initialize`` is answered finds them open. This module imports
nothing heavy itself: ``requests`` is loaded in that thread (the start-up test holds it).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from teamvault_mcp.vault.transport import HttpPool

log = logging.getLogger(__name__)

#: Connections opened ahead: the warm-up's two workers and one more, so a call always finds one idle.
CONNECTIONS_AHEAD = 3


class ConnectionsAhead:
    """A pool for ``base_url`` being made and connected in a background thread, started at once."""

    def __init__(self, base_url: str, count: int = CONNECTIONS_AHEAD) -> None:
        self.base_url = base_url
        self.count = count
        #: How many connections opened (once :attr:`done` is set).
        self.connections = 0
        #: Set once the pool exists (or could not be made); requests then wait for the connections themselves.
        self.made = threading.Event()
        #: Set once the connecting has ended, however.
        self.done = threading.Event()
        self._pool: HttpPool | None = None
        threading.Thread(target=self._connect, name="teamvault-connect-ahead", daemon=True).start()

    def _connect(self) -> None:
        try:
            from teamvault_mcp.vault.transport import HttpPool  # `requests` is imported here, in this thread

            # Made "connecting": a request sent from now on waits for the handshakes under way.
            self._pool = HttpPool(self.base_url, connecting_ahead=True)
            self.made.set()
            self.connections = self._pool.connect_ahead(self.count)
        except Exception:  # a bug must not go unseen, nor keep the server from starting: calls make their own pool
            log.exception("internal error while connecting ahead to %s", self.base_url)
        finally:
            self.made.set()
            self.done.set()

    def pool(self) -> HttpPool | None:
        """The pool, once it is made (its connections may still be opening); None if it could not be made."""
        self.made.wait()
        return self._pool
