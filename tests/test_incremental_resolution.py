"""When files come or go, only the links to their names are resolved again (``NoteIndex.graph``,
``VaultPaths.changed``), and every answer stays the one a resolution from scratch gives.

A seeded random walk over vaults whose names collide in every way resolution cares about (case,
``.md`` or not, the same name in several folders, attachments, relative and absolute targets, targets
ending in ``/``, ``.`` or ``..``, non-ASCII spellings), compared step by step with a fresh index.
"""

from __future__ import annotations

import random

import pytest

from teamvault_mcp.text.noteindex import LinkFact, LinkGraph, NoteIndex
from teamvault_mcp.text.resolution import VaultPaths, name_key, names_of

NAMES = ["Ada", "ada", "Grace", "plan", "Plan.md", "café", "cafe\u0301", "x.y", "notes", "a b"]
FOLDERS = ["", "people/", "people/team/", "projects/", "Projects/", "archive/2024/"]
TARGETS = [
    *NAMES,
    *(f"{name}.md" for name in NAMES),
    "people/Ada",
    "/Ada",
    "./Ada",
    "../Ada",
    "../people/Grace.md",
    "team/",
    "people/.",
    "..",
    "Ada#Intro",
    "ADA",
    "image.png",
    "people/team/plan",
    "",
]


def random_path(rng: random.Random) -> str:
    name = rng.choice(NAMES)
    extension = rng.choice([".md", ".md", ".md", "", ".png"])
    return f"{rng.choice(FOLDERS)}{name}{extension}"


def links_of(rng: random.Random) -> tuple[LinkFact, ...]:
    found = []
    for line in range(rng.randrange(0, 6)):
        target = rng.choice(TARGETS).partition("#")[0]
        found.append(LinkFact(target, rng.random() < 0.3, line + 1, f"[[{target}]]", 1))
    return tuple(found)


def vault_step(
    rng: random.Random, paths: set[str], links: dict[str, tuple[str, tuple[LinkFact, ...]]], version: str
) -> None:
    """A file comes, or goes, or a note changes (its new content hash starts with ``version``)."""
    roll = rng.random()
    if roll < 0.4:
        paths.add(random_path(rng))
    elif roll < 0.7 and paths:
        paths.discard(rng.choice(sorted(paths)))
    elif paths:
        changed = rng.choice(sorted(paths))
        links[changed] = (f"{version}-{changed}", links_of(rng))


def seen(graph: LinkGraph, sources: list[str]) -> tuple[object, ...]:
    """Everything a tool reads off a graph: each note's resolved links, backlinks, broken and ambiguous links."""
    return (
        {source: graph.outgoing(source) for source in sources},
        {path: graph.incoming(path) for path in graph.vault.paths},
        graph.broken(),
        graph.ambiguous(),
    )


@pytest.mark.parametrize("seed", range(12))
def test_a_changing_vault_resolves_as_one_resolved_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    paths = {random_path(rng) for _ in range(40)}
    links: dict[str, tuple[str, tuple[LinkFact, ...]]] = {}
    kept = NoteIndex()
    for step in range(30):
        for _ in range(rng.randrange(1, 4)):  # files come and go, and notes change
            vault_step(rng, paths, links, f"hash-{step}")
        notes = {}
        for path in sorted(paths):
            if path.endswith(".md"):
                notes[path] = links.setdefault(path, (f"hash-{path}", links_of(rng)))
        sources = sorted(notes)
        incremental = kept.graph("p", paths, notes)
        scratch = NoteIndex().graph("p", paths, notes)
        assert seen(incremental, sources) == seen(scratch, sources), f"step {step}"


def test_a_new_note_of_another_name_resolves_no_link_again() -> None:
    paths = {f"notes/note-{n}.md" for n in range(200)} | {"hubs/hub.md"}
    notes = {
        path: (f"h-{path}", (LinkFact("hub", False, 1, "[[hub]]", 1), LinkFact("note-7", False, 2, "[[note-7]]", 1)))
        for path in paths
    }
    index = NoteIndex()
    index.graph("p", paths, notes)
    before = index.resolved
    added = {*paths, "inbox/unrelated.md"}
    graph = index.graph("p", added, {**notes, "inbox/unrelated.md": ("h-new", ())})
    assert index.resolved == before  # nobody links to "unrelated"
    assert len(graph.incoming("hubs/hub.md")) == len(notes) - 1  # (its own link is no backlink)
    with_a_second_hub = {*added, "archive/hub.md"}
    graph = index.graph("p", with_a_second_hub, {**notes, "inbox/unrelated.md": ("h-new", ())})
    assert index.resolved - before == 2 * len(notes)  # every note links to "hub": all of them again
    assert len(graph.ambiguous()) == len(notes)


def test_name_keys_of_targets_and_files_meet() -> None:
    assert name_key("people/Ada") == "ada" and name_key("Ada.MD") == "ada.md"
    assert name_key("people/") is None and name_key("..") is None and name_key("x/.") is None
    assert names_of(["people/Ada.md", "img/Ada"]) == {"ada.md", "ada"}


def test_changed_paths_keep_answers_for_other_names_only() -> None:
    vault = VaultPaths(["people/ada.md", "grace.md"])
    assert vault.resolve("ada", "notes/x.md") == "people/ada.md"
    assert vault.resolve("grace", "notes/x.md") == "grace.md"
    after = vault.changed(["people/ada.md", "grace.md", "ada.md"])
    assert after.resolve("ada", "notes/x.md") == "ada.md"  # the root's one now
    assert after.alternatives("ada", "notes/x.md") == ["people/ada.md"]
    assert after.resolve("grace", "notes/x.md") == "grace.md"
