"""Schema notes: a kind of structured note, described in the vault, that becomes a tool. Pure.

This module reads a schema note into a :class:`~teamvault_mcp.text.schemas.Schema`; ``schemas.py`` holds
what a schema is (its fields, their checks, the path of its notes).

A schema note (in the folder ``TEAM_VAULT_SCHEMA_DIR``) holds one fenced block
```` ```yaml schema ```` with two parts::

    metadata:
      schemaName: recipe                  # the tool is upsert_recipe
      description: A recipe of the family cookbook.
      identifierField: recipe_id
      pathTemplate: Recipes/${category}/${recipe_id}.md
      pathComponents: [category, recipe_id]
    fields:
      recipe_id: {type: string, description: Short id, e.g. borscht}
      category: {type: enum, values: [soup, main, dessert]}
      servings: {type: number, minimum: 1, maximum: 50, optional: true}
      tags: {type: array, items: {type: string}, default: []}

Field types: ``string``, ``number``, ``integer``, ``boolean``, ``date`` (YYYY-MM-DD),
``enum`` (``values``), ``array`` (``items``: a field), ``object`` (``properties``: fields;
without them any object). A field may have ``description``, ``optional``, ``default``,
``minimum``/``maximum`` (numbers). A field is required unless it is optional or has a
default. :func:`parse_schema_note` turns a note into a :class:`Schema` or raises
:class:`SchemaProblem` naming everything wrong with it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from teamvault_mcp.errors import InvalidPathError, ToolInputError
from teamvault_mcp.text.paths import stored_path_of
from teamvault_mcp.text.schemas import PLACEHOLDER, Field, Schema, is_number

TYPES = ("string", "number", "integer", "boolean", "date", "enum", "array", "object")

#: Types a path component may have: they give one readable path segment.
COMPONENT_TYPES = ("string", "number", "integer", "date", "enum")

FIELD_KEYS = frozenset(
    {"type", "description", "optional", "default", "minimum", "maximum", "items", "properties", "values", "enum"}
)

METADATA_KEYS = frozenset({"schemaName", "description", "identifierField", "pathTemplate", "pathComponents"})

SCHEMA_NAME = re.compile(r"[a-z][a-z0-9_]{0,55}")

FENCE = re.compile(r"^(```+|~~~+)[ \t]*yaml[ \t]+schema[ \t]*$")


class SchemaProblem(Exception):
    """What is wrong with a schema note (one or more problems, joined)."""


def schema_block(text: str) -> str:
    """The text of the note's one ```` ```yaml schema ```` block."""
    lines = text.splitlines()
    blocks: list[str] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index].strip())
        if opening is None:
            index += 1
            continue
        fence = opening.group(1)
        end = next((j for j in range(index + 1, len(lines)) if lines[j].strip().startswith(fence)), None)
        if end is None:
            raise SchemaProblem(f"the ```yaml schema block that starts on line {index + 1} is never closed")
        blocks.append("\n".join(lines[index + 1 : end]))
        index = end + 1
    if not blocks:
        raise SchemaProblem("no ```yaml schema block (a fenced code block whose info line is 'yaml schema')")
    if len(blocks) > 1:
        raise SchemaProblem(f"{len(blocks)} ```yaml schema blocks; a schema note holds exactly one")
    return blocks[0]


def parse_schema_note(path: str, text: str) -> Schema:
    from teamvault_mcp.text import yamltext

    block = schema_block(text)
    try:
        raw = yamltext.json_of(yamltext.load(block).data)
    except yamltext.YamlProblem as problem:
        where = f" (line {problem.line + 1} of the block)" if problem.line is not None else ""
        if problem.limit:
            raise SchemaProblem(f"the schema block is not read{where}: {problem.problem}") from None
        raise SchemaProblem(f"the schema block is not valid YAML{where}: {problem.problem}") from None
    if not isinstance(raw, dict):
        raise SchemaProblem("the schema block must be a mapping with 'metadata' and 'fields'")
    problems: list[str] = []
    metadata = raw.get("metadata")
    raw_fields = raw.get("fields")
    unknown = sorted(set(raw) - {"metadata", "fields"})
    if unknown:
        problems.append(f"unknown top-level keys {', '.join(unknown)} (only metadata and fields)")
    if not isinstance(metadata, dict):
        raise SchemaProblem("; ".join([*problems, "'metadata' is missing or not a mapping"]))
    if not isinstance(raw_fields, dict) or not raw_fields:
        raise SchemaProblem("; ".join([*problems, "'fields' is missing, empty or not a mapping"]))
    unknown = sorted(set(metadata) - METADATA_KEYS)
    if unknown:
        problems.append(f"unknown metadata keys {', '.join(unknown)} (known: {', '.join(sorted(METADATA_KEYS))})")
    fields = tuple(_field(str(name), spec, problems) for name, spec in raw_fields.items())
    name = metadata.get("schemaName")
    if not isinstance(name, str) or not SCHEMA_NAME.fullmatch(name):
        suggestion = re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_") if isinstance(name, str) else ""
        hint = f" (e.g. {suggestion!r})" if suggestion and SCHEMA_NAME.fullmatch(suggestion) else ""
        problems.append(
            f"schemaName {name!r} must be lower-case letters, digits and _, starting with a letter{hint}: "
            "the tool is upsert_<schemaName>"
        )
    description = metadata.get("description", "")
    if not isinstance(description, str):
        problems.append("description must be text")
    by_name = {f.name: f for f in fields}
    identifier = metadata.get("identifierField")
    if identifier not in by_name:
        problems.append(f"identifierField {identifier!r} is not one of the fields ({', '.join(by_name)})")
    elif by_name[identifier].optional:
        problems.append(f"identifierField {identifier!r} must not be optional")
    template = metadata.get("pathTemplate")
    components = metadata.get("pathComponents")
    if not isinstance(components, list) or not all(isinstance(c, str) for c in components):
        problems.append("pathComponents must be a list of field names")
        components = []
    if not isinstance(template, str) or not template.strip():
        problems.append("pathTemplate is missing (e.g. 'Recipes/${category}/${recipe_id}.md')")
    else:
        _check_template(template, components, by_name, problems)
    if problems:
        raise SchemaProblem("; ".join(problems))
    assert isinstance(name, str) and isinstance(template, str) and isinstance(identifier, str)
    return Schema(
        name=name,
        description=str(description),
        identifier_field=identifier,
        path_template=template,
        path_components=tuple(components),
        fields=fields,
        source=path,
    )


def _check_template(template: str, components: list[str], by_name: dict[str, Field], problems: list[str]) -> None:
    used = PLACEHOLDER.findall(template)
    for name in used:
        if name not in components:
            problems.append(f"pathTemplate uses ${{{name}}}, which is not in pathComponents")
    for name in components:
        if name not in used:
            problems.append(f"pathComponents names {name!r}, which pathTemplate does not use")
        elif name not in by_name:
            problems.append(f"path component {name!r} is not one of the fields")
        elif by_name[name].type not in COMPONENT_TYPES:
            problems.append(
                f"path component {name!r} is of type {by_name[name].type}; it must be a string, number, integer, "
                "date or enum"
            )
        elif by_name[name].optional and not by_name[name].has_default:
            problems.append(f"path component {name!r} must not be optional (or must have a default)")
    if not template.endswith(".md"):
        problems.append(f"pathTemplate {template!r} must end with .md")
    try:
        stored = stored_path_of(PLACEHOLDER.sub("x", template), incoming=True)
    except InvalidPathError as error:
        problems.append(f"pathTemplate {template!r} is not a path the server accepts: {error}")
        return
    if stored.count("/") != template.count("/") or "$" in PLACEHOLDER.sub("x", template):
        problems.append(f"pathTemplate {template!r} must be folder names and ${{field}} parts joined by /")


def _field(name: str, spec: Any, problems: list[str], prefix: str = "") -> Field:
    where = f"field {(prefix + name)!r}"
    if isinstance(spec, str) and spec in TYPES:  # the short form "servings: number"
        spec = {"type": spec}
    if not isinstance(spec, dict):
        problems.append(f"{where} must be a mapping with a type")
        return Field(name, "string")
    unknown = sorted(set(spec) - FIELD_KEYS)
    if unknown:
        problems.append(f"{where} has unknown keys {', '.join(unknown)}")
    kind = spec.get("type")
    if kind not in TYPES:
        problems.append(f"{where} has type {kind!r}; use one of {', '.join(TYPES)}")
        kind = "string"
    values = spec.get("values", spec.get("enum", []))
    if kind == "enum" and (not isinstance(values, list) or not values):
        problems.append(f"{where} is an enum and needs values: [a, b, …]")
        values = []
    bounds = []
    for bound in ("minimum", "maximum"):
        value = spec.get(bound)
        if value is not None and not is_number(value):
            problems.append(f"{where}: {bound} must be a number")
            value = None
        if value is not None and kind not in ("number", "integer"):
            problems.append(f"{where}: {bound} applies to numbers only")
        bounds.append(value)
    low, high = bounds
    if low is not None and high is not None and low > high:
        problems.append(f"{where}: minimum is greater than maximum")
    items = None
    if kind == "array":
        raw_items = spec.get("items")
        items = _field(f"{name}[]", raw_items, problems, prefix) if raw_items is not None else None
    properties = None
    if kind == "object" and spec.get("properties") is not None:
        raw = spec["properties"]
        if not isinstance(raw, dict):
            problems.append(f"{where}: properties must be a mapping of fields")
        else:
            properties = tuple(_field(str(key), value, problems, f"{prefix}{name}.") for key, value in raw.items())
    optional = spec.get("optional", False)
    if not isinstance(optional, bool):
        problems.append(f"{where}: optional must be true or false")
        optional = False
    description = spec.get("description", "")
    result = Field(
        name=name,
        type=kind,
        description=description if isinstance(description, str) else str(description),
        optional=optional,
        minimum=bounds[0],
        maximum=bounds[1],
        values=tuple(values) if isinstance(values, list) else (),
        items=items,
        properties=properties,
    )
    if "default" in spec:
        try:
            default = result.check(spec["default"], f"{prefix}{name}") if spec["default"] is not None else None
        except ToolInputError as error:
            problems.append(f"{where}: its default does not fit: {error}")
        else:
            result = dataclasses.replace(result, default=default)
    return result
