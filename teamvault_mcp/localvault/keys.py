"""The local vault's API keys: one start key per run, added keys until revoked, and the ``keys`` command.

Two kinds of key are valid:

- the **start key**: the ``--api-key`` the vault was started with, or else the key
  generated on first start and kept in ``DATA/api-key``. Each start makes its key the
  only start key: the start keys of earlier runs are retired (deleted), so an
  ``--api-key`` *replaces* the generated key instead of adding to it;
- **added keys** (``teamvault-mcp local-vault keys add``): valid until revoked.

Only a SHA-256 of each key is stored, with a short prefix in the clear to tell keys
apart. The hash is unsalted and fast on purpose: the keys the vault makes carry 256
random bits, which no salt or slow hash would make harder to guess, and a slow hash
would cost every request (or need a cache that a revocation would have to reach) and
would let a client without a key burn CPU. A chosen ``--api-key`` is only as strong as
it is long. The database is private to its owner (datadir.py). Every request looks its
key up in the database, so a key revoked from another process is refused at once.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from teamvault_mcp.localvault.database import DATABASE_FILE
from teamvault_mcp.localvault.records import User, key_hash, key_prefix, new_api_key, now_iso
from teamvault_mcp.localvault.store import Store

KEY_FILE = "api-key"
START_KEY_SETTING = "start_key"
MAX_LABEL = 200


@dataclass(frozen=True)
class KeyInfo:
    """A valid key as ``keys list`` shows it; never the key itself."""

    prefix: str
    user: str  # the user's email
    created_at: str
    label: str | None
    is_start_key: bool


def use_start_key(store: Store, user: User, key: str) -> None:
    """Make ``key`` this run's start key for ``user`` and retire every earlier start key (one transaction)."""
    digest = key_hash(key)
    with store.write() as db:
        db.execute("DELETE FROM api_keys WHERE kind = 'start' AND key_hash != ?", (digest,))
        # A key that is already valid as an added key stays one: it outlives this run.
        db.execute(
            "INSERT OR IGNORE INTO api_keys (key_hash, prefix, user_id, created_at, label, kind) "
            "VALUES (?, ?, ?, ?, NULL, 'start')",
            (digest, key_prefix(key), user.id, now_iso()),
        )
        db.execute("INSERT OR REPLACE INTO settings (name, value) VALUES (?, ?)", (START_KEY_SETTING, digest))


def valid_keys(store: Store) -> list[KeyInfo]:
    """Every key that authenticates now, oldest first."""
    with store.read() as db:
        start = _start_key_hash(db)
        rows = db.execute(
            "SELECT k.key_hash, k.prefix, u.email, k.created_at, k.label FROM api_keys k "
            "JOIN users u ON u.id = k.user_id ORDER BY k.created_at, k.prefix"
        ).fetchall()
    return [KeyInfo(row[1], row[2], row[3], row[4], row[0] == start) for row in rows]


def _start_key_hash(db: sqlite3.Connection) -> str | None:
    row = db.execute("SELECT value FROM settings WHERE name = ?", (START_KEY_SETTING,)).fetchone()
    return str(row[0]) if row else None


class KeyCommandError(Exception):
    """A ``keys`` command that cannot be carried out; ``exit_code`` 1 (nothing to act on) or 2 (a usage error)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Revoked:
    count: int
    prefix: str
    was_start_key: bool
    key_file_removed: bool


def revoke(store: Store, data_dir: Path, given: str, *, force: bool = False) -> Revoked:
    """Revoke the key(s) that ``given`` names: a whole key, or its prefix as ``keys list`` shows it, whole.

    Several keys may share a prefix of 12 characters; they are revoked together. A shorter start
    is refused (``o`` or ``osync_`` would name whichever key it happened to match), and so is the
    start key without ``force``: the running vault and the clients started with it use it. Revoking
    the generated start key also removes ``DATA/api-key``, so the next start generates a new key
    instead of bringing the revoked one back.
    """
    if not given:
        raise KeyCommandError("give a key prefix as `keys list` shows it", 2)
    with store.write() as db:
        start = _start_key_hash(db)
        rows = db.execute("SELECT key_hash, prefix FROM api_keys").fetchall()
        matching = [row for row in rows if row[0] == key_hash(given)] or [row for row in rows if row[1] == given]
        if not matching:
            started = sorted({row[1] for row in rows if row[1].startswith(given)})
            if started:
                raise KeyCommandError(
                    f"{given!r} is only the start of a prefix ({', '.join(started)}): give the whole prefix "
                    "`keys list` shows, or the whole key",
                    2,
                )
            raise KeyCommandError(
                f"no valid key matches {given!r}: give a prefix as `keys list` shows it, or the whole key"
            )
        hashes = [row[0] for row in matching]
        if start in hashes and not force:
            raise KeyCommandError(
                f"{matching[0][1]}… is the start key of the vault in {data_dir}: the running vault and the clients "
                "started with it use it. Add --force to revoke it anyway",
                2,
            )
        db.executemany("DELETE FROM api_keys WHERE key_hash = ?", [(digest,) for digest in hashes])
    prefixes = sorted({row[1] for row in matching})
    was_start_key = start in hashes
    removed = False
    if was_start_key and _stored_key_hash(data_dir) == start:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(data_dir / KEY_FILE)
            removed = True
    return Revoked(len(hashes), prefixes[0], was_start_key, removed)


def _stored_key_hash(data_dir: Path) -> str | None:
    try:
        stored = (data_dir / KEY_FILE).read_text().strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return key_hash(stored) if stored else None


def run_keys_command(
    command: str,
    data_dir: Path,
    *,
    label: str | None,
    prefix: str | None,
    out: TextIO,
    err: TextIO,
    user: str | None = None,
    roles: Sequence[str] = (),
    force: bool = False,
) -> int:
    """``teamvault-mcp local-vault keys list|add|revoke``; returns the exit code. ``out`` gets only results."""
    try:
        if not (data_dir / DATABASE_FILE).is_file():
            raise KeyCommandError(
                f"no local vault in {data_dir}: start it once with `teamvault-mcp local-vault --data {data_dir}`"
            )
        store = Store(data_dir)
        try:
            if command == "add" and (user is not None or roles):
                return _add_for_user(store, user, roles, label, out, err)
            return _run(command, store, data_dir, label, prefix, out, err, force=force)
        finally:
            store.close()
    except KeyCommandError as error:
        err.write(f"teamvault-mcp local-vault keys {command}: {error}\n")
        return error.exit_code
    except (OSError, sqlite3.Error) as error:
        err.write(f"teamvault-mcp local-vault keys {command}: cannot use the vault in {data_dir}: {error}\n")
        return 1


def _add_for_user(
    store: Store, email: str | None, given_roles: Sequence[str], label: str | None, out: TextIO, err: TextIO
) -> int:
    """``keys add --user EMAIL --role SLUG:ROLE ...``: a key of another user, with per-project roles."""
    if email is None:
        raise KeyCommandError("--role goes with --user EMAIL: the roles are that user's", 2)
    try:
        roles = dict(parse_role(given) for given in given_roles)
        user, key = add_user_key(store, email, roles=roles, label=label)
    except ValueError as error:
        raise KeyCommandError(str(error), 2) from None
    out.write(key + "\n")
    where = ", ".join(f"{slug} ({role})" for slug, role in roles.items()) or "no project yet"
    err.write(f"added a key for {user.email} ({key_prefix(key)}…), member of {where}; it is shown only this once\n")
    return 0


def _run(
    command: str,
    store: Store,
    data_dir: Path,
    label: str | None,
    prefix: str | None,
    out: TextIO,
    err: TextIO,
    *,
    force: bool = False,
) -> int:
    if command == "list":
        for info in valid_keys(store):
            kind = "start" if info.is_start_key else "added"
            out.write(f"{info.prefix}\t{info.user}\t{info.created_at}\t{info.label or '-'}\t{kind}\n")
        return 0
    if command == "add":
        if label is not None and (len(label) > MAX_LABEL or not label.isprintable()):
            raise KeyCommandError(f"--label takes up to {MAX_LABEL} printable characters (no tabs or newlines)", 2)
        owner = _local_user(store)
        key = store.add_api_key(owner.id, new_api_key(), label=label)
        out.write(key + "\n")
        err.write(f"added a key for {owner.email} ({key_prefix(key)}…); it is shown only this once\n")
        return 0
    if command == "revoke":
        revoked = revoke(store, data_dir, prefix or "", force=force)
        what = "key" if revoked.count == 1 else f"{revoked.count} keys"
        err.write(f"revoked the {what} {revoked.prefix}…: refused from now on, by a running vault too\n")
        if revoked.key_file_removed:
            removed = data_dir / KEY_FILE
            err.write(f"it was the generated start key: {removed} is removed; the next start generates a new one\n")
        elif revoked.was_start_key:
            err.write("it was the start key (--api-key): starting with it again would make it valid again\n")
        return 0
    raise KeyCommandError(f"unknown command {command!r}; use list, add or revoke", 2)


#: The roles a member of a project can have; the first three may write.
ROLES = ("OWNER", "ADMIN", "EDITOR", "VIEWER")


def parse_role(given: str) -> tuple[str, str]:
    """``alpha:EDITOR`` → (``alpha``, ``EDITOR``); ValueError naming what is wrong."""
    slug, colon, role = given.partition(":")
    role = role.strip().upper()
    if not colon or not slug.strip() or role not in ROLES:
        raise ValueError(f"--role {given!r} is not <project slug>:<role> with a role of {', '.join(ROLES)}")
    return slug.strip(), role


def add_user_key(
    store: Store, email: str, *, name: str | None = None, roles: Mapping[str, str], label: str | None = None
) -> tuple[User, str]:
    """A key for the user with ``email`` (made if new), a member of each project in ``roles`` (slug → role);
    a slug no project has yet gets a new project, owned by the local user. ValueError for an unknown role."""
    unknown = sorted({role for role in roles.values() if role not in ROLES})
    if unknown:
        raise ValueError(f"unknown role(s) {', '.join(unknown)}: use one of {', '.join(ROLES)}")
    if not email.strip() or not email.isprintable():
        raise ValueError("--user takes an email address")
    with store.read() as db:
        row = db.execute("SELECT id, email, name FROM users WHERE email = ?", (email,)).fetchone()
    user = User(*row) if row else store.add_user(email, name)
    for slug, role in roles.items():
        project_id = store.project_by_slug(slug) or store.add_project(slug, slug, _local_user(store))
        store.add_member(project_id, user.id, role)
    return user, store.add_api_key(user.id, new_api_key(), label=label)


def _local_user(store: Store) -> User:
    """The owner of the ``default`` project: the user every key of the local vault belongs to."""
    project_id = store.project_by_slug("default")
    if project_id is None:
        raise KeyCommandError(f"the vault in {store.data_dir} has no default project; start it once first")
    return store.owner_of(project_id)
