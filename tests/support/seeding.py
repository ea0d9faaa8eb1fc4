"""Notes put straight into a local vault, as a colleague (or the owner, before the test) would."""

from __future__ import annotations

import hashlib

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change, User


def _bytes(content: str | bytes) -> bytes:
    return content.encode() if isinstance(content, str) else content


def seed(vault: LocalVault, path: str, content: str | bytes, mime_type: str | None = None) -> None:
    """A new note at ``path``, created by the project's owner (``mime_type`` None: the vault's guess)."""
    store, project = vault.store, vault.project_id
    with store.write() as db:
        store.create(Change(db, project, store.owner_of(project)), path, _bytes(content), mime_type)


def colleague_writes(vault: LocalVault, path: str, content: str | bytes) -> None:
    """Someone else (a user of their own, "Colleague") changes the note at ``path``, or creates it."""
    store, project = vault.store, vault.project_id
    data = _bytes(content)
    colleague = store.add_user(f"colleague-{len(data)}@x", "Colleague")
    files = store.list_files(project, path=path, prefix=None, include_deleted=False)
    with store.write() as db:
        change = Change(db, project, colleague)
        if files:
            store.replace(change, files[0].id, data)
        else:
            store.create(change, path, data, None)


def user(vault: LocalVault, name: str) -> User:
    """A user of the vault named ``name`` (email ``<name>@x``, lower case), who can write through the store."""
    return vault.store.add_user(f"{name.lower()}@x", name)


def writes_as(vault: LocalVault, writer: User, path: str, content: str | bytes, mime_type: str | None = None) -> None:
    """``writer`` changes the note at ``path``, or creates it (``mime_type`` None: the vault's guess), as a REST
    write by them would."""
    store, project = vault.store, vault.project_id
    with store.write() as db:
        change = Change(db, project, writer)
        files = store.list_files(project, path=path, prefix=None, include_deleted=False)
        if files:
            store.replace(change, files[0].id, _bytes(content))
        else:
            store.create(change, path, _bytes(content), mime_type)


def put(vault: LocalVault, path: str, content: str | bytes) -> str:
    """The project's owner sets the note at ``path`` to ``content`` (creating it as Markdown); its contentHash."""
    writes_as(vault, vault.store.owner_of(vault.project_id), path, content, "text/markdown")
    return digest(content)


def deletes_as(vault: LocalVault, deleter: User, path: str) -> None:
    """``deleter`` deletes the note at ``path`` (a tombstone), as a REST delete by them would."""
    store, project = vault.store, vault.project_id
    with store.write() as db:
        store.delete(Change(db, project, deleter), file_id(vault, path))


def file_id(vault: LocalVault, path: str) -> str:
    return vault.store.list_files(vault.project_id, path=path, prefix=None, include_deleted=False)[0].id


def content(vault: LocalVault, path: str) -> bytes:
    """The bytes of the live note at ``path``, as the vault stores them."""
    return vault.store.content(vault.project_id, file_id(vault, path))[1]


def text(vault: LocalVault, path: str) -> str:
    """The live note at ``path``, decoded as UTF-8."""
    return content(vault, path).decode()


def operations(vault: LocalVault) -> list[str]:
    """The kinds of the vault's operations, in order (create, replace, move, delete…)."""
    return [op["kind"] for op in vault.store.operations(vault.project_id)]


def digest(content: str | bytes) -> str:
    """The ``contentHash`` of a note with this content: SHA-256 of its UTF-8 bytes, in hex."""
    return hashlib.sha256(_bytes(content)).hexdigest()
