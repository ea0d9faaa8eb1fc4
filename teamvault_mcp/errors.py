"""The error tree of teamvault-mcp, and the one function that writes a failure's message.

Every failure the package reports is one of these. ``vault/transport.py`` and
``vault/client.py`` turn ``requests``/``urllib3`` failures and HTTP answers into them;
``server/runner.py`` turns them into tool results. Nothing else translates errors.

    TeamVaultError                  base: the facts of one failure, and how the retry loop ended
    ├── ConfigError                 bad environment (exit code 1 at start-up)
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
    │   └── AttemptTimeoutError     no complete answer within the attempt's limit
    ├── ConflictError               ``expectedHash`` differs from the note's current hash
    ├── ChangedMeanwhileError       a colleague's write landed during ours; theirs is current again
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

What an error answer means, in English, is one table next to :class:`HTTPStatusError`:
:data:`STATUS_MEANINGS` (status, envelope code, what the path names, the method). It
makes this module longer than most; it reads better next to the error that uses it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

UNCERTAIN_WRITE_HINT = (
    "The change may or may not have been applied. "
    "Check the current state with read_note or list_notes before calling again."
)

BODY_EXCERPT_CHARS = 400


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


def failure_text(error: CallStop, *, hint: bool = False) -> str:
    """The message of a failure, as the model reads it; the one place it is put together.

    The error's own words, what the retry loop saw (the attempts, an earlier attempt that got
    no answer), what a handler added, and, with ``hint`` (a write request was sent and the
    outcome table says it may have been applied: ``vault.retry.failure``), :data:`UNCERTAIN_WRITE_HINT`.
    """
    parts = [str(error.args[0]) if error.args else ""]
    if error.attempts is not None:
        parts += error.attempts.sentences()
    parts += error.notes
    if hint:
        parts.append(UNCERTAIN_WRITE_HINT)
    return " ".join(parts)


class ConfigError(TeamVaultError):
    """The environment does not describe a usable configuration."""


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
        super().__init__("No projectId given and TEAM_VAULT_PROJECT_ID is not set — call list_projects to find one.")


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
        super().__init__(f"{text} Call note_outline to see the structure.")


class NotTextError(TeamVaultError):
    def __init__(self, path: str, mime_type: str) -> None:
        super().__init__(f"Not a text file: {printable(path)} ({mime_type}).")


# -- what an error answer means -------------------------------------------------------------------


#: The methods that change something on the server.
WRITES = ("POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class StatusMeaning:
    """One row of :data:`STATUS_MEANINGS`. ``None`` matches anything; ``status`` may be a range.

    ``target`` is what the API path names (see :func:`target_of`), ``methods`` the request
    methods the row is for (``PATCH`` on a file is a move). ``text`` says what happened and
    what to do next.
    """

    status: int | range
    text: str
    code: str | None = None
    target: str | None = None
    methods: tuple[str, ...] | None = None

    def matches(self, status: int, code: str | None, target: str | None, method: str) -> bool:
        return (
            (status == self.status if isinstance(self.status, int) else status in self.status)
            and self.code in (None, code)
            and self.target in (None, target)
            and (self.methods is None or method in self.methods)
        )


_BUG = "This is a bug in teamvault-mcp: nothing was changed; please report it with this message."
_NOT_TEAM_VAULT = (
    "there is no Team Vault API at this address. TEAM_VAULT_URL must be the address of the Team Vault web app, "
    "without /api (e.g. https://vault.example.com); run `teamvault-mcp check` to diagnose it."
)

#: Error answers in English, most specific row first: the first row that matches is used. A tool-specific
#: next step is one more row above the general one: a move onto an existing path, say, is
#: ``StatusMeaning(409, "…", code="path_exists", target="file", methods=("PATCH",))``. A text may name what the
#: request was about: ``{path}`` (a create's path), ``{newPath}`` (a move's target), ``{location}`` (a redirect's).
STATUS_MEANINGS: tuple[StatusMeaning, ...] = (
    StatusMeaning(
        range(300, 400),
        "the server redirects this request to {location} instead of answering. Set TEAM_VAULT_URL to the "
        "server's final address; the redirect was not followed, so the API key went nowhere else.",
    ),
    StatusMeaning(
        400,
        "the server refused the path (its rule follows). Nothing was changed; use a path it accepts.",
        code="invalid_path",
    ),
    StatusMeaning(
        400,
        "the note is larger than this server accepts (its MAX_FILE_SIZE setting). Nothing was written; "
        "make the note smaller or split it into several notes.",
        code="file_too_large",
    ),
    *(
        StatusMeaning(400, f"the server found the request malformed. {_BUG}", code=code)
        for code in ("path_required", "file_required", "expected_multipart", "missing_path")
    ),
    StatusMeaning(
        400,
        "the server refused the request as invalid. Nothing was changed; check the arguments. If they are "
        "right, this is a bug in teamvault-mcp: please report it with this message.",
    ),
    StatusMeaning(
        401,
        "the server refused the API key: it is wrong, revoked or expired. The key is set in TEAM_VAULT_API_KEY; "
        "run `teamvault-mcp check` to diagnose it, or create a new key in Team Vault (Settings → API keys).",
    ),
    StatusMeaning(
        403,
        "the key's user may read this project but not write to it (a viewer's role). Nothing was changed. "
        "Ask a project owner for an editor role; or set TEAM_VAULT_READ_ONLY=1 so agents are not offered writes.",
        methods=WRITES,
    ),
    StatusMeaning(
        403,
        "the key's user is not allowed to read this. Ask a project owner for access; list_projects shows the "
        "projects this key can use.",
    ),
    StatusMeaning(
        404,
        "the server has a record of this note, but its content is missing from the server's storage: a problem "
        "on the server. Tell the vault's administrator; list_note_versions may still give an earlier version.",
        code="file_missing_on_disk",
    ),
    StatusMeaning(404, _NOT_TEAM_VAULT, target="account"),
    StatusMeaning(404, _NOT_TEAM_VAULT, target="projects"),
    StatusMeaning(
        404,
        "no such project, or the key's user is not a member of it. Call list_projects to see the projects this "
        "key can use, and pass one as projectId.",
        target="project",
    ),
    StatusMeaning(
        404,
        "the note is no longer there: someone deleted or moved it after it was looked up. Nothing was changed. "
        "Call list_notes to see what is there now.",
        target="file",
        methods=WRITES,
    ),
    StatusMeaning(
        404,
        "the note is no longer there: someone deleted or moved it after it was looked up. Call list_notes to "
        "see what is there now.",
        target="file",
    ),
    StatusMeaning(
        404,
        "that version of the note does not exist (any more). Call list_note_versions to see the versions there are.",
        target="version",
    ),
    StatusMeaning(404, "the server does not know this address. Run `teamvault-mcp check` to diagnose it."),
    StatusMeaning(
        409,
        "another note already holds {newPath} (a deleted note keeps its path too). Nothing was moved; choose "
        "another newPath, or move that note away first.",
        code="path_exists",
        target="file",
        methods=("PATCH",),
    ),
    StatusMeaning(
        409,
        "{newPath} cannot be a note's path: a folder of that name holds notes, or a folder on the way to it is a "
        "note. Nothing was moved; to move the note into that folder, end newPath with '/' (e.g. 'archive/').",
        code="path_blocked",
        target="file",
        methods=("PATCH",),
    ),
    StatusMeaning(
        409,
        "a note was created at {path} meanwhile. Nothing was written; read it, then replace it with "
        "write_note(mode='update') or choose another path.",
        code="path_exists",
        target="project",
        methods=("POST",),
    ),
    StatusMeaning(
        409,
        "no note can be created at {path}: a folder of that name holds notes, or a folder on the way to it is a "
        "note. Nothing was written; choose another path (list_notes shows what is there).",
        code="path_blocked",
        target="project",
        methods=("POST",),
    ),
    StatusMeaning(
        409,
        "a note already exists at that path. Nothing was changed; choose another path, or change that note.",
        code="path_exists",
    ),
    StatusMeaning(
        409,
        "the path is blocked: a folder of that name holds notes, or a folder on the path is a note. Nothing was "
        "changed; choose another path.",
        code="path_blocked",
    ),
    StatusMeaning(
        409,
        "an earlier attempt of this call (with the same Idempotency-Key) is still being applied by the server.",
        code="idempotency_key_in_use",
    ),
    StatusMeaning(
        409,
        "the server refused the change: it conflicts with the note's current state. Nothing was changed; read "
        "the note again, then redo the change.",
    ),
    StatusMeaning(
        413,
        "the request is larger than the server accepts (its proxy's body limit: 50 MB in Team Vault's shipped "
        "Caddy configuration). Nothing was written; make the note smaller.",
    ),
    StatusMeaning(
        422,
        "the server has seen this call's Idempotency-Key with a different request. " + _BUG,
        code="idempotency_key_mismatch",
    ),
    StatusMeaning(
        422,
        "the server could not process the request. Nothing was changed; check the arguments. If they are right, "
        "this is a bug in teamvault-mcp: please report it with this message.",
    ),
    StatusMeaning(
        429,
        "the server is busy and asks clients to slow down (rate limited). Wait a minute, then try again.",
    ),
    StatusMeaning(
        500,
        "the server failed with an internal error (its logs say why). Try again later; if it keeps failing, tell "
        "the vault's administrator.",
    ),
    StatusMeaning(
        502,
        "the server is down or restarting: the proxy in front of it got no answer. Try again in a minute.",
    ),
    StatusMeaning(
        503,
        "the server is unavailable (down, restarting or overloaded). Try again in a minute.",
    ),
    StatusMeaning(
        504,
        "the proxy in front of the server gave up waiting for it (a gateway timeout). Try again in a minute.",
    ),
    StatusMeaning(
        range(500, 600),
        "the server failed. Try again later; if it keeps failing, tell the vault's administrator.",
    ),
    StatusMeaning(range(400, 500), "the server refused the request. Nothing was changed."),
    StatusMeaning(range(0, 1000), "the server gave an answer Team Vault never gives. Run `teamvault-mcp check`."),
)


def meaning_of(status: int, code: str | None, target: str | None, method: str) -> str:
    """The English text of the first row of :data:`STATUS_MEANINGS` that matches this answer."""
    return row_of(status, code, target, method).text


def row_of(status: int, code: str | None, target: str | None, method: str) -> StatusMeaning:
    """The first row of :data:`STATUS_MEANINGS` that matches this answer (the last one matches anything)."""
    for row in STATUS_MEANINGS:
        if row.matches(status, code, target, method):
            return row
    return STATUS_MEANINGS[-1]


def target_of(api_path: str) -> str | None:
    """What an API path names: ``account``, ``projects``, ``project``, ``file``, ``version``, or None."""
    parts = api_path.split("?", 1)[0].strip("/").split("/")
    if parts == ["api", "auth", "me"]:
        return "account"
    if parts[:2] != ["api", "projects"]:
        return None
    if len(parts) == 2:
        return "projects"
    if len(parts) >= 7 and parts[3] == "files" and parts[5] == "versions":
        return "version"
    if len(parts) >= 5 and parts[3] == "files":
        return "file"
    return "project"


def server_said(detail: str) -> str:
    """`` Server said: "…"`` for the server's own words (whitespace collapsed, control characters escaped,
    at most 400 characters), or nothing when it said nothing."""
    words = printable(" ".join(detail.split()))
    if not words:
        return ""
    if len(words) > BODY_EXCERPT_CHARS:
        words = words[:BODY_EXCERPT_CHARS] + "…"
    return f' Server said: "{words}"'


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
        row = row_of(status, code, target_of(api_path), method)
        named = _Named({key: printable(value) for key, value in (about or {}).items()}, location=location or "?")
        shown_code = f" ({printable(code)[:80]})" if code else ""
        meaning = row.text.format_map(named)
        if about and row.methods is not None:
            # A row written for this very request says all the agent needs, naming its paths: the API path's
            # internal ids and the server's own words (mostly Russian) would only be noise.
            super().__init__(f"HTTP {status}{shown_code}: {meaning}")
            return
        text = f"{method} {api_path} → HTTP {status}{shown_code}: {meaning}"
        super().__init__(text + server_said(detail))

    def facts(self) -> dict[str, Any]:
        return {"httpStatus": self.status, **({"code": self.code} if self.code else {})}


class _Named(dict[str, str]):
    """What a meaning's text may name; a name the request did not give reads as "that path"."""

    def __missing__(self, key: str) -> str:
        return "that path"


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
        super().__init__(f"{error} A check right after found {state}: the change was not applied. You can call again.")


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

    def facts(self) -> dict[str, Any]:
        return {}


#: What ends a tool call without its result: a failure of our tree, or the host's cancel.
CallStop = TeamVaultError | CallCancelledError


#: Hex digits of a contentHash that texts show; every expectedHash accepts them (or all 64, or any 8 or more).
SHOWN_HASH_DIGITS = 12


def short_hash(content_hash: str | None) -> str:
    """The start of a contentHash as texts show it; structured content keeps all 64 digits."""
    return (content_hash or "")[:SHOWN_HASH_DIGITS]


def printable(text: str) -> str:
    """``text`` with control characters escaped, so a path with NUL or a newline stays readable."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode() for ch in text)
