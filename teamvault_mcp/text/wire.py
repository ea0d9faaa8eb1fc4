"""What a JSON value must be to be passed on: valid Unicode and bounded nesting (pure functions).

A server's JSON may hold escapes of lone surrogates (``"\\ud800"``), which Python
decodes into strings that cannot be encoded as UTF-8 again: sent on to the host,
such a string kills the stdio transport. And JSON may nest deeper than the MCP SDK
can parse or serialise (about 200 levels). The client and the call pipeline use
these functions to make every value safe before it goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: A JSON escape that can decode into a surrogate: only then is a decoded answer walked.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

REPLACEMENT = "\ufffd"


def is_valid_unicode(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8: it holds no lone surrogate."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")  # several times faster than searching for a surrogate
    except UnicodeEncodeError:
        return False
    return True


def valid_unicode(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (the same string when it has none)."""
    return text if is_valid_unicode(text) else _LONE_SURROGATE.sub(REPLACEMENT, text)


def nesting_depth(value: Any, limit: int) -> int:
    """How deep arrays and objects nest in ``value`` (a scalar is 0); at most ``limit + 1``: it stops there.

    Iterative, so a value nested deeper than the interpreter's recursion limit is measured too.
    """
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        current, depth = pending.pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        depth += 1
        if depth > limit:
            return limit + 1
        deepest = max(deepest, depth)
        pending.extend((child, depth) for child in children if isinstance(child, dict | list | tuple))
    return deepest


def fix_strings_in_place(value: Any) -> None:
    """Replace lone surrogates in every string of a freshly decoded JSON value (object keys too), iteratively."""
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, list):
            for index, item in enumerate(current):
                if isinstance(item, str):
                    current[index] = valid_unicode(item)
                elif isinstance(item, dict | list):
                    pending.append(item)
        elif isinstance(current, dict):
            items = [(valid_unicode(key), item) for key, item in current.items()]
            current.clear()
            for key, item in items:
                current[key] = valid_unicode(item) if isinstance(item, str) else item
                if isinstance(item, dict | list):
                    pending.append(item)


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A copy of ``value`` with ``change`` applied to every string (object keys too).

    Recursive: call it only on values whose depth was bounded with :func:`nesting_depth`.
    """
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {change(k) if isinstance(k, str) else k: map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [map_strings(item, change) for item in value]
    return value
