"""What a content write found on the way (:class:`Written`), and how a write's result tells it: the sentences of
its text, the fields of its data (:func:`written_result`, :data:`STORY`) and the facts of its audit line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from teamvault_mcp.tools.context import ToolContext, ToolOutput
from teamvault_mcp.tools.spec import NULLABLE_INT, NULLABLE_STRING, STRING, object_schema
from teamvault_mcp.tools.versions import describe, hash_of, version_author
from teamvault_mcp.tools.writing.rules import VERIFIED

if TYPE_CHECKING:
    from teamvault_mcp.vault.records import VaultFile, VaultVersion


@dataclass
class Written:
    """What a content write did: the file, the bytes now current, the text they were made from, and the story."""

    file: VaultFile
    data: bytes
    #: The text the final write was computed from (what the agent read, or a colleague's version), if known.
    based_on: bytes | None
    verified: bool = False
    #: Colleagues' versions the change was made again on top of, described for the model.
    rebased: list[str] = field(default_factory=list)
    #: ``replace`` mode: the colleague's change that this write replaced, described.
    replaced: str | None = None
    #: Why no check for a colleague's change was possible, if none was.
    unchecked: str | None = None
    #: The versions of ``rebased`` and ``replaced`` as data, for the structured result (those the history names).
    rebased_versions: list[dict[str, Any]] = field(default_factory=list)
    replaced_version: dict[str, Any] | None = None

    def rebase_onto(self, version: VaultVersion | None) -> None:
        """The change was made again on top of ``version`` (None: the history does not say which)."""
        self.rebased.append(describe(version))
        if version is not None:
            self.rebased_versions.append(version_facts(version))

    def replacing(self, version: VaultVersion | None, path: str) -> None:
        """This write replaced ``version``, a colleague's (``replace`` mode)."""
        self.replaced = describe(version, restore_hint=path)
        self.replaced_version = version_facts(version) if version is not None else None

    def notes(self) -> list[str]:
        """Sentences for the result's text: what happened besides the write itself."""
        notes = []
        if self.verified:
            notes.append(VERIFIED)
        if self.rebased:
            notes.append(
                "A colleague's change landed while this call was writing; the change was made again on top of "
                f"it, so both are in the note ({'; '.join(self.rebased)})."
            )
        if self.replaced:
            notes.append(f"This replaced a change made meanwhile: {self.replaced}.")
        if self.unchecked:
            notes.append(f"Not checked for a colleague's write at the same moment: {self.unchecked}.")
        return notes


def version_facts(version: VaultVersion) -> dict[str, Any]:
    """A version as the story's data names it: what :func:`~teamvault_mcp.tools.versions.describe` says, the
    contentHash in full."""
    return {
        "versionNumber": version.number,
        "by": version_author(version),
        "createdAt": version.created_at,
        "contentHash": hash_of(version) or None,
    }


def add_story(ctx: ToolContext, result: dict[str, Any], written: Written) -> None:
    """The structured fields and audit facts of what :func:`~teamvault_mcp.tools.writing.content.write_content`
    found on the way."""
    if written.verified:
        result.update(verified=True, note=VERIFIED)
    if written.rebased:
        result["rebasedOnto"] = written.rebased
        ctx.report.facts.rebased = len(written.rebased)
    if written.rebased_versions:
        result["rebasedOntoVersions"] = written.rebased_versions
    if written.replaced:
        result["replacedMeanwhile"] = written.replaced
        ctx.report.facts.replaced_meanwhile = True
    if written.replaced_version is not None:
        result["replacedVersion"] = written.replaced_version
    if written.unchecked:
        result["unchecked"] = written.unchecked


def written_result(ctx: ToolContext, result: dict[str, Any], written: Written, said: str) -> ToolOutput:
    """A write's result: ``said`` and what the write found on the way, as the text and as the data's
    ``summary``, with the story's fields (:func:`add_story`)."""
    add_story(ctx, result, written)
    result["summary"] = " ".join([said, *written.notes()])
    return ToolOutput(result["summary"], result)


#: A version the story names (:func:`version_facts`).
VERSION_FACTS = object_schema(
    {
        "versionNumber": NULLABLE_INT,
        "by": NULLABLE_STRING,
        "createdAt": NULLABLE_STRING,
        "contentHash": NULLABLE_STRING,
    },
    [],
)

#: What :func:`add_story` may add to a write's result: the sentences the text says besides the write itself.
STORY = {
    "verified": {"type": "boolean"},
    "note": STRING,
    "rebasedOnto": {"type": "array", "items": STRING},
    "rebasedOntoVersions": {"type": "array", "items": VERSION_FACTS},
    "replacedMeanwhile": STRING,
    "replacedVersion": VERSION_FACTS,
    "unchecked": STRING,
}
