"""A strict ``multipart/form-data`` parser for the local vault's ``POST /files`` (standard library only).

The ``cgi`` module is gone from newer Pythons and the ``email`` parser rewrites line
endings; note bytes must arrive exactly as sent, so the body is split by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class MultipartError(ValueError):
    """The body is not well-formed multipart/form-data."""


@dataclass(frozen=True)
class Part:
    data: bytes
    filename: str | None  # a part with a filename is a file; without one, a text field
    content_type: str | None


_PARAM = re.compile(r';\s*([A-Za-z0-9_*-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


def header_params(value: str) -> tuple[str, dict[str, str]]:
    """``form-data; name="file"; filename="a.md"`` → ``("form-data", {"name": "file", "filename": "a.md"})``."""
    main, _, rest = value.partition(";")
    params = {}
    for name, raw in _PARAM.findall(";" + rest):
        raw = raw.strip()
        if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        params[name.lower()] = raw
    return main.strip().lower(), params


def parse_form(content_type: str, body: bytes) -> dict[str, Part]:
    """The parts of a multipart body by field name (the first part of a name wins, as in ``FormData.get``)."""
    kind, params = header_params(content_type)
    boundary = params.get("boundary", "")
    if kind != "multipart/form-data" or not boundary or len(boundary) > 200:
        raise MultipartError("not multipart/form-data with a boundary")
    delimiter = b"--" + boundary.encode("latin-1")
    start = body.find(delimiter)
    if start < 0:
        raise MultipartError("the boundary never occurs")
    position = start + len(delimiter)
    fields: dict[str, Part] = {}
    while True:
        if body[position : position + 2] == b"--":
            return fields
        if body[position : position + 2] != b"\r\n":
            raise MultipartError("a boundary is not followed by CRLF")
        position += 2
        end = body.find(b"\r\n" + delimiter, position)
        if end < 0:
            raise MultipartError("a part never ends")
        name, part = _part(body[position:end])
        fields.setdefault(name, part)
        position = end + 2 + len(delimiter)


def _part(raw: bytes) -> tuple[str, Part]:
    head, separator, data = raw.partition(b"\r\n\r\n")
    if not separator:
        raise MultipartError("a part has no header block")
    headers: dict[str, str] = {}
    for line in head.decode("utf-8", errors="replace").split("\r\n"):
        name, colon, value = line.partition(":")
        if not colon:
            raise MultipartError(f"a malformed part header: {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    kind, params = header_params(headers.get("content-disposition", ""))
    if kind != "form-data" or "name" not in params:
        raise MultipartError("a part without Content-Disposition: form-data; name=...")
    return params["name"], Part(data, params.get("filename"), headers.get("content-type") or None)
