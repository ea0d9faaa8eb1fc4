"""recent_changes: what changed in the vault lately, and who wrote it, from one listing.

The listing with ``includeDeleted=true`` gives each file's ``createdAt``, ``updatedAt``,
``deletedAt`` and ``lastModifiedById``: enough to say, for each note changed since a moment,
whether it was created, updated or deleted, when, and by whom, without a request per note.
The server records the last writer of a note's content only; a move or a delete names
no one, so the line shows the last writer (the answer says so). The key's own user, asked
once per session with ``whoami``, is shown as ``you``; other users by their id, the only
thing the listing gives of them.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamvault_mcp.errors import CallCancelledError, TeamVaultError
from teamvault_mcp.text.moments import parse_moment, shown, since_moment
from teamvault_mcp.text.paths import folder_prefix
from teamvault_mcp.tools.answer import Answer
from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.kinds import Param
from teamvault_mcp.tools.spec import NULLABLE_STRING, STRING, Tool, answer_schema, object_schema, rows

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import VaultFile

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
#: A note updated this soon after it was created still counts as created: a server may stamp ``createdAt`` and
#: ``updatedAt`` a moment apart when it makes a note (the local vault stamps both alike).
CREATED_WITHIN = datetime.timedelta(milliseconds=100)


@dataclass(frozen=True)
class Change:
    path: str
    kind: str  # created, updated or deleted
    when: datetime.datetime
    by: str | None  # the last writer's user id


def change_of(file: VaultFile, since: datetime.datetime | None) -> Change | None:
    """What last happened to ``file``, and when; None when the server gave no date this server can read.

    A live note is ``created`` when it was made within the window (since ``since``), however often it
    changed after; without a window, when it has not changed since it was made.
    """
    created = parse_moment(file.created_at)
    if file.deleted_at:
        kind, when = "deleted", parse_moment(file.deleted_at)
    else:
        when = parse_moment(file.updated_at) or created
        if created is None or when is None:
            new = False
        elif since is not None:
            new = created >= since
        else:
            new = when - created < CREATED_WITHIN
        kind = "created" if new else "updated"
    return Change(file.path, kind, when, file.modified_by) if when is not None else None


def recent_changes(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    project_id = ctx.project(args)
    since = since_moment(args["since"], ctx.client.wall()) if "since" in args else None
    prefix = folder_prefix(args.get("prefix"))
    limit = args.get("limit", DEFAULT_LIMIT)
    with_deleted = args.get("includeDeleted", True)
    files = ctx.client.list_files(project_id, prefix=prefix, include_deleted=with_deleted)
    dated = [change_of(file, since) for file in files]
    undated = dated.count(None)
    changes = [change for change in dated if change is not None and (since is None or change.when >= since)]
    changes.sort(key=lambda change: (-change.when.timestamp(), change.path))
    me = _my_id(ctx) if any(change.by for change in changes[:limit]) else None
    window = f" since {shown(since)}" if since is not None else ""
    where = f" under {prefix}" if prefix else ""
    kinds = Counter(change.kind for change in changes)
    counted = ", ".join(f"{kinds[kind]:,} {kind}" for kind in ("created", "updated", "deleted") if kinds[kind])
    answer = Answer(changes=[], total=len(changes), shown=min(limit, len(changes)))
    answer.summary(
        f"{len(changes):,} change{'' if len(changes) == 1 else 's'}{window}{where}"
        + (f" ({counted}); newest first, by = the note's last writer:" if changes else ".")
    )
    for change in changes[:limit]:
        when = shown(change.when)
        by_you = change.by is not None and change.by == me
        record = {"when": when, "kind": change.kind, "path": change.path, "by": change.by, "byYou": by_you}
        answer.row("changes", f"{when}  {change.kind}  {change.path}  by {_who(change.by, me)}", record)
    if len(changes) > limit:
        answer.notice(
            f"[Cut: the newest {limit:,} of {len(changes):,} shown. Narrow with since or prefix, or raise limit "
            f"(at most {MAX_LIMIT:,}).]"
        )
    if undated:
        answer.notice(
            f"[{undated:,} {'file is' if undated == 1 else 'files are'} not shown: the server gave "
            f"{'it' if undated == 1 else 'them'} no date in a form this server reads.]"
        )
    if changes:
        answer.notice(
            "What changed in a note: diff_note_versions(path, from=…); who wrote each version: list_note_versions."
        )
    return answer.output()


def _my_id(ctx: ToolContext) -> str | None:
    """The key's user id (one whoami per session); None when the server would not say."""
    try:
        user = ctx.key_user.get(ctx.client) if ctx.key_user is not None else ctx.client.whoami()
    except CallCancelledError:
        raise
    except TeamVaultError:
        return None  # the changes are still worth showing; the ids say who, if not whether it was you
    return user.get("id")


def _who(user_id: str | None, me: str | None) -> str:
    if user_id is None:
        return "someone (the server names no one)"
    return "you" if user_id == me else f"user {user_id}"


TOOLS: tuple[Tool, ...] = (
    Tool(
        name="recent_changes",
        title="Recent changes",
        description="Changes, newest first: when, created/updated/deleted, path, who ('you' or a user id).",
        params=(
            Param("since", "Time or span: 24h, 7d.", kind="when", required=False),
            Param("prefix", "Path prefix.", kind="prefix", required=False),
            Param("limit", f"Default {DEFAULT_LIMIT}.", kind="count", required=False, maximum=MAX_LIMIT),
            Param("includeDeleted", "Default true.", kind="flag", required=False),
        ),
        handler=recent_changes,
        output_schema=answer_schema(
            {
                "changes": rows(
                    object_schema(
                        {
                            "when": STRING,
                            "kind": {"type": "string", "enum": ["created", "updated", "deleted"]},
                            "path": STRING,
                            "by": NULLABLE_STRING,
                            "byYou": {"type": "boolean"},
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
