"""Every call is answered within its budget, whatever its work does: work that cannot be stopped in time (a
CPU-bound step the cancel token cannot reach) is answered without its result, and a write that had sent its
request says it may have been applied.

The stuck step is a scripted wait on an event that the test sets only after the answer came: today's runner
waited for it (30 s), past the budget.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.sessions import open_session

from teamvault_mcp.errors import UNCERTAIN_WRITE_HINT
from teamvault_mcp.server.runner import MAX_CONCURRENT_CALLS
from teamvault_mcp.tools import reading
from teamvault_mcp.tools.writing import rewrite

pytestmark = pytest.mark.anyio

BUDGET = 4.0


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event the stuck step waits on (30 s at most); set when the test ends, so its thread ends too."""
    event = threading.Event()
    yield event
    event.set()


def stuck(release: threading.Event, original: Any) -> Any:
    def step(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)
        return original(*args, **kwargs)

    return step


async def test_a_read_whose_work_does_not_stop_is_answered_within_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, release: threading.Event
) -> None:
    monkeypatch.setattr(reading, "hash_header", stuck(release, reading.hash_header))
    async with open_session(tmp_path, call_budget=BUDGET, structured_content=True) as session:
        await session.ok("write_note", path="a.md", content="# A\n")
        text, is_error, data = await session.call("read_note", path="a.md")
        release.set()
        assert is_error, text
        assert text.startswith(f"Out of time: read_note was still working when this call's {BUDGET:g} s budget"), text
        assert UNCERTAIN_WRITE_HINT not in text and data["error"]["mayHaveBeenApplied"] is False
        again, is_error, _ = await session.call("read_note", path="a.md")  # the server goes on serving
        assert not is_error and again.endswith("# A\n"), again


async def test_a_write_stuck_after_its_request_was_sent_says_it_may_have_been_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, release: threading.Event
) -> None:
    monkeypatch.setattr(rewrite, "unified_diff", stuck(release, rewrite.unified_diff))
    async with open_session(tmp_path, call_budget=BUDGET, structured_content=True) as session:
        await session.ok("write_note", path="a.md", content="# A\none\n")
        edit = {"oldText": "one", "newText": "two"}
        text, is_error, data = await session.call("edit_note", path="a.md", edits=[edit])
        assert is_error and text.startswith("Out of time: edit_note was still working"), text
        assert text.endswith(UNCERTAIN_WRITE_HINT) and data["error"]["mayHaveBeenApplied"] is True
        assert session.content("a.md") == b"# A\ntwo\n"  # it was: the PUT came before the stuck diff


async def test_work_answered_without_keeps_its_slot_until_it_ends_and_a_call_finding_none_is_answered_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, release: threading.Event
) -> None:
    """Eight stuck reads take every call slot and keep them past their answers (the CPU stays bounded); a ninth
    never starts and says so within its budget; once the stuck work ends, the slots serve again."""
    monkeypatch.setattr(reading, "hash_header", stuck(release, reading.hash_header))
    async with open_session(tmp_path, call_budget=BUDGET, structured_content=True) as session:
        await session.ok("write_note", path="a.md", content="# A\n")
        answers: list[tuple[str, bool, Any]] = []

        async def read() -> None:
            answers.append(await session.call("read_note", path="a.md"))

        async with anyio.create_task_group() as group:
            for _ in range(MAX_CONCURRENT_CALLS + 1):
                group.start_soon(read)
        texts = sorted(text for text, _, _ in answers)
        assert all(is_error for _, is_error, _ in answers), texts
        late = [text for text in texts if text.startswith("Out of time: read_note was still working")]
        never = [text for text in texts if text.startswith(f"Out of time: all {MAX_CONCURRENT_CALLS} call slots")]
        assert (len(late), len(never)) == (MAX_CONCURRENT_CALLS, 1), texts
        assert "Nothing was sent" in never[0]
        release.set()
        monkeypatch.undo()
        text, is_error, _ = await session.call("read_note", path="a.md")
        assert not is_error and text.endswith("# A\n"), text
