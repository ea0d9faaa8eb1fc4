"""The local vault's routes: the table of paths and methods, and the work of each route on the store.

A route's work runs after the pipeline's checks (app.py: framing, key, project, permission, idempotency);
a write runs in one transaction, where its success answer is remembered too (idempotency.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from teamvault_mcp.localvault.archives import folder_archive
from teamvault_mcp.localvault.exchange import Answer, Request, cors
from teamvault_mcp.localvault.idempotency import remember_answer
from teamvault_mcp.localvault.multipart import MultipartError, Part, parse_form
from teamvault_mcp.localvault.preconditions import entity_tag
from teamvault_mcp.localvault.records import CREATE_FIELDS, REPLACE_FIELDS, Change, VaultError
from teamvault_mcp.localvault.state import VaultState

_ID = r"([^/]+)"
Route = tuple[re.Pattern[str], dict[str, str]]
#: (pattern, {method: route name}); a route name is a :class:`Routes` method ``route_<name>``.
ROUTES: tuple[Route, ...] = (
    (re.compile(r"/api/auth/me"), {"GET": "me"}),
    (re.compile(r"/api/projects"), {"GET": "projects"}),
    (re.compile(rf"/api/projects/{_ID}"), {"GET": "project"}),
    (re.compile(rf"/api/projects/{_ID}/files"), {"GET": "list_files", "POST": "create_file"}),
    (
        re.compile(rf"/api/projects/{_ID}/files/{_ID}"),
        {"GET": "download", "PUT": "replace", "PATCH": "move", "DELETE": "delete", "OPTIONS": "preflight"},
    ),
    (re.compile(rf"/api/projects/{_ID}/files/{_ID}/versions"), {"GET": "versions"}),
    (re.compile(rf"/api/projects/{_ID}/files/{_ID}/versions/{_ID}"), {"GET": "version", "OPTIONS": "preflight"}),
    (re.compile(rf"/api/projects/{_ID}/folders"), {"PATCH": "move_folder", "DELETE": "delete_folder"}),
)
#: Left out with ``LocalVault(folder_download=False)``: then it is an unknown route, as on servers without it.
FOLDER_DOWNLOAD_ROUTE: Route = (re.compile(rf"/api/projects/{_ID}/folders/download"), {"GET": "download_folder"})


def routes_of(state: VaultState) -> tuple[Route, ...]:
    """The routes this vault serves: :data:`ROUTES`, and the folder download unless it is left out."""
    return (*ROUTES, FOLDER_DOWNLOAD_ROUTE) if state.folder_download else ROUTES


def route_of(path: str, routes: tuple[Route, ...]) -> tuple[tuple[str, ...], dict[str, str]] | None:
    """The path's parameters and the route's methods, or None for a path no route has."""
    for pattern, methods in routes:
        match = pattern.fullmatch(path)
        if match:
            return tuple(unquote(group) for group in match.groups()), methods
    return None


class Routes:
    """The work of each route: ``route_<name>`` for a route name of :data:`ROUTES`."""

    def __init__(self, state: VaultState) -> None:
        self.state = state

    def change(self, request: Request, work: Callable[[Change], Answer]) -> Answer:
        """Run ``work`` in one write transaction; its success answer is remembered in the same one."""
        with self.state.store.write() as db:
            answer = work(Change(db, request.project_id, request.user, request.key))
            if request.remember is not None and answer.status < 300:
                scope, fingerprint = request.remember
                remember_answer(
                    db, *scope, fingerprint, answer.status, answer.content_type, answer.body, answer.headers
                )
        return answer

    def route_me(self, request: Request) -> Answer:
        user = request.user
        return Answer.json(200, {"user": {"id": user.id, "email": user.email, "name": user.name}})

    def route_projects(self, request: Request) -> Answer:
        return Answer.json(200, {"projects": self.state.store.projects_of(request.user)})

    def route_project(self, request: Request) -> Answer:
        return Answer.json(200, {"project": self.state.store.project(request.project_id, request.user)})

    def route_list_files(self, request: Request) -> Answer:
        body = self.state.store.list_json(
            request.project_id,
            path=request.arg("path"),
            prefix=request.arg("prefix"),
            include_deleted=request.arg("includeDeleted") == "true",
        )
        return Answer(200, body)

    def route_download(self, request: Request) -> Answer:
        file, content = self.state.store.content(request.project_id, request.params[1])
        mime_type = file.mime_type or "application/octet-stream"
        return Answer(200, content, mime_type, cors() + self._etag(file.content_hash))

    def _etag(self, content_hash: str) -> tuple[tuple[str, str], ...]:
        return (("ETag", entity_tag(content_hash)),) if self.state.conditional_writes else ()

    def route_create_file(self, request: Request) -> Answer:
        if not request.content_type.lower().startswith("multipart/form-data"):
            raise VaultError(400, "expected_multipart", "multipart/form-data is expected")
        try:
            form = parse_form(request.content_type, request.body)
        except MultipartError:
            raise VaultError(400, "expected_multipart", "multipart/form-data is expected") from None
        path = _text_field(form.get("path"))
        if not path:
            raise VaultError(400, "path_required", "The path parameter is required")
        file = form.get("file")
        if file is None or file.filename is None:
            raise VaultError(400, "file_required", "A file is required")

        def create(change: Change) -> Answer:
            created = self.state.store.create(change, path, file.data, file.content_type)
            return Answer.json(201, {"file": created.as_json(*CREATE_FIELDS)})

        return self.change(request, create)

    def route_replace(self, request: Request) -> Answer:
        def replace(change: Change) -> Answer:
            replaced = self.state.store.replace(change, request.params[1], request.body, request.precondition)
            answer = Answer.json(200, {"file": replaced.as_json(*REPLACE_FIELDS)})
            answer.headers = self._etag(replaced.content_hash)
            return answer

        return self.change(request, replace)

    def route_move(self, request: Request) -> Answer:
        new_path = _json_body(request.body).get("newPath")
        if not isinstance(new_path, str) or not new_path:
            raise VaultError(400, "invalid_body", "newPath: a non-empty string is expected")

        def move(change: Change) -> Answer:
            moved = self.state.store.move(change, request.params[1], new_path, request.precondition)
            return Answer.json(200, {"file": {"id": moved.id, "path": moved.path}})

        return self.change(request, move)

    def route_delete(self, request: Request) -> Answer:
        def delete(change: Change) -> Answer:
            self.state.store.delete(change, request.params[1], request.precondition)
            return Answer.json(200, {"success": True})

        return self.change(request, delete)

    def route_versions(self, request: Request) -> Answer:
        return Answer.json(200, {"versions": self.state.store.versions(request.project_id, request.params[1])})

    def route_version(self, request: Request) -> Answer:
        content = self.state.store.version_content(request.project_id, request.params[1], request.params[2])
        return Answer(200, content, "application/octet-stream", cors())

    def route_download_folder(self, request: Request) -> Answer:
        archive = folder_archive(self.state.store, request.project_id, request.arg("path"))
        disposition = (("Content-Disposition", archive.content_disposition),)
        return Answer(200, b"", "application/zip", disposition, stream=archive.write_to)

    def route_move_folder(self, request: Request) -> Answer:
        body = _json_body(request.body)
        path, new_path = body.get("path"), body.get("newPath")
        if not isinstance(path, str) or not path or not isinstance(new_path, str) or not new_path:
            raise VaultError(400, "invalid_body", "path and newPath: non-empty strings are expected")
        return self.change(
            request, lambda change: Answer.json(200, self.state.store.move_folder(change, path, new_path))
        )

    def route_delete_folder(self, request: Request) -> Answer:
        folder = request.arg("path")
        if not folder:
            raise VaultError(400, "invalid_path", "Invalid folder path")
        return self.change(request, lambda change: Answer.json(200, self.state.store.delete_folder(change, folder)))


def _json_body(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested beyond the parser's depth
        value = None
    if not isinstance(value, dict):
        raise VaultError(400, "invalid_body", "Invalid request body: a JSON object is expected")
    return value


def _text_field(part: Part | None) -> str | None:
    if part is None or part.filename is not None:
        return None  # missing, or a file where a string is expected
    return part.data.decode("utf-8", errors="replace")
