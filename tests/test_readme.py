"""The README's worked example of a schema note is true: the note gives exactly the tool and the note it shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

from teamvault_mcp import frontmatter
from teamvault_mcp.schemas import parse_schema_note

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def block_after(marker: str, fence: str, language: str) -> str:
    start = README.index(marker)
    match = re.compile(rf"^{fence}{language}\n(.*?)^{fence}$", re.M | re.S).search(README, start)
    assert match is not None, f"no {language} block after {marker!r}"
    return match.group(1)


def test_the_worked_schema_example_gives_the_input_schema_and_the_note_shown() -> None:
    note = block_after("`schemas/recipe.md`:", "````", "markdown")
    schema = parse_schema_note("schemas/recipe.md", note)
    shown_schema = json.loads(block_after("gives the tool `upsert_recipe`", "```", "json"))
    assert schema.tool_name == "upsert_recipe"
    assert schema.json_schema() == shown_schema

    arguments = {"recipe_id": "borscht", "category": "soup", "title": "Borscht", "servings": 6}
    values = schema.check(arguments)
    assert schema.path_for(values) == "Recipes/soup/borscht.md"
    created = frontmatter.update("", schema.with_defaults(values), [], "Recipes/soup/borscht.md")
    assert created == block_after("creates\n`Recipes/soup/borscht.md`:", "```", "markdown")
