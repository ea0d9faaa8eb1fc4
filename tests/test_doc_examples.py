"""Every answer the docs show is the real answer: each example is quoted from its page (so an edit of either the
page or the output fails here), and the call it names is made on a vault seeded to give exactly those figures.

In a quote, ``…`` stands for text the page leaves out (a cursor, a reason); everything else must match, whitespace
aside (the pages wrap their lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.children import ROOT
from support.sessions import Session, open_session

pytestmark = pytest.mark.anyio

TOOLS_PAGE = ROOT / "docs" / "tools.md"


def quoted(page: Path, example: str) -> list[re.Pattern[str]]:
    """``example``, which must be on ``page``, as patterns over an answer: one per `code span` in it (the rest is
    the page's words about them); in a span ``…`` is any text, and spaces are any whitespace."""
    assert _squeezed(example) in _squeezed(page.read_text()), f"{page.name} no longer shows: {example}"
    spans = re.findall(r"`([^`]+)`", example)
    assert spans, example
    patterns = []
    for span in spans:
        escaped = ".*?".join(re.escape(part) for part in span.split("…"))
        patterns.append(re.compile(r"\s+".join(escaped.split(r"\ ")), re.DOTALL))
    return patterns


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def shows(answer: str, page: Path, example: str) -> bool:
    """Whether ``answer`` holds every code span of ``example`` (which ``page`` must show)."""
    return all(pattern.search(_squeezed(answer)) for pattern in quoted(page, example))


def lines(count: int, width: int, start: int = 1) -> list[str]:
    return [f"{n:05d} ".ljust(width, "x") for n in range(start, start + count)]


async def test_read_notes_shows_each_note_under_its_path_and_hash_and_a_failure_under_its_path(tmp_path: Path) -> None:
    async with open_session(tmp_path) as session:
        session.seed("people/a.md", "# Ada\nAda runs onboarding.\n")
        both_read = await session.text_ok("read_notes", paths=["people/a.md"])
        one_failed = await session.text_ok("read_notes", paths=["people/a.md", "people/b.md"])
    assert shows(both_read, TOOLS_PAGE, "each under `=== people/a.md · 9b27f436fcba ===` (its path and")
    assert shows(one_failed, TOOLS_PAGE, "a failed one under `=== people/b.md: error ===`, with its error")
    assert shows(one_failed, TOOLS_PAGE, "the answer then starts `Read 1 of 2 notes; 1 failed.`")
    assert one_failed.startswith("Read 1 of 2 notes; 1 failed.") and not both_read.startswith("Read ")


async def test_a_search_hit_is_the_line_the_tools_page_shows(tmp_path: Path) -> None:
    async with open_session(tmp_path) as session:
        hit = "The travel budget is reviewed every quarter."
        body = ["# Handbook", "## Money", *lines(207, 30), "### Travel", "", hit]
        assert body.index(hit) + 1 == 212
        session.seed("handbook.md", "\n".join(body) + "\n")
        answer = await session.text_ok("search_notes", query="travel budget")
    assert shows(
        answer,
        TOOLS_PAGE,
        '`handbook.md:212 section="Handbook > Money > Travel" · The travel budget is reviewed every quarter.`',
    )


async def test_a_long_outline_level_comes_in_pages_as_the_tools_page_says(tmp_path: Path) -> None:
    async with open_session(tmp_path, structured_content=True) as session:
        session.seed("log.md", "# Log\n" + "".join(f"## Day {n}\nwent well\n" for n in range(1, 3651)))
        text, is_error, structured = await session.call("note_outline", path="log.md", tocPath=["Log"])
    assert not is_error, text
    notice = (
        "`[Cut: headings 1–200 of the 3,650 at this level are shown. Read on with: "
        'note_outline(path="log.md", tocPath="Log", offset=200)]`'
    )
    assert shows(text, TOOLS_PAGE, notice) and shows(structured["note"], TOOLS_PAGE, notice)
    assert structured["next"] == {"offset": 200}


async def test_a_read_cut_at_max_chars_says_where_to_read_on(tmp_path: Path) -> None:
    async with open_session(tmp_path) as session:
        # 410 lines of 47 characters and their line ends, then one of 300: 19,981 characters, and line 412 would
        # pass 20,000; the note has 1,381 lines.
        body = [*lines(410, 47), "x" * 300, *lines(970, 47, start=412)]
        session.seed("handbook.md", "\n".join(body) + "\n")
        answer = await session.text_ok("read_note", path="handbook.md", maxChars=20000)
    assert shows(
        answer,
        TOOLS_PAGE,
        "`[Cut at maxChars=20,000: this is lines 1–411 of the 1–1381 asked for. Read on with: "
        'read_note(path="handbook.md", startLine=412, endLine=1381)]`',
    )


async def test_a_listing_in_pages_says_how_many_more_and_where_it_ends(tmp_path: Path) -> None:
    async with open_session(tmp_path) as session:
        for n in range(1, 1204):
            session.seed(f"notes/{n:04d}.md", f"note {n}\n")
        first = await session.text_ok("list_notes", limit=100)
        cursor = re.search(r'cursor="([^"]+)"', first)
        assert cursor is not None, first[-300:]
        last = await session.text_ok("list_notes", cursor=cursor.group(1), limit=2000)
    assert shows(
        first,
        TOOLS_PAGE,
        '`[Cut: 100 entries shown, 1,103 more. Continue with list_notes(cursor="…") and the same prefix and depth.]`',
    )
    assert shows(last, TOOLS_PAGE, "the last one ends `[Last page: the listing is complete.]`")


REPLACE_PREVIEW = """```
Dry run: nothing was written. "Acme" → "Globex": 5 matches in 3 notes (3 notes searched):
clients/acme.md (3)
@@ -3 +3 @@
-Acme signed the contract in May; the kickoff with Acme is on 3 June.
+Globex signed the contract in May; the kickoff with Globex is on 3 June.
@@ -7 +7 @@
-- Jo Park, Acme's head of operati…
+- Jo Park, Globex's head of operati…
meetings/2026-11-02.md (1)
@@ -5 +5 @@
-- [ ] Ada: send Acme the invoice for t…
+- [ ] Ada: send Globex the invoice for t…
people/jo-park.md (1)
@@ -3 +3 @@
-Works at Acme since 2019.
+Works at Globex since 2019.
Apply with: replace_in_notes(find="Acme", replace="Globex", dryRun=false, expectedCount=5)
```"""


def seed_clients(session: Session) -> None:
    session.seed(
        "clients/acme.md",
        "# Client\n\nAcme signed the contract in May; the kickoff with Acme is on 3 June.\n\n## People\n\n"
        "- Jo Park, Acme's head of operations\n",
    )
    session.seed(
        "meetings/2026-11-02.md", "# 2 November\n\n## Tasks\n\n- [ ] Ada: send Acme the invoice for the pilot\n"
    )
    session.seed("people/jo-park.md", "# Jo Park\n\nWorks at Acme since 2019.\n")


async def test_replace_in_notes_previews_and_applies_as_the_tools_page_shows(tmp_path: Path) -> None:
    async with open_session(tmp_path) as session:
        seed_clients(session)
        preview = await session.text_ok("replace_in_notes", find="Acme", replace="Globex")
        applied = await session.text_ok(
            "replace_in_notes", find="Acme", replace="Globex", dryRun=False, expectedCount=5
        )
    # The preview, whole: the page's block is the answer, line for line (its … are the answer's own).
    block = REPLACE_PREVIEW.removeprefix("```\n").removesuffix("\n```")
    assert REPLACE_PREVIEW in TOOLS_PAGE.read_text()
    assert preview == block
    assert shows(applied, TOOLS_PAGE, '`Replaced "Acme" → "Globex" in 3 of 3 notes (5 of 5 matches).`')
    assert shows(applied, TOOLS_PAGE, "`Applied: clients/acme.md (3); its contentHash is now 5c99c13887b5.`")
