"""recent_changes: what changed in the vault lately, and who wrote it.

One listing with ``includeDeleted=true`` gives each file's ``createdAt``, ``updatedAt`` and
``deletedAt``: which notes changed since a moment. For each note shown, its version list
(docs/teamvault-api.md §4) says who wrote each version in the window and whether its first
version is there (``created``); a change that made no version is a move (``moved``). The
server records no one for a delete or a move, so those lines name no one. The key's own
user, asked once per session with ``whoami``, is ``you``; others by name, else email, as
``list_note_versions`` shows them. A note whose versions the server will not list falls back
to the listing's dates and last writer's id. Versions carry no mark of what made them, so a
link rewrite by ``move_note`` is an update like any other.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import TeamVaultError
from teamvault_mcp.text.moments import parse_moment, shown, since_moment
from teamvault_mcp.text.paths import folder_prefix
from teamvault_mcp.tools.answer import Answer
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.spec import NULLABLE_STRING, STRING, Tool, answer_schema, object_schema, rows
from teamvault_mcp.tools.versions import oldest_first, version_author

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile, VaultVersion

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
#: A note updated this soon after it was created still counts as created: a server may stamp ``createdAt`` and
#: ``updatedAt`` a moment apart when it makes a note (the local vault stamps both alike).
CREATED_WITHIN = datetime.timedelta(milliseconds=100)
KINDS = ("created", "updated", "moved", "deleted")


@dataclass(frozen=True)
class Change:
    path: str
    kind: str  # one of KINDS
    when: datetime.datetime
    by: str | None  # the user id of the newest version shown; None: the server names no one
    creator: str | None = None  # who wrote the first version, when kind is created
    authors: tuple[str, ...] = ()  # who wrote the other versions in the window, newest first
    you: bool = False  # the newest version shown is the key user's


def change_of(file: VaultFile, since: datetime.datetime | None) -> Change | None:
    """What last happened to ``file`` by the listing's dates alone; None when it gave no date this server reads.

    A live note is ``created`` when it was made within the window (since ``since``); without a window, when
    it has not changed since it was made. A delete names no one: the listing's last writer is not its deleter.
    """
    created = parse_moment(file.created_at)
    if file.deleted_at:
        when = parse_moment(file.deleted_at)
        return Change(file.path, "deleted", when, None) if when is not None else None
    when = parse_moment(file.updated_at) or created
    if created is None or when is None:
        new = False
    elif since is not None:
        new = created >= since
    else:
        new = when - created < CREATED_WITHIN
    if when is None:
        return None
    by = file.modified_by
    return Change(file.path, "created" if new else "updated", when, by, authors=(f"user {by}",) if by else ())


def versions_change(
    listed: Change, versions: list[VaultVersion], since: datetime.datetime | None, me: str | None, *, mine: bool
) -> Change | None:
    """What the versions in the window say happened to a live note; None: nothing left once ``mine`` are dropped.

    ``created``: its first version is in the window (without one: it has no other version).
    """
    ordered = oldest_first(versions)
    window = [v for v in ordered if since is None or _stamp(v) >= since]
    if not window:  # the listing moved on, no content did: a move (the server names no mover)
        return Change(listed.path, "moved", listed.when, None)
    created = window[0] is ordered[0] and (since is not None or len(ordered) == 1)
    if not mine:
        window = [v for v in window if me is None or v.author_id != me]
        if not window:
            return None
        created = created and window[0] is ordered[0]
    names = [_name(v, me) for v in window]
    later = names[1:] if created else names
    newest = window[-1]
    return Change(
        listed.path,
        "created" if created else "updated",
        _stamp(newest) if newest.created_at else listed.when,
        newest.author_id,
        creator=names[0] if created else None,
        authors=tuple(dict.fromkeys(reversed(later))),
        you=me is not None and newest.author_id == me,
    )


def recent_changes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    since = since_moment(args["since"], ctx.client.wall()) if "since" in args else None
    prefix = folder_prefix(args.get("prefix"))
    limit = args.get("limit", DEFAULT_LIMIT)
    with_deleted = args.get("includeDeleted", True)
    mine = not args.get("excludeMine", False)
    listing = ctx.kept_listings.files(ctx.client, project_id, prefix, include_deleted=with_deleted)
    files = {file.path: file for file in listing}  # a path deleted and made again: the file listed last
    listed, undated = _newest_first(files.values(), since)
    me = _my_id(ctx) if listed else None
    changes: list[Change] = []
    looked = 0
    for file in listed:
        if len(changes) >= limit:
            break
        looked += 1
        found = change_of(file, since)
        if found is not None and found.kind != "deleted":
            found = _with_versions(ctx, project_id, file, found, since, me, mine=mine)
        if found is not None:
            changes.append(found)
    changes.sort(key=lambda change: (-change.when.timestamp(), change.path))
    more = len(listed) - looked
    window = f" since {shown(since)}" if since is not None else ""
    where = f" under {prefix}" if prefix else ""
    not_mine = " not by you" if not mine else ""
    kinds = Counter(change.kind for change in changes)
    counted = ", ".join(f"{kinds[kind]:,} {kind}" for kind in KINDS if kinds[kind])
    total = len(changes) + more
    answer = Answer(changes=[], total=total, shown=len(changes))
    answer.summary(
        f"{total:,} change{'' if total == 1 else 's'}{window}{where}{not_mine}"
        + (f" ({counted}{' shown' if more else ''}); newest first:" if changes else ".")
    )
    for change in changes:
        when = shown(change.when)
        record = {
            "when": when,
            "kind": change.kind,
            "path": change.path,
            "by": change.by,
            "byYou": change.you,
            "authors": ([change.creator] if change.creator else []) + list(change.authors),
        }
        answer.row("changes", f"{when}  {change.kind}  {change.path}  {_who(change)}", record)
    if more:
        # With every change shown that was looked into, the total is exact; leaving out mine, an upper bound.
        shown_of = (
            f"the newest {len(changes):,} of {total:,} shown"
            if mine
            else f"the newest {len(changes):,} shown; {more:,} more note{'' if more == 1 else 's'} changed, some "
            "perhaps only by you"
        )
        answer.notice(f"[Cut: {shown_of}. Narrow with since or prefix, or raise limit (at most {MAX_LIMIT:,}).]")
    if undated:
        answer.notice(
            f"[{undated:,} {'file is' if undated == 1 else 'files are'} not shown: the server gave "
            f"{'it' if undated == 1 else 'them'} no date in a form this server reads.]"
        )
    if not mine and me is None and listed:
        answer.notice("[excludeMine: the server would not say whose key this is (whoami failed): nothing left out.]")
    if kinds["deleted"] or kinds["moved"]:
        answer.notice(
            "[The server records who wrote each version, not who deleted or moved a note: those lines name no one"
            + (", and are shown though they may be yours.]" if not mine else ".]")
        )
    ways = ctx.tools.ways_on(
        ("diff_note_versions", "what changed in a note: diff_note_versions(path, since=…) or (path, from=…)"),
        ("list_note_versions", "who wrote each version: list_note_versions"),
    )
    if changes and ways:
        answer.notice(ways)
    return answer.output()


def _newest_first(files: Iterable[VaultFile], since: datetime.datetime | None) -> tuple[list[VaultFile], int]:
    """The ``files`` that changed since ``since`` (all, without one), newest first, then by path, and how many have
    no date this server reads. The files are ordered by their moments as text (:func:`_moment_key`): a vault of
    100,000 files changed in the window has its dates compared, not parsed, and only the files shown become a
    :class:`Change`."""
    earliest = since.astimezone(datetime.UTC).strftime(_KEY_FORM) if since is not None else ""
    keyed: list[tuple[str, VaultFile]] = []
    undated = 0
    for file in files:
        key = (
            _moment_key(file.deleted_at)
            if file.deleted_at
            else _moment_key(file.updated_at) or _moment_key(file.created_at)
        )  # the moment change_of shows
        if key is None:
            undated += 1
        elif key >= earliest:
            keyed.append((key, file))
    keyed.sort(key=lambda pair: pair[1].path)
    keyed.sort(key=lambda pair: pair[0], reverse=True)  # stable: the same moment stays by path
    return [file for _, file in keyed], undated


#: A moment as text whose order is its order in time: UTC, to the microsecond.
_KEY_FORM = "%Y-%m-%dT%H:%M:%S.%fZ"


def _moment_key(text: str | None) -> str | None:
    """``text`` (a moment as the server gives it) in :data:`_KEY_FORM`; None when it is no moment. The server's
    own form, ``2024-05-01T09:30:00.000Z``, is taken as written: a date in that form is taken for a date."""
    if not text:
        return None
    if len(text) == 24 and text[10] == "T" and text[19] == "." and text[23] == "Z":
        return text[:23] + "000Z"
    moment = parse_moment(text)
    return moment.strftime(_KEY_FORM) if moment is not None else None


def _with_versions(
    ctx: ToolContext,
    project_id: str,
    file: VaultFile,
    listed: Change,
    since: datetime.datetime | None,
    me: str | None,
    *,
    mine: bool,
) -> Change | None:
    """``listed`` as the note's versions tell it; as listed when the server lists none or will not."""
    try:
        versions = ctx.client.list_versions(project_id, file.id)
    except TeamVaultError:
        versions = []  # the listing's dates and last writer still say something
    if not versions or not all(parse_moment(v.created_at) for v in versions):
        you = me is not None and listed.by == me
        if you and not mine:
            return None
        return Change(
            listed.path, listed.kind, listed.when, listed.by, authors=("you",) if you else listed.authors, you=you
        )
    return versions_change(listed, versions, since, me, mine=mine)


def _stamp(version: VaultVersion) -> datetime.datetime:
    moment = parse_moment(version.created_at)
    assert moment is not None  # _with_versions checked every version's date
    return moment


def _name(version: VaultVersion, me: str | None) -> str:
    if me is not None and version.author_id == me:
        return "you"
    return version_author(version) or "an unknown author"


def _my_id(ctx: ToolContext) -> str | None:
    """The key's user id (one whoami per session); None when the server would not say."""
    try:
        user = ctx.key_user.get(ctx.client)
    except TeamVaultError:
        return None  # the changes are still worth showing; the names say who, if not whether it was you
    return user.id


def _who(change: Change) -> str:
    if change.kind in ("deleted", "moved"):
        return "(the server does not say by whom)"
    if change.creator:
        then = f", then updated by {_joined(change.authors)}" if change.authors else ""
        return f"by {change.creator}{then}"
    if not change.authors:
        return "by someone (the server names no one)"
    return f"by {_joined(change.authors)}"


def _joined(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


TOOLS: tuple[Tool, ...] = (
    Tool(
        name="recent_changes",
        title="Recent changes",
        description="Changes, newest first: when, created/updated/moved/deleted, path, who.",
        params=(
            Param("since", "Time or span: 24h, 7d.", kind="when", required=False),
            Param("prefix", "Path prefix.", kind="prefix", required=False),
            Param("limit", f"Default {DEFAULT_LIMIT}.", kind="count", required=False, maximum=MAX_LIMIT),
            Param("includeDeleted", "Default true.", kind="flag", required=False),
            Param("excludeMine", "Omit your own.", kind="flag", required=False),
        ),
        handler=recent_changes,
        output_schema=answer_schema(
            {
                "changes": rows(
                    object_schema(
                        {
                            "when": STRING,
                            "kind": {"type": "string", "enum": list(KINDS)},
                            "path": STRING,
                            "by": NULLABLE_STRING,
                            "byYou": {"type": "boolean"},
                            "authors": {"type": "array", "items": STRING},
                        },
                        ["when", "kind", "path", "by", "byYou"],
                    )
                ),
                "total": {"type": "integer"},
                "shown": {"type": "integer"},
            },
            ["changes", "total", "shown"],
        ),
    ),
)
