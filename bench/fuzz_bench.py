"""Fuzzing over stdio: every request with an id answered, every tool call on a hostile note answered sanely.

A ``teamvault-mcp`` child on an embedded local vault, spoken to in raw lines (as ``races_bench.py``'s Host):

1. **Messages.** ``--messages`` (default 6,000) JSON-RPC lines made from valid ones by seeded mutations: a
   member's value replaced by any JSON value (blank strings among them), members dropped or added, ids of
   every JSON type, deep nesting, lone-surrogate escapes, invalid UTF-8, CR and CRLF endings, truncation,
   random bytes. Each is followed by a ping, so that every answer is the message's: a request whose id is a
   string or an integer must get exactly one answer under it, one whose id is of another type (or a line that
   is no JSON) exactly one under id null, within the call budget (45 s). A third of the messages are sent in
   pipelined bursts of 50 instead.
2. **Tool calls.** ``--calls`` (default 1,500) calls of the read, search, outline and edit tools, with seeded
   random arguments, on hostile notes: a 1 MB line, lists and headings nested thousands deep, regex-like
   text, NULs, invalid UTF-8, CR/CRLF mixes, huge front matter, thousands of links and tags, 1 MB notes.
   Counted: answers, tool errors by kind, JSON-RPC errors, ``Internal error`` texts (each one a bug), and
   the worst time.

``--package DIR`` runs the server on the ``teamvault_mcp`` package under DIR (an older commit's, say).

    .venv/bin/python bench/fuzz_bench.py [--seed 27] [--messages 6000] [--calls 1500] [--stdio lean|stock]
        [--package DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import select
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.env import agent_env

from teamvault_mcp.localvault import LocalVault
from teamvault_mcp.localvault.store import Change

#: A call's budget (TEAM_VAULT_CALL_BUDGET's default): every answer must come within it.
BUDGET = 45.0
#: A tool call slower than this many seconds is named on stderr as it ends.
SLOW = 5.0
#: How long to wait for an answer before counting it missing.
PATIENCE = 60.0


class Host:
    """One MCP server process, spoken to in raw lines; answers kept by id as they come, with their time."""

    def __init__(self, env: dict[str, str], cwd: str | None, patience: float = PATIENCE) -> None:
        self.patience = patience
        self.process = subprocess.Popen(
            [sys.executable, "-m", "teamvault_mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.buffer = b""
        self.lines: list[tuple[float, dict[str, Any]]] = []  # every answer, when it came
        self.selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self.selector.register(self.process.stdout, selectors.EVENT_READ)

    def write(self, data: bytes) -> None:
        """Write ``data`` while reading what comes: a burst bigger than the pipes would otherwise deadlock (the
        server stops reading while its answers wait to be read)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        view = memoryview(data)
        while view:
            readable, writable, _ = select.select([self.process.stdout], [self.process.stdin], [], 1.0)
            if readable and not self.pump(0):
                return
            if writable:
                view = view[os.write(self.process.stdin.fileno(), view[: select.PIPE_BUF]) :]

    def pump(self, timeout: float) -> bool:
        """Read what comes within ``timeout`` seconds; False if the server has ended."""
        assert self.process.stdout is not None
        if not self.selector.select(max(timeout, 0)):
            return True
        chunk = os.read(self.process.stdout.fileno(), 1 << 20)
        if not chunk:
            return False
        self.buffer += chunk
        now = time.monotonic()
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            self.lines.append((now, json.loads(line)))  # stdout carries only JSON-RPC
        return True

    def wait_for(self, condition: Any) -> bool:
        """Until ``condition()`` holds (True) or :attr:`patience` has passed (False)."""
        deadline = time.monotonic() + self.patience
        while not condition():
            if time.monotonic() > deadline or not self.pump(min(deadline - time.monotonic(), 1.0)):
                return condition()
        return True

    def close(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        while self.pump(1.0) and self.process.poll() is None:
            pass
        code = self.process.wait(timeout=self.patience)
        return code, self.process.stderr.read().decode(errors="replace")


# -- 1. messages -------------------------------------------------------------------------------------------

BLANKS = ["", " ", "\t", "\n", "\r\n", "  \t\n", "\u00a0", "\u2028"]


def any_value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value, blank strings likely."""
    pick = rng.randrange(14 if depth < 3 else 10)
    if pick == 0:
        return rng.choice(BLANKS)
    if pick == 1:
        return rng.choice([0, 1, -1, 2**31, 2**63, 10**30, 7])
    if pick == 2:
        return rng.choice([0.0, 1.5, -2.25, 1e300, 1e-300])
    if pick == 3:
        return rng.choice([True, False])
    if pick == 4:
        return None
    if pick in (5, 6):
        return "".join(rng.choice("ab é\u00e9\ud7ff\U0001f600\\\"'{}[]:,\x00\x1f") for _ in range(rng.randrange(12)))
    if pick == 7:
        return rng.choice(["2.0", "1.0", "2", "2.0 ", "ping", "tools/call", "initialize"])
    if pick == 8:
        return "x" * rng.choice([1, 100, 10_000, 200_000])
    if pick == 9:
        return {}
    if pick in (10, 11):
        return [any_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["name", "arguments", "_meta", "path", "x"]): any_value(rng, depth + 1) for _ in range(3)}


def base_message(rng: random.Random, number: int) -> dict[str, Any]:
    """A valid request (or, now and then, a notification) of a quick method."""
    calls = [
        ("read_note", {"path": "a.md"}),
        ("list_notes", {}),
        ("search_notes", {"query": "words"}),
        ("note_outline", {"path": "a.md"}),
        ("read_note", {"path": "missing.md"}),
    ]
    pick = rng.randrange(10)
    if pick < 3:
        name, arguments = rng.choice(calls)
        message = {"method": "tools/call", "params": {"name": name, "arguments": dict(arguments)}}
    elif pick < 5:
        message = {"method": "ping"}
    elif pick == 5:
        message = {"method": "tools/list", "params": {}}
    elif pick == 6:
        message = {"method": rng.choice(["resources/list", "prompts/list", "no/such", "initialize", ""])}
    elif pick == 7:
        return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "never-sent"}}
    elif pick == 8:
        return {"jsonrpc": "2.0", "method": rng.choice(["notifications/initialized", "notifications/x"])}
    else:
        message = {"method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}}
    return {"jsonrpc": "2.0", "id": fresh_id(rng, number), **message}


def fresh_id(rng: random.Random, number: int) -> Any:
    """An id no other message has (the SDK takes "7" and 7 for one id: numbers and strings never repeat)."""
    return rng.choice([number, -number, 2**53 + number, f"s{number}", f" {number} ", f"é{number}", str(number)])


def mutate(rng: random.Random, message: dict[str, Any], number: int) -> dict[str, Any] | str | bytes:
    """``message`` with one to three mutations; text or bytes when the mutation leaves JSON behind."""
    message = json.loads(json.dumps(message))
    for _ in range(rng.randrange(1, 4)):
        pick = rng.randrange(12)
        if pick <= 2:
            message[rng.choice(["jsonrpc", "id", "method", "params"])] = any_value(rng)
        elif pick == 3:
            message.pop(rng.choice(["jsonrpc", "id", "method", "params"]), None)
        elif pick == 4:
            message[rng.choice(["extra", "result", "error", "ID"])] = any_value(rng)
        elif pick == 5 and isinstance(message.get("params"), dict):
            params = message["params"]
            target = params.get("arguments") if isinstance(params.get("arguments"), dict) else params
            target[rng.choice(["path", "query", "name", "limit", "tocPath", "_meta"])] = any_value(rng)
        elif pick == 6:
            message["id"] = rng.choice([1.5, 1.0, True, False, None, [], {}, [1], {"a": 1}, 1e30])
        elif pick == 7:  # nested deeper than pydantic reads (200), and than this server reads (512): as text
            depth = rng.choice([50, 199, 201, 300, 600])
            inner = json.dumps(message.pop("params", None))
            return json.dumps(message)[:-1] + ', "params": ' + "[" * depth + inner + "]" * depth + "}"
        elif pick == 8:
            text = json.dumps(message)
            return text[: rng.randrange(max(len(text), 1))]  # truncated
        elif pick == 9:
            return json.dumps(message).replace('"ping"', '"\\ud800ping"').replace('"a.md"', '"\\udc00.md"')
        elif pick == 10:
            return json.dumps(message).encode().replace(b"a.md", b"\xff\xfe.md").replace(b"ping", b"p\xc3ing")
        else:
            message["id"] = fresh_id(rng, number)
    return message


def framed(rng: random.Random, line: str | bytes) -> bytes:
    data = line.encode(errors="surrogatepass") if isinstance(line, str) else line
    if b"\n" in data or b"\r" in data:  # a raw newline would make two lines: written as JSON escapes instead
        data = data.replace(b"\r", b"\\r").replace(b"\n", b"\\n")
    return data + rng.choice([b"\n", b"\n", b"\n", b"\r\n", b"\r"])


def expected_answers(line: bytes) -> tuple[Any, int, int]:
    """(the id the answers carry, at least, at most how many): a request with a string or integer id exactly one
    under it; one with an id of another type, or a line that is not JSON, exactly one under id null. An object
    without an id is answered once under null if it is not a valid notification (0 or 1 here); an answer to a
    request never sent (result or error, no method) is dropped unless malformed (0 or 1)."""
    text = line.decode("utf-8", errors="replace")
    if not text.strip():
        return None, 0, 0
    try:
        value = json.loads(text, parse_constant=lambda name: name)
    except (ValueError, RecursionError):
        return None, 1, 1
    if not isinstance(value, dict):
        return None, 1, 1
    if "id" not in value:
        return None, 0, 1
    request_id = value["id"]
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None, 1, 1
    if "result" in value or "error" in value:  # with a method too, pydantic may read it as an answer (dropped)
        return request_id, 0, 1
    return request_id, 1, 1


def key(request_id: Any) -> str:
    return json.dumps(request_id)


def answer_counts(host: Host, start: int) -> collections.Counter[str]:
    return collections.Counter(key(answer.get("id")) for _, answer in host.lines[start:])


def answered_enough(host: Host, start: int, sentinel: str, expected: dict[str, list[int]]) -> bool:
    seen = answer_counts(host, start)
    return seen[sentinel] > 0 and all(seen[k] >= least for k, (least, _) in expected.items())


def fuzz_messages(host: Host, rng: random.Random, count: int) -> dict[str, Any]:
    """Mutated messages, one at a time or in bursts, each burst followed by a ping; every answer counted."""
    sent = requests = answered = missed = sentinels = 0
    worst = 0.0
    misses: list[str] = []
    number = 1000
    while sent < count:
        size = 50 if rng.random() < 0.01 else 1  # a third of the messages come in bursts
        burst: list[bytes] = []
        for _ in range(min(size, count - sent)):
            number += 1
            line: Any = base_message(rng, number)
            if rng.random() < 0.9:
                line = mutate(rng, line, number)
            if rng.random() < 0.02:
                line = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
            burst.append(framed(rng, json.dumps(line) if isinstance(line, dict) else line))
        sent += len(burst)
        expected: dict[str, list[int]] = {}  # key of an id -> [at least, at most] answers
        for data in burst:
            request_id, least, most = expected_answers(data.rstrip(b"\r\n"))
            bounds = expected.setdefault(key(request_id), [0, 0])
            bounds[0] += least
            bounds[1] += most
            requests += least
        sentinels += 1
        sentinel = key(f"sentinel-{sentinels}")
        start = len(host.lines)
        began = time.monotonic()
        host.write(b"".join(burst) + b'{"jsonrpc": "2.0", "id": %s, "method": "ping"}\n' % sentinel.encode())

        host.wait_for(lambda: answered_enough(host, start, sentinel, expected))  # noqa: B023 (called right here)
        seen = answer_counts(host, start)
        for when, _ in host.lines[start:]:
            worst = max(worst, when - began)
        for k, (least, most) in expected.items():
            if least <= seen[k] <= most:
                answered += min(seen[k], least) if k != key(None) else least
            else:
                missed += max(least - seen[k], 1)
                lines = [data for data in burst if k.encode() in data] or burst[:3]
                misses.append(f"{seen[k]} answers under id {k[:40]}, {least} to {most} expected: {lines!r:.600}")
        if host.process.poll() is not None:
            misses.append(f"the server ended after {sent} messages")
            break
    return {"sent": sent, "requests": requests, "answered": answered, "unanswered": missed, "worst": worst,
            "misses": misses}  # fmt: skip


# -- 2. tool calls on hostile notes --------------------------------------------------------------------


def hostile_notes(rng: random.Random) -> dict[str, bytes]:
    notes: dict[str, bytes] = {}
    notes["hostile/one-mb-line.md"] = b"# Long\n" + b"word " * 210_000 + b"\n"
    notes["hostile/deep-list.md"] = "".join("  " * n + f"- item {n}\n" for n in range(3_000)).encode()
    notes["hostile/deep-quote.md"] = "".join(">" * n + f" quote {n}\n" for n in range(2_000)).encode()
    notes["hostile/headings.md"] = "".join(
        "#" * (n % 6 + 1) + f" Heading {n} [x](y) `c`\n\npara {n}\n" for n in range(20_000)
    ).encode()
    notes["hostile/regexish.md"] = (
        "(a+)+$ ((((((( [[[[[[ ]]]]]] \\\\\\ .*.*.*=.*\n" * 2_000
        + "a" * 50_000
        + "!\n"
        + "*" * 100_000
        + "\n"
        + "`" * 5_000
        + "\n```\nunclosed fence\n"
    ).encode()
    notes["hostile/nuls.md"] = b"# N\x00ul\n" + b"text\x00with\x00nuls [[link\x00]] #t\x00ag\n" * 5_000
    notes["hostile/invalid-utf8.md"] = (
        b"# Bad \xff\xfe\n" + b"caf\xc3\xa9 \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80\n" * 5_000
    )
    notes["hostile/line-endings.md"] = b"".join(
        rng.choice([b"\r\n", b"\r", b"\n", b"\n\r"]).join([b"# H%d" % n, b"- [ ] task %d" % n, b"text"]) + b"\r"
        for n in range(5_000)
    )
    notes["hostile/huge-frontmatter.md"] = (
        "---\n" + "".join(f"key{n}: value {n}\n" for n in range(60_000)) + "---\n# Body\n"
    ).encode()
    notes["hostile/yaml-bomb.md"] = (
        b"---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        b"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n---\n# Bomb\n"
    )
    notes["hostile/links-tags.md"] = "".join(
        f"[[note {n}]] [[folder/n{n}#sec|alias]] ![[img{n}.png]] #tag{n} #t/{n % 50} [md](x{n}.md)\n"
        for n in range(20_000)
    ).encode()
    notes["hostile/one-mb-mixed.md"] = "".join(
        f"## Part {n}\n\n- [ ] task {n} #todo\n> quote [[a]]\n| a | b |\n|---|---|\n| {n} | {'x' * (n % 90)} |\n\n"
        for n in range(12_000)
    ).encode()
    notes["hostile/empty.md"] = b""
    notes["hostile/only-dashes.md"] = b"---\n"
    notes["hostile/html.md"] = b"<!-- " + b"comment " * 100_000 + b"\n# Hidden?\n" + b"<div>" * 10_000 + b"\n"
    return notes


def fragments(data: bytes, rng: random.Random, count: int = 40) -> list[str]:
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines() or [""]
    picked = [rng.choice(lines) for _ in range(count)]
    picked += [text[(i := rng.randrange(max(len(text), 1))) : i + rng.randrange(1, 60)] for _ in range(count)]
    return [p for p in picked if p] or ["x"]


def tool_arguments(rng: random.Random, paths: list[str], texts: dict[str, list[str]]) -> tuple[str, dict[str, Any]]:
    path = rng.choice(paths)
    bits = texts[path]
    frag = rng.choice(bits)
    heading = re.sub(r"^#+\s*", "", rng.choice([b for b in bits if b.startswith("#")] or [frag]))
    number = rng.choice([0, 1, 2, 5, 100, 10_000, 10**9, -1])
    tool = rng.choice(
        ["read_note"] * 3
        + ["read_notes", "note_outline", "note_outline", "search_notes", "search_notes", "find_notes"]
        + ["read_frontmatter", "note_links", "list_tags", "list_tasks", "edit_note", "edit_note", "edit_section"]
        + ["update_frontmatter"]
    )
    args: dict[str, Any] = {"path": path}
    if tool == "read_note":
        choice = rng.randrange(4)
        if choice == 1:
            args["section"] = rng.choice([heading, [heading], [heading, frag], frag, "A > B > C"])
        elif choice == 2:
            args["startLine"] = abs(number) or 1
            args["endLine"] = abs(number) + rng.randrange(1_000)
        elif choice == 3:
            args["maxChars"] = rng.choice([1, 100, 10_000, 1_000_000])
    elif tool == "read_notes":
        args = {"paths": rng.sample(paths, rng.randrange(1, 6)), "maxChars": rng.choice([100, 50_000])}
    elif tool == "note_outline":
        if rng.random() < 0.5:
            args["tocPath"] = rng.choice([[heading], heading, [heading, heading]])
        if rng.random() < 0.3:
            args["offset"] = abs(number)
    elif tool == "search_notes":
        mode = rng.choice(["text", "phrase", "regex"])
        query = rng.choice([frag[:40], heading[:30], "(a+)+$", "a{0,100}a{0,100}c", "\\w*(?=\\w*x)", "[[", "*"])
        args = {"query": query or "x", "mode": mode, "prefix": rng.choice(["hostile/", "", "a"])}
    elif tool == "find_notes":
        args = {"query": frag[:30] or "x"}
    elif tool == "note_links":
        args["direction"] = rng.choice(["in", "out", "both"])
    elif tool == "list_tags":
        args = {"prefix": "hostile/"} if rng.random() < 0.5 else {"tag": rng.choice(["tag1", "t/3", "todo"])}
    elif tool == "list_tasks":
        args = {"prefix": "hostile/", "status": rng.choice(["open", "done", "all"]), "limit": abs(number) or 1}
    elif tool == "edit_note":
        edit: dict[str, Any] = {"oldText": frag, "newText": rng.choice(["", "new text", frag * 2, "\x00", "\r\n"])}
        if rng.random() < 0.1:
            edit["replaceAll"] = True
        args.update(edits=[edit], dryRun=rng.random() < 0.7)
    elif tool == "edit_section":
        args.update(
            section=rng.choice([[heading], heading]),
            content=rng.choice(["- added\n", "x" * 10_000, "\r\n", "## Sub\n"]),
            mode=rng.choice(["append", "prepend", "replace"]),
            dryRun=rng.random() < 0.7,
        )
    elif tool == "update_frontmatter":
        args.update(set={rng.choice(["status", "key1", "a"]): any_value(rng)}, dryRun=rng.random() < 0.7)
    return tool, args


def kind_of(text: str) -> str:
    """An error's kind: its first sentence, with paths, numbers and quotes blanked."""
    first = re.split(r"(?<=\.)\s", text.strip(), maxsplit=1)[0]
    first = re.sub(r"\S*/\S*|\S+\.md\b", "<path>", first)
    first = re.sub(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]", "<…>", first)
    return re.sub(r"\d[\d,.]*", "N", first)[:100]


def fuzz_calls(
    host: Host,
    rng: random.Random,
    count: int,
    paths: list[str],
    texts: dict[str, list[str]],
    window: int = 4,
    log: Any = None,
) -> Any:
    """``count`` tool calls, ``window`` of them in flight at once; each one's time written to ``log`` (JSON lines)."""
    ok = errors = internal = rpc_errors = unanswered = 0
    kinds: collections.Counter[str] = collections.Counter()
    worst = (0.0, "")
    in_flight: dict[str, tuple[float, str, dict[str, Any]]] = {}
    internals: list[str] = []
    made = 0
    seen = len(host.lines)
    while made < count or in_flight:
        while made < count and len(in_flight) < window:
            made += 1
            tool, args = tool_arguments(rng, paths, texts)
            request_id = f"call-{made}"
            line = {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": args},
            }
            in_flight[request_id] = (time.monotonic(), tool, args)
            host.write(json.dumps(line).encode() + b"\n")
        if not host.pump(host.patience):
            unanswered += len(in_flight)
            internals.append("the server ended")
            break
        for when, answer in host.lines[seen:]:
            request_id = answer.get("id")
            if request_id not in in_flight:
                continue
            started, tool, args = in_flight.pop(request_id)
            elapsed = when - started
            if elapsed > worst[0]:
                worst = (elapsed, f"{tool} {json.dumps(args)[:160]}")
            if log is not None:
                log.write(json.dumps({"tool": tool, "arguments": args, "seconds": round(elapsed, 3)}) + "\n")
            if elapsed > SLOW:  # said at once, so a run that goes wrong shows where
                print(f"   slow: {elapsed:.1f} s for {tool} {json.dumps(args)[:160]}", file=sys.stderr, flush=True)
            if "error" in answer:
                rpc_errors += 1
                internals.append(f"JSON-RPC error {answer['error']} for {tool} {json.dumps(args)[:200]}")
                continue
            result = answer["result"]
            text = "".join(part.get("text", "") for part in result.get("content", []))
            if "Internal error" in text:
                internal += 1
                internals.append(f"{tool} {json.dumps(args)[:200]}: {text[:300]}")
            if result.get("isError"):
                errors += 1
                kinds[f"{tool}: {kind_of(text)}"] += 1
            else:
                ok += 1
        seen = len(host.lines)
        if made % 100 == 0 and len(in_flight) == window:
            print(f"   {made:,} calls sent", file=sys.stderr, flush=True)
        for request_id, (started, tool, args) in list(in_flight.items()):
            if time.monotonic() - started > host.patience:
                unanswered += 1
                internals.append(f"no answer in {host.patience:.0f} s: {tool} {json.dumps(args)[:200]}")
                del in_flight[request_id]
    return {
        "calls": made,
        "ok": ok,
        "errors": errors,
        "internal": internal,
        "rpc_errors": rpc_errors,
        "unanswered": unanswered,
        "worst": worst,
        "kinds": kinds,
        "bugs": internals,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--messages", type=int, default=6_000)
    parser.add_argument("--calls", type=int, default=1_500)
    parser.add_argument("--stdio", choices=["lean", "stock"], default="lean")
    parser.add_argument("--patience", type=float, default=PATIENCE, help="seconds to wait for an answer")
    parser.add_argument("--package", help="run the server on the teamvault_mcp package under this directory")
    parser.add_argument("--window", type=int, default=4, help="tool calls in flight at once")
    parser.add_argument("--log", help="write each tool call, its arguments and its time to this file (JSON lines)")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory() as directory, LocalVault(Path(directory) / "vault") as vault:
        notes = hostile_notes(rng)
        owner = vault.store.owner_of(vault.project_id)
        with vault.store.write() as db:
            change = Change(db, vault.project_id, owner)
            vault.store.create(change, "a.md", b"# A\n\nsome words\n", "text/markdown")
            for path, data in notes.items():
                vault.store.create(change, path, data, "text/markdown")
        env = agent_env(vault, directory, options.package, PREFETCH="off", STDIO=options.stdio)
        host = Host(env, options.package, options.patience)
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}
        host.write(
            json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": hello}).encode() + b"\n"
        )
        host.wait_for(lambda: any(m.get("id") == "init" for _, m in host.lines))
        host.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        size = sum(map(len, notes.values())) / 1e6
        where = options.package or "this checkout"
        print(f"seed {options.seed}, transport {options.stdio}, {len(notes)} hostile notes ({size:.1f} MB), on {where}")

        began = time.monotonic()
        messages = fuzz_messages(host, rng, options.messages)
        print(
            f"\n1. messages: {messages['sent']:,} sent, {messages['requests']:,} of them to be answered under their "
            f"id; {messages['answered']:,} answered as required, {messages['unanswered']:,} unanswered (or answered "
            f"twice), worst answer {messages['worst'] * 1000:.0f} ms "
            f"(budget {BUDGET:.0f} s), {time.monotonic() - began:.0f} s",
            flush=True,
        )
        for miss in messages["misses"][:20]:
            print(f"   - {miss}")

        began = time.monotonic()
        paths = sorted(notes)
        texts = {path: fragments(data, rng) for path, data in notes.items()}
        with open(options.log or os.devnull, "w", encoding="utf-8") as log:
            calls = fuzz_calls(host, rng, options.calls, paths, texts, options.window, log)
        worst, worst_call = calls["worst"]
        print(
            f"\n2. tool calls: {calls['calls']:,} made, {calls['ok']:,} ok, {calls['errors']:,} tool errors, "
            f"{calls['internal']} internal errors, {calls['rpc_errors']} JSON-RPC errors, {calls['unanswered']} "
            f"unanswered; worst {worst:.2f} s ({worst_call}), {time.monotonic() - began:.0f} s"
        )
        print("   errors by kind:")
        for kind, number in calls["kinds"].most_common(25):
            print(f"   {number:6,}  {kind}")
        for bug in calls["bugs"][:20]:
            print(f"   BUG: {bug}")
        code, stderr = host.close()
        tail = [line for line in stderr.splitlines() if line.strip()][-10:]
        print(f"\nthe server exited {code}; the last of its stderr:" + "".join(f"\n   {line}" for line in tail))


if __name__ == "__main__":
    main()
