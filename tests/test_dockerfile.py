"""The Dockerfile, read as docker reads it (``.ci/run`` also builds and runs it where a docker daemon answers):
a slim Python base, a user that is not root, ``serve --http`` as the entry point with a default command line the
program accepts, and a health check that asks a path the server answers, without curl."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import httpx2
from support.http_service import http_service
from support.waiting import GENEROUS

from teamvault_mcp.cli import _parser
from teamvault_mcp.http_config import load_http_config, parse_listen
from teamvault_mcp.localvault import LocalVault

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: comments dropped, lines continued by a backslash joined."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = (pending + stripped).strip()
        pending = ""
        keyword, _, rest = whole.partition(" ")
        found.append((keyword.upper(), rest.strip()))
    return found


def only(name: str) -> str:
    """The arguments of the last ``name`` instruction (the one that counts)."""
    found = [rest for keyword, rest in instructions(DOCKERFILE.read_text()) if keyword == name]
    assert found, f"the Dockerfile has no {name}"
    return found[-1]


def exec_form(arguments: str) -> list[str]:
    """A JSON-array (exec form) instruction's words; the shell form would put a shell in between."""
    words = json.loads(arguments)
    assert isinstance(words, list) and all(isinstance(word, str) for word in words), arguments
    return words


def test_the_base_is_a_slim_python_image_of_a_version_we_support() -> None:
    base = only("FROM")
    assert re.fullmatch(r"python:3\.1[1-9]-slim", base), base


def test_the_process_runs_as_a_numeric_user_that_is_not_root() -> None:
    user = only("USER").split(":")[0]
    assert user.isdigit() and int(user) != 0, user  # numeric: Kubernetes' runAsNonRoot can check it


def test_the_entry_point_is_serve_http_and_the_default_command_line_starts() -> None:
    entry, command = exec_form(only("ENTRYPOINT")), exec_form(only("CMD"))
    assert entry == ["teamvault-mcp", "serve", "--http"]
    args = _parser().parse_args([*entry[1:], *command])
    assert (args.command, args.http) == ("serve", "0.0.0.0:8000")
    # What the container is given (a token) is all that start-up asks for on that command line.
    options = load_http_config(
        {"TEAM_VAULT_HTTP_TOKEN": "t" * 32},
        listen=args.http,
        insecure_bind=args.insecure_bind,
        stateless=args.stateless,
        metrics=args.metrics,
    )
    assert not options.is_loopback
    assert f"{options.port}" in only("EXPOSE").split()


def test_the_health_check_asks_a_path_the_server_answers_without_curl(vault: LocalVault) -> None:
    check = only("HEALTHCHECK")
    _, _, command = check.partition(" CMD ")
    words = exec_form(command.strip())
    assert words[:2] == ["python", "-c"] and "curl" not in check and "wget" not in check
    url = re.search(r"'(http://127\.0\.0\.1:(\d+)(/[a-z]+))'", words[2])
    assert url is not None, words[2]
    _, port = parse_listen(exec_form(only("CMD"))[0])
    assert int(url.group(2)) == port
    with http_service(vault) as service:
        answer = httpx2.get(service.url.removesuffix("/mcp") + url.group(3), timeout=GENEROUS)
    assert (answer.status_code, answer.text) == (200, "ok")


def test_what_the_dockerfile_copies_exists_and_the_build_context_holds_it() -> None:
    copied = [shlex.split(rest)[:-1] for keyword, rest in instructions(DOCKERFILE.read_text()) if keyword == "COPY"]
    sources = [source for sources in copied for source in sources]
    assert "teamvault_mcp" in sources and "setup.cfg" in sources
    assert [source for source in sources if not (ROOT / source).exists()] == []
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in ignored  # nothing but what is let in: no .venv, .git, caches or tests in the context
    let_in = {line[1:].rstrip("/") for line in ignored if line.startswith("!")}
    assert set(sources) <= let_in, set(sources) - let_in
