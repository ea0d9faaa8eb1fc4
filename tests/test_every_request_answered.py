"""Every request with an id gets exactly one answer, on both stdio transports (issue 27).

Crafted requests that pydantic refuses for a member (a blank ``params``, a blank ``jsonrpc``) or
reads as a notification (an id that is neither a string nor an integer) went unanswered on both
transports. Over real child processes, one per transport on a local vault: each crafted message is
sent, its answer awaited, then a ping, so that a second answer to it would be seen too.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Iterator
from typing import Any

import pytest
from support import seeding
from support.children import ENTRY_POINTS, StdioChild
from support.env import child_env, env_for
from support.waiting import GENEROUS, too_slow

from teamvault_mcp.localvault import LocalVault

ABSENT = object()


def message(request_id: Any = 5, jsonrpc: Any = "2.0", params: Any = ABSENT, method: Any = "ping") -> str:
    value: dict[str, Any] = {"id": request_id, "method": method}
    if jsonrpc is not ABSENT:
        value["jsonrpc"] = jsonrpc
    if params is not ABSENT:
        value["params"] = params
    if method is ABSENT:
        del value["method"]
    return json.dumps(value)


#: (what it is, the line, the id its one answer carries). An id the server cannot echo (MCP takes strings and
#: integers only) is answered under id null, as JSON-RPC 2.0 §5 says for an id that could not be read.
CRAFTED = [
    ("params empty string", message(params=""), 5),
    ("params space", message(params=" "), 5),
    ("params tab", message(params="\t"), 5),
    ("params newline", message(params="\n"), 5),
    ("params CRLF", message(params="\r\n"), 5),
    ("params word", message(params="x"), 5),
    ("params number", message(params=3), 5),
    ("params true", message(params=True), 5),
    ("params null", message(params=None), 5),
    ("params array", message(params=[]), 5),
    ("params object", message(params={}), 5),
    ("jsonrpc space", message(jsonrpc=" "), 5),
    ("jsonrpc empty", message(jsonrpc=""), 5),
    ("jsonrpc 1.0", message(jsonrpc="1.0"), 5),
    ("jsonrpc number", message(jsonrpc=2.0), 5),
    ("jsonrpc null", message(jsonrpc=None), 5),
    ("jsonrpc missing", message(jsonrpc=ABSENT), 5),
    ("jsonrpc space, params blank", message("b", jsonrpc=" ", params=" "), "b"),
    ("method missing", message(method=ABSENT), 5),
    ("method empty", message(method=""), 5),
    ("method space", message(method=" "), 5),
    ("id 0", message(0), 0),
    ("id negative", message(-1), -1),
    ("id 2**53", message(2**53), 2**53),
    ("id 10**30", message(10**30), 10**30),
    ("id empty string", message(""), ""),
    ("id space", message(" "), " "),
    ("id digits string", message("7"), "7"),
    ("id non-ASCII string", message("é-ü"), "é-ü"),
    ("id fraction", message(1.5), None),
    ("id 1.0", message(1.0), None),
    ("id exponent", message(1e30), None),
    ("id true", message(True), None),
    ("id false", message(False), None),
    ("id null", message(None), None),
    ("id array", message([]), None),
    ("id array of one", message([1]), None),
    ("id object", message({}), None),
    ("id object with member", message({"a": 1}), None),
    ("id null, params blank", message(None, params=" "), None),
    ("id true, jsonrpc blank", message(True, jsonrpc=" "), None),
]

SENTINEL = json.dumps({"jsonrpc": "2.0", "id": "sentinel", "method": "ping"})


def next_answer(child: StdioChild, what: str) -> dict[str, Any]:
    try:
        return child.receive(GENEROUS)
    except queue.Empty:
        pytest.fail(too_slow(what, GENEROUS))


@pytest.fixture(scope="module", params=["lean", "stock"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioChild]:
    """A server over the given transport on a fresh local vault, initialized."""
    with LocalVault(tmp_path_factory.mktemp(f"vault-{request.param}")) as vault:
        seeding.seed(vault, "a.md", "# A\n")
        child = StdioChild(
            ENTRY_POINTS["python -m teamvault_mcp"],
            child_env(**env_for(vault, STDIO=request.param, PREFETCH="off")),
        )
        try:
            child.initialize()
            yield child
            code, stderr = child.close()
            assert code == 0, stderr
        finally:
            if child.process.poll() is None:
                child.process.kill()
                child.process.wait()


@pytest.mark.parametrize(("line", "answer_id"), [(line, answer_id) for _, line, answer_id in CRAFTED],
                         ids=[name for name, _, _ in CRAFTED])  # fmt: skip
def test_every_request_with_an_id_gets_exactly_one_answer_with_that_id(
    served: StdioChild, line: str, answer_id: Any
) -> None:
    served.send(line)
    answers = [next_answer(served, f"the answer to {line!r}")]
    served.send(SENTINEL)
    while answers[-1].get("id") != "sentinel":
        answers.append(next_answer(served, "the answer to the ping sent after it"))
    mine = [answer for answer in answers if answer.get("id") != "sentinel"]
    assert [answer["id"] for answer in mine] == [answer_id], mine
    assert ("result" in mine[0]) != ("error" in mine[0])
    if "error" in mine[0]:
        assert mine[0]["error"]["code"] in (-32600, -32601, -32602), mine[0]
