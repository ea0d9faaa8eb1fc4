"""The host-views matrix (issue 25): everyday agent calls on a small team vault, the facts each answer must
carry, and the three ways a host shows a tool result to its model.

Hosts differ in which half of a result the model gets (README: Hosts and the two halves):

- **all text**: the text blocks joined (Claude Desktop, claude.ai, ChatGPT, Windsurf, most hosts);
- **first block**: the first text block alone (Claude Code over Streamable HTTP, and for every error);
- **structured-first**: the structured content when there is any, else the text (Claude Code over stdio,
  Cursor, VS Code): what the model reads is ``JSON.stringify(structuredContent)``; here its strings.

Each :class:`Task` names the facts the agent came for (the note text, each path listed, each task, each link,
the hash to pass next), worked out from the vault itself, not from the answer. :func:`run_suite` makes the
calls in order through any ``call(tool, arguments) -> wire result`` (a real MCP client in memory in the tests,
a stdio child in ``bench/host_views_bench.py``) and reports, per task and view, the facts missing.
:func:`unsaid` is the converse check for the structured half: nothing the text says (a path, a hash, a notice,
a call to make next, a diff hunk) is missing from it.

The vault (:func:`seed_team_vault`) is a small team's: people, projects, meetings, a daily note, a long
handbook, a schema note; front matter, tags, tasks and links in Obsidian's forms, one of them broken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from support.seeding import digest
from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

VIEWS = ("all text", "first block", "structured-first")

#: Where the schema notes live (TEAM_VAULT_SCHEMA_DIR), so that every tool is registered.
SCHEMA_DIR = "schemas/"

ADA = """---
role: engineer
status: active
tags: [team/eng]
---
# Ada Lovelace
Works on [[projects/atlas]] with [[grace-hopper|Grace]].

## This week
- [ ] Review the travel budget with [[grace-hopper]]
- [x] Ship the analytics engine
- [ ] Write the Atlas release notes

#mentor
"""

GRACE = """---
role: engineer
status: active
---
# Grace Hopper
Mentor of [[ada-lovelace]]. See [[projects/atlas#Plan]].

- [ ] Call Ada about the compiler
"""

KUZMA = """---
role: lead
status: away
---
# Kuzma Minin
Lead of [[projects/borealis]].
"""

ATLAS = """---
status: active
due: 2026-12-20
tags: [project]
---
# Atlas

## Plan
The travel budget is reviewed every quarter.
- [ ] Book the venue for the offsite

## Risks
Depends on [[vendors/acme]] and on [[people/ada-lovelace|Ada]].
"""

BOREALIS = """---
status: planned
tags: [project]
---
# Borealis
Owner: [[kuzma-minin]]. Follows [[Atlass]].
"""

STANDUP = """# Standup 2026-11-30
Attendees: [[ada-lovelace]], [[grace-hopper]]

- [ ] Send Acme the invoice
- [x] Agree on the offsite date

#meeting
"""

DAILY = """# 2026-12-01

## Log
- 09:00 standup
"""

PERSON_SCHEMA = """# Person

```yaml schema
metadata:
  schemaName: contact
  description: A person we work with.
  identifierField: slug
  pathTemplate: contacts/${slug}.md
  pathComponents: [slug]
fields:
  slug: {type: string, description: lower-case-with-dashes}
  name: {type: string}
  company: {type: string, optional: true}
```
"""


def handbook() -> str:
    """A long note of chapters and sections, about 30,000 characters: long enough to be cut at 8,000."""
    parts = ["# Handbook\n\nHow this team works.\n"]
    for chapter in range(1, 7):
        parts.append(f"\n## Chapter {chapter}\n")
        for section in range(1, 6):
            parts.append(f"\n### Section {chapter}.{section}\n\n")
            for line in range(1, 9):
                parts.append(f"Rule {chapter}.{section}.{line}: write it down, share it, keep it current.\n")
    parts.append("\n## Money\n\n### Travel\n\nThe travel budget is approved by the lead before booking.\n")
    return "".join(parts)


NOTES = {
    "people/ada-lovelace.md": ADA,
    "people/grace-hopper.md": GRACE,
    "people/kuzma-minin.md": KUZMA,
    "projects/atlas.md": ATLAS,
    "projects/borealis.md": BOREALIS,
    "meetings/2026-11-30.md": STANDUP,
    "daily/2026-12-01.md": DAILY,
    "handbook.md": handbook(),
    "schemas/contact.md": PERSON_SCHEMA,
}

#: Ada's note as a colleague changed it later: version 2 of people/ada-lovelace.md.
ADA_V2 = ADA.replace("- [ ] Write the Atlas release notes\n", "- [ ] Write the Atlas release notes\n- [ ] Plan Q1\n")


def seed_team_vault(vault: LocalVault) -> None:
    """The team's notes, written by the project's owner; then a colleague's change to Ada's (a second version)."""
    store, project = vault.store, vault.project_id
    with store.write() as db:
        for path, text in NOTES.items():
            store.create(Change(db, project, store.owner_of(project)), path, text.encode(), None)
    colleague = store.add_user("colleague@x", "Colleague")
    (file,) = store.list_files(project, path="people/ada-lovelace.md", prefix=None, include_deleted=False)
    with store.write() as db:
        store.replace(Change(db, project, colleague), file.id, ADA_V2.encode())


# -- the vault as it is now ---------------------------------------------------------------------------


@dataclass
class Vault:
    """The local vault the suite runs on, read straight from its store (never through the server under test)."""

    vault: LocalVault

    def text(self, path: str) -> str:
        return self.data(path).decode()

    def data(self, path: str) -> bytes:
        store, project = self.vault.store, self.vault.project_id
        (file,) = store.list_files(project, path=path, prefix=None, include_deleted=False)
        return store.content(project, file.id)[1]

    def hash(self, path: str) -> str:
        """The contentHash of the note as texts show it: its first 12 hex digits."""
        return digest(self.data(path))[:12]

    def exists(self, path: str) -> bool:
        store, project = self.vault.store, self.vault.project_id
        return bool(store.list_files(project, path=path, prefix=None, include_deleted=False))

    def lines_of(self, path: str, *numbers: int) -> list[str]:
        lines = self.text(path).splitlines()
        return [lines[number - 1] for number in numbers]


Facts = Callable[[Vault], list[str]]
Arguments = Callable[[Vault], dict[str, Any]]


@dataclass(frozen=True)
class Task:
    """One agent call: ``tool`` with ``arguments`` (a dict, or made from the vault before the call), and the
    ``facts`` its answer must carry (worked out from the vault after the call)."""

    name: str
    tool: str
    arguments: dict[str, Any] | Arguments
    facts: Facts
    error: bool = False

    def arguments_for(self, vault: Vault) -> dict[str, Any]:
        return self.arguments(vault) if callable(self.arguments) else dict(self.arguments)


TASKS: tuple[Task, ...] = (
    Task("who am I", "whoami", {}, lambda v: ["Local user", "local@teamvault.invalid"]),
    Task("which projects", "list_projects", {}, lambda v: [v.vault.project_id, "Local vault"]),
    Task(
        "list a folder",
        "list_notes",
        {"prefix": "people/"},
        lambda v: ["people/ada-lovelace.md", "people/grace-hopper.md", "people/kuzma-minin.md"],
    ),
    Task(
        "search for words",
        "search_notes",
        {"query": "travel budget"},
        lambda v: ["projects/atlas.md", "handbook.md", "people/ada-lovelace.md", "Plan", "Travel"],
    ),
    Task(
        "find a note by a misspelt name",
        "find_notes",
        {"query": "ada lovlace"},
        lambda v: ["people/ada-lovelace.md"],
    ),
    Task(
        "query by property",
        "query_notes",
        {"where": {"status": "active"}, "fields": ["role"]},
        lambda v: ["people/ada-lovelace.md", "people/grace-hopper.md", "projects/atlas.md", "engineer"],
    ),
    Task("list the tags", "list_tags", {}, lambda v: ["team/eng", "project", "mentor", "meeting"]),
    Task(
        "the notes of a tag",
        "list_tags",
        {"tag": "project"},
        lambda v: ["projects/atlas.md", "projects/borealis.md"],
    ),
    Task(
        "open tasks",
        "list_tasks",
        {},
        lambda v: [
            "people/ada-lovelace.md",
            "Review the travel budget with [[grace-hopper]]",
            "Write the Atlas release notes",
            "people/grace-hopper.md",
            "Call Ada about the compiler",
            "projects/atlas.md",
            "Book the venue for the offsite",
            "meetings/2026-11-30.md",
            "Send Acme the invoice",
        ],
    ),
    Task(
        "links in and out of a note",
        "note_links",
        {"path": "people/ada-lovelace.md"},
        lambda v: [
            "projects/atlas.md",  # a link out, and a note linking in
            "people/grace-hopper.md",
            "meetings/2026-11-30.md",
            "Mentor of [[ada-lovelace]]. See [[projects/atlas#Plan]].",  # the linking line
            "Attendees: [[ada-lovelace]], [[grace-hopper]]",
        ],
    ),
    Task(
        "broken links",
        "broken_links",
        {},
        lambda v: ["projects/atlas.md", "[[vendors/acme]]", "projects/borealis.md", "[[Atlass]]"],
    ),
    Task(
        "outline a long note",
        "note_outline",
        {"path": "handbook.md"},
        lambda v: ["Chapter 1", "Chapter 6", "Money", v.hash("handbook.md")],
    ),
    Task(
        "read a note",
        "read_note",
        {"path": "people/grace-hopper.md"},
        lambda v: [v.text("people/grace-hopper.md"), v.hash("people/grace-hopper.md")],
    ),
    Task(
        "read a section",
        "read_note",
        {"path": "projects/atlas.md", "section": ["Atlas", "Plan"]},
        lambda v: [
            "## Plan\nThe travel budget is reviewed every quarter.\n- [ ] Book the venue for the offsite\n",
            v.hash("projects/atlas.md"),
        ],
    ),
    Task(
        "read a long note, cut",
        "read_note",
        {"path": "handbook.md", "maxChars": 8000},
        lambda v: [
            v.text("handbook.md")[:2000],
            'read_note(path="handbook.md", startLine=',
            v.hash("handbook.md"),
        ],
    ),
    Task(
        "read several notes",
        "read_notes",
        {"paths": ["people/kuzma-minin.md", "projects/borealis.md"]},
        lambda v: [
            v.text("people/kuzma-minin.md"),
            v.hash("people/kuzma-minin.md"),
            v.text("projects/borealis.md"),
            v.hash("projects/borealis.md"),
        ],
    ),
    Task(
        "read the properties",
        "read_frontmatter",
        {"path": "projects/atlas.md"},
        lambda v: ["active", "2026-12-20", "project", v.hash("projects/atlas.md")],
    ),
    Task(
        "what changed lately",
        "recent_changes",
        {"since": "7d"},
        lambda v: ["people/ada-lovelace.md", "handbook.md", "created"],
    ),
    Task(
        "a note's history",
        "list_note_versions",
        {"path": "people/ada-lovelace.md"},
        lambda v: ["Colleague", digest(ADA)[:8], v.hash("people/ada-lovelace.md")[:8]],
    ),
    Task(
        "read an old version",
        "read_note_version",
        {"path": "people/ada-lovelace.md", "version": 1},
        lambda v: [ADA, digest(ADA)[:12]],
    ),
    Task(
        "what a colleague changed",
        "diff_note_versions",
        {"path": "people/ada-lovelace.md", "from": 1},
        lambda v: ["+- [ ] Plan Q1"],
    ),
    Task(
        "a write with a stale hash",
        "edit_note",
        {
            "path": "people/ada-lovelace.md",
            "edits": [{"oldText": "- [ ] Plan Q1", "newText": "- [x] Plan Q1"}],
            "expectedHash": digest(ADA)[:12],
        },
        lambda v: ["Conflict", v.hash("people/ada-lovelace.md"), "+- [ ] Plan Q1"],
        error=True,
    ),
    Task(
        "an edit whose oldText is not there",
        "edit_note",
        {"path": "people/grace-hopper.md", "edits": [{"oldText": "Call Ada about the compilers", "newText": "x"}]},
        lambda v: ["- [ ] Call Ada about the compiler"],
        error=True,
    ),
    Task(
        "a note that is not there",
        "read_note",
        {"path": "people/ada.md"},
        lambda v: ["Note not found: people/ada.md", "people/ada-lovelace.md"],
        error=True,
    ),
    Task(
        "preview an edit",
        "edit_note",
        lambda v: {
            "path": "people/ada-lovelace.md",
            "edits": [{"oldText": "- [ ] Plan Q1", "newText": "- [x] Plan Q1"}],
            "dryRun": True,
            "expectedHash": v.hash("people/ada-lovelace.md"),
        },
        lambda v: ["-- [ ] Plan Q1", "+- [x] Plan Q1", f'expectedHash="{v.hash("people/ada-lovelace.md")}"'],
    ),
    Task(
        "apply an edit",
        "edit_note",
        lambda v: {
            "path": "people/ada-lovelace.md",
            "edits": [{"oldText": "- [ ] Plan Q1", "newText": "- [x] Plan Q1"}],
            "expectedHash": v.hash("people/ada-lovelace.md"),
        },
        lambda v: ["+- [x] Plan Q1", v.hash("people/ada-lovelace.md")],
    ),
    Task(
        "preview a section append",
        "edit_section",
        {"path": "daily/2026-12-01.md", "section": ["2026-12-01", "Log"], "content": "- 10:00 review", "dryRun": True},
        lambda v: ["+- 10:00 review", f'expectedHash="{v.hash("daily/2026-12-01.md")}"'],
    ),
    Task(
        "append to a section",
        "edit_section",
        {"path": "daily/2026-12-01.md", "section": ["2026-12-01", "Log"], "content": "- 10:00 review"},
        lambda v: ["+- 10:00 review", v.hash("daily/2026-12-01.md")],
    ),
    Task(
        "create a note",
        "write_note",
        {"path": "inbox/idea.md", "content": "# Idea\n\nA shared glossary.\n"},
        lambda v: ["inbox/idea.md", "Created", v.hash("inbox/idea.md")],
    ),
    Task(
        "set a property",
        "update_frontmatter",
        lambda v: {
            "path": "projects/borealis.md",
            "set": {"status": "active"},
            "expectedHash": v.hash("projects/borealis.md"),
        },
        lambda v: ["+status: active", v.hash("projects/borealis.md")],
    ),
    Task(
        "preview a replacement",
        "replace_in_notes",
        {"find": "travel budget", "replace": "travel allowance", "prefix": "p"},
        lambda v: [
            "projects/atlas.md",
            "people/ada-lovelace.md",
            "+The travel allowance is reviewed every",
            "expectedCount=2",
        ],
    ),
    Task(
        "apply a replacement",
        "replace_in_notes",
        {"find": "travel budget", "replace": "travel allowance", "prefix": "p", "dryRun": False, "expectedCount": 2},
        lambda v: [
            "projects/atlas.md",
            v.hash("projects/atlas.md"),
            "people/ada-lovelace.md",
            v.hash("people/ada-lovelace.md"),
        ],
    ),
    Task(
        "preview a rename that keeps links",
        "move_note",
        {"path": "people/grace-hopper.md", "newPath": "people/grace-brewster-hopper.md", "dryRun": True},
        lambda v: ["people/ada-lovelace.md", "meetings/2026-11-30.md", "grace-brewster-hopper"],
    ),
    Task(
        "rename a note, links kept",
        "move_note",
        {"path": "people/grace-hopper.md", "newPath": "people/grace-brewster-hopper.md"},
        lambda v: [
            "people/grace-brewster-hopper.md",
            "people/ada-lovelace.md",
            v.hash("people/ada-lovelace.md"),
            "meetings/2026-11-30.md",
            v.hash("meetings/2026-11-30.md"),
        ],
    ),
    Task(
        "undo a change from the history",
        "restore_note_version",
        {"path": "daily/2026-12-01.md", "version": 1},
        lambda v: ["daily/2026-12-01.md", v.hash("daily/2026-12-01.md"), "-- 10:00 review"],
    ),
    Task("the schemas", "list_schemas", {}, lambda v: ["contact", "upsert_contact", "contacts/${slug}.md"]),
    Task("read the schemas again", "reload_schemas", {}, lambda v: ["contact", "upsert_contact"]),
    Task(
        "a structured note",
        "upsert_contact",
        {"slug": "alan-turing", "name": "Alan Turing", "company": "NPL"},
        lambda v: ["contacts/alan-turing.md", "Created", v.hash("contacts/alan-turing.md"), "+name: Alan Turing"],
    ),
    Task(
        "delete a note",
        "delete_note",
        {"path": "inbox/idea.md"},
        lambda v: ["inbox/idea.md", "Deleted"],
    ),
)


# -- running it ---------------------------------------------------------------------------------------

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass
class Outcome:
    """What one task's answer showed: per view, the facts it lacked; the wire result; what went wrong besides."""

    task: Task
    result: dict[str, Any]
    missing: dict[str, list[str]]
    problems: list[str] = field(default_factory=list)

    @property
    def green(self) -> bool:
        return not self.problems and not any(self.missing.values())


async def run_suite(call: Call, vault: Vault, tasks: tuple[Task, ...] = TASKS) -> list[Outcome]:
    """Every task in order, through ``call``; each answer checked in every view."""
    outcomes = []
    for task in tasks:
        result = await call(task.tool, task.arguments_for(vault))
        facts = task.facts(vault)
        shown = views(result)
        problems = []
        if bool(result.get("isError")) != task.error:
            problems.append(f"isError is {result.get('isError')}: {shown['all text'][:300]}")
        missing = {view: [fact for fact in facts if fact not in shown[view]] for view in VIEWS}
        outcomes.append(Outcome(task, result, missing, problems))
    return outcomes


def views(result: dict[str, Any]) -> dict[str, str]:
    """What the model reads of ``result`` (a wire ``CallToolResult``) on each kind of host."""
    texts = [block["text"] for block in result.get("content", []) if block.get("type") == "text"]
    structured = result.get("structuredContent")
    return {
        "all text": "\n\n".join(texts),
        "first block": texts[0] if texts else "",
        "structured-first": strings_of(structured) if structured is not None else "\n\n".join(texts),
    }


def strings_of(value: Any) -> str:
    """Every string, number and flag in ``value`` (and every key), one per line: what a model finds in it."""
    out: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for key, inner in item.items():
                out.append(str(key))
                walk(inner)
        elif isinstance(item, list):
            for inner in item:
                walk(inner)
        elif isinstance(item, str):
            out.append(item)
        elif item is not None:
            out.append(json.dumps(item))

    walk(value)
    return "\n".join(out)


# -- what the text says that the structured half must say too -----------------------------------------

PATH = re.compile(r"(?<![\w/.-])[\w.-]+(?:/[\w.${}-]+)*\.md\b")
SHORT_HASH = re.compile(r"(?<![0-9a-f])[0-9a-f]{12}(?![0-9a-f])")
NOTICE = re.compile(r"^\[(?!\[|contentHash: )[^\n]*\]$", re.MULTILINE)
HUNK = re.compile(r"^@@ [^\n]*$", re.MULTILINE)


def calls_in(text: str, tools: set[str]) -> list[str]:
    """Every call of a tool written out in ``text`` (``read_note(path="a.md", startLine=3)``), parentheses
    balanced; a bare name or ``name(path)`` as prose says it counts too."""
    found = []
    for match in re.finditer(r"\b([a-z_]+)\(", text):
        if match.group(1) not in tools:
            continue
        depth, end = 0, match.end() - 1
        for index in range(end, len(text)):
            depth += {"(": 1, ")": -1}.get(text[index], 0)
            if depth == 0:
                found.append(text[match.start() : index + 1])
                break
    return found


def unsaid(result: dict[str, Any], tools: set[str]) -> list[str]:
    """What the text of ``result`` says that its structured content does not: paths, 12-digit hashes, notices
    (``[Cut: …]``), calls to make next and diff hunks. Empty when there is no text or all of it is there."""
    texts = "\n\n".join(block["text"] for block in result.get("content", []) if block.get("type") == "text")
    said = strings_of(result.get("structuredContent"))
    wanted = [
        *PATH.findall(texts),
        *SHORT_HASH.findall(texts),
        *NOTICE.findall(texts),
        *HUNK.findall(texts),
        *calls_in(texts, tools),
    ]
    return [item for item in dict.fromkeys(wanted) if item not in said]
