"""Schema notes and the tools generated from them: parsing, argument checks, paths, and end to end."""

from __future__ import annotations

import json
import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.seeding import seed
from support.sessions import Session, session_on
from support.waiting import GENEROUS, assert_within

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server import workspace as workspace_module
from teamvault_mcp.text.frontmatter import read as read_frontmatter
from teamvault_mcp.text.schema_notes import SchemaProblem, parse_schema_note
from teamvault_mcp.text.schemas import Schema

RECIPE = """# Recipe schema

Notes of the family cookbook. Everything outside the block is for people.

```yaml schema
metadata:
  schemaName: recipe
  description: A recipe of the family cookbook.
  identifierField: recipe_id
  pathTemplate: Recipes/${category}/${recipe_id}.md
  pathComponents: [category, recipe_id]
fields:
  recipe_id:
    type: string
    description: Short id, lower-case with dashes, e.g. borscht
  category:
    type: enum
    values: [soup, main, dessert]
    description: Which part of the cookbook
  title: {type: string, description: The recipe's name}
  servings: {type: integer, minimum: 1, maximum: 50, optional: true, description: How many it feeds}
  rating: {type: number, minimum: 0, maximum: 5, optional: true}
  vegetarian: {type: boolean, default: false}
  tags: {type: array, items: {type: string}, default: [recipe]}
  tried: {type: date, optional: true, description: When we last cooked it}
  ingredients:
    type: array
    optional: true
    items:
      type: object
      properties:
        name: {type: string}
        amount: {type: number, minimum: 0}
        unit: {type: string, optional: true}
```
"""


def recipe() -> Schema:
    return parse_schema_note("schemas/recipe.md", RECIPE)


def with_block(block: str) -> str:
    return f"# A schema\n\n```yaml schema\n{block}\n```\n"


def minimal(**metadata: Any) -> str:
    values = {
        "schemaName": "person",
        "identifierField": "slug",
        "pathTemplate": "People/${slug}.md",
        "pathComponents": ["slug"],
        **metadata,
    }
    lines = "\n".join(f"  {key}: {json.dumps(value)}" for key, value in values.items() if value is not None)
    return with_block(f"metadata:\n{lines}\nfields:\n  slug: {{type: string}}")


# -- a schema note ------------------------------------------------------------------------------------------


def test_a_valid_schema_gives_a_tool_name_and_an_input_schema() -> None:
    schema = recipe()
    assert (schema.tool_name, schema.identifier_field, schema.source) == (
        "upsert_recipe",
        "recipe_id",
        "schemas/recipe.md",
    )
    described = schema.json_schema()
    assert described["type"] == "object" and described["additionalProperties"] is False
    assert described["required"] == ["recipe_id", "category", "title"]
    properties = described["properties"]
    assert list(properties) == [
        "recipe_id",
        "category",
        "title",
        "servings",
        "rating",
        "vegetarian",
        "tags",
        "tried",
        "ingredients",
    ]
    assert properties["category"] == {
        "enum": ["soup", "main", "dessert"],
        "type": "string",
        "description": "Which part of the cookbook",
    }
    assert properties["servings"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 50,
        "description": "How many it feeds",
    }
    assert properties["tags"]["default"] == ["recipe"] and properties["tags"]["items"] == {"type": "string"}
    assert properties["tried"]["format"] == "date"
    assert properties["ingredients"]["items"]["required"] == ["name", "amount"]
    assert all(prop["description"] for prop in properties.values())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("# no block\n", "no ```yaml schema block"),
        (with_block("a: 1") + with_block("b: 2"), "2 ```yaml schema blocks; a schema note holds exactly one"),
        ("```yaml schema\nmetadata: {}\n", "is never closed"),
        (with_block("metadata: [1\nfields: {}"), "the schema block is not valid YAML"),
        (with_block("fields: {a: string}"), "'metadata' is missing or not a mapping"),
        (with_block("metadata: {schemaName: x}"), "'fields' is missing, empty or not a mapping"),
        (minimal(schemaName="Recipe Card"), "schemaName 'Recipe Card' must be lower-case letters, digits and _"),
        (minimal(schemaName="Recipe Card"), "(e.g. 'recipe_card')"),
        (minimal(identifierField="name"), "identifierField 'name' is not one of the fields (slug)"),
        (minimal(pathTemplate="People/${slug}"), "pathTemplate 'People/${slug}' must end with .md"),
        (minimal(pathTemplate="People/${slug}/${other}.md"), "pathTemplate uses ${other}, which is not in"),
        (minimal(pathComponents=["slug", "x"]), "pathComponents names 'x', which pathTemplate does not use"),
        (minimal(pathTemplate="../People/${slug}.md"), "is not a path the server accepts: Parent traversal"),
        (minimal(pathTemplate="People/${slug}-$x.md"), "must be folder names and ${field} parts joined by /"),
        (minimal(pathTemplate=None), "pathTemplate is missing"),
        (minimal(colour="red"), "unknown metadata keys colour"),
    ],
)
def test_invalid_schema_notes_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(SchemaProblem) as caught:
        parse_schema_note("schemas/x.md", text)
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ("slug: {type: text}", "field 'slug' has type 'text'; use one of string, number"),
        ("slug: {type: string, optinal: true}", "field 'slug' has unknown keys optinal"),
        ("slug: {type: string}\nkind: {type: enum}", "field 'kind' is an enum and needs values"),
        (
            "slug: {type: string}\nn: {type: number, minimum: 5, maximum: 1}",
            "field 'n': minimum is greater than maximum",
        ),
        ("slug: {type: string}\nn: {type: number, minimum: low}", "field 'n': minimum must be a number"),
        ("slug: {type: string}\nn: {type: integer, default: 1.5}", "field 'n': its default does not fit"),
        ("slug: {type: array, items: {type: string}}", "path component 'slug' is of type array"),
        ("slug: {type: string, optional: true}", "path component 'slug' must not be optional"),
        ("slug: {type: string}\no: {type: object, properties: {a: {type: nope}}}", "field 'o.a' has type 'nope'"),
    ],
)
def test_invalid_fields_say_what_is_wrong(fields: str, problem: str) -> None:
    metadata = "metadata: {schemaName: p, identifierField: slug, pathTemplate: 'P/${slug}.md', pathComponents: [slug]}"
    with pytest.raises(SchemaProblem) as caught:
        parse_schema_note(
            "schemas/x.md", with_block(f"{metadata}\nfields:\n" + "\n".join(f"  {f}" for f in fields.split("\n")))
        )
    assert problem in str(caught.value)


def test_every_problem_of_a_note_is_named_at_once() -> None:
    text = minimal(schemaName="Bad Name", identifierField="nope", pathTemplate="x/${slug}")
    with pytest.raises(SchemaProblem) as caught:
        parse_schema_note("schemas/x.md", text)
    assert str(caught.value).count(";") >= 2


# -- arguments ------------------------------------------------------------------------------------------------


GOOD = {"recipe_id": "borscht", "category": "soup", "title": "Borscht"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"servings": 0}, "Field 'servings' must be a whole number from 1 to 50, got 0."),
        ({"servings": 2.5}, "Field 'servings' must be a whole number from 1 to 50, got 2.5."),
        ({"servings": "4"}, "Field 'servings' must be a whole number from 1 to 50, got '4'."),
        ({"servings": True}, "Field 'servings' must be a whole number from 1 to 50, got boolean True."),
        ({"rating": 5.5}, "Field 'rating' must be a number from 0 to 5, got 5.5."),
        ({"category": "fish"}, "Field 'category' must be one of 'soup', 'main', 'dessert', got 'fish'."),
        ({"vegetarian": "yes"}, "Field 'vegetarian' must be a boolean, got 'yes'."),
        ({"tried": "2026-02-30"}, "Field 'tried' must be a date 'YYYY-MM-DD', got '2026-02-30'."),
        ({"tried": "30.11.2026"}, "Field 'tried' must be a date 'YYYY-MM-DD'"),
        ({"tags": "soup"}, "Field 'tags' must be an array, got 'soup'."),
        ({"tags": ["soup", 3]}, "Field 'tags[1]' must be a string, got integer 3."),
        ({"ingredients": [{"name": "beet", "amount": -1}]}, "Field 'ingredients[0].amount' must be a number of at"),
        ({"ingredients": [{"name": "beet"}]}, "Missing required field 'ingredients[0].amount'."),
        (
            {"ingredients": [{"name": "beet", "amount": 1, "colour": "red"}]},
            "Unknown field in 'ingredients[0]': colour",
        ),
        ({"colour": "red"}, "Unknown field: colour. Fields: recipe_id, category, title, servings"),
        ({"recipe_id": None}, "Missing required field 'recipe_id'. Short id, lower-case with dashes"),
    ],
)
def test_arguments_are_checked_naming_the_field(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolInputError) as caught:
        recipe().check({**GOOD, **extra})
    assert str(caught.value).startswith(message)


def test_good_arguments_keep_their_values_and_nulls_count_as_not_given() -> None:
    checked = recipe().check({**GOOD, "servings": 4.0, "rating": None, "tried": "2026-11-29"})
    assert checked == {**GOOD, "servings": 4, "tried": "2026-11-29"}
    assert recipe().with_defaults(checked)["tags"] == ["recipe"]


@pytest.mark.parametrize(
    ("recipe_id", "message"),
    [
        ("../evil", "Field 'recipe_id' is part of the note's path (Recipes/${category}/${recipe_id}.md) and must be"),
        ("a/b", "would leave its folder"),
        ("a\\b", "would leave its folder"),
        ("..", "would leave its folder"),
        ("   ", "Field 'recipe_id' is part of the note's path and must not be empty."),
        ("half:half", "which the server refuses: Name a Windows client can't keep"),
        ("bad\x00id", "which the server refuses"),
    ],
)
def test_a_path_component_cannot_leave_its_folder(recipe_id: str, message: str) -> None:
    with pytest.raises(ToolInputError) as caught:
        recipe().check({**GOOD, "recipe_id": recipe_id})
    assert message in str(caught.value)


def test_paths_come_from_the_template() -> None:
    assert recipe().path_for(GOOD) == "Recipes/soup/borscht.md"
    assert recipe().path_for({**GOOD, "recipe_id": "борщ зелений"}) == "Recipes/soup/борщ зелений.md"


# -- end to end through an MCP client ---------------------------------------------------------------------------


def schema_session(vault: LocalVault, **config: Any) -> AbstractAsyncContextManager[Session]:
    """A session on ``vault`` with ``schemas/`` as the schema folder, keeping what the server sends unasked."""
    return session_on(vault, collect_messages=True, **{"schema_dir": "schemas/", "structured_content": True, **config})


@pytest.fixture
def vault(vault: LocalVault) -> LocalVault:
    """The test's vault, seeded with the recipe schema note."""
    seed(vault, "schemas/recipe.md", RECIPE)
    return vault


@pytest.mark.anyio
async def test_a_schema_note_becomes_a_tool_that_creates_then_merges(vault: LocalVault) -> None:
    async with schema_session(vault) as session:
        tools = {tool.name: tool for tool in (await session.client.list_tools()).tools}
        assert {"list_schemas", "reload_schemas", "upsert_recipe"} <= set(tools)
        upsert = tools["upsert_recipe"]
        assert upsert.input_schema == recipe().json_schema()
        assert "Recipes/${category}/${recipe_id}.md" in (upsert.description or "")
        assert upsert.annotations is not None and upsert.annotations.read_only_hint is False

        created = await session.ok("upsert_recipe", recipe_id="borscht", category="soup", title="Borscht", servings=6)
        assert (created["path"], created["action"]) == ("Recipes/soup/borscht.md", "created")
        assert read_frontmatter(session.text("Recipes/soup/borscht.md"), "x")[0] == {
            "recipe_id": "borscht",
            "category": "soup",
            "title": "Borscht",
            "servings": 6,
            "vegetarian": False,
            "tags": ["recipe"],
        }
        # Someone adds a method and a tag of their own; the next upsert merges only what it is given.
        note = session.text("Recipes/soup/borscht.md").replace("  - recipe\n", "  - recipe\n  - family\n")
        await session.ok("write_note", path="Recipes/soup/borscht.md", content=note + "\n## Method\nBoil beets.\n")
        merged = await session.ok(
            "upsert_recipe", recipe_id="borscht", category="soup", title="Borscht", tried="2026-11-29"
        )
        assert merged["action"] == "updated"
        stored = session.text("Recipes/soup/borscht.md")
        assert stored.endswith("---\n\n## Method\nBoil beets.\n")
        fields = read_frontmatter(stored, "x")[0]
        assert fields["tags"] == ["recipe", "family"]  # a default is not forced back onto an existing note
        assert fields["tried"] == "2026-11-29" and "tried: 2026-11-29\n" in stored
        again = await session.ok("upsert_recipe", recipe_id="borscht", category="soup", title="Borscht")
        assert again["action"] == "unchanged"


@pytest.mark.anyio
async def test_bad_arguments_and_escaping_components_send_nothing(vault: LocalVault) -> None:
    async with schema_session(vault) as session:
        await session.tool_names()  # the schemas are loaded by now
        before = len(session.vault.faults.seen)
        text, is_error, _ = await session.call("upsert_recipe", recipe_id="../../x", category="soup", title="x")
        assert is_error and "would leave its folder" in text
        text, is_error, _ = await session.call("upsert_recipe", recipe_id="x", category="soup", title="x", servings=99)
        assert is_error and text == "Field 'servings' must be a whole number from 1 to 50, got 99."
        text, is_error, _ = await session.call("upsert_recipe", recipe_id="x", category="soup")
        assert is_error and text.startswith("Missing required field 'title'.")
        assert session.vault.faults.seen[before:] == []


@pytest.mark.anyio
async def test_invalid_schema_notes_are_listed_and_logged_and_never_stop_the_server(
    vault: LocalVault, caplog: pytest.LogCaptureFixture
) -> None:
    seed(vault, "schemas/broken.md", minimal(schemaName="Bad Name"))
    seed(vault, "schemas/zz-copy.md", RECIPE)
    seed(vault, "schemas/readme.md", "# About these schemas\n")
    with caplog.at_level(logging.WARNING, logger="teamvault_mcp"):
        async with schema_session(vault) as session:
            listed = await session.ok("list_schemas")
            names = await session.tool_names()
    assert [schema["tool"] for schema in listed["schemas"]] == ["upsert_recipe"]
    problems = {problem["source"]: problem["problem"] for problem in listed["problems"]}
    assert set(problems) == {"schemas/broken.md", "schemas/zz-copy.md", "schemas/readme.md"}
    assert "schemaName 'Bad Name'" in problems["schemas/broken.md"]
    assert problems["schemas/zz-copy.md"] == "schemaName 'recipe' is already defined by schemas/recipe.md; ignored"
    assert "no ```yaml schema block" in problems["schemas/readme.md"]
    assert "upsert_recipe" in names and "read_note" in names
    logged = [record.getMessage() for record in caplog.records]
    assert any(line.startswith("schema note schemas/broken.md not loaded: ") for line in logged)


@pytest.mark.anyio
async def test_reload_picks_up_a_new_schema_and_tells_the_host(vault: LocalVault) -> None:
    async with schema_session(vault) as session:
        assert "upsert_person" not in await session.tool_names()
        seed(vault, "schemas/person.md", minimal())
        reloaded = await session.ok("reload_schemas")
        assert reloaded["added"] == ["upsert_person"] and reloaded["removed"] == []
        assert "upsert_person" in await session.tool_names()
        assert any(
            "tools/list_changed" in repr(message) or "ToolListChanged" in repr(message) for message in session.messages
        )
        created = await session.ok("upsert_person", slug="ada")
        assert created["path"] == "People/ada.md"


@pytest.mark.anyio
async def test_a_read_only_server_lists_schemas_but_has_no_schema_tools(vault: LocalVault) -> None:
    async with schema_session(vault, read_only=True) as session:
        names = await session.tool_names()
        listed = await session.ok("list_schemas")
    assert "list_schemas" in names
    assert not [name for name in names if name.startswith("upsert_") or name == "reload_schemas"]
    assert [schema["tool"] for schema in listed["schemas"]] == ["upsert_recipe"]


@pytest.mark.anyio
async def test_without_a_schema_folder_there_are_no_schema_tools(vault: LocalVault) -> None:
    async with schema_session(vault, schema_dir=None) as session:
        names = await session.tool_names()
    assert not {"list_schemas", "reload_schemas", "upsert_recipe"} & set(names)


@pytest.mark.anyio
async def test_a_slow_vault_at_start_up_delays_tools_list_by_the_limit_only(
    vault: LocalVault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace_module, "SCHEMA_LOAD_LIMIT", 0.5)
    vault.faults.add("GET", "/api/projects/*/files", Fault.hang(at_most=60))
    async with schema_session(vault) as session:
        started = anyio.current_time()
        names = await session.tool_names()
        waited = anyio.current_time() - started
        listed = await session.ok("list_schemas")
        assert "upsert_recipe" not in names
        assert_within(waited, GENEROUS, "tools/list while the schema notes hang for 60 s")  # 0.5 s + grace
        assert listed["status"].startswith("not loaded at start-up: ")
        assert listed["status"].endswith("Call reload_schemas to try again.")
        reloaded = await session.ok("reload_schemas")  # the vault answers again
        assert reloaded["added"] == ["upsert_recipe"]


@pytest.mark.anyio
async def test_write_scopes_and_the_audit_log_see_the_templated_path(vault: LocalVault, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    async with schema_session(vault, write_prefixes=("Recipes/soup/",), audit_log=log) as session:
        text, is_error, _ = await session.call("upsert_recipe", recipe_id="cake", category="dessert", title="Cake")
        assert is_error and text.startswith("upsert_recipe refused: path 'Recipes/dessert/cake.md' is outside")
        await session.ok("upsert_recipe", recipe_id="borscht", category="soup", title="Borscht")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["outcome"], line["paths"]) for line in lines] == [
        ("failed", ["Recipes/dessert/cake.md"]),
        ("applied", ["Recipes/soup/borscht.md"]),
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("block", ["", "# people wrote this\n", "base: &base {servings: 4}\n<<: *base\n"])
async def test_upsert_merges_into_empty_comment_only_and_merge_key_blocks(vault: LocalVault, block: str) -> None:
    seed(vault, "Recipes/soup/borscht.md", f"---\n{block}---\n## Method\n")
    async with schema_session(vault) as session:
        merged = await session.ok("upsert_recipe", recipe_id="borscht", category="soup", title="Borscht")
    assert merged["action"] == "updated"
    stored = session.text("Recipes/soup/borscht.md")
    assert stored == f"---\n{block}recipe_id: borscht\ncategory: soup\ntitle: Borscht\n---\n## Method\n"
    assert merged["frontmatter"] == read_frontmatter(stored, "x")[0]


def _union_types(schema: Any, where: str) -> list[str]:
    """Where ``schema`` holds a ``type`` given as a list (a union type), anywhere inside it."""
    found: list[str] = []
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), list):
            found.append(f"{where}: {schema['type']}")
        for key, value in schema.items():
            found += _union_types(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _union_types(value, f"{where}/{index}")
    return found


def test_no_schema_uses_a_union_type_which_strict_validators_refuse() -> None:
    """Ajv's strict mode and the Inspector's --strict warn on ``"type": ["string", "null"]`` and refuse
    ``"type": ["string", "array"]``: every input and output schema, a schema note's tool's included, says it
    with ``anyOf``. (tests/interop compiles them with Ajv itself when Node is here.)"""
    from teamvault_mcp.tools.table import tools_for

    found = [
        problem
        for tool in tools_for(read_only=False, schema_list=[recipe()])
        for part, schema in (("input", tool.input_schema()), ("output", tool.output_schema))
        for problem in _union_types(schema, f"{tool.name} {part}")
    ]
    assert found == []
