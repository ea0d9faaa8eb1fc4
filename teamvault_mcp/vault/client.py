"""TeamVaultClient: one method per Team Vault REST endpoint, for one tool call.

A client lives exactly as long as one tool call: it holds the call's budget, its
cancel token and its Idempotency-Key (one UUID for every write request of the call,
identical on every attempt); its connections come from the server's shared keep-alive
pool. Each request runs through the retry loop. HTTP answers become values or :mod:`teamvault_mcp.errors`; the
endpoints and shapes are those of docs/teamvault-api.md §3, §4 and §9.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import time
import uuid
from collections.abc import Mapping
from typing import IO, Any
from urllib.parse import quote

from teamvault_mcp.errors import (
    BODY_EXCERPT_CHARS,
    CallCancelledError,
    HTTPStatusError,
    KeyInUseError,
    PreconditionFailedError,
    TeamVaultError,
    UnexpectedAnswerError,
    printable,
)
from teamvault_mcp.text.redact import Redactor
from teamvault_mcp.vault.answers import (
    decode_json,
    file_type_of,
    server_words,
)
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.observer import NO_OBSERVER, VaultObserver
from teamvault_mcp.vault.records import VaultFile, VaultListing, VaultProject, VaultUser, VaultVersion
from teamvault_mcp.vault.retry import Budget, Clock, RequestFailure, RetryPolicy, parse_retry_after, run_with_retries
from teamvault_mcp.vault.transport import Answer, HttpPool, HttpSession

log = logging.getLogger(__name__)

#: The answer header of a server that checks ``If-Match`` atomically with the write (our local vault does).
CONDITIONAL_HEADER = "X-TeamVault-Conditional-Writes"


class TeamVaultClient:
    """The Team Vault REST API as seen by one tool call."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        budget: Budget,
        token: CancelToken,
        clock: Clock,
        policy: RetryPolicy,
        pool: HttpPool | None = None,
        observer: VaultObserver = NO_OBSERVER,
    ) -> None:
        self._base_url = base_url
        self._observer = observer  # told of each attempt and retry (``serve --http --metrics``)
        self._api_key = api_key
        self._budget = budget
        self._token = token
        self._clock = clock
        self._policy = policy
        self._own_pool = pool is None  # without a shared pool, the client keeps (and closes) its own
        self._pool = pool if pool is not None else HttpPool(base_url)
        self._http = HttpSession(token, self._pool)
        self._redactor = Redactor(api_key)
        self._idempotency_key: str | None = None  # made when a write first needs it: a read never does
        #: Whether the last write's answer was a replay of an earlier attempt's (``Idempotent-Replayed``).
        self.replayed = False
        #: Whether the last write's answer says the server checked its ``If-Match`` atomically.
        self.conditional = False
        self._write_attempts = [0]  # shared with forks: one count for the whole call

    @property
    def idempotency_key(self) -> str:
        """The key of this call's current write request: its retries send the same one."""
        if self._idempotency_key is None:
            self._idempotency_key = str(uuid.uuid4())
        return self._idempotency_key

    @property
    def write_attempts(self) -> int:
        """HTTP attempts made by the write requests of this call, forks included (audit log; 0: nothing sent)."""
        return self._write_attempts[0]

    def fork(self) -> TeamVaultClient:
        """A client for another thread of the same call: same budget, cancel token, key and connection pool."""
        twin = TeamVaultClient(
            self._base_url,
            self._api_key,
            budget=self._budget,
            token=self._token,
            clock=self._clock,
            policy=self._policy,
            pool=self._pool,
            observer=self._observer,
        )
        twin._idempotency_key = self.idempotency_key
        twin._write_attempts = self._write_attempts
        return twin

    def new_write(self) -> None:
        """The next write request is a different one (other bytes): it gets a key of its own.

        Retries of one request share its key, so the server applies it once; a second,
        different request under the same key would be refused as a key mismatch.
        """
        self._idempotency_key = str(uuid.uuid4())

    def pause(self, seconds: float) -> None:
        """Wait ``seconds`` on the call's clock (never past its budget); :class:`CallCancelledError` on a cancel."""
        if self._clock.wait(self._token.event, max(0.0, min(seconds, self._budget.remaining() - 1.0))):
            raise CallCancelledError()

    def random(self) -> float:
        """A random fraction from the call's clock (tests make it fixed)."""
        return self._clock.random()

    def wall(self) -> float:
        """Now, in seconds since the epoch, on the call's clock (tests set it)."""
        return self._clock.wall()

    def __repr__(self) -> str:
        return f"TeamVaultClient({self._base_url!r})"

    def close(self) -> None:
        if self._own_pool:
            self._pool.close()

    # -- endpoints -------------------------------------------------------------------------------

    def whoami(self) -> VaultUser:
        """The key's user: string ``id``, ``email`` and ``name`` (or None), and its other plain fields."""
        user = VaultUser.from_json(self._json("GET", "/api/auth/me").get("user"))
        if user is None:
            raise self._unexpected("GET", "/api/auth/me", "no 'user' object with an id")
        return user

    def list_projects(self) -> list[VaultProject]:
        """The projects the key reaches: string ``id``; ``slug``, ``name``, ``role`` strings or None."""
        projects = self._json("GET", "/api/projects").get("projects")
        if not isinstance(projects, list):
            raise self._unexpected("GET", "/api/projects", "no 'projects' list")
        return [project for project in map(VaultProject.from_json, projects) if project is not None]

    def list_files(
        self, project_id: str, *, path: str | None = None, prefix: str | None = None, include_deleted: bool = False
    ) -> list[VaultFile]:
        """Live files of a project; ``path`` selects at most one, ``prefix`` a subtree (server-side);
        ``include_deleted`` adds the tombstones (``deleted_at`` set)."""
        params = {key: value for key, value in (("path", path), ("prefix", prefix)) if value}
        if include_deleted:
            params["includeDeleted"] = "true"
        api_path = f"{_project(project_id)}/files"
        body = self._json("GET", api_path, params=params)
        records = body.get("files")
        if not isinstance(records, list):
            raise self._unexpected("GET", api_path, "no 'files' list")
        try:
            return VaultListing([VaultFile.from_json(record) for record in records])
        except ValueError as exc:
            raise self._unexpected("GET", api_path, str(exc)) from exc

    def list_paths(self, project_id: str) -> list[tuple[str, str]]:
        """(path, fileType) of every live file: the listing without building a record per file."""
        api_path = f"{_project(project_id)}/files"
        records = self._json("GET", api_path).get("files")
        if not isinstance(records, list):
            raise self._unexpected("GET", api_path, "no 'files' list")
        return [
            (record["path"], file_type_of(record.get("fileType")))
            for record in records
            if isinstance(record, dict) and isinstance(record.get("path"), str) and record["path"]
        ]

    def find_file(self, project_id: str, stored_path: str, *, include_deleted: bool = False) -> VaultFile | None:
        """The live file at ``stored_path`` (already in stored form), or None; with ``include_deleted``, the
        tombstone there if there is no live file."""
        # An old server may ignore `path=` and list everything: match exactly on our side.
        listed = self.list_files(project_id, path=stored_path, include_deleted=include_deleted)
        matching = [file for file in listed if file.path == stored_path]
        return next((file for file in matching if file.deleted_at is None), matching[0] if matching else None)

    def download(self, project_id: str, file_id: str) -> bytes:
        return self._request("GET", _file(project_id, file_id)).body

    def download_folder(self, project_id: str, folder: str, into: IO[bytes], *, max_bytes: int, seconds: float) -> None:
        """``GET /folders/download?path=<folder>`` (§5.3): the folder's zip, written into ``into`` as it comes.

        An attempt may take up to ``seconds`` (an archive can be far larger than a note) as long
        as bytes keep coming: it stalls out after the usual attempt limit without any. At most
        ``max_bytes`` are taken. ``into`` is emptied before each attempt.
        """
        policy = dataclasses.replace(self._policy, attempt_timeout=max(seconds, self._policy.min_time_to_start))
        self._request(
            "GET",
            f"{_project(project_id)}/folders/download",
            params={"path": folder},
            headers={"Accept": "application/zip", "Accept-Encoding": "identity"},  # a zip is compressed already
            sink=into,
            max_body=max_bytes,
            policy=policy,
        )

    def has_folder_download(self, project_id: str) -> bool | None:
        """Whether the server has the folder archive route: True, False, or None when it cannot be told.

        Asked without a ``path``, the route answers 400 ``missing_path`` (after the key and the
        project are checked); a server without it answers an unknown route's 404 (or a 405).
        A 404 alone cannot tell: the route answers 404 for a folder without live files too.
        """
        try:
            self._request("GET", f"{_project(project_id)}/folders/download", sink=io.BytesIO(), max_body=64 * 1024)
        except HTTPStatusError as error:
            return True if error.status == 400 else False if error.status in (404, 405) else None
        except TeamVaultError:
            return None
        return True  # an archive of something: the route is there

    def create_file(self, project_id: str, path: str, content: bytes, mime_type: str) -> VaultFile:
        """``POST /files`` (multipart). 409 ``path_exists`` if a live file is there already."""
        filename = path.rsplit("/", 1)[-1]
        return self._file_answer(
            "POST",
            f"{_project(project_id)}/files",
            write=True,
            data={"path": path},
            files={"file": (filename, content, mime_type)},
            about={"path": path},
        )

    def replace_content(
        self, project_id: str, file_id: str, content: bytes, *, if_match: str | None = None
    ) -> VaultFile:
        """``PUT /files/:id`` with the raw bytes; the file keeps its type and mime type.

        ``if_match``: the content hash the note must still have; a server that checks it
        refuses with :class:`PreconditionFailedError`, one that does not ignores it
        (:attr:`conditional` tells which).
        """
        return self._file_answer(
            "PUT",
            _file(project_id, file_id),
            write=True,
            data=content,
            headers={"Content-Type": "application/octet-stream", **_if_match(if_match)},
        )

    def move_file(self, project_id: str, file_id: str, new_path: str, *, if_match: str | None = None) -> dict[str, Any]:
        api_path = _file(project_id, file_id)
        moved = self._json(
            "PATCH",
            api_path,
            write=True,
            data=json.dumps({"newPath": new_path}).encode(),
            headers={"Content-Type": "application/json", **_if_match(if_match)},
            about={"newPath": new_path},
        ).get("file")
        if not isinstance(moved, dict):
            raise self._unexpected("PATCH", api_path, "no 'file' object")
        # Only the fields the contract names, and only as strings: a caller falls back on what it sent.
        return {key: moved[key] for key in ("id", "path") if isinstance(moved.get(key), str) and moved[key]}

    def delete_file(self, project_id: str, file_id: str, *, if_match: str | None = None) -> None:
        self._request("DELETE", _file(project_id, file_id), write=True, headers=_if_match(if_match))

    def list_versions(self, project_id: str, file_id: str) -> list[VaultVersion]:
        """The file's saved versions, in the server's order (newest first, by the contract)."""
        api_path = f"{_file(project_id, file_id)}/versions"
        versions = self._json("GET", api_path).get("versions")
        if not isinstance(versions, list):
            raise self._unexpected("GET", api_path, "no 'versions' list")
        return [version for version in map(VaultVersion.from_json, versions) if version is not None]

    def download_version(self, project_id: str, file_id: str, version_id: str) -> bytes:
        """The bytes of one version, exactly (its ``contentHash`` is theirs)."""
        return self._request("GET", f"{_file(project_id, file_id)}/versions/{quote(version_id, safe='')}").body

    # -- plumbing ----------------------------------------------------------------------------------

    def _file_answer(self, method: str, api_path: str, **kwargs: Any) -> VaultFile:
        try:
            return VaultFile.from_json(self._json(method, api_path, **kwargs).get("file"))
        except ValueError as exc:
            raise self._unexpected(method, api_path, str(exc)) from exc

    def _json(self, method: str, api_path: str, **kwargs: Any) -> dict[str, Any]:
        answer = self._request(method, api_path, **kwargs)
        body, problem = decode_json(answer.body)
        if not isinstance(body, dict):
            _, said = server_words(answer.body, answer.headers.get("Content-Type", ""))
            problem = f"HTTP {answer.status}, {problem or 'not a JSON object'}"
            raise UnexpectedAnswerError(method, api_path, problem, self._redactor.text(said))
        return body

    def _request(
        self,
        method: str,
        api_path: str,
        *,
        write: bool = False,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        data: Any = None,
        files: Any = None,
        about: Mapping[str, str] | None = None,
        sink: IO[bytes] | None = None,
        max_body: int | None = None,
        policy: RetryPolicy | None = None,
    ) -> Answer:
        shown_path = _with_query(api_path, params)
        extra: dict[str, Any] = {}
        if sink is not None:  # a long download into a file: a longer attempt, bounded by the usual stall limit
            extra = {"sink": sink, "stall": self._policy.attempt_timeout}
        if max_body is not None:
            extra["max_body"] = max_body
        all_headers = {"X-API-Key": self._api_key, "Accept": "application/json", **(headers or {})}
        if write:
            all_headers["Idempotency-Key"] = self.idempotency_key

        tries = 0

        def attempt(limit: float, number: int) -> Answer:
            nonlocal tries
            tries += 1
            if tries > 1:
                self._observer.retry(method)
            started = time.perf_counter()
            if write:
                self._write_attempts[0] += 1
            if sink is not None:  # a retry starts the file afresh
                sink.seek(0)
                sink.truncate()
            try:
                answer = self._http.send(
                    method,
                    self._base_url + api_path,
                    api_path=shown_path,
                    limit=limit,
                    headers=all_headers,
                    params=params,
                    data=data,
                    files=files,
                    **extra,
                )
            except (TeamVaultError, CallCancelledError) as error:
                self._log_attempt(method, shown_path, type(error).__name__, started, number, write)
                if self._redactor.finds(str(error)):  # a garbled status line may quote what the server echoed
                    error.args = (self._redactor.text(str(error.args[0])),)
                raise
            self._log_attempt(method, shown_path, str(answer.status), started, number, write)
            if answer.status >= 300:
                raise self._status_error(method, shown_path, answer, about)
            return answer

        result = run_with_retries(
            attempt,
            what=(method, shown_path),
            policy=policy or self._policy,
            budget=self._budget,
            clock=self._clock,
            cancel=self._token.event,
        )
        if isinstance(result, RequestFailure):  # the caller catches the error by type; what the loop saw rides along
            raise result.error.attach(result.attempts)
        answer = result
        if write:
            self.conditional = answer.headers.get(CONDITIONAL_HEADER, "").lower() == "if-match"
            self.replayed = answer.headers.get("Idempotent-Replayed", "").lower() == "true"
            if self.replayed:
                log.info("%s %s: the server replayed the answer of an earlier attempt", method, shown_path)
        return answer

    def _log_attempt(self, method: str, path: str, outcome: str, started: float, number: int, write: bool) -> None:
        """An attempt's end, told to the observer and logged at debug level."""
        self._observer.attempt(method, outcome)
        if log.isEnabledFor(logging.DEBUG):
            key = f" key={self.idempotency_key}" if write else ""
            ms = (time.perf_counter() - started) * 1000
            log.debug("%s %s → %s in %.1f ms (attempt %d)%s", method, path, outcome, ms, number, key)

    def _status_error(
        self, method: str, api_path: str, answer: Answer, about: Mapping[str, str] | None = None
    ) -> HTTPStatusError:
        """The error for an error answer: the envelope's code, what the server said without the API key, and
        ``about`` the request (the paths it names, for the English text of the answer)."""
        code, said = server_words(answer.body, answer.headers.get("Content-Type", ""))
        detail = self._redactor.text(said)
        retry_after = parse_retry_after(answer.headers.get("Retry-After"), self._clock.wall())
        if answer.status == 409 and code == "idempotency_key_in_use":
            return KeyInUseError(method, api_path, detail, retry_after=retry_after)
        if answer.status == 412:
            current = _current_hash(answer.text, answer)
            return PreconditionFailedError(method, api_path, detail, current_hash=current)
        location = None
        if 300 <= answer.status < 400:
            location = printable(self._redactor.text(answer.headers.get("Location") or "?"))[:BODY_EXCERPT_CHARS]
            detail = ""  # a redirect's body is a page for browsers
        return HTTPStatusError(
            method, api_path, answer.status, detail, code=code, retry_after=retry_after, location=location, about=about
        )

    def _unexpected(self, method: str, api_path: str, problem: str) -> UnexpectedAnswerError:
        return UnexpectedAnswerError(method, api_path, problem)


def _project(project_id: str) -> str:
    return f"/api/projects/{quote(project_id, safe='')}"


def _file(project_id: str, file_id: str) -> str:
    return f"{_project(project_id)}/files/{quote(file_id, safe='')}"


def _if_match(content_hash: str | None) -> dict[str, str]:
    return {"If-Match": f'"{content_hash}"'} if content_hash else {}


def _current_hash(body: str, answer: Answer) -> str | None:
    """The note's hash now, from a 412: the envelope's ``currentHash``, else the ``ETag``."""
    try:
        envelope = json.loads(body)
    except ValueError:
        envelope = None
    error = envelope.get("error") if isinstance(envelope, dict) else None
    current = error.get("currentHash") if isinstance(error, dict) else None
    if not isinstance(current, str):
        current = answer.headers.get("ETag", "").strip().strip('"') or None
    return current.lower() if current else None


def _with_query(api_path: str, params: Mapping[str, str] | None) -> str:
    """The API path as shown in messages: the query readable, not percent-encoded."""
    if not params:
        return api_path
    return api_path + "?" + "&".join(f"{key}={value}" for key, value in params.items())
