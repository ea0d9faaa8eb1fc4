"""replace_in_notes and links, diffs and write scopes (issue 30), through a real MCP client reading the text only.

A rename by find/replace breaks the links whose target holds the match: the preview says which, right under its
headline, and ``links="keep"`` leaves link targets alone; a preview never shows an unchanged line as removed
and added; an apply the write scope leaves nothing to write says so first.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.sessions import open_session

pytestmark = pytest.mark.anyio

#: 7 links whose target holds "Old name", in 3 notes, and matches outside links (the alias, the text).
LINKED = {
    "projects/a.md": "# A\n\nOld name ships in May.\nSee [[Old name]] and [[Old name#Plan|the Old name plan]].\n",
    "projects/b.md": "# B\n\n![[Old name.png]]\n\n[notes](<Old name.md>) and [[projects/Old name]].\n",
    "projects/c.md": '---\nrelated: "[[Old name]]"\n---\n# C\n\nBlocked on [[Old name]].\n',
    "projects/d.md": "# D\n\nOld name, nothing linked.\n",
}


async def test_a_preview_lists_every_link_a_replace_would_break_right_under_its_headline(tmp_path: Path) -> None:
    async with open_session(tmp_path) as session:
        for path, text in LINKED.items():
            session.seed(path, text)
        text, is_error = await session.texts(
            "replace_in_notes", find="Old name", replace="New name", prefix="projects/"
        )
        assert not is_error, text
        headline, warning = text.split("\n")[:2]
        assert headline.startswith('Dry run: nothing was written. "Old name" → "New name": 10 matches in 4 notes')
        assert warning == (
            "[7 of the matches are inside link targets: applying breaks these links: "
            "[[Old name]] in projects/a.md (line 4), [[Old name#Plan|the Old name plan]] in projects/a.md (line 4), "
            "![[Old name.png]] in projects/b.md (line 3), [notes](<Old name.md>) in projects/b.md (line 5), "
            "[[projects/Old name]] in projects/b.md (line 5), "
            "[[Old name]] in projects/c.md (line 2), [[Old name]] in projects/c.md (line 6); to rename a note use "
            'move_note(updateLinks=true), or pass links="keep" to replace everywhere but in link targets.]'
        )
        assert text.endswith("dryRun=false, expectedCount=10)")  # the default is today's: links="replace"

        text, is_error = await session.texts(
            "replace_in_notes", find="Old name", replace="New name", prefix="projects/", dryRun=False, expectedCount=10
        )
        assert not is_error, text
        assert text.split("\n")[1].startswith(
            "[7 of the matches replaced were inside link targets, so these links are broken now: [[Old name]] in "
            "projects/a.md (line 4), "
        )
        assert "use move_note(updateLinks=true), which updates the links to it.]" in text
        assert session.text("projects/b.md") == LINKED["projects/b.md"].replace("Old name", "New name")


async def test_links_keep_leaves_link_targets_alone_and_still_replaces_alias_and_text(tmp_path: Path) -> None:
    async with open_session(tmp_path) as session:
        for path, text in LINKED.items():
            session.seed(path, text)
        text, is_error = await session.texts(
            "replace_in_notes", find="Old name", replace="New name", prefix="projects/", links="keep"
        )
        assert not is_error, text
        headline, kept = text.split("\n")[:2]
        assert headline.startswith('Dry run: nothing was written. "Old name" → "New name": 3 matches in 2 notes')
        assert kept.startswith(
            '[7 matches inside link targets will be left alone (links="keep"), so these links keep working: '
            "[[Old name]] in projects/a.md (line 4), "
        )
        apply = 'replace_in_notes(find="Old name", replace="New name", prefix="projects/", links="keep", '
        assert text.endswith(apply + "dryRun=false, expectedCount=3)")
        text, is_error = await session.texts(
            "replace_in_notes",
            find="Old name",
            replace="New name",
            prefix="projects/",
            links="keep",
            dryRun=False,
            expectedCount=3,
        )
        assert not is_error, text
        assert text.startswith('Replaced "Old name" → "New name" in 2 of 2 notes (3 of 3 matches).\n')
        assert '[7 matches inside link targets were left alone (links="keep"), so these links keep working: ' in text
        assert session.text("projects/a.md") == (
            "# A\n\nNew name ships in May.\nSee [[Old name]] and [[Old name#Plan|the New name plan]].\n"
        )
        for path in ("projects/b.md", "projects/c.md"):
            assert session.text(path) == LINKED[path]


async def test_links_refuses_a_value_it_does_not_know(tmp_path: Path) -> None:
    async with open_session(tmp_path) as session:
        session.seed("a.md", "Old name\n")
        text, is_error = await session.texts("replace_in_notes", find="Old name", replace="New", links="skip")
        assert is_error and "links" in text and "keep" in text
        assert session.text("a.md") == "Old name\n"


async def test_a_preview_never_shows_an_unchanged_line_as_removed_and_added(tmp_path: Path) -> None:
    # in a long note a blank line is too frequent for difflib to anchor on: between two changed lines it came
    # back as "-" and "+" with the same (empty) text
    body = "\n\n".join(f"Entry {number}" for number in range(300))
    async with open_session(tmp_path) as session:
        session.seed("log.md", f"Acme one\n\nAcme two\n\n{body}\n")
        text, is_error = await session.texts("replace_in_notes", find="Acme", replace="Globex")
        assert not is_error, text
        diff = text.split("log.md (2)\n")[1].split("\nApply with:")[0].split("\n")
        assert diff == ["@@ -1,3 +1,3 @@", "-Acme one", "+Globex one", "-Acme two", "+Globex two"]
        removed = {line[1:] for line in diff if line.startswith("-")}
        assert not [line for line in diff if line.startswith("+") and line[1:] in removed]


async def test_a_scoped_apply_that_can_write_nothing_says_the_write_scope_first(tmp_path: Path) -> None:
    async with open_session(tmp_path, write_prefixes=("meetings/",)) as session:
        session.seed("clients/acme.md", "Acme signed. Call Acme.\n")
        session.seed("meetings/x.md", "Nothing here.\n")
        text, is_error = await session.texts(
            "replace_in_notes", find="Acme", replace="Globex", dryRun=False, expectedCount=2
        )
        assert is_error
        assert text.startswith(
            'Nothing was written: every note with a match of "Acme" → "Globex" (2 matches in 1 note) is outside the '
            "folders this server may write to (meetings/; set by TEAM_VAULT_WRITE_PREFIXES): clients/acme.md (2)."
        ), text
        assert not re.search("changed since the preview", text)
        text, is_error = await session.texts("replace_in_notes", find="Acme", replace="Globex", dryRun=False)
        assert is_error and "outside the folders this server may write to" in text.split(".")[0]
        assert session.text("clients/acme.md") == "Acme signed. Call Acme.\n"


async def test_with_structured_content_the_data_says_the_links_sentence_and_every_link_too(tmp_path: Path) -> None:
    """A host that shows only structuredContent (Claude Code, Cursor) gets the warning itself and the calls it
    names, not only the rows: notes/hosts.md."""
    async with open_session(tmp_path, structured_content=True) as session:
        for path, text in LINKED.items():
            session.seed(path, text)
        for arguments in ({}, {"dryRun": False, "expectedCount": 10}):
            text, is_error, data = await session.call(
                "replace_in_notes", find="Old name", replace="New name", prefix="projects/", **arguments
            )
            assert not is_error, text
            assert data["linkTargets"]["notice"] == text.split("\n")[1]
            assert "move_note(updateLinks=true)" in data["linkTargets"]["notice"]
            assert len(data["linkTargets"]["found"]) == data["linkTargets"]["matches"] == 7
