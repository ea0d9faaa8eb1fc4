"""Races between real MCP server processes on one vault: nothing acknowledged is ever lost.

Sixteen ``teamvault-mcp`` child processes share a local vault and are sent their calls
at the same moment over stdio, as sixteen agents would: once with the vault's
conditional writes off (it then cannot check ``If-Match``, as today's Team Vault server
cannot) and once with them on. Checked by counting, never by timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest
from support.agents import Agent, call_all, initialize, text_of
from support.env import agent_env
from support.seeding import put, text

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.tools.writing.history import check_history, to_keep
from teamvault_mcp.vault.records import VaultVersion

AGENTS = 16
ROUNDS = 40
RECIPE_AGENTS = 8


@pytest.fixture(scope="module")
def vault(module_vault: LocalVault) -> LocalVault:
    """The module's one vault: the agents' processes start once for all its tests."""
    return module_vault


@pytest.fixture(params=[False, True], ids=["history", "conditional"])
def server_kind(vault: LocalVault, request: pytest.FixtureRequest) -> Iterator[None]:
    """The vault without conditional writes (today's server), then with them."""
    vault.state.conditional_writes = request.param
    yield
    vault.state.conditional_writes = True


@pytest.fixture(scope="module")
def agents(vault: LocalVault, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Agent]]:
    env = agent_env(vault, str(tmp_path_factory.mktemp("home")))  # no cache: each agent reads the note afresh
    started = [Agent(env) for _ in range(AGENTS)]
    try:
        initialize(started, "race")
        yield started
    finally:
        for agent in started:
            agent.close()


def history_of(vault: LocalVault, path: str) -> list[str]:
    store, project = vault.store, vault.project_id
    file_id = store.list_files(project, path=path, prefix=None, include_deleted=False)[0].id
    versions = sorted(store.versions(project, file_id), key=lambda v: v["versionNumber"])
    return [store.version_content(project, file_id, v["id"]).decode() for v in versions]


def test_sixteen_agents_appending_at_once_all_keep_their_line(
    vault: LocalVault, agents: list[Agent], server_kind: None
) -> None:
    put(vault, "log.md", "# Team log\n\n## Log\n\n## Done\n")
    calls = [
        ("edit_note", {"path": "log.md", "edits": [{"oldText": "## Log\n", "newText": f"## Log\n- entry {n}\n"}]})
        for n in range(AGENTS)
    ]
    results = call_all(agents, calls)
    failed = [text_of(result) for result in results if result.get("isError")]
    assert not failed, failed
    lines = text(vault, "log.md").splitlines()
    assert sorted(line for line in lines if line.startswith("- entry")) == sorted(f"- entry {n}" for n in range(AGENTS))


def test_two_agents_racing_with_one_expected_hash_never_both_win(
    vault: LocalVault, agents: list[Agent], server_kind: None
) -> None:
    """Forty rounds: each success is in the final note; a conflict's change is not; never two successes."""
    wins = 0
    for round_number in range(ROUNDS):
        base = f"# Round {round_number}\na: open\nb: open\n"
        expected = put(vault, "race.md", base)
        calls = [
            (
                "edit_note",
                {
                    "path": "race.md",
                    "edits": [{"oldText": f"{side}: open", "newText": f"{side}: done"}],
                    "expectedHash": expected,
                },
            )
            for side in ("a", "b")
        ]
        results = call_all(agents[:2], calls)
        won = [not result.get("isError") for result in results]
        final = text(vault, "race.md")
        assert sum(won) <= 1, (round_number, final, [text_of(r) for r in results])
        for side, success in zip(("a", "b"), won, strict=True):
            assert (f"{side}: done" in final) == success, (round_number, side, final, [text_of(r) for r in results])
        wins += sum(won)
    assert wins >= ROUNDS // 2  # a round where neither wins is honest, but it must be the exception


def test_the_readme_recipe_read_edit_with_the_hash_retry_on_conflict_gets_everyone_through(
    vault: LocalVault, agents: list[Agent], server_kind: None
) -> None:
    """Eight agents each read, edit with expectedHash, and on a conflict read again: all eight land.

    They read at the same moment, so every round is a storm of writes that all passed their
    check. Each success is in the final note. (A losing attempt's line can stay in the note
    too when several put-backs cross: lines are only ever added back, never guessed away —
    the README says so. Against a server with conditional writes there are no such copies.)
    """
    put(vault, "recipe.md", "# Log\n")
    pending = dict(enumerate(agents[:RECIPE_AGENTS]))
    for _ in range(4 * RECIPE_AGENTS):
        if not pending:
            break
        reads = call_all(list(pending.values()), [("read_note", {"path": "recipe.md"})] * len(pending))
        calls = [
            (
                "edit_note",
                {
                    "path": "recipe.md",
                    "edits": [{"oldText": "# Log\n", "newText": f"# Log\n- entry {number}\n"}],
                    "expectedHash": read["content"][0]["text"][len("[contentHash: ") : len("[contentHash: ") + 12],
                },
            )
            for number, read in zip(pending, reads, strict=True)
        ]
        results = call_all(list(pending.values()), calls)
        for number, result in zip(list(pending), results, strict=True):
            if not result.get("isError"):
                del pending[number]
                assert f"- entry {number}" in text(vault, "recipe.md"), (  # a success is in the note at once
                    [text_of(r) for r in results],
                    history_of(vault, "recipe.md"),
                )
            else:
                assert text_of(result).startswith("Conflict"), text_of(result)
    assert not pending, f"agents {sorted(pending)} never got their edit in"
    lines = text(vault, "recipe.md").splitlines()
    assert set(lines[1:]) == {f"- entry {n}" for n in range(RECIPE_AGENTS)}
    if vault.state.conditional_writes:
        assert len(lines[1:]) == RECIPE_AGENTS  # exactly once each: a losing attempt never wrote anything


def test_in_a_storm_the_version_kept_is_chosen_among_all_that_came_between() -> None:
    """Ten versions between our read and our write: the one to keep is the newest holding what came before it,
    even in the middle of the storm (only comparing the first and the newest seven lost its line)."""
    base = b"# Log\n"
    texts = [base + b"- a\n", base + b"- a\n- y\n"]  # y wrote on top of a: it finished, its line must stay
    texts += [base + f"- loser {n}\n".encode() for n in range(8)]  # writers who read the base, each over the rest
    between = tuple(VaultVersion({"id": f"v{n}"}) for n in range(len(texts)))
    client = SimpleNamespace(download_version=lambda project, file_id, version_id: texts[int(version_id[1:])])
    kept, data = to_keep(
        cast(Any, SimpleNamespace(client=client)), "p1", cast(Any, SimpleNamespace(id="f1")), base, between
    )
    assert (kept["id"], data) == ("v1", base + b"- a\n- y\n")


def test_two_finished_writers_on_top_of_different_texts_are_both_kept() -> None:
    """After our read: a writer appended l1 and finished; one who read before it wrote l2 over it; a third read
    that and appended f, and finished too. No single version holds both finished lines: both are kept."""
    base = b"# Log\n"
    texts = [base + b"- l1\n", base + b"- l2\n", base + b"- l2\n- f\n"]
    between = tuple(VaultVersion({"id": f"v{n}"}) for n in range(len(texts)))
    client = SimpleNamespace(download_version=lambda project, file_id, version_id: texts[int(version_id[1:])])
    _, data = to_keep(
        cast(Any, SimpleNamespace(client=client)), "p1", cast(Any, SimpleNamespace(id="f1")), base, between
    )
    assert sorted(data.decode().splitlines()) == sorted(["# Log", "- l1", "- l2", "- f"])


def test_our_bytes_twice_in_the_history_ours_is_the_last_and_the_one_before_the_first_may_be_replaced() -> None:
    """Versions after the one we built on (b): x, ours-bytes (a colleague's), z, ours-bytes (ours, or a put-back).
    Ours is taken to be the last: z is the one it replaced, and x, which the earlier copy follows, may be too."""
    hashes = ["b", "x", "w", "z", "w"]
    versions = [VaultVersion({"id": f"v{n}", "versionNumber": n + 1, "contentHash": h}) for n, h in enumerate(hashes)]
    ctx = cast(Any, SimpleNamespace(client=SimpleNamespace(list_versions=lambda project, file_id: versions[::-1])))
    check = check_history(ctx, "p1", "f1", "b", "w", {"w"})
    assert check.ours is not None and check.ours["id"] == "v4"
    assert [version["id"] for version in check.between] == ["v1", "v3"]
    assert check.replaced is not None and check.replaced["id"] == "v3"
    assert [version["id"] for version in check.maybe_replaced] == ["v1"]
    once = check_history(ctx, "p1", "f1", "x", "z", {"z"})  # our bytes once: nothing else may be replaced
    assert once.ours is not None and once.ours["id"] == "v3" and once.maybe_replaced == ()
