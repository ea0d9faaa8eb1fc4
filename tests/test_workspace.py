"""The workspace (``server/workspace.py``) is the one maker of a handler's context, and what calls share.

Issue 28: ``ToolContext`` was built twice, by the call pipeline and by the warm-up, each with a
different subset of its fields; a field one of them forgot was None in that path only.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.fakes import make_config

from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.tools.writing.report import WriteReport
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.retry import Budget, SystemClock

PACKAGE = Path(__file__).resolve().parent.parent / "teamvault_mcp"


def _makers_of(name: str) -> dict[str, int]:
    """Each module of the package that calls ``name(...)``, with how many times."""
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                called = node.func
                named = called.id if isinstance(called, ast.Name) else getattr(called, "attr", None)
                if named == name:
                    module = path.relative_to(PACKAGE).as_posix()
                    found[module] = found.get(module, 0) + 1
    return found


def test_a_tool_context_is_made_in_one_place_the_workspace() -> None:
    assert _makers_of("ToolContext") == {"server/workspace.py": 1}


def test_a_context_is_the_runner_s_workspace_and_the_call_s_own_client_budget_and_token() -> None:
    runner = ToolRunner(make_config(write_prefixes=("team/",)), clock=SystemClock())
    workspace = runner.workspace
    budget, token = Budget(5.0, SystemClock()), CancelToken()
    client = workspace.client(budget, token)
    try:
        context = workspace.context(client, budget, token)
        assert (context.client, context.budget, context.token) == (client, budget, token)
        shared = (context.index, context.note_index, context.sync, context.key_user, context.note_locks)
        assert shared == (
            runner.workspace.index,
            runner.workspace.note_index,
            runner.workspace.sync,
            workspace.key_user,
            runner.workspace.note_locks,
        )
        assert context.tools == runner.workspace.tool_set() and context.write_prefixes == ("team/",)
        assert context.default_project_id == runner.config.project_id
        assert context.report == WriteReport() and context.report is not workspace.context(client, budget, token).report
    finally:
        client.close()
        runner.close()
