"""Exact edits of a note's text: ``{oldText, newText}`` replacements or a simplified unified diff. Pure.

Edits apply in order, each to the text the previous ones left; if any fails, none
applies. An ``oldText`` must occur exactly once (or ``replaceAll``); line endings are
matched loosely (CRLF, LF and CR are one) and written in the note's own style. A
failed edit says why in a way a model can act on: the closest lines, with numbers,
when the text is not there; the line numbers of every match when it is there twice.
With ``max_bytes``, an edit whose result would be larger is refused from its computed size,
before the result is built (``sizes.py``).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from teamvault_mcp.errors import EditFailedError, ToolInputError
from teamvault_mcp.text.diff import newline_of, with_newline
from teamvault_mcp.text.markdown import split_lines
from teamvault_mcp.text.sizes import refuse_past, utf8_size

_NEWLINE = re.compile(r"\r\n|\r|\n")
_HUNK = re.compile(r"@@\s*(?:-(\d+)(?:,\d+)?\s+\+\d+(?:,\d+)?\s*)?@@")
#: Notes longer than this are not searched line window by line window for a "closest match" hint.
CLOSEST_SEARCH_LINES = 50_000


@dataclass(frozen=True)
class Edit:
    old_text: str
    new_text: str
    replace_all: bool = False
    #: From a patch hunk header (``@@ -12,3 …``): picks among several matches the one at this line.
    near_line: int | None = None


def apply_edits(text: str, edits: list[Edit], *, max_bytes: int | None = None, path: str = "the note") -> str:
    """``text`` with every edit applied in order; :class:`EditFailedError` (nothing applied) if one fails.

    ``max_bytes``: no edit may make the text larger (in UTF-8), checked before its result is built
    (:class:`~teamvault_mcp.errors.ResultTooLargeError`, naming ``path``).
    """
    newline = newline_of(text)
    for number, edit in enumerate(edits, start=1):
        label = f"Edit {number} of {len(edits)}" if len(edits) > 1 else "The edit"
        text = _apply(text, edit, label, newline, max_bytes, path)
    return text


def _apply(text: str, edit: Edit, label: str, newline: str, max_bytes: int | None, path: str) -> str:
    if not edit.old_text:
        raise EditFailedError(f"{label}: oldText is empty; give the exact text to replace. Nothing was changed.")
    pattern = re.compile(_NEWLINE.sub(lambda _: r"(?:\r\n|\r|\n)", _escaped(edit.old_text)))
    replacement = with_newline(edit.new_text, newline)
    if edit.replace_all:
        if max_bytes is not None:
            count, size = _replaced_size(text, pattern, utf8_size(replacement))
            if count:
                refuse_past(max_bytes, size, path, f"{label} (replaceAll, {count:,} matches)")
        changed, count = pattern.subn(lambda _: replacement, text)
        if count == 0:
            raise _not_found(text, edit.old_text, label)
        return changed
    starts = _starts(text, edit.old_text, pattern)
    if not starts and edit.old_text.endswith(("\n", "\r")):
        # The last lines of a note that has no final line break: match them at its very end.
        stripped = _NEWLINE.sub(lambda _: r"(?:\r\n|\r|\n)", _escaped(edit.old_text.rstrip("\r\n")))
        at_end = re.search(f"(?:{stripped})\\Z", text)
        if at_end is not None:
            ending = with_newline(edit.new_text.rstrip("\r\n"), newline)
            if max_bytes is not None:
                size = utf8_size(text) - utf8_size(at_end.group()) + utf8_size(ending)
                refuse_past(max_bytes, size, path, label)
            return text[: at_end.start()] + ending
    if not starts:
        raise _not_found(text, edit.old_text, label)
    if len(starts) > 1 and edit.near_line is not None:
        near = [start for start in starts if _line_of(text, start) == edit.near_line]
        starts = near or starts
    if len(starts) > 1:
        lines = ", ".join(str(_line_of(text, start)) for start in starts[:20])
        times = f"more than {MAX_STARTS:,}" if len(starts) > MAX_STARTS else str(len(starts))
        raise EditFailedError(
            f"{label}: oldText occurs {times} times (at lines {lines}). Add some of the surrounding text to "
            "make it unique, or set replaceAll to change every one. Nothing was changed."
        )
    match = pattern.match(text, starts[0])
    assert match is not None
    if max_bytes is not None:
        size = utf8_size(text) - utf8_size(match.group()) + utf8_size(replacement)
        refuse_past(max_bytes, size, path, label)
    return text[: match.start()] + replacement + text[match.end() :]


#: Occurrences of an oldText looked for at most (and one more, to know there are more): a text of one character
#: repeated, against a note of millions of them, would otherwise be matched at every position.
MAX_STARTS = 1_000


def _starts(text: str, old_text: str, pattern: re.Pattern[str]) -> list[int]:
    """Where ``old_text`` begins in ``text`` (overlapping occurrences too), the first ``MAX_STARTS + 1`` at most.

    Without line breaks it is a plain string search (linear); with them, ``pattern`` matches any line break."""
    starts: list[int] = []
    if _NEWLINE.search(old_text) is None:
        at = text.find(old_text)
        while at >= 0 and len(starts) <= MAX_STARTS:
            starts.append(at)
            at = text.find(old_text, at + 1)
        return starts
    for match in re.finditer(f"(?=(?:{pattern.pattern}))", text):
        starts.append(match.start())
        if len(starts) > MAX_STARTS:
            break
    return starts


def _replaced_size(text: str, pattern: re.Pattern[str], replacement_size: int) -> tuple[int, int]:
    """How many matches ``pattern`` has in ``text``, and the UTF-8 size of ``text`` with each replaced by
    ``replacement_size`` bytes: counted match by match, nothing built."""
    ascii_only = text.isascii()
    count = 0
    size = utf8_size(text)
    for match in pattern.finditer(text):
        count += 1
        size += replacement_size - (match.end() - match.start() if ascii_only else utf8_size(match.group()))
    return count, size


def _escaped(old_text: str) -> str:
    """``old_text`` as a regex, with each line break kept as a bare ``\\n`` to be widened afterwards."""
    return "\n".join(re.escape(part) for part in _NEWLINE.split(old_text))


def _line_of(text: str, position: int) -> int:
    return len(_NEWLINE.findall(text, 0, position)) + 1


def _not_found(text: str, old_text: str, label: str) -> EditFailedError:
    hint = closest_lines(text, old_text)
    where = f" The closest lines in the note:\n{hint}\n" if hint else " "
    return EditFailedError(
        f"{label}: oldText was not found.{where}oldText must match the note exactly, spaces and punctuation "
        "included (line endings may differ). Read the lines again and copy them. Nothing was changed."
    )


def closest_lines(text: str, old_text: str, *, shown: int = 2) -> str:
    """The stretches of ``text`` most like ``old_text``, as numbered lines (``  41| …``)."""
    lines = [line.rstrip("\r\n") for line in split_lines(text)]
    wanted = [line for line in _NEWLINE.split(old_text.rstrip("\r\n"))]
    size = max(1, len(wanted))
    if not lines or len(lines) > CLOSEST_SEARCH_LINES:
        return ""
    target = "\n".join(wanted)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    scored = []
    for start in range(max(1, len(lines) - size + 1)):
        matcher.set_seq1("\n".join(lines[start : start + size]))
        if matcher.real_quick_ratio() > 0.3 and matcher.quick_ratio() > 0.3:
            scored.append((matcher.quick_ratio(), start))
    best = []
    for _, start in sorted(scored, reverse=True)[:20]:
        matcher.set_seq1("\n".join(lines[start : start + size]))
        best.append((matcher.ratio(), start))
    best.sort(key=lambda pair: (-pair[0], pair[1]))
    blocks = []
    for ratio, start in best[:shown]:
        if ratio < 0.4:
            break
        numbered = "\n".join(
            f"{start + offset + 1:>6}| {line}" for offset, line in enumerate(lines[start : start + size])
        )
        blocks.append(f"{numbered}\n        ({ratio:.0%} alike)")
    return "\n".join(blocks)


def edits_from_patch(patch: str) -> list[Edit]:
    """The edits a simplified unified diff describes: ``@@ … @@`` hunks of `` ``/``-``/``+`` lines.

    ``---``/``+++`` headers and ``\\ No newline at end of file`` are ignored; the line
    numbers in a hunk header are optional and only pick among several matches.
    """
    hunks: list[tuple[int | None, list[str], list[str]]] = []
    for number, raw in enumerate(_NEWLINE.split(patch), start=1):
        if raw.startswith("@@"):
            header = _HUNK.match(raw)
            hunks.append((int(header.group(1)) if header and header.group(1) else None, [], []))
        elif not hunks:
            if raw.strip() and not raw.startswith(("--- ", "+++ ", "diff ", "index ")):
                raise ToolInputError(f"Line {number} of the patch comes before any '@@' hunk header: {raw[:60]!r}.")
        elif raw.startswith("\\") or (raw.startswith(("--- ", "+++ ")) and not hunks[-1][1] and not hunks[-1][2]):
            continue
        elif raw == "" or raw[0] == " ":
            hunks[-1][1].append(raw[1:])
            hunks[-1][2].append(raw[1:])
        elif raw[0] == "-":
            hunks[-1][1].append(raw[1:])
        elif raw[0] == "+":
            hunks[-1][2].append(raw[1:])
        else:
            raise ToolInputError(
                f"Line {number} of the patch starts with {raw[0]!r}; lines in a hunk start with ' ', '-' or '+'."
            )
    edits = []
    for near_line, old, new in hunks:
        while old and new and old[-1] == "" and new[-1] == "":  # the blank line a patch often ends with
            old.pop()
            new.pop()
        if old == new:
            continue
        if not any(old):
            raise ToolInputError(
                "A patch hunk has no context or removed lines, so there is nothing to find it by; "
                "include at least one unchanged line around the addition."
            )
        edits.append(Edit("\n".join(old) + "\n", "\n".join(new) + "\n" if new else "", near_line=near_line))
    if not edits:
        raise ToolInputError("The patch changes nothing: it has no '@@' hunk with '-' or '+' lines.")
    return edits
