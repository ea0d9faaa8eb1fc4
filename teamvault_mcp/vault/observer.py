"""Who is told of the vault layer's work: each HTTP attempt's status, each request sent again.

:class:`VaultObserver` is the default and tells no one: a call costs one empty method call per
attempt. ``serve --http --metrics`` passes a subclass that counts (``server/metrics.py``), so
this folder never imports the metrics library or anything above it. The content cache's hits
and misses are not reported here: it counts them itself (``cache.ContentCache``), and the
metrics read those counts when they are scraped.
"""

from __future__ import annotations


class VaultObserver:
    """Told of each attempt at the Team Vault server and each retry; this one tells no one."""

    def attempt(self, method: str, status: str) -> None:
        """One HTTP attempt ended: ``status`` is its answer's status code, or the name of the error that ended it."""

    def retry(self, method: str) -> None:
        """A request is sent again (after a failed attempt, a stale connection or a key in use)."""


#: The observer of a client that is given none.
NO_OBSERVER = VaultObserver()
