"""The local vault: a Team Vault–compatible server in one data directory, standard library only.

For people without a Team Vault server at hand, for agents working offline, and for
our own end-to-end tests: ``teamvault-mcp local-vault`` serves it over HTTP, and
``teamvault-mcp --local DIR`` runs the MCP server on top of an embedded one.

    local_vault.py    LocalVault: the data directory served over HTTP, started and stopped
    store.py          the API's rules on users, projects, files and versions
    records.py        what the store hands out (VaultError, User, FileRow…) and the rules on one value
    database.py       the SQLite tables, their migrations, the pool of connections
    blobs.py          the content-addressed blobs, written durably
    app.py            the HTTP pipeline of a request: framing, the key, the checks, the wire
    routes.py         the route table and each route's work on the store
    exchange.py       a request as the routes see it, and an answer
    state.py          what every handler thread shares
    idempotency.py    Idempotency-Key: fingerprints, keys in flight, remembered answers
    archives.py       folder archives (GET …/folders/download): the checks, the entries, the zip
    streaming.py      a body sent as it is made: chunked transfer encoding
    preconditions.py  If-Match, the extension for conditional writes
    limits.py         connection cap, shedding, head deadlines: no client can lock the vault up
    keys.py           API keys: the start key, added keys, revocation, the ``keys`` command
    datadir.py        private modes and leftover temp files at start; the lock of a running vault
    multipart.py      the multipart/form-data parser for POST /files
    faults.py         scripted faults for tests (status codes, dropped connections, drips, hangs)

This ``__init__`` only re-exports the public names; each lives in the module listed above.
"""

from teamvault_mcp.localvault.faults import Fault, FaultPlan
from teamvault_mcp.localvault.limits import Limits
from teamvault_mcp.localvault.local_vault import DEFAULT_PORT, LocalUser, LocalVault
from teamvault_mcp.localvault.records import VaultError
from teamvault_mcp.localvault.store import Store

__all__ = ["DEFAULT_PORT", "Fault", "FaultPlan", "Limits", "LocalUser", "LocalVault", "Store", "VaultError"]
