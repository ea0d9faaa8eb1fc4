"""Obsidian's link model, its syntax: the links a note holds. Pure.

Syntax (:func:`parse_links`), in prose only (``prose.py``: not in code, inline code or HTML
comments):

- wikilinks ``[[target]]``, ``[[target|alias]]``, ``[[target#Heading]]``, ``[[target#^block]]``,
  ``[[#Heading]]`` (the same note); a nested heading ``[[target#A#B]]`` keeps ``A#B``; in a
  table, ``[[target\\|alias]]`` (the escaped pipe) is the same link;
- Markdown links ``[text](path.md)``: the destination percent-decoded, bare or ``<…>``, with
  an optional ``#fragment`` and title; on one line; ``scheme:`` destinations (``https:``,
  ``mailto:``, ``obsidian:`` …) and ``//host`` are external and not vault links;
- embeds: either form with ``!`` in front (``kind="embed"``, ``syntax`` says which form);
- front matter: a property value that is a quoted wikilink, whole (``related: "[[Ada]]"``,
  or items of a list). Obsidian takes no other links from front matter.

Not read as vault links: reference-style links (``[text][ref]``), autolinks (``<https://…>``),
HTML ``<a href>``, and a Markdown link whose text holds a wikilink (the wikilink is read).

Where each link resolves is ``resolution.py``'s; rewriting links after a move, which uses both,
lives in ``relink.py``.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from teamvault_mcp.text.prose import NoteText, as_note

#: ``[[…]]`` holding no ``[[`` or ``]]`` and no line break (an embed's ``!`` is looked at apart: a pattern
#: that starts with a literal is found many times faster).
_WIKI = re.compile(r"\[\[([^\[\]\n]*(?:(?:\[(?!\[)|\](?!\]))[^\[\]\n]*)*)\]\]")
#: ``[text](destination "title")``, the text with nested brackets one level deep.
_MARKDOWN = re.compile(
    r"\[(?P<text>[^\[\]\n\\]*(?:(?:\\.|\[[^\[\]\n\\]*(?:\\.[^\[\]\n\\]*)*\])[^\[\]\n\\]*)*)\]"
    r"\([ \t]*(?:<(?P<angle>[^<>\n]*)>|(?P<bare>(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))+))"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*\)"
)
_EXTERNAL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:|//")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_YAML_KEY = re.compile(r"""(?:"([^"\n]*)"|'([^'\n]*)'|([^\s#'"\-?:][^:\n]*?))[ \t]*:(?:[ \t]|$)""")

MARKDOWN_EXTENSION = ".md"
#: The links of one note the index keeps (:func:`parse_links`): the first 10,000, front matter first. A note of
#: 100,000 links took 2 s to read and 0.7 s a call to answer for its backlinks; notes of ~15 links are the rule.
MAX_LINKS_PER_NOTE = 10_000


@dataclass(frozen=True, slots=True)
class Link:
    """One link in a note, as written.

    ``kind`` is ``wiki``, ``markdown``, ``embed`` (either form with ``!``) or ``frontmatter``;
    ``syntax`` is the form, ``wiki`` (``[[…]]``) or ``markdown`` (``[…](…)``). ``target`` is the
    path part, decoded (``""`` for a link to a heading of the same note); ``heading`` and
    ``block`` (without its ``^``) the part after ``#``; ``alias`` the text shown (a wikilink's
    ``|alias``, a Markdown link's text). ``line`` and ``column`` (1-based) are where ``raw``
    starts, ``end_column`` just past its end; ``start``/``end`` are offsets in the note.
    ``raw[target_start:target_end]`` is the written target, the part a rewrite replaces.
    A front matter link's ``raw`` is the YAML value (quotes and escapes undone), ``field``
    its property and ``quote`` the quote it is written in.
    """

    kind: str
    syntax: str
    raw: str
    target: str
    heading: str | None
    block: str | None
    alias: str | None
    line: int
    column: int
    end_column: int
    start: int
    end: int
    target_start: int
    target_end: int
    field: str | None = None
    quote: str = ""

    @property
    def in_front_matter(self) -> bool:
        return self.kind == "frontmatter"

    @property
    def embed(self) -> bool:
        return self.kind == "embed"


def parse_links(note: str | NoteText, path: str = "", *, limit: int | None = MAX_LINKS_PER_NOTE) -> list[Link]:
    """The links of the note, front matter first, then in the order of the text: the first ``limit`` (None: every
    one, as a rewrite needs); a note too large for facts (``prose.py``) gives its front matter's only, unless
    ``limit`` is None."""
    note = as_note(note, path)
    key = f"links:{limit}"
    if key not in note.found:
        note.found[key] = tuple(_links(note, limit))
    return list(note.found[key])


def _links(note: NoteText, limit: int | None) -> list[Link]:
    links = _front_matter_links(note)
    if limit is not None and note.oversized:
        return links[:limit]
    prose = note.prose
    taken: list[tuple[int, int]] = []
    # Each kind is found up to ``limit``: the first ``limit`` of the note are among those.
    wikilinks = 0
    for match in _WIKI.finditer(prose, note.body_start):
        start = match.start()
        embed = start > note.body_start and prose[start - 1] == "!"
        link = _wikilink(note, start - embed, match.end(), embed=embed)
        if link is not None:
            links.append(link)
            taken.append((link.start, link.end))
            wikilinks += 1
            if limit is not None and wikilinks >= limit:
                break
    markdown = 0
    for line_start, line_end in _lines_with(prose, "](", note.body_start):
        for match in _MARKDOWN.finditer(prose, line_start, line_end):
            start = match.start()
            embed = start > line_start and prose[start - 1] == "!"
            if not _overlaps(taken, start - embed, match.end()):
                link = _markdown_link(note, match, embed=embed)
                if link is not None:
                    links.append(link)
                    markdown += 1
        if limit is not None and markdown >= limit:
            break
    links.sort(key=lambda link: (not link.in_front_matter, link.start))
    return links if limit is None else links[:limit]


def target_spans(note: str | NoteText, path: str = "") -> list[tuple[int, int, Link]]:
    """Where each link's target is written in the note's text, as (start, end) offsets, with the link; in order.

    The target is what a rename of the note it names would change: a wikilink's or embed's text before ``|``
    (``#heading`` included; not the alias), a Markdown link's destination (``#fragment`` included; not the
    link text). Front matter links count too.
    """
    note = as_note(note, path)
    spans = []
    for link in parse_links(note, limit=None):  # a rewrite misses none
        written = note.text[link.start : link.end]
        if link.syntax == "wiki":
            opening = 3 if written.startswith("!") else 2
            target, bar, _ = written[opening:-2].partition("|")
            if bar and target.endswith("\\"):  # [[a\|b]] in a table
                target = target[:-1]
            spans.append((link.start + opening, link.start + opening + len(target), link))
            continue
        match = _MARKDOWN.search(written)
        if match is not None:
            group = "angle" if match.group("angle") is not None else "bare"
            spans.append((link.start + match.start(group), link.start + match.end(group), link))
    spans.sort(key=lambda span: span[0])
    return spans


# -- parsing --------------------------------------------------------------------------------------------------


def _wikilink(
    note: NoteText, start: int, end: int, *, embed: bool, raw: str | None = None, field: str | None = None
) -> Link | None:
    """The wikilink ``note.text[start:end]``, or None when it names nothing.

    A front matter link passes ``raw``, its value as read, and ``field`` (None when the property is not known).
    """
    in_front_matter = raw is not None
    quote = note.text[start - 1] if in_front_matter else ""
    raw = note.text[start:end] if raw is None else raw
    opening = 3 if embed else 2
    inner = raw[opening:-2]
    target_text, bar, alias = inner.partition("|")
    if bar and target_text.endswith("\\"):  # [[a\|b]] in a table
        target_text = target_text[:-1]
    path_text, hash_mark, subpath = target_text.partition("#")
    target = path_text.strip()
    if not target and not hash_mark:
        return None
    heading = block = None
    if hash_mark:
        if subpath.startswith("^"):
            block = subpath[1:].strip()
        else:
            heading = subpath.strip()
    lead = len(path_text) - len(path_text.lstrip())
    target_start = opening + lead
    line, column = note.position(start)
    _, end_column = note.position(end)
    return Link(
        kind="frontmatter" if in_front_matter else ("embed" if embed else "wiki"),
        syntax="wiki",
        raw=raw,
        target=target,
        heading=heading,
        block=block,
        alias=alias.strip() if bar else None,
        line=line,
        column=column,
        end_column=end_column,
        start=start,
        end=end,
        target_start=target_start,
        target_end=target_start + len(target),
        field=field,
        quote=quote,
    )


def _lines_with(text: str, needle: str, start: int) -> Iterator[tuple[int, int]]:
    """The (start, end) of each line of ``text`` from ``start`` on that holds ``needle``, as they are asked for."""
    position = text.find(needle, start)
    while position >= 0:
        line_start = max(text.rfind("\n", start, position) + 1, start)
        line_end = text.find("\n", position)
        line_end = len(text) if line_end < 0 else line_end
        yield line_start, line_end
        position = text.find(needle, line_end)


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``start``..``end`` overlaps one of ``spans`` (sorted, not overlapping)."""
    index = bisect.bisect_left(spans, (end, -1)) - 1  # the last span that starts before ``end``
    return index >= 0 and spans[index][1] > start


def _markdown_link(note: NoteText, match: re.Match[str], *, embed: bool) -> Link | None:
    angle = match.group("angle")
    group = "angle" if angle is not None else "bare"
    destination = match.group(group)
    if not destination or _EXTERNAL.match(destination):
        return None
    written, hash_mark, fragment = destination.partition("#")
    if group == "bare":
        written, fragment = _ESCAPED.sub(r"\1", written), _ESCAPED.sub(r"\1", fragment)
    target = unquote(written).strip()
    if not target and not hash_mark:
        return None
    fragment = unquote(fragment)
    start, end = match.start() - embed, match.end()
    line, column = note.position(start)
    _, end_column = note.position(end)
    target_start = match.start(group) - start
    return Link(
        kind="embed" if embed else "markdown",
        syntax="markdown",
        raw=note.text[start:end],
        target=target,
        heading=fragment if hash_mark and not fragment.startswith("^") else None,
        block=fragment[1:] if fragment.startswith("^") else None,
        alias=match.group("text"),
        line=line,
        column=column,
        end_column=end_column,
        start=start,
        end=end,
        target_start=target_start,
        target_end=target_start + len(destination.partition("#")[0]),
    )


def _front_matter_links(note: NoteText) -> list[Link]:
    """Quoted wikilinks that are a whole front matter value; checked against the fields as read."""
    yaml = note.split.yaml
    if "[[" not in yaml or not note.fields:
        return []
    values = Counter(_link_strings(note.fields))
    links: list[Link] = []
    field: str | None = None
    offset = note.yaml_start
    for line in yaml.splitlines(keepends=True):
        key = _YAML_KEY.match(line)
        if key:
            field = next(group for group in key.groups() if group is not None).strip()
        if "[[" in line and not line.lstrip().startswith("#"):
            links += _quoted_links(note, line, offset, field, values)
        offset += len(line)
    return links


def _quoted_links(note: NoteText, line: str, offset: int, field: str | None, values: Counter[str]) -> list[Link]:
    found: list[Link] = []
    for match in _WIKI.finditer(line):
        start, end = match.span()
        embed = line[start - 1 : start] == "!"
        start -= embed
        quote = line[start - 1] if start > 0 else ""
        if quote not in ("'", '"') or line[end : end + 1] != quote or _in_comment(line[: start - 1]):
            continue
        value = _unquoted_yaml(line[start:end], quote)
        if values[value] <= 0:
            continue  # not a value as read (an escape we do not undo, a key, a comment): leave it alone
        values[value] -= 1
        link = _wikilink(note, offset + start, offset + end, embed=embed, raw=value, field=field)
        if link is not None:
            found.append(link)
    return found


def _in_comment(before: str) -> bool:
    """Whether a YAML comment starts in ``before`` (text outside quotes, ``#`` after a space)."""
    outside = re.sub(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'", "", before)
    return outside.startswith("#") or " #" in outside or "\t#" in outside


def _unquoted_yaml(text: str, quote: str) -> str:
    if quote == "'":
        return text.replace("''", "'")
    return re.sub(r'\\([\\"/])', r"\1", text)


def _link_strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        if value.startswith(("[[", "![[")) and value.endswith("]]"):
            yield value
    elif isinstance(value, list):
        for item in value:
            yield from _link_strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _link_strings(item)
