"""What a note's version history says about a write: whose version came between ours and the one ours was made
from, and which colleague's version a write that replaced theirs puts back (``content.py`` asks, after a write the
server could not make conditional)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from teamvault_mcp.errors import TeamVaultError
from teamvault_mcp.text.merge import merge3, newest_consistent, only_adds
from teamvault_mcp.tools.context import ToolContext
from teamvault_mcp.tools.versions import hash_of, oldest_first

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile, VaultVersion


@dataclass(frozen=True)
class HistoryCheck:
    """What the version history says about one write: the version it replaced, or why it cannot tell."""

    ours: VaultVersion | None = None
    #: Colleagues' versions between the one we built on and ours, oldest first: we replaced the last.
    between: tuple[VaultVersion, ...] = ()
    #: When our bytes are in the history more than once since the version we built on (a colleague wrote the same
    #: text), any of them may be ours: the colleague's version each earlier one follows, which we may have replaced.
    maybe_replaced: tuple[VaultVersion, ...] = ()
    unknown: str | None = None

    @property
    def replaced(self) -> VaultVersion | None:
        return self.between[-1] if self.between else None


def check_history(
    ctx: ToolContext, project_id: str, file_id: str, built_on: str, written: str, own: set[str]
) -> HistoryCheck:
    """Whether a colleague's version came between the one our write was computed from and ours."""
    try:
        versions = ctx.client.list_versions(project_id, file_id)
    except TeamVaultError as error:
        return HistoryCheck(unknown=f"the note's version history could not be read ({error})")
    ordered = oldest_first(versions)
    hashes = [hash_of(version) for version in ordered]
    # Our version has our bytes and follows the newest version we built on that such a version follows.
    for start in (i for i in range(len(hashes) - 1, -1, -1) if hashes[i] == built_on):
        candidates = [i for i in range(start + 1, len(hashes)) if hashes[i] == written]
        if candidates:
            break
    else:
        if written in hashes and built_on not in hashes:
            return HistoryCheck(
                unknown="the version history does not reach back to the version this write was made from"
            )
        return HistoryCheck(unknown="the server's version history does not show this write")
    # Several: a colleague wrote our bytes too (a merge like ours, or ours put back), and the server says nothing
    # that tells them apart. Taking the first lost a line: ours was a later one, over a version nobody made good
    # on. So ours is taken to be the last, and what each earlier one follows may have been replaced by us too.
    mine = candidates[-1]
    colleagues = [i for i in range(start + 1, mine) if hashes[i] not in own]
    follows = [max((i for i in colleagues if i < candidate), default=None) for candidate in candidates]
    maybe = sorted({i for i in follows[:-1] if i is not None and i != follows[-1]})
    return HistoryCheck(
        ours=ordered[mine],
        between=tuple(ordered[i] for i in colleagues),
        maybe_replaced=tuple(ordered[i] for i in maybe),
    )


def replaced_text(
    ctx: ToolContext, project_id: str, file: VaultFile, built_on: bytes, check: HistoryCheck, *, additive: bool
) -> bytes:
    """The text of the colleague's version our write replaced, with the changes of each version it may have
    replaced too (:attr:`HistoryCheck.maybe_replaced`) merged in; one that conflicts is left out."""
    assert check.replaced is not None
    data = ctx.client.download_version(project_id, file.id, check.replaced.id)
    if not check.maybe_replaced:  # our bytes once in the history: the usual case
        return data
    base, kept = _text(built_on), _text(data)
    for version in check.maybe_replaced:
        other = _text(ctx.client.download_version(project_id, file.id, version.id))
        merged = merge3(base, kept, other, additive=additive)
        kept = kept if merged is None else merged
    return kept.encode("utf-8")


#: At most this many colleagues' versions (the first and the newest) are compared to choose the one to keep. A
#: storm of 16 agents writing one note at once put up to 55 versions between one agent's read and its write; with
#: 8, the version passed over could be the only one holding the line of a writer that had already finished.
MAX_COMPARED = 64


def to_keep(
    ctx: ToolContext, project_id: str, file: VaultFile, built_on: bytes | None, between: tuple[VaultVersion, ...]
) -> tuple[VaultVersion, bytes]:
    """The colleague's version an ``expectedHash`` write that replaced it puts back, and the text to put back.

    Usually the one we replaced. When several landed since our read (a storm of writers),
    the newest that holds what the earlier ones added: a version written over the others
    by a writer who lost the race too is passed over, lest its lines come back; the lines
    added by any other version written on top of the one before it are kept with it.
    """
    # The first one after our read is always among them: when none later holds all of it, it is the one.
    candidates = [between[0], *between[1:][-(MAX_COMPARED - 1) :]]
    if len(candidates) == 1 or built_on is None:  # nothing to compare: the one that came first
        first = candidates[0]
        return first, ctx.client.download_version(project_id, file.id, first.id)
    texts = [ctx.client.download_version(project_id, file.id, version.id) for version in candidates]
    keep = newest_consistent(_text(built_on), [_text(data) for data in texts])
    return candidates[keep], _with_every_finished(built_on, texts, keep)


def _with_every_finished(built_on: bytes, texts: list[bytes], keep: int) -> bytes:
    """The kept version's text with the lines added by every other version that only added to the one before it.

    Such a version's writer may have finished (nobody came between its read and its write), so nobody else
    will bring its lines back; a version written over the one before it is a writer who lost the race, and
    who makes its change again itself. (Two finished writers, each on top of another text, are both kept:
    choosing one version alone lost the other's line.) Lines are only added, each once; a note too long to
    merge is kept as the chosen version has it.
    """
    base = _text(built_on)
    kept = _text(texts[keep])
    for index, data in enumerate(texts):
        text = _text(data)
        if index == keep or not only_adds(base if index == 0 else _text(texts[index - 1]), text):
            continue  # the kept one, or one written over the text before it
        merged = merge3(base, kept, text, additive=True)
        if merged is not None:
            kept = merged
    return kept.encode("utf-8")


def version_with(ctx: ToolContext, project_id: str, file: VaultFile, content_hash: str) -> VaultVersion | None:
    """The newest version with ``content_hash``, to say who made it (one request; None if unknown)."""
    try:
        versions = ctx.client.list_versions(project_id, file.id)
    except TeamVaultError:
        return None
    return next((v for v in reversed(oldest_first(versions)) if hash_of(v) == content_hash), None)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
