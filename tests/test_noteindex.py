"""The index behind the link, tag, task and property tools (text/noteindex.py), and the moments of text/moments.py.

Pure: no vault, no client. What the tools make of the index is ``test_graph.py``.
"""

from __future__ import annotations

import datetime

import pytest

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.text.moments import parse_moment, shown, since_moment
from teamvault_mcp.text.noteindex import STOP_EVERY, FactsIndex, LinkFact, NoteFacts, NoteIndex
from teamvault_mcp.text.prose import NoteText
from teamvault_mcp.text.tags import note_tags

NOTE = '---\ntags: [a]\nrelated: "[[b]]"\n---\n# N\n\n[[c]] #inline\n- [ ] task\n'


# -- facts: each part once, and only the parts asked for ----------------------------------------------------------


def test_only_the_parts_asked_for_are_parsed() -> None:
    facts = NoteFacts()
    facts.parse("# N\n- [ ] task [[c]]\n", ["tasks"])
    assert facts.tasks is not None and len(facts.tasks) == 1
    assert (facts.links, facts.tags, facts.front_matter) == (None, None, None)
    assert facts.missing(["tasks", "links", "fields"]) == ["links", "fields"]


def test_the_front_matter_read_for_one_part_is_handed_on_to_the_next() -> None:
    facts = NoteFacts()
    facts.parse(NOTE, ["links"])  # a link in the front matter: the YAML was read for it
    assert [link.raw for link in facts.links or ()] == ["[[b]]", "[[c]]"]
    assert facts.front_matter == ({"tags": ["a"], "related": "[[b]]"}, None)
    # What was read is what the tags use: a stand-in for the fields shows they are not read again.
    facts.front_matter = ({"tags": ["handed-on"]}, None)
    facts.parse(NOTE, ["tags"])
    assert [tag.name for tag in facts.tags.tags] == ["handed-on", "inline"]  # type: ignore[union-attr]


def test_a_note_text_takes_front_matter_already_read() -> None:
    note = NoteText(NOTE, front_matter=({"tags": ["given"]}, None))
    assert [tag.name for tag in note_tags(note).tags] == ["given", "inline"]
    fresh = NoteText(NOTE)
    assert fresh.front_matter_read is None
    assert fresh.fields == {"tags": ["a"], "related": "[[b]]"}
    assert fresh.front_matter_read == ({"tags": ["a"], "related": "[[b]]"}, None)


def test_the_index_parses_a_content_once_per_part() -> None:
    index = FactsIndex()
    assert index.cached("h1", ["links"]) is None
    first = index.facts("h1", NOTE, ["links"])
    assert index.facts("h1", NOTE, ["links"]) is first
    assert index.cached("h1", ["links"]) is first
    assert index.cached("h1", ["links", "tasks"]) is None
    index.facts("h1", NOTE, ["links", "tasks"])
    assert index.parsed == 2


def test_the_index_keeps_within_its_bound_least_recently_used_first_out() -> None:
    note = "[[x]] " * 50 + "\n"
    index = FactsIndex(max_bytes=NoteFacts().weight + 100)  # less than one note's links: only the newest stays
    index.facts("old", note, ["links"])
    index.facts("new", note + " ", ["links"])
    assert index.cached("old", ["links"]) is None
    assert index.cached("new", ["links"]) is not None
    assert len(index) == 1


# -- the link graph: resolved again only when something changed ------------------------------------------------


def links(*targets: str) -> tuple[LinkFact, ...]:
    return tuple(LinkFact(target, False, 1, f"[[{target}]]", 1) for target in targets)


def test_an_unchanged_vault_gives_the_same_graph_and_a_changed_note_is_resolved_alone() -> None:
    index = NoteIndex()
    paths = ["a.md", "b.md", "c.md"]
    notes = {"a.md": ("h1", links("b", "c")), "b.md": ("h2", links("a"))}
    graph = index.graph("p", paths, notes)
    assert index.graph("p", paths, dict(notes)) is graph
    assert index.resolved == 3
    assert [backlink.source for backlink in graph.incoming("a.md")] == ["b.md"]
    changed = index.graph("p", paths, {**notes, "b.md": ("h3", links("c", "nowhere"))})
    assert index.resolved == 5
    assert [backlink.source for backlink in changed.incoming("c.md")] == ["a.md", "b.md"]
    assert [item.link.target for item in changed.broken()] == ["nowhere"]


def test_a_new_path_resolves_again_only_the_links_to_its_name() -> None:
    index = NoteIndex()
    notes = {"a.md": ("h1", links("b")), "c.md": ("h2", links("x"))}
    assert index.graph("p", ["a.md", "c.md"], notes).outgoing("a.md")[0][1] is None
    assert index.graph("p", ["a.md", "b.md", "c.md"], notes).outgoing("a.md")[0][1] == "b.md"
    assert index.resolved == 3  # c.md links to "x": nothing "b.md" can change


def test_a_graph_of_some_notes_does_not_displace_the_whole_vault_s() -> None:
    index = NoteIndex()
    paths = ["a.md", "b.md"]
    whole = index.graph("p", paths, {"a.md": ("h1", links("b")), "b.md": ("h2", links("a"))})
    index.graph("p", paths, {"a.md": ("h1", links("b"))}, keep=False)
    assert index.graph("p", paths, {"a.md": ("h1", links("b")), "b.md": ("h2", links("a"))}) is whole
    assert index.resolved == 2


def test_a_note_s_links_to_itself_are_no_backlinks() -> None:
    index = NoteIndex()
    graph = index.graph("p", ["a.md"], {"a.md": ("h", links("", "a"))})
    assert [target for _, target in graph.outgoing("a.md")] == ["a.md", "a.md"]
    assert graph.incoming("a.md") == []


# -- moments ----------------------------------------------------------------------------------------------------

UTC = datetime.UTC
NOW = datetime.datetime(2027, 1, 15, 8, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-01", datetime.datetime(2026, 12, 1, tzinfo=UTC)),
        ("2026-12-01T09:14:05.123Z", datetime.datetime(2026, 12, 1, 9, 14, 5, 123000, tzinfo=UTC)),
        ("2026-12-01 09:14", datetime.datetime(2026, 12, 1, 9, 14, tzinfo=UTC)),
        ("2026-12-01T11:14:05+02:00", datetime.datetime(2026, 12, 1, 9, 14, 5, tzinfo=UTC)),
        ("2026-12-01T09:14:05,5z", datetime.datetime(2026, 12, 1, 9, 14, 5, 500000, tzinfo=UTC)),
        ("2026-13-45", None),
        ("2026-13-45T09:14:05.123Z", None),  # the server's form, but no such day
        ("2026-12-01T09:14:05 123Z", None),
        ("yesterday", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_moment(text: str | None, expected: datetime.datetime | None) -> None:
    assert parse_moment(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", "2027-01-15T07:30:00Z"),
        ("24h", "2027-01-14T08:00:00Z"),
        ("7d", "2027-01-08T08:00:00Z"),
        ("2w", "2027-01-01T08:00:00Z"),
        ("3 days", "2027-01-12T08:00:00Z"),
        ("1H", "2027-01-15T07:00:00Z"),
        ("2027-01-10", "2027-01-10T00:00:00Z"),
    ],
)
def test_since_is_a_moment_or_a_span_back_from_now(text: str, expected: str) -> None:
    assert shown(since_moment(text, NOW)) == expected


@pytest.mark.parametrize("text", ["yesterday", "7", "-1d", "2027-02-30", "1y"])
def test_a_since_that_is_neither_is_refused_with_the_forms_it_takes(text: str) -> None:
    with pytest.raises(ToolInputError, match=r"since must be a date \(2026-12-01\), a date-time"):
        since_moment(text, NOW)


def test_a_graph_stopped_midway_holds_what_was_resolved_and_the_next_one_goes_on_from_there() -> None:
    index = NoteIndex()
    paths = [f"n{number:04d}.md" for number in range(STOP_EVERY * 3)]
    notes = {path: (f"h-{path}", links("n0000")) for path in paths}
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) >= 2  # the second look says stop

    partial = index.graph("p", paths, notes, stop=stop)
    assert len(partial.notes) == 2 * STOP_EVERY - 1 and index.resolved == 2 * STOP_EVERY - 1
    whole = index.graph("p", paths, notes)
    assert len(whole.notes) == len(paths) and whole is not partial
    assert index.resolved == len(paths)  # each note's links resolved once
    assert index.graph("p", paths, notes) is whole  # the whole one is kept, the stopped one was not
