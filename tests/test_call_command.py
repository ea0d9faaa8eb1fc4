"""``teamvault-mcp call TOOL key=value ...``: one tool call from a shell, as an agent would see it."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from support.env import env_for
from support.fakes import make_config
from support.seeding import digest
from support.waiting import GENEROUS, assert_within, wait_until

from teamvault_mcp.cli import main
from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner

FILES = "/api/projects/*/files"
CACHE_OFF = {"TEAM_VAULT_CACHE_DIR": "off"}  # a test never writes to the user's cache


def as_read(text: str) -> str:
    """What ``call read_note`` prints for a note holding ``text``: its one text block, the contentHash line and
    then the text, with a line break at the end (``call`` adds one where the note has none)."""
    return f"[contentHash: {digest(text)[:12]}]\n{text}" + ("" if text.endswith("\n") else "\n")


def call(capsys: pytest.CaptureFixture[str], environ: dict[str, str], *argv: str) -> tuple[int, str, str]:
    code = main(["call", *argv], environ)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_write_then_a_read(vault: LocalVault, capsys: pytest.CaptureFixture[str]) -> None:
    environ = env_for(vault)
    code, out, _ = call(capsys, environ, "write_note", "path=inbox/2024.md", "content=# Plan\nship it\n")
    assert code == 0
    assert out.startswith("Created inbox/2024.md (")
    code, out, _ = call(capsys, environ, "read_note", "path=inbox/2024.md")
    assert (code, out) == (0, as_read("# Plan\nship it\n"))


def test_a_size_of_one_byte_is_said_in_the_singular(vault: LocalVault, capsys: pytest.CaptureFixture[str]) -> None:
    environ = env_for(vault)
    assert call(capsys, environ, "write_note", "path=one.md", "content=x")[1].startswith("Created one.md (1 byte); ")
    code, out, _ = call(capsys, environ, "write_note", "path=one.md", "content=xy", "mode=update")
    assert code == 0 and out.startswith("Updated one.md (2 bytes); ")


def test_a_tool_error_exits_1_with_the_agents_message(vault: LocalVault, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = call(capsys, env_for(vault), "read_note", "path=missing.md")
    assert (code, out) == (1, "Note not found: missing.md\n")


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("note_outline", {"path": "a.md"}),
    ("search_notes", {"query": "two"}),
    ("read_note", {"path": "a.md", "startLine": 2}),
    ("read_note", {"path": "nope.md"}),
    ("list_notes", {"depth": 0}),
    ("edit_note", {"path": "a.md", "edits": [{"oldText": "two", "newText": "2"}], "dryRun": True}),
]


@pytest.mark.parametrize("structured", [False, True], ids=["default", "structured on"])
def test_the_result_is_the_one_an_mcp_client_gets(
    vault: LocalVault, capsys: pytest.CaptureFixture[str], structured: bool
) -> None:
    """Under either setting of TEAM_VAULT_STRUCTURED_CONTENT, ``--json`` shows what the wire carries."""
    environ = {**env_for(vault), "TEAM_VAULT_STRUCTURED_CONTENT": "on" if structured else "off"}
    call(capsys, environ, "write_note", "path=a.md", "content=one\ntwo\n")
    config = make_config(
        base_url=vault.url, api_key=vault.api_key, project_id=vault.project_id, structured_content=structured
    )
    runner = ToolRunner(config)

    async def over_mcp() -> list[Any]:
        async with Client(build_server(runner), mode="legacy") as client:
            return [await client.call_tool(tool, arguments) for tool, arguments in CALLS]

    for (tool, arguments), expected in zip(CALLS, anyio.run(over_mcp), strict=True):
        code, out, _ = call(capsys, environ, tool, "--json-args", json.dumps(arguments), "--json")
        shown = json.loads(out)
        assert shown["content"] == [block.model_dump(mode="json", exclude_none=True) for block in expected.content]
        assert shown.get("structuredContent") == expected.structured_content
        assert ("structuredContent" in shown) is structured and len(shown["content"]) == 1
        assert shown["isError"] is expected.is_error is (code == 1)
        assert set(shown) <= {"content", "structuredContent", "isError"}  # no "resultType": the wire has none
    assert any(expected.is_error for expected in anyio.run(over_mcp))  # the comparison covers an error too


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        (["path=2024.md"], {"path": "2024.md"}),  # text stays text
        (["path=a.md", "startLine=2", "endLine=3"], {"path": "a.md", "startLine": 2, "endLine": 3}),
        (["path=a.md", 'section=["Plan"]'], {"path": "a.md", "section": ["Plan"]}),
        (["path=true"], {"path": "true"}),
        (["content=a=b"], {"content": "a=b"}),  # only the first = splits
    ],
)
def test_values_take_the_type_of_their_argument(pairs: list[str], expected: dict[str, Any]) -> None:
    from teamvault_mcp.commands.call import call_arguments as _call_arguments
    from teamvault_mcp.tools.table import TOOLS

    params = {param.name: param for tool in TOOLS for param in tool.all_params}
    assert _call_arguments(None, pairs, lambda name, text: params[name].read(text)) == expected


def test_flags_and_versions(vault: LocalVault, capsys: pytest.CaptureFixture[str]) -> None:
    environ = env_for(vault)
    call(capsys, environ, "write_note", "path=a.md", "content=one\n")
    call(capsys, environ, "write_note", "path=a.md", "content=two\n")
    code, out, _ = call(capsys, environ, "read_note_version", "path=a.md", "version=1")
    assert (code, out) == (0, as_read("one\n"))
    edits = '[{"oldText": "two", "newText": "2"}]'
    code, out, _ = call(capsys, environ, "edit_note", "path=a.md", f"edits={edits}", "dryRun=true")
    assert code == 0 and out.startswith("Dry run: nothing was written.")


def test_json_args_from_stdin_with_pairs_on_top(
    vault: LocalVault, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"path": "x.md", "content": "line 1\nline 2\n"})))
    code, _, _ = call(capsys, env_for(vault), "write_note", "--json-args", "-", "path=y.md")
    assert code == 0
    code, out, _ = call(capsys, env_for(vault), "read_note", "path=y.md")
    assert out == as_read("line 1\nline 2\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["read_note", "path"], "'path' is not key=value (e.g. path=inbox/a.md)"),
        (["read_note", "=a.md"], "'=a.md' is not key=value"),
        (["read_note", "--json-args", "{path: 1}"], "--json-args is not valid JSON"),
        (["read_note", "--json-args", '["a.md"]'], "--json-args must be a JSON object"),
        (["read_note", "path=a.md", "section=[Plan"], "section takes a JSON array"),
        (  # issue 31: the JSON is said to be invalid, where, and the example shows the argument's own shape
            ["edit_note", "path=a.md", 'edits=[{"oldText": "x"'],
            "edits takes a JSON array, and this is not valid JSON (Expecting ',' delimiter at character 17), "
            'e.g. edits=\'[{"oldText": "- [ ] call", "newText": "- [x] call"}]\'',
        ),
        (
            ["update_frontmatter", "path=a.md", "set={status"],
            "set takes a JSON object, and this is not valid JSON",
        ),
    ],
)
def test_a_bad_command_line_exits_2_and_sends_nothing(
    vault: LocalVault, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = call(capsys, env_for(vault), *argv)
    assert code == 2 and out == ""
    assert err.startswith("teamvault-mcp call: ") and message in err
    assert vault.faults.seen == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no_such_tool"], "Unknown tool: no_such_tool. Available tools: whoami, list_projects, "),
        (["read_note", "path=a.md", "colour=red"], "Unknown argument for read_note: colour."),
        (["read_note"], "Missing required argument 'path'."),
        (["read_note", "path=a.md", "startLine=0"], "Argument 'startLine' must be"),
    ],
)
def test_bad_tool_input_is_the_agents_error(
    vault: LocalVault, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, _ = call(capsys, env_for(vault), *argv)
    assert code == 1 and message in out


def test_a_bad_configuration_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capsys, {"TEAM_VAULT_URL": "ftp://x"}, "whoami")
    assert code == 1 and out == "" and "TEAM_VAULT_API_KEY must be set" in err


def test_writes_are_audited_and_scoped_as_in_the_server(
    vault: LocalVault, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "audit.jsonl"
    environ = env_for(vault, AUDIT_LOG=str(log), WRITE_PREFIXES="agents/")
    code, out, _ = call(capsys, environ, "write_note", "path=people/a.md", "content=x")
    assert code == 1 and out.startswith("write_note refused: path 'people/a.md' is outside")
    code, _, _ = call(capsys, environ, "write_note", "path=agents/a.md", "content=x")
    assert code == 0
    assert [json.loads(line)["outcome"] for line in log.read_text().splitlines()] == ["failed", "applied"]


def test_on_a_local_vault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "local")
    assert main(["--local", data, "call", "write_note", "path=a.md", "content=kept\n"], {}) == 0
    capsys.readouterr()
    assert main(["--local", data, "call", "read_note", "path=a.md"], {}) == 0
    assert capsys.readouterr().out == as_read("kept\n")


def test_ctrl_c_cancels_the_call_in_flight(vault: LocalVault) -> None:
    vault.faults.add("GET", FILES, Fault.hang(at_most=60))
    environ = {**os.environ, **env_for(vault)}
    child = subprocess.Popen(
        [sys.executable, "-m", "teamvault_mcp", "call", "read_note", "path=a.md"],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until(lambda: vault.faults.injected, "the call reaching the vault")
    interrupted_at = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=GENEROUS)
    assert child.returncode == 130
    assert out == ""
    assert "teamvault-mcp call: interrupted; the call was cancelled" in err
    assert vault.faults.hang_ended  # the request was dropped well before the 60 s hang ended:
    assert_within(vault.faults.hang_ended[0] - interrupted_at, GENEROUS, "the disconnect after Ctrl-C")
    assert [path for method, path in vault.faults.seen if method == "GET"].count(vault.faults.seen[-1][1]) == 1


SCHEMA = """```yaml schema
metadata: {schemaName: task, identifierField: slug, pathTemplate: 'Tasks/${slug}.md', pathComponents: [slug]}
fields:
  slug: {type: string}
  points: {type: integer, minimum: 1}
  done: {type: boolean, default: false}
  labels: {type: array, items: {type: string}, optional: true}
```
"""


def test_schema_tools_and_front_matter_from_the_shell(vault: LocalVault, capsys: pytest.CaptureFixture[str]) -> None:
    environ = env_for(vault, SCHEMA_DIR="schemas/")
    call(capsys, environ, "write_note", "path=schemas/task.md", f"content={SCHEMA}")
    code, out, _ = call(capsys, environ, "upsert_task", "slug=ship", "points=3", "done=true", 'labels=["q4"]')
    assert code == 0 and out.startswith("Created Tasks/ship.md (task)")
    code, out, _ = call(capsys, environ, "update_frontmatter", "path=Tasks/ship.md", 'set={"points": 5}')
    assert code == 0
    code, out, _ = call(capsys, environ, "read_frontmatter", "path=Tasks/ship.md")
    assert json.loads(out.splitlines()[0]) == {"slug": "ship", "points": 5, "done": True, "labels": ["q4"]}
    code, out, _ = call(capsys, environ, "upsert_task", "slug=ship", "points=none")
    assert code == 1 and out == "Field 'points' must be a whole number of at least 1, got 'none'.\n"


# -- --local in either place, the help's examples -----------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "--local", "{dir}", "read_note", "path=a.md"],
        ["call", "read_note", "--local", "{dir}", "path=a.md"],
        ["call", "read_note", "path=a.md", "--local", "{dir}"],
        ["--local", "{dir}", "call", "read_note", "path=a.md"],
        ["--local", "{dir}", "call", "--local", "{dir}", "read_note", "path=a.md"],  # twice, the same: fine
    ],
)
def test_local_comes_before_or_after_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    data = tmp_path / "local"
    assert main(["--local", str(data), "call", "write_note", "path=a.md", "content=kept\n"], {}) == 0
    capsys.readouterr()
    assert main([item.replace("{dir}", str(data)) for item in argv], {}) == 0
    assert capsys.readouterr().out == as_read("kept\n")


def test_check_takes_local_after_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--local", str(tmp_path / "local"), "--json"], {}) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--local", "{dir}/a", "call", "--local", "{dir}/b", "whoami"], "--local is given twice, as "),
        (["--local", "{dir}/a", "local-vault"], "--local does not go with local-vault: give the data directory as"),
        (["local-vault", "--local", "{dir}/a"], "--local does not go with local-vault: give the data directory as"),
        (["call", "whoami", "--lokal", "{dir}"], "unrecognized arguments: --lokal"),
    ],
)
def test_a_confusing_local_is_a_usage_error(tmp_path: Path, argv: list[str], message: str) -> None:
    # A child process: before this was checked, `--local DIR local-vault` served until killed.
    command = [sys.executable, "-m", "teamvault_mcp", *(item.replace("{dir}", str(tmp_path)) for item in argv)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env={**os.environ, **CACHE_OFF})
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # no vault was started


def test_the_help_examples_are_complete_calls_that_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    from teamvault_mcp.commands.call import call_examples

    with pytest.raises(SystemExit):
        main(["call", "--help"], {})
    shown = capsys.readouterr().out
    examples = call_examples()
    assert len(examples) >= 3 and all(f"  {line}\n" in shown for line in examples)
    for kind in ("count", "flag", "toc", "fields"):  # each kind of converted value has an example
        assert any(f"{name}=" in " ".join(examples) for name in kinds_named(kind))
    data = str(tmp_path / "local")
    assert main(["--local", data, "call", "write_note", "path=inbox/todo.md", "content=# Tasks\n- [ ] call\n"], {}) == 0
    for line in examples:
        argv = shlex.split(line)
        assert argv[:2] == ["teamvault-mcp", "call"]
        capsys.readouterr()
        assert main(["--local", data, *argv[1:]], {}) == 0, (line, capsys.readouterr().out)


def kinds_named(kind: str) -> set[str]:
    from teamvault_mcp.tools.table import TOOLS

    return {param.name for tool in TOOLS for param in tool.params if param.kind == kind}


def test_local_ignores_an_inherited_project_id_of_another_vault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 31: TEAM_VAULT_PROJECT_ID left in the shell by a server made every --local call "no such project".
    data = str(tmp_path / "local")
    assert main(["--local", data, "call", "write_note", "path=a.md", "content=kept\n"], {}) == 0
    capsys.readouterr()
    assert main(["--local", data, "call", "list_notes"], {"TEAM_VAULT_PROJECT_ID": "cm3x9a7b00001"}) == 0
    out, err = capsys.readouterr()
    assert "a.md" in out
    assert err.count("\n") == 1 and "TEAM_VAULT_PROJECT_ID=cm3x9a7b00001 is ignored: it names no project" in err
    with LocalVault(tmp_path / "local") as vault:
        own = vault.project_id
    assert main(["--local", data, "call", "list_notes"], {"TEAM_VAULT_PROJECT_ID": own}) == 0
    out, err = capsys.readouterr()
    assert "a.md" in out and "ignored" not in err
