"""The one table of argument kinds (``tools/kinds.py``): every kind has its row, and the row is what every use
reads — the schema in tools/list, the check, the command line's reading."""

from __future__ import annotations

from typing import get_args

import pytest

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.tools.kinds import KINDS, Kind, Param
from teamvault_mcp.tools.table import TOOLS


def test_every_kind_has_one_row_and_every_tool_argument_a_kind() -> None:
    assert set(KINDS) == set(get_args(Kind))
    assert {param.kind for tool in TOOLS for param in tool.all_params} <= set(KINDS)


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [("count", "12", 12), ("version", "3", 3), ("flag", "TRUE", True), ("toc", '["A", "B"]', ["A", "B"])],
)
def test_a_command_line_value_is_read_as_the_kind_takes_it_and_then_checked(
    kind: Kind, text: str, value: object
) -> None:
    param = Param("x", "An argument.", kind=kind)
    assert param.read(text) == value
    assert param.check(param.read(text)) == value


def test_a_value_that_does_not_read_stays_text_and_the_check_says_what_is_wrong() -> None:
    count = Param("limit", "At most this many.", kind="count")
    assert count.read("ten") == "ten"
    with pytest.raises(ToolInputError, match=r"Argument 'limit' must be an integer, got str\."):
        count.check(count.read("ten"))
    with pytest.raises(ValueError, match="toc takes a JSON array"):
        Param("toc", "Headings.", kind="toc").read("[not json")
