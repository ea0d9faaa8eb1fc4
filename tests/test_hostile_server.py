"""No server answer can kill, leak through or confuse the MCP server (issue 13): a seeded fuzz of every tool.

A ``responses`` callback plays a hostile Team Vault: most answers are plausible ones
with one field replaced by something odd (a lone surrogate, an upper-case hash, a
number where a string belongs, JSON nested 300 or 100,000 levels deep, the API key
echoed back), the rest are error statuses with odd envelopes, non-JSON bodies, junk
headers or no answer at all. Every tool is called many times through a real MCP
client; each call must end in a result — a success or a tool error — that can be
sent as JSON, never an internal error, an exception in the client, or the key. The
seed makes a failure reproducible: the assertion message names the call.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import responses
from mcp import Client
from support.fakes import API_KEY, BASE, PROJECT, FakeClock, file_record, make_config
from support.seeding import digest

from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner

pytestmark = pytest.mark.anyio

SEEDS = (13, 2026)
CALLS_PER_TOOL = 40

ARGUMENTS: dict[str, dict[str, Any]] = {
    "whoami": {},
    "list_projects": {},
    "list_notes": {"prefix": "notes/", "depth": 1},
    "search_notes": {"query": "tasks"},
    "find_notes": {"query": "note"},
    "query_notes": {"where": {"status": "open", "due": {"lt": "2030-01-01"}}, "sort": "-due"},
    "list_tags": {},
    "list_tasks": {"status": "all"},
    "note_links": {"path": "notes/a.md"},
    "broken_links": {},
    "recent_changes": {"since": "7d"},
    "note_outline": {"path": "notes/a.md"},
    "read_note": {"path": "notes/a.md"},
    "read_notes": {"paths": ["notes/a.md", "people/b.md"]},
    "read_frontmatter": {"path": "notes/a.md"},
    "list_note_versions": {"path": "notes/a.md"},
    "read_note_version": {"path": "notes/a.md", "version": 1},
    "diff_note_versions": {"path": "notes/a.md", "from": 1},
    "restore_note_version": {"path": "notes/a.md", "version": 1},
    "write_note": {"path": "notes/a.md", "content": "# Tasks\n- [x] done\n"},
    "edit_note": {"path": "notes/a.md", "edits": [{"oldText": "Tasks", "newText": "Done"}]},
    "edit_section": {"path": "notes/a.md", "section": ["Tasks"], "content": "- [ ] more", "create": True},
    "replace_in_notes": {"find": "Tasks", "replace": "Done", "dryRun": False},
    "update_frontmatter": {"path": "notes/a.md", "set": {"status": "done"}},
    "move_note": {"path": "notes/a.md", "newPath": "notes/b.md"},
    "delete_note": {"path": "notes/a.md"},
    "list_schemas": {},
    "reload_schemas": {},
}

NOTES = [
    b"# Tasks\n- [ ] call Kuzma\n\n## Later\ntext\n",
    b"---\nstatus: open\ntags: [a, b]\n---\n# Tasks\nbody\n",
    b"---\nbase: &b {x: 1}\nmerged:\n  <<: *b\n---\n# Tasks\n",
    b"---\nx: " + b"[" * 300 + b"]" * 300 + b"\n---\n# Tasks\n",
    b"\xed\xa0\x80 Tasks \xff\xfe",
    b"",
    "# Задачи\n- Tasks ✓\n".encode(),
    b"---\nfields:\n  name: {type: string}\n---\n# Person\n",
    b"# Tasks\n" + b"## h\n" * 2000,
]
SCHEMA_NOTE = b"---\nfields:\n  name: {type: string}\n---\n# Person\n"
#: Front matter that update_frontmatter crashes on (issue 13: an empty block, one holding only a comment);
#: the fix is on branch i-yaml. A test of their own below, expected to fail until that branch is merged.
FRONT_MATTER_CRASHES = [b"---\n---\n# Tasks\n", b"---\n# only a comment\n---\nTasks\n"]

HOSTILE_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    1.5,
    10**30,
    float("inf"),
    float("nan"),
    "",
    " ",
    "x" * 20_000,
    "\ud800",
    "a\udc00b",
    "\x00\x1b[31m\u202e",
    API_KEY,
    f"X-API-Key: {API_KEY}",
    "../../etc/passwd",
    "AB" * 32,
    "ab" * 31,
    "TEXT",
    "text",
    "BINARY",
    "Файл не найден",
    [],
    {},
    {"nested": {"deeper": ["x"]}},
    "__DEEP_300__",
    "__DEEP_100000__",
]

STATUSES = [200, 201, 204, 299, 301, 304, 400, 401, 403, 404, 409, 410, 412, 413, 418, 422, 429, 500, 502, 503, 504]
CODES = ["not_found", "path_exists", "path_blocked", "invalid_path", "file_too_large", "idempotency_key_in_use"]
RETRY_AFTERS = [
    "",
    "abc",
    "-5",
    "1e400",
    "NaN",
    "inf",
    "Fri, 31 Dec 9999 23:59:59 GMT",
    "Mon, 01 Jan 0001 00:00:00 GMT",
]


def record(path: str, file_id: str, content: bytes) -> dict[str, Any]:
    """The file record of a note holding ``content``, its hash and size true."""
    return file_record(path, file_id, contentHash=digest(content), size=str(len(content)))


class HostileServer:
    """Answers every request with something a broken, old or malicious server might send."""

    def __init__(self, seed: int, notes: list[bytes] = NOTES) -> None:
        self.rng = random.Random(seed)
        self.note_texts = notes
        self.sane = False
        self.notes = {"notes/a.md": NOTES[0], "people/b.md": NOTES[1], "schemas/person.md": SCHEMA_NOTE}

    def __call__(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], bytes]:
        route, parts = self.route_of(request)
        baseline = self.baseline(route, parts, request)
        if self.sane:
            return baseline
        roll = self.rng.random()
        if roll < 0.04:
            raise self.rng.choice([requests.ConnectionError("connection reset"), requests.ReadTimeout("timed out")])
        if roll < 0.15:
            return self.raw_hostile()
        if roll < 0.32:
            return self.error_status()
        status, headers, body = baseline
        if roll < 0.85 and headers.get("Content-Type") == "application/json":
            body = self.encoded(self.mutated(json.loads(body)))
        if self.rng.random() < 0.2:
            headers = {**headers, **self.odd_headers()}
        return status, headers, body

    # -- plausible answers ---------------------------------------------------------------------------

    def route_of(self, request: requests.PreparedRequest) -> tuple[str, list[str]]:
        path = urlsplit(request.url or "").path
        parts = path.strip("/").split("/")
        method = request.method or "GET"
        if path == "/api/auth/me":
            return "me", parts
        if path == "/api/projects":
            return "projects", parts
        if len(parts) == 4:
            return ("create" if method == "POST" else "list"), parts
        if len(parts) == 5:
            return {"GET": "download", "PUT": "replace", "PATCH": "move", "DELETE": "delete"}[method], parts
        if len(parts) == 6:
            return "versions", parts
        return "version", parts

    def baseline(
        self, route: str, parts: list[str], request: requests.PreparedRequest
    ) -> tuple[int, dict[str, str], bytes]:
        json_type = {"Content-Type": "application/json"}
        note = self.rng.choice(self.note_texts)
        if route == "me":
            body: Any = {"user": {"id": "u1", "email": "ada@example.com", "name": "Ada"}}
        elif route == "projects":
            body = {"projects": [{"id": PROJECT, "slug": "team", "name": "Team", "role": "EDITOR"}]}
        elif route == "list":
            query = parse_qs(urlsplit(request.url or "").query)
            wanted = query.get("path", [None])[0]
            listed = [record(path, f"f{n}", content) for n, (path, content) in enumerate(self.notes.items())]
            if wanted is not None:
                listed = [r for r in listed if r["path"] == wanted] or [record(wanted, "f9", note)]
            elif "prefix" in query:
                listed = [r for r in listed if r["path"].startswith(query["prefix"][0])]
            body = {"files": listed}
        elif route in ("download", "version"):
            return (
                200,
                {"Content-Type": "text/markdown"},
                note,
            )
        elif route == "versions":
            body = {
                "versions": [
                    {
                        "id": "v2",
                        "versionNumber": 2,
                        "contentHash": digest(NOTES[0]),
                        "createdAt": "2026-12-01T00:00:00Z",
                    },
                    {"id": "v1", "versionNumber": 1, "contentHash": digest(note), "message": None, "author": None},
                ]
            }
        elif route in ("create", "replace"):
            sent = request.body if isinstance(request.body, bytes) else b""
            body = {"file": record("notes/a.md", "f0", sent)}
            return (201 if route == "create" else 200), json_type, json.dumps(body).encode()
        elif route == "move":
            new_path = json.loads(request.body or b"{}").get("newPath", "notes/b.md")
            body = {"file": {"id": parts[4], "path": new_path}}
        else:
            body = {"success": True}
        return 200, json_type, json.dumps(body).encode()

    # -- hostile variations ------------------------------------------------------------------------------

    def hostile_value(self) -> Any:
        return self.rng.choice(HOSTILE_VALUES)

    def mutated(self, value: Any) -> Any:
        """``value`` with one field somewhere replaced, removed or added; sometimes the whole answer replaced."""
        if self.rng.random() < 0.1:
            return self.hostile_value()
        containers = []
        pending = [value]
        while pending:
            current = pending.pop()
            if isinstance(current, dict | list):
                containers.append(current)
                pending.extend(current.values() if isinstance(current, dict) else current)
        target = self.rng.choice(containers)
        if isinstance(target, dict):
            action = self.rng.random()
            if target and action < 0.7:
                target[self.rng.choice(list(target))] = self.hostile_value()
            elif target and action < 0.85:
                del target[self.rng.choice(list(target))]
            else:
                target[self.rng.choice(["\ud800", "extra", "id", "path", API_KEY])] = self.hostile_value()
        elif target:
            target[self.rng.randrange(len(target))] = self.hostile_value()
        else:
            target.append(self.hostile_value())
        return value

    def encoded(self, value: Any) -> bytes:
        text = json.dumps(value)  # lone surrogates become \\ud800 escapes; NaN and Infinity appear as such
        text = text.replace('"__DEEP_300__"', "[" * 300 + "]" * 300)
        text = text.replace('"__DEEP_100000__"', "[" * 100_000 + "]" * 100_000)
        if self.rng.random() < 0.1:
            text = text.upper()  # hashes, ids, keys: all upper-case
        return text.encode("utf-8")

    def raw_hostile(self) -> tuple[int, dict[str, str], bytes]:
        bodies = [
            b"",
            b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
            b"\xef\xbb\xbf" + json.dumps({"files": []}).encode(),
            b"\xff\xfe\xfd not utf-8",
            b'{"files": [',
            b"[" * 100_000,
            b"null",
            b'"a string"',
            f"echo X-API-Key: {API_KEY}".encode(),
            json.dumps({"error": "plain string error", "message": API_KEY}).encode(),
            b'{"user": {"id": "u1", "name": "\xed\xa0\x80"}}',
            b"\x00" * 1000,
        ]
        status = self.rng.choice(STATUSES)
        content_type = self.rng.choice(["application/json", "text/html", "text/plain", ""])
        return status, {"Content-Type": content_type, **self.odd_headers()}, self.rng.choice(bodies)

    def error_status(self) -> tuple[int, dict[str, str], bytes]:
        status = self.rng.choice([s for s in STATUSES if s >= 300])
        code: Any = self.rng.choice([*CODES, self.hostile_value()])
        envelope = {"error": {"code": code, "message": self.rng.choice(["Проект не найден", self.hostile_value()])}}
        headers = {"Content-Type": "application/json", **self.odd_headers()}
        if 300 <= status < 400:
            headers["Location"] = self.rng.choice(["https://elsewhere.example/", f"https://x/?k={API_KEY}", "\x1b[2J"])
        return status, headers, self.encoded(envelope)

    def odd_headers(self) -> dict[str, str]:
        headers = {"Retry-After": self.rng.choice(RETRY_AFTERS)}
        if self.rng.random() < 0.5:
            headers["Idempotent-Replayed"] = self.rng.choice(["true", "TRUE", "yes", ""])
        return headers


def sendable(result: Any) -> str:
    """The result as it goes on the wire; raises if it cannot be written."""
    return result.model_dump_json(by_alias=True, exclude_none=True)


async def fuzz(server: HostileServer, clock: FakeClock, calls: dict[str, dict[str, Any]], rounds: int) -> None:
    """Call each tool ``rounds`` times against ``server``; fail naming every call that broke a rule."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            mock.add_callback(method, re.compile(re.escape(BASE) + r"/.*"), callback=server)
        runner = ToolRunner(make_config(schema_dir="schemas/", cache_dir=None), clock=clock)
        async with Client(build_server(runner), mode="legacy") as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert set(ARGUMENTS) == {name for name in tools if not name.startswith("upsert_")}
            failures = []
            outcomes = {"ok": 0, "tool error": 0}
            for round_number in range(rounds):
                for name, arguments in calls.items():
                    what = f"round {round_number}, {name}({arguments})"
                    try:
                        result = await client.call_tool(name, arguments)
                        wire = sendable(result)
                    except Exception as error:  # the host would see a failed request, or a dead server
                        failures.append(f"{what}: {type(error).__name__}: {error}"[:600])
                        continue
                    text = result.content[0].text if result.content else ""
                    if result.is_error and text.startswith("Internal error"):
                        failures.append(f"{what}: {text}"[:600])
                    if API_KEY in wire or API_KEY.upper() in wire:
                        failures.append(f"{what}: the API key reached the result")
                    outcomes["tool error" if result.is_error else "ok"] += 1
            server.sane = True
            alive = await client.call_tool("whoami", {})
    assert not failures, "\n".join(failures[:20])
    assert not alive.is_error, alive.content[0].text
    # The fuzz must exercise both paths, or it proves nothing: each at least a tenth of the calls.
    assert min(outcomes.values()) * 10 >= len(calls) * rounds, outcomes


@pytest.mark.parametrize("seed", SEEDS)
async def test_every_tool_survives_a_hostile_server(seed: int, clock: FakeClock) -> None:
    await fuzz(HostileServer(seed), clock, ARGUMENTS, CALLS_PER_TOOL)


async def test_front_matter_edge_cases_survive_a_hostile_server(clock: FakeClock) -> None:
    calls = {name: ARGUMENTS[name] for name in ("read_frontmatter", "update_frontmatter")}
    await fuzz(HostileServer(7, notes=FRONT_MATTER_CRASHES), clock, calls, CALLS_PER_TOOL)
