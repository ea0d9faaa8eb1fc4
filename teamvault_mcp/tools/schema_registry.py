"""The schema registry: the schema notes of TEAM_VAULT_SCHEMA_DIR, loaded at start-up and on reload_schemas.

Server state, shared by every call: the tools ``upsert_<name>`` (``schemas.py``) are made
from the :class:`SchemaSet` installed now. What a schema note holds is ``text/schemas.py``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from teamvault_mcp.errors import TeamVaultError
from teamvault_mcp.text.schema_notes import SchemaProblem, parse_schema_note
from teamvault_mcp.text.schemas import Schema

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient

log = logging.getLogger(__name__)

#: The start-up load of the schemas gets this long; the server answers tools/list by then at the latest.
SCHEMA_LOAD_LIMIT = 5.0

#: Schema notes read from the folder, at most (in path order).
MAX_SCHEMA_NOTES = 100


@dataclass(frozen=True)
class SchemaSet:
    """The schemas loaded from the folder, and what was wrong with the notes that did not load."""

    schemas: tuple[Schema, ...] = ()
    problems: tuple[tuple[str, str], ...] = ()  # (schema note, problem)
    status: str = "loading"


class SchemaRegistry:
    """The current :class:`SchemaSet`; replaced whole by each load, counted by ``generation``."""

    def __init__(self, project_id: str, folder: str) -> None:
        self.project_id = project_id
        self.folder = folder
        self.current = SchemaSet()
        self.generation = 0
        #: Set when the start-up load has ended, loaded or not.
        self.started = threading.Event()
        self._lock = threading.Lock()
        self._loader: threading.Thread | None = None

    def install(self, loaded: SchemaSet) -> None:
        with self._lock:
            self.current = loaded
            self.generation += 1
        for source, problem in loaded.problems:
            log.warning("schema note %s not loaded: %s", source, problem)

    def load(self, client: TeamVaultClient) -> SchemaSet:
        """Read every schema note of the folder; a note that is not a valid schema becomes a problem."""
        files = sorted(
            (f for f in client.list_files(self.project_id, prefix=self.folder) if f.path.startswith(self.folder)),
            key=lambda f: f.path,
        )
        notes = [f for f in files if f.path.lower().endswith(".md")]
        problems: list[tuple[str, str]] = []
        if len(notes) > MAX_SCHEMA_NOTES:
            problems.append((self.folder, f"{len(notes)} notes; only the first {MAX_SCHEMA_NOTES} were read"))
        schemas: list[Schema] = []
        defined: dict[str, str] = {}
        for file in notes[:MAX_SCHEMA_NOTES]:
            if file.file_type != "TEXT":
                problems.append((file.path, "not a text note"))
                continue
            text = client.download(self.project_id, file.id).decode("utf-8", errors="replace")
            try:
                schema = parse_schema_note(file.path, text)
            except SchemaProblem as problem:
                problems.append((file.path, str(problem)))
                continue
            if schema.name in defined:
                problems.append(
                    (file.path, f"schemaName {schema.name!r} is already defined by {defined[schema.name]}; ignored")
                )
                continue
            defined[schema.name] = file.path
            schemas.append(schema)
        when = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        return SchemaSet(tuple(schemas), tuple(problems), f"loaded from {self.folder} at {when}")

    def start_loading(self, open_client: Callable[[], TeamVaultClient]) -> None:
        """Begin the start-up load in a thread of its own (once): the schemas, or a status that says why none.

        ``open_client`` gives the client to read with; its budget bounds the load (:data:`SCHEMA_LOAD_LIMIT`).
        :attr:`started` is set when the load has ended, whatever happened.
        """
        with self._lock:
            if self._loader is not None:
                return
            self._loader = threading.Thread(target=self._load_at_start, args=(open_client,), name="schema-loader")
            self._loader.daemon = True
        self._loader.start()

    def _load_at_start(self, open_client: Callable[[], TeamVaultClient]) -> None:
        try:
            client = open_client()
            try:
                loaded = self.load(client)
            finally:
                client.close()
            self.install(loaded)
        except TeamVaultError as error:
            log.warning("the schema notes in %s were not loaded at start-up: %s", self.folder, error)
            self.install(SchemaSet(status=f"not loaded at start-up: {error} Call reload_schemas to try again."))
        except Exception as error:  # a bug must not leave tools/list waiting
            log.exception("loading the schema notes failed")
            self.install(SchemaSet(status=f"not loaded at start-up: internal error {type(error).__name__}."))
        finally:
            self.started.set()
