"""Find and replace in note texts, literal or by a safe regex, with a short preview per note. Pure.

- Literal (the default): ``find`` is matched exactly. A line break in it matches any line
  ending (CRLF, LF or CR), as ``edit_note``'s ``oldText`` does, so a literal match may span lines.
- ``regex=True``: a pattern from search's safe subset (``regex_subset.py``) on the ``regex``
  package, matched line by line as search does: ``^`` and ``$`` are a line's start and end, and
  a match never spans a line break (a pattern that asks for one, ``a\\nb``, is refused: it could
  never match; literal mode is the way across lines). Unlike search, which ranks on the first
  1,000 characters of a line, the whole line is matched: a replace must see all it changes. A
  line longer than the pattern's untimed length gets :data:`REGEX_LINE_SECONDS` of CPU time,
  and a line that needs more fails its note (:class:`EditFailedError`) instead of being
  skipped, so that a preview and the write it leads to always agree.
- A pattern that can match empty text (``x*``, ``^``, ``\\b``, a lookaround alone) is refused:
  replacing "nothing" at every position is never what a rename means.
- ``case_sensitive=False`` matches letters in any case, one character for one (Unicode simple
  case folding: ``Ёлка`` finds ``ЁЛКА``; ``ß`` does not find ``SS``, as full folding would: the
  ``regex`` package's full folding loops forever on some patterns, ``.?\\S*ss`` on ``ßa``, found
  by fuzzing). Accents count: ``cafe`` does not find ``Café``. Search folds accents too because a
  wider net only costs a look; a replace would rewrite words the agent never named.
- ``links="keep"``: a match inside a link's target (``links.target_spans``: a wikilink's or
  embed's text before ``|``, a Markdown link's destination) is left alone; an alias or a link's
  text is still replaced. :meth:`Replacer.measure_links` reports those matches either way.
- ``replace`` is literal text. In regex mode, with ``$`` as JavaScript, VS Code and Obsidian's
  editor spell it: ``$1``…``$99`` insert a group (``$12`` is group 12 when the pattern has 12
  groups, else group 1 and a ``2``), ``${name}`` or ``${12}`` a named or numbered one, ``$0`` the
  whole match, ``$$`` a ``$``; any other ``$`` is itself. Backslashes are always literal (LaTeX,
  Windows paths); ``\\1`` and ``\\g<1>`` are refused, with the ``$`` spelling to use. A line
  break in ``replace`` is written in the note's own line ending.

A replacement's result is sized before it is built (:meth:`Replacer.measure`; ``apply`` with
``max_bytes`` refuses past it): matches times the replacement's length, for a ``$1`` template
the literal pieces and each group's length per match, so a replacement that would multiply a
note is refused without being made.

:class:`Replacer` checks and compiles one find/replace once, for many notes; ``find_matches``
and ``replace_all`` are the one-note shorthands. :func:`preview` gives a note's match count and
a compact diff: only changed lines, each cut to :data:`CONTEXT_CHARS` around the change.
"""

from __future__ import annotations

import bisect
import re
import re._constants as sre  # type: ignore[import-not-found]  # the stdlib parser regex_subset uses too,
import re._parser as sre_parse  # type: ignore[import-not-found]  # to see what a pattern asks for
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import regex

from teamvault_mcp.errors import EditFailedError, ToolInputError
from teamvault_mcp.text.deadlines import Deadline
from teamvault_mcp.text.diff import newline_of, shortened, unified_diff, with_newline
from teamvault_mcp.text.links import target_spans
from teamvault_mcp.text.markdown import split_lines
from teamvault_mcp.text.regex_subset import UnsafeRegexError, safe_regex
from teamvault_mcp.text.search import REGEX_LINE_SECONDS, TimeUp
from teamvault_mcp.text.sizes import refuse_past, utf8_size

#: Diff lines a note's preview shows (hunk headers included) before "… N more diff lines": two one-line
#: changes in full. With 20 characters each side of a change (three or four words), a rename in 30 notes
#: (58 matches) previews in about 4.7 KB of diffs (bench/replace_bench.py).
PREVIEW_DIFF_LINES = 6
#: Characters shown on each side of a change in a preview line, and of the change itself at most.
CONTEXT_CHARS = 20
CHANGE_CHARS = 80

#: CPU time one search of a whole note may take to say "no match here" (regex mode): 5 ms, and 20 ns a
#: character (50 MB/s; plain patterns run at 100-300 MB/s). Past it the note is matched line by line, and after
#: WHOLE_TEXT_TIMEOUTS such notes the replacer stops trying, so a pattern slow across lines costs little.
WHOLE_TEXT_SECONDS = 0.005
WHOLE_TEXT_SECONDS_PER_CHAR = 20e-9
WHOLE_TEXT_TIMEOUTS = 8

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_GROUP_REFERENCE = re.compile(r"\$(?:(\$)|(\d{1,2})|\{(\w+)\}|([&`']))")
_PYTHON_REFERENCE = re.compile(r"\\(?:\d|g<)")
_CASELESS = regex.IGNORECASE
_ATOMIC_GROUP = getattr(sre, "ATOMIC_GROUP", object())
_POSSESSIVE_REPEAT = getattr(sre, "POSSESSIVE_REPEAT", object())
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, _POSSESSIVE_REPEAT)
_regex = regex  # the package, where an argument named after the tool's ``regex`` flag hides it


@dataclass(frozen=True)
class Match:
    """One match: offsets in the note's text, where it starts (1-based line and column), what it matched."""

    start: int
    end: int
    line: int
    column: int
    text: str


@dataclass(frozen=True)
class LinkMatch:
    """A match inside a link's target: the line the link starts on (1-based) and the link as written."""

    line: int
    link: str


class Replacer:
    """One find/replace, checked and compiled once; applied to any number of notes, from any thread."""

    def __init__(
        self, find: str, replace: str = "", *, regex: bool = False, case_sensitive: bool = True, links: str = "replace"
    ) -> None:
        if not find:
            raise ToolInputError("find is empty: give the text (or, with regex=true, the pattern) to look for.")
        self.regex = regex
        #: ``keep``: a match inside a link's target (:func:`~teamvault_mcp.text.links.target_spans`) is left alone.
        self.keep_links = links == "keep"
        flags = 0 if case_sensitive else _CASELESS
        #: Lines up to this long are matched without a time limit (regex mode; see regex_subset.py).
        self.untimed_chars = 0
        #: A piece of ``find`` that every match holds as is: a note without it is skipped at once.
        self._literal = "" if regex or not case_sensitive else _LINE_BREAK.split(find)[0]
        #: The pattern on a whole note, ``^``/``$`` at its line breaks, when a note it does not match is sure
        #: to have no match in any line: one search says no for most notes of a vault (regex mode).
        self._whole_text: _regex.Pattern[str] | None = None
        self._whole_text_timeouts = 0  # counted loosely when threads share the replacer: it only tunes speed
        if regex:
            self._pattern, self.untimed_chars, tree = _checked_regex(find, flags)
            if _whole_text_safe(tree):
                self._whole_text = _regex.compile(find, _regex.VERSION0 | _regex.MULTILINE | flags)
        else:
            escaped = r"(?:\r\n|\r|\n)".join(_regex.escape(part) for part in _LINE_BREAK.split(find))
            self._pattern = _regex.compile(escaped, _regex.VERSION0 | flags)
        self._template = _template(replace, self._pattern) if regex else [replace]

    def matches(self, text: str, deadline: Deadline | None = None) -> list[Match]:
        """Every match in ``text``, in order. ``deadline`` is checked between lines: :class:`TimeUp`."""
        found = list(self._found(text, deadline))
        if not found:
            return []
        starts = [0, *accumulate(len(line) for line in split_lines(text))]
        result = []
        for start, end, _ in found:
            line = bisect.bisect_right(starts, start) - 1
            result.append(Match(start, end, line + 1, start - starts[line] + 1, text[start:end]))
        return result

    def count(self, text: str, deadline: Deadline | None = None) -> int:
        """How many matches ``text`` has (no new text is built: for the notes a preview only counts)."""
        return len(self._found(text, deadline))

    def measure(self, text: str, deadline: Deadline | None = None) -> tuple[int, int]:
        """How many matches ``text`` has, and its size in bytes of UTF-8 with them replaced (nothing is built)."""
        count, size, _ = self.measure_links(text, deadline)
        return count, size

    def measure_links(self, text: str, deadline: Deadline | None = None) -> tuple[int, int, list[LinkMatch]]:
        """:meth:`measure`, and the matches inside link targets: replaced (they break the link), or with
        ``links="keep"`` left alone (not counted, not sized)."""
        found, in_links = self._split(text, deadline)
        return len(found), self._size_after(text, found, self._template_for(newline_of(text))), in_links

    def apply(
        self, text: str, deadline: Deadline | None = None, *, max_bytes: int | None = None, path: str = "the note"
    ) -> tuple[str, int]:
        """``text`` with every match replaced, and how many there were.

        ``max_bytes``: a result larger than that (in UTF-8) is refused before it is built
        (:class:`~teamvault_mcp.errors.ResultTooLargeError`, naming ``path``).
        """
        found = self._found(text, deadline)
        if not found:
            return text, 0
        template = self._template_for(newline_of(text))
        if max_bytes is not None:
            size = self._size_after(text, found, template)
            refuse_past(max_bytes, size, path, f"The replacement ({len(found):,} matches)")
        pieces: list[str] = []
        done = 0
        for start, end, match in found:
            pieces += [text[done:start], _expand(match, template)]
            done = end
        pieces.append(text[done:])
        return "".join(pieces), len(found)

    def _template_for(self, newline: str) -> list[str | int]:
        """The template with its line breaks written as ``newline``, the note's own (groups hold none: a regex
        match stays within a line)."""
        return [with_newline(part, newline) if isinstance(part, str) else part for part in self._template]

    @staticmethod
    def _size_after(text: str, found: list[tuple[int, int, regex.Match[str]]], template: list[str | int]) -> int:
        """The UTF-8 size of ``text`` with each match in ``found`` replaced by ``template`` expanded: the
        template's literal bytes and each group's length per match, added up without building anything."""
        literal = sum(utf8_size(part) for part in template if isinstance(part, str))
        groups = Counter(part for part in template if isinstance(part, int))
        ascii_only = text.isascii()
        size = utf8_size(text)
        for start, end, match in found:
            size += literal - (end - start if ascii_only else utf8_size(text[start:end]))
            for group, times in groups.items():
                if ascii_only:
                    begin, finish = match.span(group)
                    size += times * max(finish - begin, 0)
                else:
                    size += times * utf8_size(match.group(group) or "")
        return size

    def _found(self, text: str, deadline: Deadline | None) -> list[tuple[int, int, regex.Match[str]]]:
        """The matches to replace: every match, or with ``links="keep"`` those outside link targets."""
        if not self.keep_links:
            return self._every(text, deadline)
        return self._split(text, deadline)[0]

    def _split(
        self, text: str, deadline: Deadline | None
    ) -> tuple[list[tuple[int, int, regex.Match[str]]], list[LinkMatch]]:
        """The matches to replace, and the matches inside link targets (with ``links="keep"``, not among the first)."""
        found = self._every(text, deadline)
        if not found or ("[[" not in text and "](" not in text):
            return found, []
        spans = target_spans(text)
        if not spans:
            return found, []
        starts = [span[0] for span in spans]
        kept: list[tuple[int, int, regex.Match[str]]] = []
        in_links: list[LinkMatch] = []
        for item in found:
            start, end, _ = item
            # the last target that starts before the match ends: targets never overlap, so no earlier one reaches it
            index = bisect.bisect_left(starts, end) - 1
            if index >= 0 and spans[index][1] > start:
                link = spans[index][2]
                in_links.append(LinkMatch(link.line, link.raw))
                if self.keep_links:
                    continue
            kept.append(item)
        return kept, in_links

    def _every(self, text: str, deadline: Deadline | None) -> list[tuple[int, int, regex.Match[str]]]:
        if self._literal and self._literal not in text:
            return []  # the common case of a rename: most notes lack the word; one C-speed scan says so
        if not self.regex:
            return [(match.start(), match.end(), match) for match in self._pattern.finditer(text)]
        if not self._may_match(text):
            return []
        if "\r" in text:
            lines = split_lines(text)
            bare, sizes = [line.rstrip("\r\n") for line in lines], [len(line) for line in lines]
        else:  # the usual note: str.split is several times faster than the line pattern
            bare = text.split("\n")
            sizes = [len(line) + 1 for line in bare]
        found = []
        offset = 0
        for index, line in enumerate(bare):
            if deadline is not None and deadline.passed():
                raise TimeUp()
            for match in self._line_matches(line, index, deadline):
                found.append((offset + match.start(), offset + match.end(), match))
            offset += sizes[index]
        return found

    def _may_match(self, text: str) -> bool:
        """False when the whole-text pattern finds nothing in ``text``, so that no line can match."""
        whole_text = self._whole_text
        if whole_text is None:
            return True
        if "\r" in text:
            text = _LINE_BREAK.sub("\n", text)
        try:
            return (
                whole_text.search(text, timeout=WHOLE_TEXT_SECONDS + len(text) * WHOLE_TEXT_SECONDS_PER_CHAR)
                is not None
            )
        except TimeoutError:  # a pattern slow across lines: matched line by line, and after a few, never whole
            self._whole_text_timeouts += 1
            if self._whole_text_timeouts >= WHOLE_TEXT_TIMEOUTS:
                self._whole_text = None
            return True

    def _line_matches(self, line: str, index: int, deadline: Deadline | None) -> list[regex.Match[str]]:
        if len(line) <= self.untimed_chars:
            return list(self._pattern.finditer(line)) if self._pattern.search(line) else []
        seconds = REGEX_LINE_SECONDS if deadline is None else min(REGEX_LINE_SECONDS, deadline.left())
        if seconds <= 0:
            raise TimeUp()
        try:
            return list(self._pattern.finditer(line, timeout=seconds))
        except TimeoutError:
            if seconds < REGEX_LINE_SECONDS:
                raise TimeUp() from None  # the caller's time ran out, not the line's
            raise EditFailedError(
                f"The regex needs more than {REGEX_LINE_SECONDS:g} s of CPU time on line {index + 1} "
                f"({len(line):,} characters), so nothing was replaced in this note. Make it narrower: fewer "
                "unbounded repeats, an anchor (^), a possessive repeat (a*+, which never backtracks), or regex=false."
            ) from None


def _expand(match: regex.Match[str], template: list[str | int]) -> str:
    return "".join(part if isinstance(part, str) else (match.group(part) or "") for part in template)


def find_matches(text: str, find: str, *, regex: bool = False, case_sensitive: bool = True) -> list[Match]:
    """Every match of ``find`` in ``text`` (see the module docstring for the rules)."""
    return Replacer(find, regex=regex, case_sensitive=case_sensitive).matches(text)


def replace_all(
    text: str, find: str, replace: str, *, regex: bool = False, case_sensitive: bool = True
) -> tuple[str, int]:
    """``text`` with every match of ``find`` replaced by ``replace``, and how many there were."""
    return Replacer(find, replace, regex=regex, case_sensitive=case_sensitive).apply(text)


def _checked_regex(pattern: str, flags: int) -> tuple[regex.Pattern[str], int, Any]:
    """``pattern`` compiled, if it is in the safe subset and cannot match empty text; its untimed length; its tree."""
    try:
        checked = safe_regex(pattern)
    except UnsafeRegexError as error:
        raise ToolInputError(f"The regex is refused: {error}.") from None
    tree = sre_parse.parse(pattern)
    if _has_line_break(tree):
        raise ToolInputError(
            f"The regex {pattern!r} holds a line break (\\n or \\r), but a regex match stays within one line, as in "
            "search. To change text across lines, use regex=false with the line break in find (it matches CRLF, "
            "LF and CR alike)."
        )
    if tree.getwidth()[0] == 0:
        raise ToolInputError(
            f"The regex {pattern!r} can match empty text (like x*, ^, \\b or a lookahead alone), and a replace "
            "needs something to replace. Match at least one character: x+ instead of x*; to add text at the start "
            "of a line, match its first character and put it back: find ^(.) replace > $1."
        )
    compiled = checked.compiled if not flags else regex.compile(pattern, regex.VERSION0 | flags)
    return compiled, checked.untimed_chars, tree


def _nodes(items: Any) -> Iterator[tuple[Any, Any]]:
    """Every node of a parsed pattern, groups, alternatives, repeats and lookarounds opened (not sets)."""
    for op, argument in items:
        yield op, argument
        if op in _REPEATS:
            yield from _nodes(argument[2])
        elif op is sre.BRANCH:
            for alternative in argument[1]:
                yield from _nodes(alternative)
        elif op is sre.SUBPATTERN:
            yield from _nodes(argument[-1])
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            yield from _nodes(argument[1])
        elif op is _ATOMIC_GROUP:
            yield from _nodes(argument)


def _has_line_break(tree: Any) -> bool:
    """Whether the parsed pattern asks for a line break outside a character set (``[^\\n]`` is fine)."""
    return any(op is sre.LITERAL and argument in (10, 13) for op, argument in _nodes(tree))


def _whole_text_safe(tree: Any) -> bool:
    """Whether a match inside a line is sure to be a match of the pattern on the whole text too.

    It is, with ``^``/``$`` matching at line breaks, unless the pattern looks around (it would see the
    lines next door), anchors at the text's ends (``\\A``, ``\\Z``), or never gives back what it took
    (possessive repeats, atomic groups: in the whole text they may take the line break and more).
    """
    for op, argument in _nodes(tree):
        if op in (sre.ASSERT, sre.ASSERT_NOT, _ATOMIC_GROUP, _POSSESSIVE_REPEAT):
            return False
        if op is sre.AT and argument in (sre.AT_BEGINNING_STRING, sre.AT_END_STRING):
            return False
    return True


def _template(replace: str, pattern: regex.Pattern[str]) -> list[str | int]:
    """``replace`` as literal pieces and group numbers, every reference checked against ``pattern``."""
    if python := _PYTHON_REFERENCE.search(replace):
        raise ToolInputError(
            f"replace holds {python.group()!r}, a Python-style group reference; write groups as $1 or ${{name}} "
            "(backslashes are kept as they are). Nothing was changed."
        )
    groups = pattern.groups
    parts: list[str | int] = []
    done = 0
    for reference in _GROUP_REFERENCE.finditer(replace):
        dollar, digits, braced, other = reference.groups()
        parts.append(replace[done : reference.start()])
        done = reference.end()
        if dollar:
            parts.append("$")
        elif other:
            raise ToolInputError(
                f"replace holds ${other}, which is not supported; write $0 for the whole match. Nothing was changed."
            )
        elif braced is not None:
            number = int(braced) if braced.isdigit() else pattern.groupindex.get(braced)
            if number is None or number > groups:
                raise ToolInputError(_no_group(f"${{{braced}}}", groups, pattern))
            parts.append(number)
        else:
            number = int(digits)
            if len(digits) == 2 and number > groups:  # "$12" with fewer groups: group 1, then "2"
                number = int(digits[0])
                done -= 1
            if number > groups:
                raise ToolInputError(_no_group(f"${number}", groups, pattern))
            parts.append(number)
    parts.append(replace[done:])
    return [part for part in parts if part != ""]


def _no_group(reference: str, groups: int, pattern: regex.Pattern[str]) -> str:
    names = f" (named: {', '.join(sorted(pattern.groupindex))})" if pattern.groupindex else ""
    has = f"{groups} group{'s' if groups != 1 else ''}{names}" if groups else "no groups"
    return f"replace refers to {reference}, but the pattern has {has}. Write $$ for a literal $. Nothing was changed."


# -- the preview ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NotePreview:
    """What a replace does to one note: how many matches, and a compact diff of the changed lines."""

    count: int
    diff: str

    def as_json(self) -> dict[str, object]:
        return {"matches": self.count, "diff": self.diff}


def preview(old: str, new: str, count: int, *, max_lines: int = PREVIEW_DIFF_LINES) -> NotePreview:
    return NotePreview(count, compact_diff(old, new, max_lines=max_lines))


def compact_diff(
    old: str,
    new: str,
    *,
    max_lines: int = PREVIEW_DIFF_LINES,
    around: int = CONTEXT_CHARS,
    deadline: Deadline | None = None,
) -> str:
    """The changed lines of a unified diff (no context lines, no file header), each cut to the change and
    ``around`` characters on each side of it, at most ``max_lines`` lines; a diff too costly to compute by
    ``deadline`` (or at all: ``diff.py``) is the one line that counts its changed lines."""
    whole = unified_diff(old, new, before="a", after="b", context=0, deadline=deadline)
    if whole and not whole.startswith("--- "):
        return whole  # too large: the summary line
    diff = whole.split("\n")[2:]
    lines: list[str] = []
    removed: list[str] = []
    added: list[str] = []

    def flush() -> None:  # each removed line next to the line it became: -a +a' -b +b'
        # difflib cannot anchor on a line that is frequent in a long note (a blank line, "---"): such a line
        # between two changes comes back as removed and added. It did not change, so it is not shown.
        while removed and added and removed[0] == added[0]:
            del removed[0], added[0]
        while removed and added and removed[-1] == added[-1]:
            del removed[-1], added[-1]
        for index in range(max(len(removed), len(added))):
            one = removed[index] if index < len(removed) else None
            other = added[index] if index < len(added) else None
            if one == other:
                continue
            if one is not None:
                lines.append("-" + _clip(one, other, around))
            if other is not None:
                lines.append("+" + _clip(other, one, around))
        removed.clear()
        added.clear()

    for line in diff:
        if line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
        else:
            flush()
            lines.append(line)
    flush()
    return shortened("\n".join(lines), max_lines)


def _clip(line: str, other: str | None, around: int) -> str:
    """``line`` cut to where it differs from ``other``, with ``around`` characters each side; … where cut."""
    if other is None:
        return line if len(line) <= 2 * around + CHANGE_CHARS else line[: 2 * around + CHANGE_CHARS] + "…"
    prefix = 0
    limit = min(len(line), len(other))
    while prefix < limit and line[prefix] == other[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and line[-1 - suffix] == other[-1 - suffix]:
        suffix += 1
    begin, end = max(0, prefix - around), min(len(line), len(line) - suffix + around)
    change = line[prefix : len(line) - suffix]
    if len(change) > CHANGE_CHARS:
        half = CHANGE_CHARS // 2
        change = change[:half] + "…" + change[-half:]
    shown = line[begin:prefix] + change + line[len(line) - suffix : end]
    return ("…" if begin else "") + shown + ("…" if end < len(line) else "")
