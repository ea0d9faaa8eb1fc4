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
