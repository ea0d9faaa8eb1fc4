"""The safe regex subset of ``search_notes(mode="regex")``: what a pattern may be, checked before it runs.

Refused, with the reason and what to write instead:

- a quantifier or an alternation inside a quantified group (``(a+)+``, ``(a|ab)*``): exponential;
- backreferences;
- repeats that can combine in more than :data:`MAX_REGEX_WAYS` ways on a line: the product of
  each repeat's ways (an unbounded one about 1,000, ``a{m,n}`` n-m+1, ``?`` 2, a possessive one
  1; alternatives add up). Two unbounded quantifiers and a few small repeats pass;
  ``a{0,100}a{0,100}a{0,100}a{0,100}c`` (about 10^8 ways) does not;
- the spellings that the standard library and the ``regex`` package read differently.

The pattern is parsed with the standard library's parser and then compiled for the ``regex``
package, which matches it. The same count of ways, for a given line length, says up to which
length a line's worst case is small enough to match without a time limit.
"""

from __future__ import annotations

import bisect
import re
import re._constants as sre  # type: ignore[import-not-found]  # the stdlib regex parser (Python 3.11+),
import re._parser as sre_parse  # type: ignore[import-not-found]  # to vet a pattern before it runs
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded by the first regex search, not at start-up
    import regex

MAX_REGEX_CHARS = 500
#: A regex sees the first this many characters of each line.
REGEX_LINE_CHARS = 1000
#: How many ways a pattern's repeats may combine on a line: an unbounded one (*, +, {n,}) counts 1,001
#: (a line has 1,000 characters), a{m,n} counts n-m+1, ``?`` counts 2, alternatives add up.
MAX_REGEX_WAYS = 10_000_000
#: A line is matched without a time limit while the pattern's worst case on it stays under this many
#: steps (about 80 ms, the most such a line can overrun the search's limit by; most lines take
#: microseconds): reading the CPU clock for a limit costs more than a typical match.
UNTIMED_STEPS = 10_000_000


class UnsafeRegexError(ValueError):
    """A pattern outside the safe subset, or not a valid pattern at all; the message says which."""


@dataclass(frozen=True)
class SafeRegex:
    """A pattern from the safe subset, compiled for the ``regex`` package.

    ``untimed_chars``: lines up to this long are matched without a time limit, as the
    pattern's worst case on them is under :data:`UNTIMED_STEPS`; longer ones get one.
    """

    compiled: regex.Pattern[str]
    untimed_chars: int


def safe_regex(pattern: str) -> SafeRegex:
    """Compile ``pattern`` if it is in the safe subset; :class:`UnsafeRegexError` otherwise."""
    if len(pattern) > MAX_REGEX_CHARS:
        raise UnsafeRegexError(f"the pattern is {len(pattern)} characters long; at most {MAX_REGEX_CHARS} are allowed")
    _check_read_alike(pattern)
    try:
        tree = sre_parse.parse(pattern)
    except re.error as error:
        raise UnsafeRegexError(f"not a valid regular expression: {error}") from None
    _check_safe(tree, inside_repeat=False)
    ways = _ways(tree, REGEX_LINE_CHARS)
    if ways > MAX_REGEX_WAYS:
        raise UnsafeRegexError(
            f"its repeats can combine in about {ways:,} ways on a line: each unbounded quantifier (*, +, {{n,}}) "
            f"counts about {REGEX_LINE_CHARS:,}, a{{m,n}} counts n-m+1 and ? counts 2, multiplied together; at most "
            f"{MAX_REGEX_WAYS:,} are allowed (two unbounded quantifiers and a few small repeats), as more can take "
            "very long on a long line. Use fewer or narrower repeats, a possessive quantifier (a*+, which never "
            "backtracks), or mode=text"
        )
    import regex  # here, not at the top: start-up does not load it

    try:
        compiled = regex.compile(pattern, regex.VERSION0)  # the re-compatible mode, whatever the default
    except regex.error as error:  # the stdlib accepted it; the regex package reads a few spellings differently
        raise UnsafeRegexError(f"not a valid regular expression: {error}") from None
    return SafeRegex(compiled, _untimed_chars(tree))


_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)}
_REPEAT_BRACES = re.compile(r"\{\d*(?:,\d*)?\}")


def _check_read_alike(pattern: str) -> None:
    """Refuse the spellings that the stdlib reads one way and the ``regex`` package another.

    A ``{`` that is not a repeat is a literal for the stdlib and can start fuzzy matching for
    ``regex`` (``x{e<=1}``); inside a set, ``[:alpha:]`` is a POSIX class for ``regex`` only, and
    ``[``, ``--``, ``&&``, ``~~``, ``||`` are the set syntax the stdlib warns may change meaning.
    """
    in_set = False
    set_start = 0
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if pattern.startswith("N{", index + 1):  # \N{EM DASH}: a named character
                index = pattern.find("}", index) + 1 or len(pattern)
            else:
                index += 2
            continue
        if in_set:
            pair = pattern[index : index + 2]
            if char == "]" and index > set_start:
                in_set = False
            elif char == "[":
                raise UnsafeRegexError(r"write a [ inside a character set as \[ (a set cannot hold another)")
            elif pair in ("--", "&&", "~~", "||"):
                raise UnsafeRegexError(f"write {pair} inside a character set escaped, as \\{pair[0]}\\{pair[1]}")
        elif char == "[":
            in_set = True
            set_start = index + 1 + (pattern[index + 1 : index + 2] == "^")  # a ] right there is a literal
        elif char == "{" and not _REPEAT_BRACES.match(pattern, index):
            raise UnsafeRegexError(r"write a { that does not start a repeat like {2,5} as \{")
        index += 1


def _check_safe(items: Any, *, inside_repeat: bool) -> None:
    """Refuse what can explode whatever the line: nested repeats, repeated alternatives, backreferences."""
    for op, argument in items:
        if op in _REPEATS:
            if inside_repeat:
                raise UnsafeRegexError(
                    "a quantifier inside a quantified group (like (a+)+ or (ab?)*) can take exponential time"
                )
            _check_safe(argument[2], inside_repeat=True)
        elif op is sre.BRANCH:
            if inside_repeat:
                raise UnsafeRegexError(
                    "an alternation inside a quantified group (like (a|ab)*) can take exponential time"
                )
            for alternative in argument[1]:
                _check_safe(alternative, inside_repeat=False)
        elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            raise UnsafeRegexError("backreferences are not allowed")
        elif op is sre.SUBPATTERN:
            _check_safe(argument[-1], inside_repeat=inside_repeat)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            _check_safe(argument[1], inside_repeat=inside_repeat)
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            _check_safe(argument, inside_repeat=inside_repeat)


def _ways(items: Any, line_chars: int) -> int:
    """How many ways the repeats of ``items`` can combine on a line of ``line_chars`` characters.

    A backtracking engine may try each of them at each position, so this bounds its work. A
    possessive repeat never gives back what it took: one way.
    """
    ways = 1
    for op, argument in items:
        if op in _REPEATS:
            low, high, body = argument
            if op is not getattr(sre, "POSSESSIVE_REPEAT", None):
                ways *= min(high, line_chars) - min(low, line_chars) + 1
            ways *= _ways(body, line_chars)
        elif op is sre.BRANCH:
            ways *= sum(_ways(alternative, line_chars) for alternative in argument[1])
        elif op is sre.SUBPATTERN:
            ways *= _ways(argument[-1], line_chars)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            ways *= _ways(argument[1], line_chars)
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            ways *= _ways(argument, line_chars)
    return ways


def _size(items: Any) -> int:
    """How many parts the pattern has: the work of trying one way at one position."""
    size = 0
    for op, argument in items:
        size += 1
        if op in _REPEATS:
            size += _size(argument[2])
        elif op is sre.BRANCH:
            size += sum(_size(alternative) for alternative in argument[1])
        elif op is sre.SUBPATTERN:
            size += _size(argument[-1])
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            size += _size(argument[1])
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            size += _size(argument)
    return max(size, 1)


def _untimed_chars(tree: Any) -> int:
    """The longest line whose worst case — start positions x ways x parts — stays under :data:`UNTIMED_STEPS`.

    A pattern that starts with ``^`` or ``\\A`` is tried at the line's start only (a line holds no ``\\n``).
    """
    size = _size(tree)
    anchored = bool(tree.data) and tree[0] in ((sre.AT, sre.AT_BEGINNING), (sre.AT, sre.AT_BEGINNING_STRING))

    def quick(chars: int) -> bool:
        return (1 if anchored else chars) * _ways(tree, chars) * size <= UNTIMED_STEPS

    lengths = range(REGEX_LINE_CHARS + 1)
    return bisect.bisect_left(lengths, True, key=lambda chars: not quick(chars)) - 1
