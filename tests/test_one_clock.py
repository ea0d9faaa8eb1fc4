"""One clock (issue 28): the CPU work of a call (regex search, replace, diff) stops on its budget's clock.

The budget runs on the injected clock; a deadline that also read the machine's clock would let a search go on
after the budget said time was up (or stop it before). Each test moves only the fake clock, never real time.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest
from support.fakes import FakeClock, make_config
from support.policies import FAST
from support.seeding import seed
from support.sessions import workspace_on

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.server.workspace import Workspace
from teamvault_mcp.text.diff import unified_diff
from teamvault_mcp.text.replace import Replacer
from teamvault_mcp.text.search import Matcher, NoteText, TimeUp
from teamvault_mcp.tools.context import ToolContext
from teamvault_mcp.tools.search import ANSWER_SECONDS, search_notes
from teamvault_mcp.vault.client import TeamVaultClient
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget, SystemClock

BUDGET = 30.0


def _context(make_client: Any, clock: FakeClock) -> ToolContext:
    workspace = Workspace(make_config(project_id="project"), clock=clock, policy=FAST)
    return workspace.context(make_client(), Budget(BUDGET, clock), CancelToken())


def test_a_regex_search_stops_when_the_budgets_clock_passes_its_deadline(make_client: Any, clock: FakeClock) -> None:
    deadline = _context(make_client, clock).deadline(ANSWER_SECONDS)
    matcher, entry = Matcher("a+", "regex"), NoteText("a\n" * 10)
    assert len(matcher.lines("n.md", entry, deadline=deadline)) == 10
    clock.advance(BUDGET - ANSWER_SECONDS + 0.001)  # no real time passes
    with pytest.raises(TimeUp):
        matcher.lines("n.md", entry, deadline=deadline)


def test_a_regex_replace_stops_when_the_budgets_clock_passes_its_deadline(make_client: Any, clock: FakeClock) -> None:
    deadline = _context(make_client, clock).deadline(ANSWER_SECONDS)
    replacer = Replacer("a+", "b", regex=True)
    assert replacer.apply("a\n" * 10, deadline=deadline) == ("b\n" * 10, 10)
    clock.advance(BUDGET - ANSWER_SECONDS + 0.001)
    with pytest.raises(TimeUp):
        replacer.apply("a\n" * 10, deadline=deadline)


def test_a_diff_past_the_budgets_deadline_is_the_count_of_lines(make_client: Any, clock: FakeClock) -> None:
    deadline = _context(make_client, clock).deadline(ANSWER_SECONDS)
    assert unified_diff("a\nb\n", "a\nB\n", before="a", after="b", deadline=deadline).startswith("--- a")
    clock.advance(BUDGET)
    said = unified_diff("a\nb\n", "a\nB\n", before="a", after="b", deadline=deadline)
    assert said == "1 line changed; diff too large to show — read_note to check"


class _EndsWhenSearching(FakeClock):
    """A budget's clock whose time runs out the moment the search's matching (``text/``) first looks at it."""

    def monotonic(self) -> float:
        if any("/teamvault_mcp/text/" in frame.filename for frame in traceback.extract_stack()):
            self.advance(BUDGET)
        return super().monotonic()


def test_search_notes_answers_partial_when_the_budgets_clock_runs_out_mid_search(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault") as vault:
        for index in range(5):
            seed(vault, f"n{index}.md", f"needle {index}\n")
        requests = Budget(BUDGET, SystemClock())  # the requests' own: the listing and downloads are not cut short
        client = TeamVaultClient(
            vault.url, vault.api_key, budget=requests, token=CancelToken(), clock=SystemClock(), policy=FAST
        )
        try:
            context = workspace_on(vault).context(client, Budget(BUDGET, _EndsWhenSearching()), CancelToken())
            output = search_notes(context, {"query": "need+le", "mode": "regex"})
        finally:
            client.close()
    assert output.structured is not None and output.structured["partial"] is True, output.text
    assert output.structured["notesNotSearched"] == 5, output.text
