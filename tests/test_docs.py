"""The README and docs/ hold together: every link leads to a file and a heading that exist, and the architecture
page names every module of the package, as found on disk (issue 28).

External links (``https://…``) are not fetched: the suite runs without a network.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "teamvault_mcp"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# -- Markdown, as far as links and headings need it -------------------------------------------------------------

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a fence closes with the same character, at least as long)."""
    lines, fence = [], ""
    for line in text.split("\n"):
        opened = FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            lines.append("")
        elif opened:
            fence = opened.group(1)
            lines.append("")
        else:
            lines.append(line)
    return lines


def without_code_spans(line: str) -> str:
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", line)


def heading_slugs(text: str) -> set[str]:
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces to hyphens, and a
    heading that repeats gets ``-1``, ``-2``, … (``#`` lines inside fenced code are not headings)."""
    slugs: set[str] = set()
    for line in prose_lines(text):
        match = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match is None:
            continue
        title = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1))  # a link in a heading: its label
        slug = "".join(
            char for char in title.lower() if char in " -_" or unicodedata.category(char)[0] in "LNM"
        ).replace(" ", "-")
        unique, count = slug, 0
        while unique in slugs:
            count += 1
            unique = f"{slug}-{count}"
        slugs.add(unique)
    return slugs


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(text: str) -> list[tuple[int, str]]:
    """Every inline link's target, with the line it ends on; code blocks and code spans hold none. A label may
    run over lines."""
    prose = "\n".join(without_code_spans(line) for line in prose_lines(text))
    return [(prose.count("\n", 0, match.end()) + 1, match.group(1)) for match in LINK.finditer(prose)]


def broken_links(page: Path) -> list[str]:
    """The links of ``page`` that lead nowhere: a missing file, or an anchor that no heading of its target makes."""
    problems = []
    for number, target in links(page.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not fetched
            continue
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}:{number}: {target}"
        if not destination.exists():
            problems.append(f"{where}: no such file")
        elif anchor and (destination.suffix != ".md" or anchor not in heading_slugs(destination.read_text())):
            problems.append(f"{where}: no heading makes #{anchor}")
    return problems


# -- the architecture page's tables --------------------------------------------------------------------------------


def package_folders() -> dict[str, set[str]]:
    """Each folder of the package, as the architecture page heads it (``teamvault_mcp/``, ``server/``, …), and
    its modules (the ``.py`` files directly in it)."""
    folders: dict[str, set[str]] = {}
    for folder in sorted({path.parent for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts}):
        name = "teamvault_mcp/" if folder == PACKAGE else folder.relative_to(PACKAGE).as_posix() + "/"
        folders[name] = {path.name for path in folder.glob("*.py")}
    return folders


def module_rows(text: str) -> dict[str, set[str]]:
    """The modules each ``## `folder/` `` section of the page has a table row for: ``| `name.py` | … |``."""
    rows: dict[str, set[str]] = {}
    for section in re.split(r"^(?=## )", text, flags=re.M):
        heading = re.match(r"## `([\w/]+/)`\s*\n", section)
        if heading is not None:
            rows[heading.group(1)] = set(re.findall(r"^\| `(\w+\.py)` \|", section, re.M))
    return rows


def unlisted_modules(text: str, folders: dict[str, set[str]]) -> list[str]:
    """What the page lacks or names wrongly: a folder without a section, a module without a row, a row for a
    module that is not there."""
    rows = module_rows(text)
    problems = [f"{folder}: no section headed ## `{folder}`" for folder in folders if folder not in rows]
    for folder, modules in folders.items():
        listed = rows.get(folder, set())
        problems += [f"{folder}{name}: no row in its folder's table" for name in sorted(modules - listed)]
        problems += [f"{folder}{name}: a row, but no such module" for name in sorted(listed - modules)]
    problems += [f"a section for {folder}, which is not a folder of the package" for folder in set(rows) - set(folders)]
    return problems


# -- the rules -----------------------------------------------------------------------------------------------------


def test_every_link_in_the_readme_and_the_docs_leads_to_a_file_and_a_heading_that_exist() -> None:
    every = [(page, target) for page in pages() for _, target in links(page.read_text())]
    local = [target for _, target in every if not re.match(r"[a-z][a-z0-9+.-]*:", target)]
    assert len(local) > 30 and sum("#" in target for target in local) > 15, "the scanner finds the links"
    assert {page for page, _ in every} >= {ROOT / "README.md", ARCHITECTURE}
    problems = [problem for page in pages() for problem in broken_links(page)]
    assert problems == [], "links that lead nowhere:\n" + "\n".join(problems)


def test_the_architecture_page_has_a_row_for_every_module_on_disk() -> None:
    folders = package_folders()
    assert {"teamvault_mcp/", "server/", "tools/", "vault/", "text/", "localvault/"} <= set(folders)
    assert sum(len(modules) for modules in folders.values()) > 90, "the modules are found on disk"
    problems = unlisted_modules(ARCHITECTURE.read_text(), folders)
    assert problems == [], "docs/architecture.md, one row per module (see its head):\n" + "\n".join(problems)


def test_every_module_the_architecture_page_names_exists() -> None:
    # the path of one call and the prose name modules by their path in the package: a move must move them too
    named = set(
        re.findall(r"(?<![\w/.])((?:server|tools|vault|text|localvault)/[\w/]*\w\.py)", ARCHITECTURE.read_text())
    )
    assert {"tools/spec.py", "tools/context.py", "server/threads.py", "vault/transport.py"} <= named
    assert sorted(name for name in named if not (PACKAGE / name).is_file()) == []


def test_the_path_of_one_call_goes_from_cli_main_to_the_socket() -> None:
    text = ARCHITECTURE.read_text()
    path = text[text.index("## The path of one call") :].split("\n## ")[0]
    order = ["`cli.main`", "server/protocol", "server/lean.py", "`ToolRunner.call`", "tools/spec.py"]
    order += ["server/threads.py", "tools/context.py", "tools/notes.py", "vault/client.py", "vault/retry.py"]
    order += ["vault/transport.py", "the socket"]
    at, before = 0, "its start"
    for step in order:  # each step named after the one before it
        assert step in path[at:], f"the path of one call names {step} after {before}"
        at, before = path.index(step, at) + len(step), step


# -- the checks can fail -------------------------------------------------------------------------------------------


def test_github_slugs_drop_punctuation_keep_words_and_number_repeats() -> None:
    text = "# Remote use (Streamable HTTP)\n## `server/`\n## Errors\n## Errors\n```\n# not a heading\n```\n"
    assert heading_slugs(text) == {"remote-use-streamable-http", "server", "errors", "errors-1"}
    assert heading_slugs("## Writing by section and across notes") == {"writing-by-section-and-across-notes"}
    assert heading_slugs("## Hosts and the two halves of a result") == {"hosts-and-the-two-halves-of-a-result"}


def test_a_missing_file_or_heading_is_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A part\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n[ok](other.md) [ok](other.md#a-part) [ok](#page) [web](https://example.com/x) [on two\nlines](#page)\n"
        "`[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n"
        "[gone](missing.md) [bad anchor](other.md#no-part) [bad here](#nothing) [bad on\ntwo lines](#nowhere)\n"
    )
    problems = broken_links(page)
    assert [problem.split(": ", 1)[1] for problem in problems] == [
        "missing.md: no such file",
        "other.md#no-part: no heading makes #no-part",
        "#nothing: no heading makes #nothing",
        "#nowhere: no heading makes #nowhere",
    ]


def test_a_module_without_a_row_or_a_row_without_a_module_is_found() -> None:
    folders = {"teamvault_mcp/": {"cli.py"}, "server/": {"__init__.py", "runner.py", "workspace.py"}}
    page = "## `teamvault_mcp/`\n\n| `cli.py` | x |\n\n## `server/`\n\n| `__init__.py` | x |\n| `runner.py` | x |\n"
    assert unlisted_modules(page, folders) == ["server/workspace.py: no row in its folder's table"]
    page += "| `gone.py` | x |\n\n## `tools/writing/`\n\n| `plan.py` | x |\n"
    assert unlisted_modules(page, folders | {"tools/writing/": {"plan.py"}}) == [
        "server/workspace.py: no row in its folder's table",
        "server/gone.py: a row, but no such module",
    ]
    assert unlisted_modules(page, folders) == [
        "server/workspace.py: no row in its folder's table",
        "server/gone.py: a row, but no such module",
        "a section for tools/writing/, which is not a folder of the package",
    ]
    assert unlisted_modules("", folders)[:2] == [
        "teamvault_mcp/: no section headed ## `teamvault_mcp/`",
        "server/: no section headed ## `server/`",
    ]
