"""What every command shares: the program's name, logging to stderr (configured here and only here), a
configuration's failure as lines on stderr, and the collector held off while the SDK and the tools are imported.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
from collections.abc import Iterator, Mapping

from teamvault_mcp.config import LOG_LEVELS
from teamvault_mcp.errors import ConfigError

PROG = "teamvault-mcp"


@contextlib.contextmanager
def collector_held_off() -> Iterator[None]:
    """Hold the cyclic garbage collector off while the SDK and the tools are imported, then freeze what they made.

    The imports make some 90,000 objects that live as long as the process, and the collections they would
    trigger walk them again and again (a full collection of them takes tens of milliseconds): about a tenth
    of start-up. Frozen (``gc.freeze``), they are left out of every later collection too; reference counting
    still frees whatever is dropped. Only a few hundred objects of garbage are made by the imports.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def log_level(environ: Mapping[str, str]) -> str:
    level = environ.get("TEAM_VAULT_LOG_LEVEL", "").strip().lower()
    return level if level in LOG_LEVELS else "warning"


def config_failure(error: ConfigError) -> int:
    for line in str(error).splitlines():
        sys.stderr.write(f"{PROG}: {line}\n")
    return 1


def configure_logging(level: str, api_key: str | None = None, token: str | None = None) -> None:
    from teamvault_mcp.text.redact import RedactingFilter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG} %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter(api_key))  # a server's words in a log line may echo the key
    if token is not None:
        handler.addFilter(RedactingFilter(token))
    ours = logging.getLogger("teamvault_mcp")
    ours.setLevel(level.upper())
    for earlier in list(ours.handlers):  # configured again after --local started its vault
        ours.removeHandler(earlier)
    ours.addHandler(handler)
    ours.propagate = False
    # Third-party loggers stay at warning: the SDK's debug output would carry note content.
    root = logging.getLogger()
    before = set(root.handlers)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format=f"{PROG} %(levelname)s %(name)s: %(message)s")
    for made in set(root.handlers) - before:  # a library's warning may echo a header, the key's among them
        made.addFilter(RedactingFilter(api_key))
