"""A tool's answer, said once: each line goes to the text a model reads and, as what it is, to the data.

Some hosts give the model only a result's text, others (Claude Code, Cursor) only its
``structuredContent`` (README: Hosts and the two halves), so neither half may be a summary of
the other. A handler that answers in lines says each one here as what it is:

- the **summary**, the headline (``3 open tasks in 2 notes (of 40):``): verbatim in the text,
  and the data's ``summary``;
- a **row** (``people/ada.md:14  [ ] call Grace · This week``): a line of the text, and a
  record with the same facts under its key (``tasks: [{path, line, status, text, section}]``);
- a **label** that names the columns of the rows below it: in the text only, as the data names
  its fields (a **line** likewise, whose facts the handler keeps in a nested record itself);
- a **notice**: a cut or partial notice, a hint, the call that reads on (``[Cut: 50 of 212
  shown …]``): verbatim in the text, and in the data's ``notices``, in order.

So the two halves are made from the same values in one pass, cut at the same point, with the
same notices. The output schemas say the same shape: :func:`~teamvault_mcp.tools.spec.answer_schema`.
"""

from __future__ import annotations

from typing import Any

from teamvault_mcp.tools.context import ToolOutput


class Answer:
    """The lines of a tool's text and the same facts as data, built together; ``data`` starts with ``fields``
    (the keys of rows start as empty lists: a row key is always there, even when nothing is found)."""

    def __init__(self, **fields: Any) -> None:
        self.data: dict[str, Any] = dict(fields)
        self.lines: list[str] = []

    def summary(self, line: str) -> None:
        """The headline: the text's line and the data's ``summary`` (a second one is added to it)."""
        self.lines.append(line)
        self.data["summary"] = f"{self.data['summary']} {line}" if "summary" in self.data else line

    def row(self, key: str, line: str, record: dict[str, Any]) -> None:
        """One item: its line in the text, its record (the same facts) in the data's list ``key``."""
        self.lines.append(line)
        self.data.setdefault(key, []).append(record)

    def line(self, line: str) -> None:
        """A line whose facts the handler puts in the data itself, where a row of the top level does not fit (the
        notes a move relinked are rows of ``links.updated``): the text's alone, here."""
        self.lines.append(line)

    def label(self, line: str) -> None:
        """A line that only names the columns of the rows after it (``In (note:line  the line):``): the text's
        alone, since the data names each field."""
        self.lines.append(line)

    def notice(self, line: str) -> None:
        """A notice, a hint or the call that reads on: verbatim in both."""
        self.lines.append(line)
        self.data.setdefault("notices", []).append(line)

    def output(self, *, is_error: bool = False) -> ToolOutput:
        return ToolOutput("\n".join(self.lines), self.data, is_error=is_error)
