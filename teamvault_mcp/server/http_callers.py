"""Who calls ``serve --http``: the token's holder, or (``--key-from-client``) each Team Vault key, and its runner.

:class:`Callers` tells callers apart by a digest of their key (the key itself never leaves this
module and ``http.py``), checks a new key at the vault, checks it again after
:data:`KEY_RECHECK_AFTER`, and remembers a refusal for :data:`REFUSAL_TTL`. :func:`bearer` reads
the ``Authorization`` header. The HTTP front (``http.py``) turns :class:`TooManyCallers` into 503
and :class:`KeyRevoked` into ended sessions and 401.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

from teamvault_mcp.config import Config
from teamvault_mcp.errors import HTTPStatusError
from teamvault_mcp.http_config import HttpConfig
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.server.workspace import default_policy, open_client
from teamvault_mcp.tools.note_locks import NoteLocks
from teamvault_mcp.vault.cache import ProjectCaches
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget, Clock, RetryPolicy, SystemClock

if TYPE_CHECKING:
    from teamvault_mcp.server.metrics import Metrics

#: Seconds a new key's check at the vault (``GET /api/auth/me``) may take.
KEY_CHECK_BUDGET = 10.0
#: Key checks running at once: wrong keys must not take every thread.
KEY_CHECKS_AT_ONCE = 4
#: Seconds a key the vault accepted is trusted before it is checked again (a revoked key stops working then).
KEY_RECHECK_AFTER = 60.0
#: Seconds a key the vault refused is refused without asking again, and how many such keys are remembered.
REFUSAL_TTL = 10.0
REFUSALS_KEPT = 1024


@dataclass
class Caller:
    """One caller: its runner, its Team Vault user id (team mode), when it last sent a request and when its key was
    last checked at the vault."""

    runner: ToolRunner
    user_id: str | None
    last_seen: float
    checked_at: float = 0.0


class Callers:
    """Who may call, and the runner each caller's requests run in.

    Token mode has one caller, the holder of TEAM_VAULT_HTTP_TOKEN, on the server's own key. In the
    team mode (``--key-from-client``) each key is a caller, checked at the vault the first time it
    is seen and again on its first request after :data:`KEY_RECHECK_AFTER`; a key the vault refuses
    is refused without asking for :data:`REFUSAL_TTL`. At most ``max_sessions`` keys are kept, and
    one is forgotten only after it has sent nothing for longer than a session may stay idle (its
    sessions have all expired by then).
    """

    def __init__(
        self,
        config: Config,
        options: HttpConfig,
        *,
        clock: Clock | None = None,
        policy: RetryPolicy | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.config = config
        self.options = options
        self.clock: Clock = clock or SystemClock()
        self.policy = policy
        self.metrics = metrics  # every runner's calls counted there (--metrics), or None
        self._lock = threading.Lock()
        self._callers: OrderedDict[str, Caller] = OrderedDict()
        self._checks = anyio.CapacityLimiter(KEY_CHECKS_AT_ONCE)
        self._refused: OrderedDict[str, float] = OrderedDict()  # key digest → refused until (monotonic)
        # One content cache for every key: entries are found by content hash only.
        self._caches = (
            ProjectCaches(
                config.cache_dir, max_bytes=config.cache_max_bytes, server=config.cache_namespace or config.base_url
            )
            if config.cache_dir is not None
            else None
        )
        # One table of note locks for every key: a team's agents writing one note take turns, whoever they are.
        self._note_locks = NoteLocks()
        #: The runner whose configuration gives the instructions (and, in token mode, runs every call).
        self.template = self._runner(config, None)
        if not options.key_from_client:
            self._callers["token"] = Caller(self.template, None, self.clock.monotonic())

    def _runner(self, config: Config, user_id: str | None) -> ToolRunner:
        return ToolRunner(
            config,
            clock=self.clock,
            policy=self.policy,
            caches=self._caches,
            audit_user=user_id,
            note_locks=self._note_locks,
            metrics=self.metrics,
        )

    def cache_lookups(self) -> tuple[int, int]:
        """(hits, misses) of the content cache every caller shares ((0, 0) with TEAM_VAULT_CACHE_DIR=off)."""
        return self._caches.lookups() if self._caches is not None else (0, 0)

    async def identify(self, authorization: str | None) -> str | None:
        """The caller's id for an ``Authorization`` header, or None: refuse with 401."""
        presented = bearer(authorization)
        if presented is None:
            return None
        if not self.options.key_from_client:
            expected = self.options.token or ""
            return "token" if hmac.compare_digest(presented.encode(), expected.encode()) else None
        caller_id = hashlib.sha256(presented.encode()).hexdigest()
        now = self.clock.monotonic()
        with self._lock:
            caller = self._callers.get(caller_id)
            if caller is not None:
                caller.last_seen = now
                self._callers.move_to_end(caller_id)
                if now - caller.checked_at < KEY_RECHECK_AFTER:
                    return caller_id
            elif self._refused.get(caller_id, -math.inf) > now:
                return None
        async with self._checks:
            user_id = await anyio.to_thread.run_sync(self._user_of, presented, abandon_on_cancel=True)
        if user_id is None:
            self._remember_refusal(caller_id)
            if caller is not None:
                with self._lock:
                    self._callers.pop(caller_id, None)
                raise KeyRevoked(caller_id, caller.runner)
            return None
        if caller is not None:
            caller.checked_at = self.clock.monotonic()
            return caller_id
        runner = self._runner(replace(self.config, api_key=presented), user_id)
        with self._lock:
            if caller_id not in self._callers:
                self._make_room()
                now = self.clock.monotonic()
                self._callers[caller_id] = Caller(runner, user_id, now, checked_at=now)
        return caller_id

    def _remember_refusal(self, caller_id: str) -> None:
        with self._lock:
            self._refused[caller_id] = self.clock.monotonic() + REFUSAL_TTL
            self._refused.move_to_end(caller_id)
            while len(self._refused) > REFUSALS_KEPT:
                self._refused.popitem(last=False)

    def _user_of(self, key: str) -> str | None:
        """The Team Vault user id of ``key``; None when the vault refuses it (a vault that cannot be asked raises)."""
        budget = Budget(KEY_CHECK_BUDGET, self.clock)
        config = replace(self.config, api_key=key)
        policy = self.policy or default_policy(config)
        client = open_client(config, budget, CancelToken(), clock=self.clock, policy=policy)  # on a pool of its own
        try:
            return client.whoami().id
        except HTTPStatusError as refused:
            if refused.status in (401, 403):
                return None
            raise
        finally:
            client.close()

    def _make_room(self) -> None:
        """Forget the least recently seen key that has been idle past the session timeout, when at the limit."""
        if len(self._callers) < self.options.max_sessions:
            return
        oldest_id, oldest = next(iter(self._callers.items()))
        if self.clock.monotonic() - oldest.last_seen < self.options.session_idle:
            raise TooManyCallers()
        del self._callers[oldest_id]
        oldest.runner.close()

    def runner_for(self, ctx: Any) -> ToolRunner:
        """The runner of the caller whose request ``ctx`` is (the front put the caller's id in its scope)."""
        user = ctx.request.scope.get("user") if ctx.request is not None else None
        caller_id = user.access_token.client_id if isinstance(user, AuthenticatedUser) else None
        with self._lock:
            caller = self._callers.get(caller_id or "")
        if caller is None:  # cannot happen: the front admits no request without a caller
            raise RuntimeError("a request reached the MCP server without a known caller")
        return caller.runner

    def owner_of(self, caller_id: str) -> str:
        """Whose share a caller's sessions count against: its Team Vault user (one member, however many keys)."""
        with self._lock:
            caller = self._callers.get(caller_id)
        return caller.user_id if caller is not None and caller.user_id is not None else caller_id

    def count(self) -> int:
        with self._lock:
            return len(self._callers)

    def close(self) -> None:
        with self._lock:
            callers = list(self._callers.values())
            self._callers.clear()
        for caller in callers:
            caller.runner.close()
        self.template.close()


class KeyRevoked(Exception):
    """A key the vault accepted before refuses now: its sessions end and its runner closes."""

    def __init__(self, caller_id: str, runner: ToolRunner) -> None:
        super().__init__("a key the Team Vault server accepted before is refused now")
        self.caller_id = caller_id
        self.runner = runner


class TooManyCallers(Exception):
    """As many keys as sessions are allowed are in use, none idle long enough to forget."""


def bearer(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>``; None when absent or malformed."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or any(ch.isspace() or not ch.isprintable() for ch in token):
        return None
    return token
