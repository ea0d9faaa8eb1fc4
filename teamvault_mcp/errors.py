"""The error tree of teamvault-mcp, and the one function that writes a failure's message.

Every failure the package reports is one of these. ``vault/transport.py`` and
``vault/client.py`` turn ``requests``/``urllib3`` failures and HTTP answers into them;
``server/runner.py`` turns them into tool results. Nothing else translates errors.

    TeamVaultError                  base: the facts of one failure, and how the retry loop ended
    ├── ConfigError                 bad environment (exit code 1 at start-up)
    │   └── HttpStartError          ``serve --http`` cannot start as asked (exit code 2)
    ├── ToolInputError              a bad tool argument; nothing was sent
    │   ├── InvalidPathError        a path the server would refuse (names the rule)
    │   ├── WriteScopeError         a write outside TEAM_VAULT_WRITE_PREFIXES
    │   └── NoProjectError          no ``projectId`` and no default project
    ├── NoteNotFoundError           ``Note not found: <path>``
    ├── SectionNotFoundError        no heading at that tocPath; names the headings that exist
    ├── NotTextError                ``Not a text file: <path> (<mimeType>).``
    ├── HTTPStatusError             the server answered with an error status
    │   ├── KeyInUseError           409 ``idempotency_key_in_use``: an earlier attempt is being applied
    │   └── PreconditionFailedError 412: the note no longer has the hash ``If-Match`` named
    ├── UnexpectedAnswerError       a 2xx answer we cannot read (not JSON, wrong shape)
    ├── NetworkError                no answer: DNS, connect, reset, broken body (``connected``: it got that far)
    │   ├── StaleConnectionError    a pooled connection the server had closed
    │   ├── AttemptTimeoutError     no complete answer within the attempt's limit
    │   └── TlsRefusedError         a TLS handshake no retry can change: certificate not accepted, no TLS there
    ├── ConflictError               ``expectedHash`` differs from the note's current hash
    ├── ChangedMeanwhileError       a colleague's write landed during ours; theirs is current again
    ├── FrontMatterError            front matter that cannot be read, or changed safely; nothing written
    ├── EditFailedError             an edit that does not apply (not found, ambiguous); nothing written
    │   └── ResultTooLargeError     a change whose result would pass the size a note may have; never built
    ├── NotAppliedError             an unanswered write that a check found not applied
    ├── NoteBusyError               another call of this server held the note's lock too long; nothing written
    ├── OutOfTimeError              the call's budget is too short to start a request
    ├── OverdueError                the call's work was still running when its budget ran out
    ├── NoWorkerError               every call slot stayed busy for the call's whole budget
    └── InternalError               a bug, or data nested past what Python can process, stopped the call

    CallCancelledError (BaseException) the host cancelled the call: not a failure, and no ``except`` of
                                    failures (ours or ``Exception``) catches it on the way to the runner

The errors keep facts only: a status, an envelope code, whether the connection ever opened,
``Retry-After``. What a failure *means* — whether the request may be sent again, whether a
write that ended so may or may not have been applied, whether an attempt may still be
running on the server — is decided in one place: the table :data:`~teamvault_mcp.vault.retry.OUTCOMES`
next to the retry policy. When the retry loop gives up, the client attaches what the loop saw
(:class:`Attempts`) to the error it raises, once; :func:`failure_text` writes the message.

What an error answer means, in English, is one table in ``messages.py``:
:data:`~teamvault_mcp.messages.STATUS_MEANINGS` (status, envelope code, what the path names, the
method), with the helpers every message shows its quotes with (``printable``, ``short_hash``,
``server_said``); they are imported here too, where callers have always found them.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from teamvault_mcp.messages import BODY_EXCERPT_CHARS as BODY_EXCERPT_CHARS
from teamvault_mcp.messages import NOT_TEAM_VAULT, Named, not_team_vault, row_of, target_of, tls_refusal
from teamvault_mcp.messages import SHOWN_HASH_DIGITS as SHOWN_HASH_DIGITS
from teamvault_mcp.messages import STATUS_MEANINGS as STATUS_MEANINGS
from teamvault_mcp.messages import WRITES as WRITES
from teamvault_mcp.messages import StatusMeaning as StatusMeaning
from teamvault_mcp.messages import Suggest as Suggest
from teamvault_mcp.messages import Words as Words
from teamvault_mcp.messages import meaning_of as meaning_of
from teamvault_mcp.messages import printable as printable
from teamvault_mcp.messages import server_said as server_said
from teamvault_mcp.messages import short_hash as short_hash
from teamvault_mcp.messages import worded as worded

#: Said after a failed write that the outcome table says may have been applied.
UNCERTAIN_WRITE_WORDS: Words = (
    "The change may or may not have been applied. ",
    Suggest(
        ("read_note", "list_notes"),
        "Check the current state with read_note or list_notes before calling again.",
        "Check the note's current state before calling again.",
    ),
)
UNCERTAIN_WRITE_HINT = worded(UNCERTAIN_WRITE_WORDS)


@dataclass(frozen=True)
class Attempts:
    """What the retry loop saw of one request that failed (``vault/retry.py`` makes it; the client attaches it).

    ``made``: attempts made (a stale connection's free resend aside); ``elapsed`` of the call's ``budget``
    seconds; ``out_of_time``: the loop stopped because too little budget was left for another attempt;
    ``earlier_unanswered``: an earlier attempt got no answer, and the last one's definite answer may be its
    echo (say 409 ``path_exists`` after a create that landed); ``may_still_run``: some attempt may still be
    running on the server.
    """

    made: int
    elapsed: float
    budget: float
    out_of_time: bool = False
    earlier_unanswered: bool = False
    may_still_run: bool = False

    def sentences(self) -> list[str]:
        """What the message says of the attempts, if anything."""
        said = []
        if self.out_of_time and self.made >= 1:
            said.append(
                f"(Gave up after {self.made} attempt{'s' if self.made > 1 else ''} in {self.elapsed:.1f} s: "
                f"this call's {self.budget:g} s budget is nearly used up.)"
            )
        elif self.made > 1:
            said.append(f"(Gave up after {self.made} attempts in {self.elapsed:.1f} s.)")
        if self.earlier_unanswered:
            said.append("An earlier attempt got no answer and may have been applied.")
        return said


class TeamVaultError(Exception):
    """Base of every error teamvault-mcp reports. ``str()`` is its whole message (see :func:`failure_text`)."""

    #: Seconds the server asked us to wait (``Retry-After``), when it did.
    retry_after: float | None = None
    #: What the retry loop saw, when this error ended one (set once, by :meth:`attach`).
    attempts: Attempts | None = None
    #: Sentences a handler added after the fact (:meth:`extend`).
    notes: tuple[str, ...] = ()
    _words: Words = ()

    def __init__(self, *words: str | Suggest) -> None:
        """The message, from plain words and :class:`Suggest` words: ``str()`` names every tool they name, and
        :func:`failure_text` words it for the tools a server registered."""
        if len(words) == 1 and isinstance(words[0], str):
            super().__init__(words[0])
        elif words:
            super().__init__(worded(words))
            self._words = words
        else:
            super().__init__()

    @property
    def words(self) -> Words:
        """The message in parts, its tools as data; as one plain part once something rewrote it (a redaction)."""
        said = str(self.args[0]) if self.args else ""
        return self._words if self._words and worded(self._words) == said else (said,)

    def attach(self, attempts: Attempts) -> TeamVaultError:
        """This error, with what the retry loop saw of the request it ended; set once."""
        if self.attempts is not None:
            raise ValueError(f"{type(self).__name__} already has its attempts: {self.attempts}")
        self.attempts = attempts
        return self

    def extend(self, note: str) -> None:
        """Add ``note`` to the end of the message (what the call that caught it does next, say)."""
        self.notes = (*self.notes, note)

    def __str__(self) -> str:
        return failure_text(self)

    def facts(self) -> dict[str, Any]:
        """What the message says that a program may want as data (``structuredContent`` of an error result,
        with TEAM_VAULT_STRUCTURED_CONTENT=on): the path, the hashes, the diff. The message stays the answer."""
        return {}


def failure_text(error: CallStop, *, hint: bool = False, offered: Collection[str] | None = None) -> str:
    """The message of a failure, as the model reads it; the one place it is put together.

    The error's own words, what the retry loop saw (the attempts, an earlier attempt that got
    no answer), what a handler added, and, with ``hint`` (a write request was sent and the
    outcome table says it may have been applied: ``vault.retry.failure``), :data:`UNCERTAIN_WRITE_HINT`.
    The tools the words name are those ``offered`` registers (None: every tool): a sentence that
    sends the agent to another tool says the same without it, or goes (:class:`Suggest`).
    """
    parts = [worded(error.words, offered)]
    if error.attempts is not None:
        parts += error.attempts.sentences()
    parts += error.notes
    if hint:
        parts.append(worded(UNCERTAIN_WRITE_WORDS, offered))
    return " ".join(parts)


def for_tools(text: str, error: CallStop, offered: Collection[str]) -> str:
    """A failure's ``text`` (as :func:`failure_text` wrote it, naming every tool) for a server that registered
    ``offered``: the one place an answer's message is worded against the tools there are. A text that
    :func:`failure_text` did not write stays as it is."""
    hint = text.endswith(UNCERTAIN_WRITE_HINT)
    if text != failure_text(error, hint=hint):
        return text
    return failure_text(error, hint=hint, offered=offered)


class ConfigError(TeamVaultError):
    """The environment does not describe a usable configuration."""


class HttpStartError(ConfigError):
    """``serve --http`` cannot start as asked (no way to authenticate callers, an open bind without TLS, TLS
    files that do not load): exit code 2, one line (``http_config.load_http_config`` raises it)."""


class ToolInputError(TeamVaultError):
    """A tool argument is missing or malformed; no request was sent."""


class InvalidPathError(ToolInputError):
    """A vault path the Team Vault server would refuse; ``rule`` is the server's wording."""

    def __init__(self, rule: str, path: str) -> None:
        self.rule = rule
        self.path = path
        # "Parent traversal is not allowed: ../a.md"; a rule that names its segment
        # reads better as "Reserved folder name: .git (in notes/.git/HEAD)".
        where = f" (in {printable(path)})" if ": " in rule else f": {printable(path)}"
        super().__init__(f"{printable(rule)}{where}")


class WriteScopeError(ToolInputError):
    """A write tool named a note outside ``TEAM_VAULT_WRITE_PREFIXES``; no request was sent.

    ``project`` is named when some prefixes hold in one project only; ``scopes`` then
    says where writes may go, for a project none of them opens.
    """

    def __init__(
        self,
        tool: str,
        argument: str,
        path: str,
        prefixes: tuple[str, ...],
        *,
        project: str | None = None,
        scopes: str = "",
    ) -> None:
        where = f" in project {printable(project)}" if project is not None else ""
        if not prefixes:
            super().__init__(
                f"{tool} refused: this server may not write{where or ' without a projectId'} at all "
                f"(TEAM_VAULT_WRITE_PREFIXES opens only: {scopes}). Nothing was sent. Reading stays possible "
                "everywhere; write in a project listed there, or ask whoever runs this server to add this one."
            )
            return
        allowed = ", ".join(prefix or "anywhere" for prefix in prefixes)
        super().__init__(
            f"{tool} refused: {argument} {printable(path)!r} is outside the folders this server may write to{where} "
            f"({allowed}; set by TEAM_VAULT_WRITE_PREFIXES). Nothing was sent. Write under one of them instead; "
            "reading stays possible everywhere."
        )


class NoProjectError(ToolInputError):
    def __init__(self) -> None:
        super().__init__(
            "No projectId given and TEAM_VAULT_PROJECT_ID is not set",
            Suggest(("list_projects",), " — call list_projects to find one.", "."),
        )


class NoteNotFoundError(TeamVaultError):
    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"Note not found: {printable(path)}")

    def facts(self) -> dict[str, Any]:
        return {"path": self.path}


class SectionNotFoundError(TeamVaultError):
    """No heading ``missing`` under ``found`` in the note; ``available`` are the headings there."""

    def __init__(
        self,
        path: str,
        found: tuple[str, ...],
        missing: str,
        available: list[str],
        top_level: list[str],
        closest: Sequence[Sequence[str]] = (),
    ) -> None:
        def quoted(names: list[str]) -> str:
            return ", ".join(f'"{name}"' for name in names)

        if not top_level:
            text = f"{printable(path)} has no headings: read it by lines with startLine/endLine."
        elif not found:
            text = f'Section not found: "{missing}" at the top level of {printable(path)}. '
            text += f"Top-level headings: {quoted(top_level)}."
        else:
            there = f"Headings there: {quoted(available)}" if available else "It has no subheadings"
            text = f'Section not found: "{missing}" under {" > ".join(found)} in {printable(path)}. {there}. '
            text += f"Top-level headings: {quoted(top_level)}."
        if closest and top_level:
            paths = " or ".join(json.dumps(list(names), ensure_ascii=False) for names in closest)
            text += f" Closest headings, as section: {paths}."
        super().__init__(text, SEE_OUTLINE)


#: The end of a message about a note's headings.
SEE_OUTLINE = Suggest(("note_outline",), " Call note_outline to see the structure.")


class NotTextError(TeamVaultError):
    def __init__(self, path: str, mime_type: str) -> None:
        super().__init__(f"Not a text file: {printable(path)} ({mime_type}).")


class HTTPStatusError(TeamVaultError):
    """The server answered ``status``; ``code`` is the error envelope's code, if any.

    The message says in English what the answer means and what to do next (from
    :data:`STATUS_MEANINGS`), after the spec's ``<METHOD> <api path> → HTTP <status>``;
    the server's own words (``detail``, already stripped of the API key) follow as a
    quoted detail, never alone.
    """

    def __init__(
        self,
        method: str,
        api_path: str,
        status: int,
        detail: str = "",
        *,
        code: str | None = None,
        retry_after: float | None = None,
        location: str | None = None,
        about: Mapping[str, str] | None = None,
    ) -> None:
        self.method = method
        self.api_path = api_path
        self.status = status
        self.code = code
        self.detail = detail
        self.retry_after = retry_after
        #: The answer is none a Team Vault server gives (``messages.not_team_vault``): the URL leads elsewhere.
        self.not_team_vault = not_team_vault(status, code, api_path)
        row = NOT_TEAM_VAULT if self.not_team_vault else row_of(status, code, target_of(api_path), method)
        named = Named({key: printable(value) for key, value in (about or {}).items()}, location=location or "?")
        shown_code = f" ({printable(code)[:80]})" if code else ""
        meaning = tuple(
            word.format_map(named)
            if isinstance(word, str)
            else Suggest(word.tools, word.text.format_map(named), word.instead)  # the rows' Suggests name no path
            for word in row.words
        )
        if about and row.methods is not None:
            # A row written for this very request says all the agent needs, naming its paths: the API path's
            # internal ids and the server's own words (mostly Russian) would only be noise.
            super().__init__(f"HTTP {status}{shown_code}: ", *meaning)
            return
        super().__init__(f"{method} {api_path} → HTTP {status}{shown_code}: ", *meaning, server_said(detail))

    def facts(self) -> dict[str, Any]:
        return {"httpStatus": self.status, **({"code": self.code} if self.code else {})}


class KeyInUseError(HTTPStatusError):
    """An earlier attempt with the same Idempotency-Key is still being applied."""

    def __init__(self, method: str, api_path: str, detail: str, *, retry_after: float | None) -> None:
        super().__init__(method, api_path, 409, detail, code="idempotency_key_in_use", retry_after=retry_after)


class PreconditionFailedError(HTTPStatusError):
    """412: a conditional write found the note at another content hash (``current_hash``); nothing changed."""

    def __init__(self, method: str, api_path: str, body: str, *, current_hash: str | None) -> None:
        super().__init__(method, api_path, 412, body, code="precondition_failed")
        self.current_hash = current_hash

    def facts(self) -> dict[str, Any]:
        return {**super().facts(), **({"currentHash": self.current_hash} if self.current_hash else {})}


class UnexpectedAnswerError(TeamVaultError):
    """A success status whose body is not what the API contract promises (``detail``: what it held)."""

    def __init__(self, method: str, api_path: str, problem: str, detail: str = "") -> None:
        super().__init__(
            f"{method} {api_path} → unexpected answer ({problem}): this is not what a Team Vault server answers. "
            "If it happens again, run `teamvault-mcp check`: TEAM_VAULT_URL may lead to something else "
            "(a login page, a proxy, another service)." + server_said(detail)
        )


class NetworkError(TeamVaultError):
    """No answer from the server. ``connected=False`` when the connection never opened: nothing reached it."""

    def __init__(self, method: str, api_path: str, detail: str, *, connected: bool = True) -> None:
        self.method = method
        self.api_path = api_path
        self.connected = connected
        super().__init__(f"Network error on {method} {api_path}: {detail}")


class StaleConnectionError(NetworkError):
    """A pooled keep-alive connection failed before any answer: most likely the server had closed it.

    The request may still have reached the server (a server that applies a write and then
    drops the connection looks the same); the outcome table sends it again at once, uncounted.
    """

    def __init__(self, method: str, api_path: str) -> None:
        super().__init__(method, api_path, "the server closed a kept-alive connection without answering")


class AttemptTimeoutError(NetworkError):
    def __init__(self, method: str, api_path: str, seconds: float) -> None:
        super().__init__(method, api_path, f"no complete answer within {seconds:.1f} s (timed out)")


class TlsRefusedError(NetworkError):
    """The TLS handshake failed in a way another attempt cannot change; nothing was sent.

    ``verify_message``: OpenSSL's reason for not accepting the server's certificate; None when the other side
    does not speak TLS (``reason``, OpenSSL's code: ``WRONG_VERSION_NUMBER`` from a plain HTTP port).
    """

    def __init__(self, method: str, api_path: str, address: str, *, verify_message: str | None, reason: str) -> None:
        self.verify_message = verify_message
        self.reason = reason
        said, fix = tls_refusal(address, verify_message, reason, trust="REQUESTS_CA_BUNDLE", url="TEAM_VAULT_URL")
        super().__init__(method, api_path, f"{said}. Nothing was sent; {fix}.", connected=False)


class OutOfTimeError(TeamVaultError):
    """The call's time budget is used up before a request could start; nothing was sent."""

    def __init__(self, method: str, api_path: str, budget: float, remaining: float) -> None:
        super().__init__(
            f"Out of time before {method} {api_path}: this call's {budget:g} s budget has "
            f"{max(remaining, 0.0):.1f} s left, too little for another request. Nothing was sent; "
            "try again."
        )


class ConflictError(TeamVaultError):
    """The note is not at the ``expectedHash`` the agent gave: someone changed it since it was read."""

    def __init__(self, path: str, expected: str, current: str | None, diff: str | None) -> None:
        if current is None:
            text = f"Conflict: {printable(path)} no longer exists (you expected contentHash {short_hash(expected)}). "
            text += "Nothing was written."
        else:
            text = (
                f"Conflict: {printable(path)} has changed since you read it: you expected contentHash "
                f"{short_hash(expected)}, it is now {short_hash(current)}. Nothing was written."
            )
            redo = "Read the note again, then redo your change on its current text."
            if diff:  # the instruction after the diff, on a line of its own (never read as a context line)
                text += f" What changed since the version you saw:\n{diff.rstrip(chr(10))}\n{redo}"
            else:
                text += f" {redo}"
        super().__init__(text)
        self.path = path
        self.expected = expected
        self.current = current
        self.diff = diff

    def facts(self) -> dict[str, Any]:
        facts: dict[str, Any] = {"path": self.path, "expectedHash": self.expected, "currentHash": self.current}
        if self.diff:
            facts["diff"] = self.diff
        return facts


class ChangedMeanwhileError(TeamVaultError):
    """A colleague's write landed between our read and our write, and ours cannot stand on it.

    Raised only after their text was made current again (or when the message says
    exactly where it is): nothing of theirs is lost, and ours stays in the history.
    """


class FrontMatterError(TeamVaultError):
    """Front matter that cannot be read, or changed safely; nothing was written (``text/frontmatter.py``)."""


class EditFailedError(TeamVaultError):
    """An edit that cannot be applied as given; nothing was written."""


class ResultTooLargeError(EditFailedError):
    """A change whose result would be larger than a note may be; refused from its computed size, before the
    new text was built (a replacement that multiplies a note would otherwise fill the memory). Dry runs too."""

    def __init__(self, path: str, what: str, size: int, limit: int) -> None:
        self.path = path
        self.size = size
        self.limit = limit
        super().__init__(
            f"{what} would make {printable(path)} {size:,} bytes ({_mib(size)}), more than the {limit:,} bytes "
            f"({_mib(limit)}) a note may have after a change. Nothing was written, and the new text was not built. "
            "Make the change smaller (fewer matches, a shorter replacement), or split the note."
        )

    def facts(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "limit": self.limit}


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):,.1f} MiB"


class NotAppliedError(TeamVaultError):
    """A write that got no definite answer, and a check right after found the note as it was before."""

    def __init__(self, error: TeamVaultError, state: str) -> None:
        said = str(error)  # its words, then what the retry loop saw and what a handler added
        rest = said[len(worded(error.words)) :]
        check = f" A check right after found {state}: the change was not applied. You can call again."
        super().__init__(*error.words, rest + check)


class NoteBusyError(TeamVaultError):
    """Another call of this process was writing the note for longer than this call could wait; nothing of this
    call was written to it (``tools/note_locks.py``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"{printable(path)} is being written by another call of this server, which did not finish in time for "
            "this one; nothing was written to it. Read the note again and redo your change."
        )

    def facts(self) -> dict[str, Any]:
        return {"path": self.path}


class InternalError(TeamVaultError):
    """Something in teamvault-mcp itself stopped the call: a bug, or data nested deeper than it can process.

    It may have struck after a write request was sent.
    """


class OverdueError(TeamVaultError):
    """A tool call's work was still running when its budget was all but spent: answered without it."""

    def __init__(self, tool: str, budget: float) -> None:
        super().__init__(
            f"Out of time: {tool} was still working when this call's {budget:g} s budget ran out (a "
            "note too large or too complex for it, or a very slow server), so it was stopped and this answer sent "
            "without its result. Ask for less (a section, a line range, fewer notes), or try again."
        )


class NoWorkerError(TeamVaultError):
    """Every call slot stayed taken for the whole budget (calls whose work ran past their own); nothing was sent."""

    def __init__(self, slots: int, budget: float) -> None:
        super().__init__(
            f"Out of time: all {slots} call slots of this server stayed busy with other calls for this call's whole "
            f"{budget:g} s budget, so it never started. Nothing was sent; try again."
        )


class CallCancelledError(BaseException):
    """The host cancelled the tool call (or the runner, at the end of its budget); no further request is made.

    Not a :class:`TeamVaultError`: nothing failed at the vault. Like ``asyncio.CancelledError`` it derives from
    ``BaseException``, so neither ``except TeamVaultError`` (a failure handled on the spot) nor ``except
    Exception`` (a bug logged) can swallow it: it reaches the runner, which answers it, and the few places that
    clean up after it (a sync requeues its job, the warm-up says it stopped) catch it by name.
    """

    #: What the outcome table and :func:`failure_text` read of a failure: a cancel has no attempts of its own
    #: (the retry loop raises it instead of giving up), no notes, no server's ``Retry-After``.
    attempts: Attempts | None = None
    notes: tuple[str, ...] = ()
    retry_after: float | None = None

    def __init__(self) -> None:
        super().__init__("The call was cancelled.")

    @property
    def words(self) -> Words:
        return (str(self.args[0]),)

    def facts(self) -> dict[str, Any]:
        return {}


#: What ends a tool call without its result: a failure of our tree, or the host's cancel.
CallStop = TeamVaultError | CallCancelledError
