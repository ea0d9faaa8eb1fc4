"""What every handler thread of the local vault shares: :class:`VaultState`."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from teamvault_mcp.localvault.exchange import Scope
from teamvault_mcp.localvault.faults import FaultPlan
from teamvault_mcp.localvault.limits import Connections, Limits
from teamvault_mcp.localvault.store import Store

IDEMPOTENCY_RETENTION = 24 * 3600.0


@dataclass
class VaultState:
    """What every handler thread shares: the data, the faults, the keyed writes in flight."""

    store: Store
    faults: FaultPlan
    idempotency_retention: float = IDEMPOTENCY_RETENTION
    #: False emulates the public Team Vault server, which ignores Idempotency-Key (teamvault-api.md §11.1).
    idempotency: bool = True
    #: False emulates it too in ignoring If-Match: no 412, no ETag, no X-TeamVault-Conditional-Writes.
    conditional_writes: bool = True
    connections: Connections = field(default_factory=lambda: Connections(Limits(max_connections=64)))
    in_flight: dict[Scope, str] = field(default_factory=dict)  # scope → fingerprint
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_purge: float = 0.0
    #: Set when the vault stops: injected delays, drips and hangs end at once, and so do streamed answers.
    stopping: threading.Event = field(default_factory=threading.Event)
    #: False leaves out GET …/folders/download, as on servers older than it (teamvault-api.md §5.3).
    folder_download: bool = True
