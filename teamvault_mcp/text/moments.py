"""Moments in time as the server writes them and as an agent asks for them: parsed, and shown in UTC. Pure.

The server's dates are ISO 8601 (``2026-12-01T09:14:05.123Z``). An agent's ``since`` is a
date (``2026-12-01``: that day's start, UTC), a date-time (``2026-12-01T09:00``, ``…Z``,
``…+02:00``; without a zone, UTC), or a span back from now: a number and ``m`` (minutes),
``h``, ``d`` or ``w`` (``30m``, ``24h``, ``7d``, ``2w``).
"""

from __future__ import annotations

import datetime
import re

from teamvault_mcp.errors import ToolInputError

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?", re.I)
_SPAN = re.compile(r"(\d{1,6})\s*(m|min|mins|minutes?|h|hours?|d|days?|w|weeks?)", re.I)
_SPAN_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_moment(text: str | None) -> datetime.datetime | None:
    """``text`` as an aware UTC date-time (a date is its day's start); None if it is neither."""
    if not text:
        return None
    if len(text) == 24 and text[10] == "T" and text[23] == "Z":  # the server's own form, 2024-05-01T09:30:00.000Z:
        try:  # straight in (a listing has two a file)
            return datetime.datetime.fromisoformat(text)
        except ValueError:
            pass
    text = text.strip()
    try:
        if _DATE.fullmatch(text):
            return datetime.datetime.combine(datetime.date.fromisoformat(text), datetime.time(), datetime.UTC)
        if _DATE_TIME.fullmatch(text):
            moment = datetime.datetime.fromisoformat(text.replace(",", ".").upper().replace("Z", "+00:00"))
            return (moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)).astimezone(datetime.UTC)
    except ValueError:
        return None  # 2026-13-45
    return None


def since_moment(text: str, now: float) -> datetime.datetime:
    """The moment an agent's ``since`` names (see the module docstring); ``now`` in seconds since the epoch."""
    span = _SPAN.fullmatch(text.strip())
    if span:
        seconds = int(span.group(1)) * _SPAN_SECONDS[span.group(2)[0].lower()]
        return datetime.datetime.fromtimestamp(now - seconds, datetime.UTC)
    moment = parse_moment(text)
    if moment is None:
        raise ToolInputError(
            f"since must be a date (2026-12-01), a date-time (2026-12-01T09:00:00Z) or a span back from now "
            f"(30m, 24h, 7d, 2w); got {text[:60]!r}."
        )
    return moment


def shown(moment: datetime.datetime) -> str:
    """``moment`` as this server shows times: UTC, to the second, ``2026-12-01T09:14:05Z`` (``since`` takes it)."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
