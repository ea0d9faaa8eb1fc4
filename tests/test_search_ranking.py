"""What search_notes and find_notes rank first, read as a text-only host reads it (through a real MCP client)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.sessions import Session, open_session

pytestmark = pytest.mark.anyio


@pytest.fixture
async def vault(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path) as session:
        yield session


# -- find_notes ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["grcae", "rgace", "graec", "gacre"])
async def test_find_notes_forgives_swapped_letters_in_a_short_name(vault: Session, query: str) -> None:
    for path in ("people/grace.md", "people/ada.md", "notes/race.md", "people/craig.md", "projects/plan.md"):
        vault.seed(path, "x\n")
    text = await vault.text_ok("find_notes", query=query)
    lines = text.splitlines()
    assert lines[0].endswith(f'like "{query}":') and lines[1].startswith("people/grace.md  ("), text


# -- search_notes --------------------------------------------------------------------------------------------

PRICING_V1 = """---
status: superseded
tags: [pricing, decision]
---
# Pricing decision

Decision: pricing is per seat, $10 a month.
"""
PRICING_V2 = """---
status: accepted
tags: [pricing, decision]
---
# Pricing decision (v2)

Decision: pricing follows usage from 2027, replacing the per-seat plan.
"""


async def test_search_shows_the_lines_that_say_it_before_tags_and_headings_and_each_note_s_status(
    vault: Session,
) -> None:
    vault.seed("decisions/pricing-v1.md", PRICING_V1)
    vault.seed("decisions/pricing-v2.md", PRICING_V2)
    vault.seed("handbook.md", "# Handbook\n\nNothing about money.\n")
    text = await vault.text_ok("search_notes", query="pricing decision")
    assert text.splitlines() == [
        "6 hits in 2 notes (at most 3 per note):",
        'decisions/pricing-v1.md:7 (status: superseded) section="Pricing decision" · Decision: pricing is per seat, '
        "$10 a month.",
        'decisions/pricing-v1.md:5 section="Pricing decision" · # Pricing decision',
        "decisions/pricing-v1.md:3 · tags: [pricing, decision]",
        'decisions/pricing-v2.md:7 (status: accepted) section="Pricing decision (v2)" · Decision: pricing follows '
        "usage from 2027, replacing the per-seat plan.",
        'decisions/pricing-v2.md:5 section="Pricing decision (v2)" · # Pricing decision (v2)',
        "decisions/pricing-v2.md:3 · tags: [pricing, decision]",
        "read_note(path, section=...) reads a hit's section.",
    ]


async def test_a_note_without_status_shows_none_and_a_phrase_prefers_the_body_too(vault: Session) -> None:
    vault.seed("handbook.md", "---\ntags: [travel budget]\n---\n# Travel budget\n\nThe travel budget is reviewed.\n")
    text = await vault.text_ok("search_notes", query="travel budget", mode="phrase")
    assert [line.split(" · ")[0] for line in text.splitlines()[1:4]] == [
        'handbook.md:6 section="Travel budget"',
        'handbook.md:4 section="Travel budget"',
        "handbook.md:2",
    ]
