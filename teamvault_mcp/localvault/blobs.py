"""The local vault's blobs: each content once, in a file named by its SHA-256, written durably.

A blob is written to a temp file (``.incoming-…``), fsynced, renamed into place and its directory fsynced:
a crash leaves the blob whole or absent, never half written, and writing one twice does no harm.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from teamvault_mcp.localvault.records import sha256_hex

#: Temp files of blobs being written; any left at start are from a crash (datadir.py removes them).
INCOMING_PREFIX = ".incoming-"


def blob_path(blob_dir: Path, content_hash: str) -> Path:
    return blob_dir / content_hash[:2] / content_hash


def put_blob(blob_dir: Path, content: bytes) -> str:
    """Store ``content`` under its hash, durably (temp file, fsync, rename); return the hash."""
    content_hash = sha256_hex(content)
    target = blob_path(blob_dir, content_hash)
    if target.exists():
        return content_hash
    target.parent.mkdir(exist_ok=True, mode=0o700)
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=INCOMING_PREFIX)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_dir(target.parent)
    return content_hash


def get_blob(blob_dir: Path, content_hash: str) -> bytes | None:
    try:
        return blob_path(blob_dir, content_hash).read_bytes()
    except FileNotFoundError:
        return None


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable: fsync the directory that holds the new name."""
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
