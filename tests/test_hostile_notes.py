"""Hostile notes through a real MCP client: indexed within the caps the docs state, never a crash or a stall.

A local vault on loopback, the tools in-process (``support/sessions.py``). Each hostile input is
one note — 100,000 links, tags or tasks, a 10 MB note, a path of odd characters, front matter
that does not parse — and every graph and search tool is called over it. Each answer must be
complete or say what it left out (the notice in both halves: text and ``notices``), bounded in
size, and not partial: the budget is generous, so a partial answer means unbounded work, and no
assertion here depends on the machine's speed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from support.sessions import Session, open_session

from teamvault_mcp.text.links import MAX_LINKS_PER_NOTE
from teamvault_mcp.text.prose import MAX_FACTS_BYTES
from teamvault_mcp.text.tags import MAX_TAGS_PER_NOTE
from teamvault_mcp.text.tasks import MAX_TASKS_PER_NOTE

pytestmark = pytest.mark.anyio

#: Generous, so that only unbounded work (not a slow machine) makes an answer partial.
BUDGET = 30.0
#: No answer of these tools is larger than this: every list in them is cut.
MAX_ANSWER_CHARS = 60_000
HOSTILE = 100_000


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async with open_session(tmp_path, call_budget=BUDGET, structured_content=True) as opened:
        yield opened


async def bounded(session: Session, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """The text and data of a call that succeeds, is not partial and is bounded in size."""
    text, is_error, data = await session.call(tool, **arguments)
    assert not is_error, text[:400]
    assert len(text) <= MAX_ANSWER_CHARS, (tool, len(text))
    assert "[Partial" not in text and not data.get("partial"), text[:400]
    return text, data


def noticed(text: str, data: dict[str, Any], notice: str) -> None:
    """``notice`` is said in both halves: a line of the text, and one of the data's notices."""
    assert notice in text.splitlines(), text[:600]
    assert notice in data.get("notices", []), data.get("notices")


async def test_a_note_of_100000_links_keeps_its_first_10000_and_every_links_tool_says_so(session: Session) -> None:
    session.seed("many.md", "# Many\n\n" + "".join(f"see [[hub]] and [[n{i}]]\n" for i in range(HOSTILE // 2)))
    session.seed("hub.md", "# Hub\n\nsee [[many]]\n")
    notice = f"[Not indexed: the links after the first {MAX_LINKS_PER_NOTE:,} of many.md. read_note(path) reads them.]"

    text, data = await bounded(session, "note_links", path="many.md")
    assert data["out"] == MAX_LINKS_PER_NOTE
    noticed(text, data, notice)
    text, data = await bounded(session, "note_links", path="hub.md")
    assert data["in"] == MAX_LINKS_PER_NOTE // 2  # every other link of the first 10,000 is to the hub
    assert "hub.md:3  see [[hub]] and [[n0]]" not in text and "many.md:3  see [[hub]] and [[n0]]" in text
    noticed(text, data, notice)
    text, data = await bounded(session, "broken_links")
    assert data["broken"] == MAX_LINKS_PER_NOTE // 2
    noticed(text, data, notice)
    for tool, arguments in SEARCH_CALLS:
        await bounded(session, tool, **arguments)


async def test_a_note_of_100000_tags_keeps_its_first_10000_and_list_tags_says_so(session: Session) -> None:
    session.seed("tags.md", "# Tags\n\n" + "".join(f"#t{i}\n" for i in range(HOSTILE)))

    text, data = await bounded(session, "list_tags")
    assert data["total"] == MAX_TAGS_PER_NOTE
    noticed(
        text,
        data,
        f"[Not indexed: the tags after the first {MAX_TAGS_PER_NOTE:,} of tags.md. read_note(path) reads them.]",
    )
    text, data = await bounded(session, "list_tags", tag="t9999")
    assert data["total"] == 1
    text, data = await bounded(session, "list_tags", tag="t10000")
    assert data["total"] == 0
    for tool, arguments in SEARCH_CALLS:
        await bounded(session, tool, **arguments)


async def test_a_note_of_100000_tasks_keeps_its_first_10000_and_list_tasks_says_so(session: Session) -> None:
    session.seed("tasks.md", "# Tasks\n\n" + "".join(f"- [ ] task {i}\n" for i in range(HOSTILE)))

    text, data = await bounded(session, "list_tasks")
    assert data["total"] == MAX_TASKS_PER_NOTE
    assert len(data["tasks"]) == 50  # the default limit: the list itself is cut as before
    notice = f"[Not indexed: the tasks after the first {MAX_TASKS_PER_NOTE:,} of tasks.md. read_note(path) reads them.]"
    noticed(text, data, notice)
    for tool, arguments in SEARCH_CALLS:
        await bounded(session, tool, **arguments)


async def test_a_10_mb_note_is_read_for_no_facts_but_its_front_matter_and_every_tool_says_so(session: Session) -> None:
    line = "lorem ipsum dolor sit amet [[hub]] #big and - [ ] no task\n"
    body = line * (10 * 1024 * 1024 // len(line)) + "the last word: zyzzyva\n"
    session.seed("big.md", "---\ntags: [huge]\nstatus: big\n---\n# Big\n\n" + body)
    session.seed("hub.md", "# Hub\n\n- [ ] one task\n")
    assert len(body) > MAX_FACTS_BYTES

    def notice(what: str) -> str:
        return f"[Not indexed: the {what} in the body of big.md (over 5 MiB). read_note(path) reads them.]"

    text, data = await bounded(session, "note_links", path="big.md")
    assert data["out"] == 0
    noticed(text, data, notice("links"))
    text, data = await bounded(session, "note_links", path="hub.md")
    assert data["in"] == 0
    noticed(text, data, notice("links"))
    text, data = await bounded(session, "list_tags")
    assert [tag["tag"] for tag in data["tags"]] == ["huge"]  # the front matter's are read, the body's are not
    noticed(text, data, notice("tags"))
    text, data = await bounded(session, "list_tasks")
    assert [task["path"] for task in data["tasks"]] == ["hub.md"]
    noticed(text, data, notice("tasks"))
    text, data = await bounded(session, "query_notes", where={"status": "big"})
    assert [note["path"] for note in data["notes"]] == ["big.md"]
    text, _ = await bounded(session, "search_notes", query="zyzzyva")
    assert "big.md:" in text
    for tool, arguments in [*SEARCH_CALLS, ("note_outline", {"path": "big.md"}), ("read_note", {"path": "big.md"})]:
        await bounded(session, tool, **arguments)


SEARCH_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_notes", {"query": "task"}),
    ("find_notes", {"query": "many"}),
    ("recent_changes", {}),
    ("query_notes", {"where": {"status": "x"}}),
    ("list_tags", {}),
    ("list_tasks", {}),
    ("broken_links", {}),
]


#: Every kind of character the path rules (``text/paths.py``) let a name hold that Markdown or a link treats apart.
ODD_FOLDER = "odd [dir] & é 😀 (x) {y} ~z ^c %25 ' ; = + @ $ !"
ODD_NAMES = (
    "a b",
    "per%20cent",
    "hash#tag",
    "brack[et]",
    "paren (1)",
    "caret^ block",
    "amp & semi; eq= plus+ at@ dollar$ bang! tilde~ tick` brace{}",
    "quote's",
    "cafe\u0301 nfd",
    "rtl\u202eevil",
    "dots.in.name",
    "ünï ćødé 日本",
)


def odd_links(name: str) -> list[str]:
    """The links to ``ODD_FOLDER/name.md`` in every Obsidian form its name can be written in."""
    path = f"{ODD_FOLDER}/{name}.md"
    encoded = quote(path)
    forms = [f"[m]({encoded})", f"![e]({encoded})"]
    if "#" not in path:  # in a destination, # starts the heading, and % is decoded (a literal one is %25)
        forms.append(f"[m](<{path.replace('%', '%25')}>)")
    if not any(char in name for char in "#^|[]"):  # what a wikilink cannot name
        forms += [f"[[{name}]]", f"[[{name}|alias]]", f"[[{name}#{name}]]", f"![[{name}]]"]
    return forms


async def test_paths_of_every_odd_character_resolve_in_every_link_form_and_round_trip(session: Session) -> None:
    paths = [f"{ODD_FOLDER}/{name}.md" for name in ODD_NAMES]
    for name, path in zip(ODD_NAMES, paths, strict=True):
        session.seed(path, f"---\ntags: [odd]\n---\n# {name}\n\nword zyzzyva #oddtag\n- [ ] task in it\n")
    links = [(link, path) for name, path in zip(ODD_NAMES, paths, strict=True) for link in odd_links(name)]
    session.seed("source.md", "# Source\n\n" + "".join(f"- {link}\n" for link, _ in links))

    _, data = await bounded(session, "note_links", path="source.md", direction="out")
    assert [link["target"] for link in data["linksOut"]] == [path for _, path in links]
    assert all(link["link"].rstrip("…") in raw for link, (raw, _) in zip(data["linksOut"], links, strict=True))
    _, data = await bounded(session, "broken_links")
    assert data["broken"] == 0
    shown: set[str] = set()
    for path in paths:
        text, data = await bounded(session, "note_links", path=path, direction="in")
        assert data["in"] == len(odd_links(ODD_NAMES[paths.index(path)])) and text.startswith(f"{path}: ")
    for tool, arguments, key in [
        ("list_tasks", {}, "tasks"),
        ("list_tags", {"tag": "oddtag"}, "notes"),
        ("query_notes", {"where": {"tags": "odd"}}, "notes"),
        ("recent_changes", {}, "changes"),
    ]:
        text, data = await bounded(session, tool, **arguments)
        found = {row["path"] for row in data[key]} - {"source.md"}
        assert found == set(paths), (tool, sorted(set(paths) - found))
        assert all(any(line.startswith(path) or f"  {path}  " in line for line in text.splitlines()) for path in found)
        shown |= found
    text, _ = await bounded(session, "search_notes", query="zyzzyva")
    assert all(f"{path}:6 " in text for path in paths)
    for path in shown:  # the path shown is the path read_note takes
        assert "word zyzzyva" in await session.read(path)


async def test_front_matter_that_cannot_be_read_still_gives_the_body_its_links_tags_and_tasks(session: Session) -> None:
    session.seed("bad.md", '---\ntags: [a, b\nstatus: "open\n---\n# Bad\n\nsee [[hub]] #bodytag\n- [ ] fix the YAML\n')
    session.seed("hub.md", "# Hub\n")

    _, data = await bounded(session, "note_links", path="bad.md", direction="out")
    assert [(link["link"], link["target"]) for link in data["linksOut"]] == [("[[hub]]", "hub.md")]
    _, data = await bounded(session, "list_tags")
    assert [tag["tag"] for tag in data["tags"]] == ["bodytag"]
    _, data = await bounded(session, "list_tasks")
    assert [(task["path"], task["text"]) for task in data["tasks"]] == [("bad.md", "fix the YAML")]
    text, data = await bounded(session, "query_notes", where={"status": "open"})
    assert data["matches"] == 0
    # Its wording ("1 note have") is test_graph's to change: here, that it names the note and the call that says why.
    unreadable = [line for line in text.splitlines() if "front matter that cannot be read (e.g. bad.md)" in line]
    assert len(unreadable) == 1 and "read_frontmatter(path)" in unreadable[0], text
    noticed(text, data, unreadable[0])
    text, _ = await bounded(session, "search_notes", query="YAML")
    assert "bad.md:" in text
