"""Every fact the write pipeline learns reaches the audit log (issue 28): a write made again on a colleague's
change meanwhile is ``rebased``, one that replaced it is ``replacedMeanwhile``, beside the hashes and the outcome.

Tools run through a real MCP client against a local vault on loopback sockets; the colleague writes right before
the server's PUT (a fault the test scripts), and the test reads the audit file the server appended to.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.seeding import digest
from support.sessions import Session, open_session

from teamvault_mcp.localvault import Fault

pytestmark = pytest.mark.anyio

FILE = "/api/projects/*/files/*"


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, audit_log=tmp_path / "audit.jsonl", structured_content=True) as running:
        yield running


def last_line(session: Session) -> dict[str, Any]:
    """The audit log's last line, parsed."""
    path = session.runner.config.audit_log
    assert path is not None
    return json.loads(path.read_text().splitlines()[-1])


def colleague_before_the_next_put(session: Session, path: str, theirs: str) -> None:
    session.vault.faults.add("PUT", FILE, Fault.first(lambda: session.colleague_writes(path, theirs)))


async def test_an_edit_made_again_on_a_colleagues_change_is_audited_as_rebased(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="one\ntwo\nthree\n")
    colleague_before_the_next_put(session, "a.md", "one\ntwo\nthree\nfour\n")
    edited = await session.ok("edit_note", path="a.md", edits=[{"oldText": "one", "newText": "1"}])
    assert edited["rebasedOnto"]  # the answer says so; so must the audit line
    line = last_line(session)
    assert (line["tool"], line["outcome"], line["rebased"]) == ("edit_note", "applied", 1)
    assert (line["hashBefore"], line["hashAfter"]) == (digest("one\ntwo\nthree\n"), digest("1\ntwo\nthree\nfour\n"))
    assert "replacedMeanwhile" not in line


async def test_a_write_that_replaced_a_colleagues_change_is_audited_as_replaced_meanwhile(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")
    colleague_before_the_next_put(session, "a.md", "theirs\n")
    written = await session.ok("write_note", path="a.md", content="mine\n")
    assert written["replacedMeanwhile"]  # the answer says so; so must the audit line
    line = last_line(session)
    assert (line["tool"], line["outcome"], line["replacedMeanwhile"]) == ("write_note", "applied", True)
    assert line["hashAfter"] == digest("mine\n") and "rebased" not in line


async def test_a_plain_write_has_no_story_in_its_audit_line(session: Session) -> None:
    await session.ok("write_note", path="a.md", content="before\n")
    await session.ok("edit_note", path="a.md", edits=[{"oldText": "before", "newText": "after"}])
    line = last_line(session)
    assert line["outcome"] == "applied" and not {"rebased", "replacedMeanwhile", "verified"} & set(line)
