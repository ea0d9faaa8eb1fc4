"""Tasks: Markdown checkbox items, with their status and the section they are in. Pure.

A task is a list item whose text starts with a one-character checkbox: ``- [ ] call Ada``,
``* [x]``, ``+ [X]``, ``1. [ ]``, ``2) [/]``, indented under another item or in a ``>`` quote
or callout, in prose (``prose.py``: not in code or HTML comments). The box is followed by
white space or the end of the line (``- [x]done`` is no task, as in CommonMark).

The status character decides open or done. Obsidian itself checks every box that is not
blank; teams using custom statuses (the Tasks plugin, themes) give them meanings, and ours
follow the common ones:

- done: ``x`` and ``X``; cancelled, ``-``, counts as done too (``state="cancelled"``):
  nothing is left to do;
- open: a space, and every other character: ``/`` in progress, ``>`` forwarded or
  rescheduled (the work still exists), ``<`` scheduled, ``!``, ``?``, ``*`` and the rest.

Each task has its section breadcrumb: the heading path (names as ``markdown.py``'s outline
gives them, so ``read_note`` can take it) of the section it is in.

:class:`Person` is who a task is for: a task's text mentions them as ``@bob``, ``Bob:`` or a
wikilink whose target's name or alias holds the name (``[[Bob Lee]]``, ``[[people/Bob Lee|Bob]]``);
a note's ``owner`` value names them as text or as a link. Names compare by whole words, ignoring
case: ``bob`` is in ``Bob Lee`` and ``@bob.lee``, not in ``@bobby``.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from teamvault_mcp.errors import ToolInputError
from teamvault_mcp.text import markdown
from teamvault_mcp.text.prose import NoteText, as_note

_ITEM_WITH_BOX = r"(?P<lead>[ \t>]*)(?:[-*+]|\d{1,9}[.)])[ \t]+\[(?P<status>[^\]\r\n])\](?:[ \t]+|(?=[\r\n])|$)"
#: A line break, then a list item whose text starts with a checkbox: starting with a literal, the pattern is
#: found many times faster than with ``^`` (``_TASK_AFTER_CR`` for notes whose lines end in ``\r``).
_TASK = re.compile("\n" + _ITEM_WITH_BOX)
_TASK_AFTER_CR = re.compile("[\r\n]" + _ITEM_WITH_BOX)
_WIKILINK = re.compile(r"\[\[(?P<target>[^\]|#^]*)[^\]|]*(?:\|(?P<alias>[^\]]*))?\]\]")
_MARKDOWN_LINK = re.compile(r"\[(?P<alias>[^\]]*)\]\((?P<target>[^)]*)\)")
_HANDLE = re.compile(r"(?<![\w@])@(?P<handle>\w[\w.\-]*)")
_WORD = re.compile(r"\w+")
DONE_STATUSES = frozenset("xX")
CANCELLED_STATUSES = frozenset("-")
#: The tasks of one note the index keeps (:func:`note_tasks`): the first 10,000. A note of 100,000 tasks took
#: 0.7 s to read and its section of every task is kept.
MAX_TASKS_PER_NOTE = 10_000


@dataclass(frozen=True, slots=True)
class Task:
    """One checkbox item: its 1-based line, status character, text and section (heading names from the top)."""

    line: int
    status: str
    text: str
    section: tuple[str, ...]
    indent: int  # the width of what comes before the list marker (nesting)

    @property
    def state(self) -> str:
        """``open``, ``done`` or ``cancelled``."""
        if self.status in DONE_STATUSES:
            return "done"
        return "cancelled" if self.status in CANCELLED_STATUSES else "open"

    @property
    def done(self) -> bool:
        """Nothing left to do: done or cancelled."""
        return self.state != "open"


def note_tasks(note: str | NoteText, path: str = "", *, limit: int = MAX_TASKS_PER_NOTE) -> list[Task]:
    """The first ``limit`` tasks of one note, in order; none of a note too large for facts (``prose.py``)."""
    note = as_note(note, path)
    if note.oversized:
        return []
    prose = note.prose
    if "[" not in prose:
        return []
    # The line break before the body's first line: the front matter's closing line ends with one, and a note
    # without front matter gets one in front.
    if note.body_start:
        text, shift = prose, 0
    else:
        text, shift = "\n" + prose, 1
    pattern = _TASK_AFTER_CR if "\r" in text else _TASK
    matches = list(itertools.islice(pattern.finditer(text, max(note.body_start - 1, 0)), limit))
    if not matches:
        return []
    starts, paths = _sections(note.text)
    tasks: list[Task] = []
    for match in matches:
        line, _ = note.position(match.start() + 1 - shift)
        task_text = note.line_text(line)[match.end() - match.start() - 1 :].strip()
        index = bisect.bisect_right(starts, line) - 1
        lead = match.group("lead")
        section = paths[index] if index >= 0 else ()
        tasks.append(Task(line, match.group("status"), task_text, section, len(lead.expandtabs(4))))
    return tasks


@dataclass(frozen=True)
class Person:
    """Who a task is for, by name (see the module docstring): :meth:`named` makes one, once per call."""

    words: tuple[str, ...]
    colon: re.Pattern[str]  # the name, then a colon: ``Bob:``, ``bob lee:``

    @classmethod
    def named(cls, name: str) -> Person:
        words = tuple(_words(name))
        if not words:
            raise ToolInputError(f"A person's name needs a letter or digit, like 'bob' or 'Bob Lee'; got {name!r}.")
        colon = r"(?<!\w)" + r"[\s_.\-]+".join(map(re.escape, words)) + r"[ \t]*:"
        return cls(words, re.compile(colon, re.IGNORECASE))

    def mentioned_in(self, text: str) -> bool:
        """Whether a task's text mentions them: ``@bob``, ``Bob:``, ``[[Bob Lee]]``, ``[[people/Bob Lee|Bob]]``."""
        if any(self._in_link(match) for match in _WIKILINK.finditer(text)):
            return True
        if any(self._in(match.group("handle")) for match in _HANDLE.finditer(text)):
            return True
        return self.colon.search(text) is not None

    def named_by(self, value: object) -> bool:
        """Whether a front matter value (``owner``) names them: as text, or as a link to them; a list, by an item."""
        if isinstance(value, list):
            return any(self.named_by(item) for item in value)
        if not isinstance(value, str):
            return False
        links = [*_WIKILINK.finditer(value), *_MARKDOWN_LINK.finditer(value)]
        if links:
            return any(self._in_link(match) for match in links)
        return self._in(value.removeprefix("@"))

    def _in_link(self, link: re.Match[str]) -> bool:
        target = link.group("target").strip().rsplit("/", 1)[-1]
        target = target[:-3] if target.casefold().endswith(".md") else target
        return self._in(target.replace("%20", " ")) or self._in(link.group("alias") or "")

    def _in(self, text: str) -> bool:
        """The name's words, in order and whole, in ``text``."""
        found, size = _words(text), len(self.words)
        return any(tuple(found[i : i + size]) == self.words for i in range(len(found) - size + 1))


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold().replace("_", " "))


STATUS_CHOICES = ("open", "done", "all")


def select_tasks(tasks: list[Task], status: str) -> list[Task]:
    """The tasks with ``status`` ``open``, ``done`` (done or cancelled) or ``all``."""
    if status not in STATUS_CHOICES:
        raise ToolInputError(f"status must be open, done or all; got {status!r}.")
    if status == "all":
        return list(tasks)
    return [task for task in tasks if task.done == (status == "done")]


def _sections(text: str) -> tuple[list[int], list[tuple[str, ...]]]:
    """The first line of each heading in order, and its heading path."""
    starts: list[int] = []
    paths: list[tuple[str, ...]] = []

    def walk(headings: list[markdown.Heading]) -> None:
        for heading in headings:
            starts.append(heading.start_line)
            paths.append(heading.path)
            walk(heading.children)

    walk(markdown.parse(text).headings)
    return starts, paths
