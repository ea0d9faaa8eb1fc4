"""No note can blow up the front matter tools: YAML alias bombs, huge or deep blocks, recursive aliases and
values the YAML library cannot convert are refused quickly, with a message naming the note, and nothing is
written; the call's budget holds for the CPU work of parsing too (a clock that moves as the parse goes)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from support.fakes import FakeClock
from support.policies import FAST
from support.seeding import seed
from support.sessions import Session, session_on, workspace_on

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.text import frontmatter, yamltext
from teamvault_mcp.text.frontmatter import FrontMatterError
from teamvault_mcp.text.schema_notes import SchemaProblem, parse_schema_note

# -- the bombs --------------------------------------------------------------------------------------------


def laughs(levels: int = 9, width: int = 9) -> str:
    """The classic "billion laughs": each list holds ``width`` aliases of the one before (9**9 strings)."""
    lines = [f"lol0: &lol0 [{', '.join(['lol'] * width)}]"]
    lines += [f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def nested_mappings(levels: int = 30) -> str:
    """Each mapping holds the one before twice, as block-style mappings: 2**30 leaves."""
    lines = ["m0: &m0 {x: lol}"]
    lines += [f"m{i}: &m{i}\n  left: *m{i - 1}\n  right: *m{i - 1}" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def merge_bomb(levels: int = 30) -> str:
    """Merge keys that bring in a mapping whose list holds the one before twice."""
    lines = ["b0: &b0 {x: lol}"]
    lines += [f"b{i}: &b{i}\n  <<: *b{i - 1}\n  more: [*b{i - 1}, *b{i - 1}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def just_past_the_limit() -> str:
    """An alias bomb that expands to 200,000 strings: past MAX_VALUES, yet small enough to be read whole."""
    lines = ["a0: &a0 [" + ", ".join(["x"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 5)]
    return "\n".join([*lines, "top: [*a4, *a4]"]) + "\n"


BOMBS = {
    "billion laughs": laughs(),
    "nested mappings": nested_mappings(),
    "merge keys": merge_bomb(),
    "just past the limit": just_past_the_limit(),
}


def note(block: str, body: str = "The body.\n") -> str:
    return f"---\n{block}---\n{body}"


@pytest.mark.parametrize("name", list(BOMBS))
def test_an_alias_bomb_is_refused_when_read_and_when_updated(name: str) -> None:
    text = note(BOMBS[name])
    assert len(BOMBS[name]) < 2000  # a few hundred bytes that would expand to gigabytes
    for attempt in (
        lambda: frontmatter.read(text, "bomb.md"),
        lambda: frontmatter.update(text, {"status": "done"}, [], "bomb.md"),
        lambda: frontmatter.update(text, {}, ["lol0", "m0", "b0", "a0"], "bomb.md"),
    ):
        with pytest.raises(FrontMatterError) as caught:
            attempt()
        message = str(caught.value)
        assert message.startswith("The front matter of bomb.md is not read: with its aliases (*name) expanded it ")
        assert "read_note" in message and "edit_note" in message


def test_aliases_within_the_limits_are_read_expanded() -> None:
    fields = frontmatter.read(note(laughs(levels=4)), "n.md")[0]  # 9**4 = 6,561 strings
    assert fields["lol3"] == [[[["lol"] * 9] * 9] * 9] * 9
    block = "base: &base [a, b]\nfirst: *base\nsecond: *base\n"
    assert frontmatter.read(note(block), "n.md")[0] == {"base": ["a", "b"], "first": ["a", "b"], "second": ["a", "b"]}


def test_a_block_over_64_kib_is_not_read_and_one_at_the_limit_is() -> None:
    filler = "x" * (yamltext.MAX_BLOCK_BYTES - len("k: \n"))
    at_limit = f"k: {filler}\n"
    assert len(at_limit.encode()) == yamltext.MAX_BLOCK_BYTES
    assert frontmatter.read(note(at_limit), "n.md")[0] == {"k": filler}
    over = f"k: {filler}é\n"  # one character more, two bytes in UTF-8
    with pytest.raises(FrontMatterError) as caught:
        frontmatter.read(note(over), "big.md")
    assert str(caught.value).startswith(
        "The front matter of big.md is not read: it is 65,538 bytes, more than the 64 KiB (65,536 bytes) that are "
        "read as fields. Read the note with read_note and change it with edit_note instead."
    )


def test_a_change_that_would_make_the_block_too_big_writes_nothing() -> None:
    with pytest.raises(FrontMatterError) as caught:
        frontmatter.update(note("a: 1\n"), {"long": "x" * yamltext.MAX_BLOCK_BYTES}, [], "n.md")
    assert str(caught.value).startswith("The front matter of n.md would be 65,548 bytes after this change, more than")
    assert "Nothing was written" in str(caught.value)
    for text in (note("a: 1\n"), "A note without front matter.\n"):  # a long multi-line value, either way
        with pytest.raises(FrontMatterError, match=r"^The front matter of n.md would be 144,0\d\d bytes after"):
            frontmatter.update(text, {"long": "line\n" * 24_000}, [], "n.md")


def nested(levels: int) -> str:
    """A block whose innermost value is ``levels`` deep, counting the top-level mapping as 1."""
    return "".join("  " * depth + f"k{depth}:\n" for depth in range(levels - 2)) + "  " * (levels - 2) + "k: leaf\n"


def test_nesting_deeper_than_50_levels_is_refused_naming_the_line() -> None:
    fields = frontmatter.read(note(nested(50)), "n.md")[0]
    for depth in range(48):
        fields = fields[f"k{depth}"]
    assert fields == {"k": "leaf"}
    with pytest.raises(FrontMatterError, match=r"^The front matter of n.md is not read, line 51: it is nested more"):
        frontmatter.read(note(nested(51)), "n.md")
    flow = "a: " + "[" * 20_000 + "]" * 20_000 + "\n"  # Python's own recursion limit is 1,000
    with pytest.raises(FrontMatterError, match="nested more than 50 levels deep"):
        frontmatter.read(note(flow), "n.md")


def test_a_value_nested_too_deep_to_read_back_is_refused_before_writing() -> None:
    deep: Any = "leaf"
    for _ in range(60):
        deep = {"k": deep}
    with pytest.raises(FrontMatterError, match=r"^tree nest\(s\) lists and objects more than 48 levels deep"):
        frontmatter.update(note("a: 1\n"), {"tree": deep}, [], "n.md")
    for _ in range(12):  # 48 levels inside the field is fine
        deep = deep["k"]
    assert frontmatter.read(frontmatter.update(note("a: 1\n"), {"tree": deep}, [], "n.md"), "n.md")[0]["tree"] == deep


@pytest.mark.parametrize(("block", "line"), [("a: &x [1, *x]\n", 2), ("a: &x\n  b: *x\n", 3), ("a: &x {<<: *x}\n", 2)])
def test_an_alias_inside_the_value_it_names_is_an_error(block: str, line: int) -> None:
    with pytest.raises(FrontMatterError, match=rf"^Invalid front matter in n.md, line {line}: the alias \*x is inside"):
        frontmatter.read(note(block), "n.md")


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ("a: " + "1" * 5000 + "\n", "a value cannot be converted (ValueError: Exceeds the limit (4300 digits)"),
        ("a: !!int abc\n", "a value cannot be converted (ValueError: invalid literal for int()"),
        ("a: !!float abc\n", "a value cannot be converted (ValueError: could not convert string to float"),
        ("a: !!bool maybe\n", "a value cannot be converted (KeyError: 'maybe')"),
    ],
)
def test_a_value_the_yaml_library_cannot_convert_is_an_error_not_a_crash(block: str, problem: str) -> None:
    for attempt in (
        lambda: frontmatter.read(note(block), "n.md"),
        lambda: frontmatter.update(note(block), {"b": 1}, [], "n.md"),
    ):
        with pytest.raises(FrontMatterError) as caught:
            attempt()
        assert str(caught.value).startswith(f"Invalid front matter in n.md: {problem}")


def test_a_date_that_does_not_exist_reads_as_text_as_in_obsidian() -> None:
    text = note("due: 2024-02-30\nwhen: 2024-13-01 10:00:00\nreal: 2024-02-29\n")
    assert frontmatter.read(text, "n.md")[0] == {
        "due": "2024-02-30",
        "when": "2024-13-01 10:00:00",
        "real": "2024-02-29",
    }
    changed = frontmatter.update(text, {"status": "done"}, [], "n.md")
    assert changed == note("due: 2024-02-30\nwhen: 2024-13-01 10:00:00\nreal: 2024-02-29\nstatus: done\n")


def test_the_check_is_called_while_parsing_and_converting_and_stops_the_work() -> None:
    text = note("".join(f"k{index}: [a, b, c]\n" for index in range(3000)))
    calls: list[int] = []
    frontmatter.read(text, "n.md", check=lambda: calls.append(1))
    # Parsing checks once per 256 nodes (5 a line: key, list, 3 items), converting once per 256 values (4 a line).
    assert len(calls) == 3000 * 5 // yamltext.CHECK_EVERY + 3000 * 4 // yamltext.CHECK_EVERY

    class Stop(Exception):
        pass

    def stop_at_the_tenth() -> None:
        calls.append(1)
        if len(calls) == 10:
            raise Stop

    calls.clear()
    with pytest.raises(Stop):
        frontmatter.update(text, {"status": "done"}, [], "n.md", check=stop_at_the_tenth)
    assert len(calls) == 10


def test_a_schema_block_has_the_same_limits() -> None:
    def schema(block: str) -> str:
        return f"# Schema\n\n```yaml schema\n{block}```\n"

    with pytest.raises(SchemaProblem) as caught:
        parse_schema_note("schemas/bomb.md", schema(laughs()))
    assert str(caught.value).startswith("the schema block is not read: with its aliases (*name) expanded it ")
    with pytest.raises(SchemaProblem, match=r"^the schema block is not read \(line 50 of the block\): it is nested"):
        parse_schema_note("schemas/deep.md", schema(nested(51)))
    with pytest.raises(SchemaProblem, match=r"^the schema block is not valid YAML \(line 1 of the block\): the alias"):
        parse_schema_note("schemas/self.md", schema("metadata: &m {a: *m}\n"))
    with pytest.raises(SchemaProblem, match=r"^the schema block is not read: it is 65,5\d\d bytes"):
        parse_schema_note("schemas/big.md", schema("metadata: " + "x" * yamltext.MAX_BLOCK_BYTES + "\n"))


# -- through an MCP client ----------------------------------------------------------------------------------


class TickingClock(FakeClock):
    """A fake clock that moves ``tick`` seconds each time it is read: CPU work that reads it often takes long."""

    def __init__(self, tick: float) -> None:
        super().__init__()
        self.tick = tick

    def monotonic(self) -> float:
        self.advance(self.tick)
        return super().monotonic()


def limited_session(vault: LocalVault, **options: Any) -> AbstractAsyncContextManager[Session]:
    """A session on ``vault`` whose calls get 10 s unless ``options`` say otherwise (``clock``, configuration)."""
    return session_on(vault, **{"call_budget": 10.0, **options})


@pytest.mark.anyio
async def test_the_tools_refuse_a_bomb_naming_the_note_and_write_nothing(vault: LocalVault) -> None:
    async with limited_session(vault) as session:
        session.seed("bomb.md", note(laughs()))
        for tool, arguments in [
            ("read_frontmatter", {}),
            ("update_frontmatter", {"set": {"status": "done"}}),
            ("update_frontmatter", {"remove": ["lol0"], "dryRun": True}),
        ]:
            text, is_error, _ = await session.call(tool, path="bomb.md", **arguments)
            assert is_error and text.startswith("The front matter of bomb.md is not read: with its aliases"), text
            assert len(text) < 400 and "may or may not" not in text
        assert session.operations() == ["CREATE"]
        text, is_error, _ = await session.call("read_note", path="bomb.md")  # the note itself stays readable
        assert not is_error and "lol8" in text


@pytest.mark.anyio
async def test_the_budget_holds_for_the_cpu_work_of_reading_front_matter(vault: LocalVault) -> None:
    # Each reading of the clock moves it 50 ms. The call reads it 3 or 4 times outside the YAML work; reading
    # these 16,000 nodes and 12,000 values (a check every 256) reads it over 100 times, so with a 2 s budget
    # the parse stops about halfway, and the requests still have time (an attempt's own limit is real time).
    block = "".join(f"k{index}: [a, b]\n" for index in range(4000))
    async with limited_session(vault, clock=TickingClock(0.05), call_budget=2.0) as session:
        session.seed("big.md", note(block))
        for tool, arguments in [("read_frontmatter", {}), ("update_frontmatter", {"set": {"status": "done"}})]:
            text, is_error, _ = await session.call(tool, path="big.md", **arguments)
            assert is_error, f"{tool} finished within the budget: the clock did not move as expected"
            assert text.startswith(
                "The front matter of big.md took longer to read than this call's 2 s budget, so it was stopped; "
                "nothing was written."
            ), text
        assert session.operations() == ["CREATE"]


@pytest.mark.anyio
async def test_a_schema_note_bomb_is_a_listed_problem_and_the_other_schemas_load(vault: LocalVault) -> None:
    schema = (
        "```yaml schema\nmetadata:\n  schemaName: person\n  identifierField: slug\n  pathTemplate: People/${slug}.md\n"
        "  pathComponents: [slug]\nfields:\n  slug: {type: string}\n```\n"
    )
    seed(vault, "schemas/bomb.md", f"```yaml schema\n{laughs()}```\n")
    seed(vault, "schemas/person.md", schema)
    async with limited_session(vault, schema_dir="schemas/", structured_content=True) as session:
        text, is_error, listed = await session.call("list_schemas")
        assert not is_error, text
        assert [schema["tool"] for schema in listed["schemas"]] == ["upsert_person"]
        (problem,) = listed["problems"]
        assert problem["source"] == "schemas/bomb.md"
        assert problem["problem"].startswith("the schema block is not read: with its aliases (*name) expanded it ")
        assert len(text) < 2000
        text, is_error, _ = await session.call("upsert_person", slug="ada")
        assert not is_error, text


def test_a_cancel_stops_the_parse_of_a_big_block(vault: LocalVault) -> None:
    # The host's cancel arrives once the note is downloaded, while its YAML is parsed: the parse stops at its next
    # check. (The clock stands in for the host: it cancels when the parse first looks at the time.)
    import traceback

    from teamvault_mcp.errors import CallCancelledError
    from teamvault_mcp.tools.frontmatter import read_frontmatter
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.interrupt import CancelToken
    from teamvault_mcp.vault.retry import Budget

    token = CancelToken()
    checks: list[float] = []

    class CancellingClock(FakeClock):
        def monotonic(self) -> float:
            if any(frame.filename.endswith("yamltext.py") for frame in traceback.extract_stack()):
                checks.append(self.now)
                token.cancel()
            return super().monotonic()

    block = "".join(f"k{index}: [a, b]\n" for index in range(4000))
    seed(vault, "big.md", note(block))
    clock = CancellingClock()
    budget = Budget(30, clock)
    client = TeamVaultClient(vault.url, vault.api_key, budget=budget, token=token, clock=clock, policy=FAST)
    try:
        with pytest.raises(CallCancelledError):
            read_frontmatter(workspace_on(vault, clock=clock).context(client, budget, token), {"path": "big.md"})
    finally:
        client.close()
    assert len(checks) == 1  # the first check saw the cancel; without it the parse reads the clock ~100 times
