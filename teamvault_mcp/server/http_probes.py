"""The probes of ``serve --http`` for a load balancer or an orchestrator: ``/healthz``, ``/readyz``, ``/metrics``.

``GET /healthz`` is liveness: ``ok`` while the process serves. ``GET /readyz`` is readiness: the Team Vault
server answers ``GET /api/auth/me`` with the configured key (token mode); with ``--key-from-client`` there is
no configured key, so ready is the server answering that request without one (401: it is up and checks keys).
One check at a time, its answer reused for :data:`READY_TTL` seconds on the service's clock, so probes every
second from many load balancers ask the vault at most once per :data:`READY_TTL`. Neither needs a token, and
neither answer holds anything secret: a fixed word, or a short reason naming a status code or an error's kind,
never the key, the token or a server's own words. ``GET /metrics`` (``metrics.py``) is the HTTP front's to
guard (``http.py``): it is behind the token in token mode.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import anyio
import anyio.to_thread

from teamvault_mcp.config import Config
from teamvault_mcp.errors import HTTPStatusError, TeamVaultError
from teamvault_mcp.server.workspace import default_policy, open_client
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget, Clock, RetryPolicy

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
#: Seconds an answer of ``/readyz`` is reused before the vault is asked again.
READY_TTL = 5.0
#: Seconds the readiness check at the vault may take (one attempt: a probe has its own timeout and retries).
READY_CHECK_SECONDS = 5.0


@dataclass(frozen=True)
class Readiness:
    """The answer of ``/readyz``: ready or not, and the short text said (no secret in it)."""

    ready: bool
    text: str


READY = Readiness(True, "ready")


class ReadinessCheck:
    """Whether the Team Vault server answers as this service needs it to, asked at most once per :data:`READY_TTL`."""

    def __init__(self, config: Config, *, key_from_client: bool, clock: Clock, policy: RetryPolicy | None) -> None:
        self._config = config
        self._key_from_client = key_from_client
        self._clock = clock
        self._policy = replace(policy or default_policy(config), max_attempts=1, attempt_timeout=READY_CHECK_SECONDS)
        self._lock = anyio.Lock()
        self._last: tuple[float, Readiness] | None = None  # when it was asked (monotonic), and the answer

    async def current(self) -> Readiness:
        """The last answer if it is fresh, else the vault's now (probes arriving meanwhile wait for it)."""
        async with self._lock:
            last = self._last
            if last is not None and self._clock.monotonic() - last[0] < READY_TTL:
                return last[1]
            answer = await anyio.to_thread.run_sync(self._ask, abandon_on_cancel=True)
            self._last = (self._clock.monotonic(), answer)
            return answer

    def _ask(self) -> Readiness:
        """One ``GET /api/auth/me`` on a pool of its own: with the configured key, or none with --key-from-client."""
        budget = Budget(READY_CHECK_SECONDS + self._policy.min_time_to_start, self._clock)
        client = open_client(self._config, budget, CancelToken(), clock=self._clock, policy=self._policy)
        try:
            client.whoami()
            return READY
        except HTTPStatusError as refused:
            if refused.status in (401, 403):
                if self._key_from_client:  # asked without a key: it is up, and checks the keys clients send
                    return READY
                return Readiness(False, "not ready: the Team Vault server refuses the configured key")
            return Readiness(False, f"not ready: the Team Vault server answered HTTP {refused.status}")
        except TeamVaultError as failed:
            return Readiness(False, f"not ready: the Team Vault server could not be asked ({type(failed).__name__})")
        finally:
            client.close()
