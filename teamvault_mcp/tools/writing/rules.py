"""The rules every write follows: its precondition, and an outcome settled when its answer is lost.

- **Preconditions.** With ``expectedHash`` (the ``contentHash`` the agent last saw, all of it
  or the start the texts show) a write happens only if the note still has it; otherwise a
  :class:`ConflictError` shows what changed since (:func:`expect`). From there on the write
  names the note's full hash (a conditional write's If-Match), so a short hash is as exact.
- **Settled outcomes.** A write that ends without a definite answer (the outcome table,
  ``vault/retry.py``, says which) is checked once (:func:`settle`): found applied →
  success, marked ``verified``; found as it was before, with no attempt possibly still
  running on the server → a clean failure; anything else keeps the "may or may not have
  been applied" hint.

A write of a note's content also loses no colleague's change made meanwhile: that is
``content.py``, built on these rules.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from teamvault_mcp.errors import ConflictError, NotAppliedError, TeamVaultError, short_hash
from teamvault_mcp.text.diff import shortened, unified_diff
from teamvault_mcp.tools.context import ToolContext, ToolOutput, sha256_hex
from teamvault_mcp.tools.kinds import MAX_CONTENT_BYTES, MIN_HASH_DIGITS
from teamvault_mcp.vault.retry import outcome

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile

T = TypeVar("T")

VERIFIED = "The server's answer was lost on the way; a check right after confirmed the change was applied."


def result_limit(size: int) -> int:
    """The UTF-8 size a change may make a note of ``size`` bytes: what a write takes (MAX_CONTENT_BYTES, 5 MiB),
    or the note's own size when it is stored larger (it can still be edited, but not grown)."""
    return max(MAX_CONTENT_BYTES, size)


# -- preconditions ----------------------------------------------------------------------------------------


def expect(
    ctx: ToolContext,
    project_id: str,
    path: str,
    file: VaultFile | None,
    expected: str | None,
    *,
    current: tuple[str, str] | None = None,
) -> str | None:
    """Refuse with a :class:`ConflictError` if the note is not at ``expected`` (when given): its full hash or a
    start of it. Returns the note's full hash then, the one the write must name (None without ``expected``).

    ``current`` is the note's hash and text when the caller has downloaded it already.
    """
    if expected is None:
        return None
    expected = expected.lower()
    if file is None:
        raise ConflictError(path, expected, None, None)
    current_hash, current_text = current if current is not None else (file.content_hash, None)
    if current_hash is None:  # a server that does not report hashes: compute it
        data = ctx.client.download(project_id, file.id)
        current_hash, current_text = sha256_hex(data), data.decode("utf-8", errors="replace")
    if same_hash(current_hash, expected):
        return current_hash
    since = _since(ctx, project_id, file, expected, current_hash, current_text)
    raise ConflictError(path, expected, current_hash, since)


def _since(
    ctx: ToolContext, project_id: str, file: VaultFile, expected: str, current: str, current_text: str | None
) -> str | None:
    """The diff from the version the agent saw to the note now, if the history still has that version."""
    try:
        seen = next(
            (v for v in ctx.client.list_versions(project_id, file.id) if same_hash(v.content_hash, expected)),
            None,
        )
        if seen is None or file.file_type != "TEXT":
            return None
        then = ctx.client.download_version(project_id, file.id, seen.id).decode("utf-8", errors="replace")
        if current_text is None:
            current_text = ctx.client.download(project_id, file.id).decode("utf-8", errors="replace")
    except TeamVaultError:
        return None  # the conflict stands; only the diff is missing
    label = f"version {seen.number if seen.number is not None else '?'} ({short_hash(expected)}…, what you saw)"
    return shortened(unified_diff(then, current_text, before=label, after=f"now ({short_hash(current)}…)"))


def same_hash(full: str | None, given: str) -> bool:
    """Whether ``given`` (64 hex digits, or the start of them an agent copied from a text) is ``full``'s."""
    return isinstance(full, str) and len(given) >= MIN_HASH_DIGITS and full.lower().startswith(given.lower())


# -- settled outcomes ---------------------------------------------------------------------------------------


def settle_content(
    ctx: ToolContext,
    project_id: str,
    path: str,
    write: Callable[[], VaultFile],
    *,
    before: str | None,
    data: bytes,
) -> tuple[VaultFile, bool]:
    """Run a write of ``data``; on an unanswered one, look at the note once. Returns (file, verified).

    The bytes written go to the content cache, so the next read of the note is one request.
    """
    after = sha256_hex(data)
    try:
        written = write()
    except TeamVaultError as error:
        found = settle(
            error,
            lambda: ctx.client.find_file(project_id, path),
            applied=lambda file: file is not None and file.content_hash == after,
            untouched=lambda file: (file.content_hash if file is not None else None) == before,
            untouched_text=f"the note unchanged (contentHash {short_hash(before)})"
            if before
            else f"still no note at {path}",
        )
        assert found is not None
        ctx.report.facts.verified = True
        ctx.remember(project_id, data)
        return found, True
    ctx.remember(project_id, data)
    return written, False


def create_content(ctx: ToolContext, project_id: str, path: str, data: bytes) -> tuple[VaultFile, bool]:
    """A new note at ``path`` holding ``data`` (one POST), settled as :func:`settle_content` settles any write."""
    return settle_content(
        ctx,
        project_id,
        path,
        lambda: ctx.client.create_file(project_id, path, data, mime_type_for(path)),
        before=None,
        data=data,
    )


def settle(
    error: TeamVaultError,
    look: Callable[[], T],
    *,
    applied: Callable[[T], bool],
    untouched: Callable[[T], bool],
    untouched_text: str,
) -> T:
    """Settle a write that ended in ``error``: what ``look`` found if it shows the write applied.

    Raises :class:`NotAppliedError` if it shows the note untouched and no attempt can still
    be running on the server; re-raises ``error`` (with its hint) in every other case.
    """
    if not outcome(error).uncertain:
        raise error
    try:
        found = look()
    except TeamVaultError:
        raise error from None  # no budget left to look, or the look failed too: it stays uncertain
    if applied(found):
        return found
    if untouched(found) and not outcome(error).may_still_run:
        raise NotAppliedError(error, untouched_text) from None
    raise error


# -- what a write's result says ---------------------------------------------------------------------------


def result_with(result: dict[str, Any], verified: bool, said: str) -> ToolOutput:
    """A write's result: ``said`` (what was done, with the new contentHash) as the text and as the data's
    ``summary``, in ``result`` with the facts it names; a write settled by a check says so in both."""
    if verified:
        result.update(verified=True, note=VERIFIED)
        said = f"{said} {VERIFIED}"
    result["summary"] = said
    return ToolOutput(said, result)


def mime_type_for(path: str) -> str:
    """The mime type a new note is created with. Always a text type: the content is text."""
    name = path.rsplit("/", 1)[-1].lower()
    if "." not in name or name.endswith((".md", ".markdown")):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed and (guessed.startswith("text/") or guessed in ("application/json", "application/yaml")):
        return guessed
    return "text/plain"
