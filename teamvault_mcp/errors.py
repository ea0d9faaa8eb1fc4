"""The error tree of teamvault-mcp, and the hint for writes of unknown outcome.

Every failure the package reports is one of these. ``http.py`` and ``client.py``
turn ``requests``/``urllib3`` failures and HTTP answers into them; ``server.py``
turns them into tool results. Nothing else translates errors.

    TeamVaultError                  base; ``retryable`` and ``uncertain`` flags
    ├── ConfigError                 bad environment (exit code 1 at start-up)
    ├── ToolInputError              a bad tool argument; nothing was sent
    │   ├── InvalidPathError        a path the server would refuse (names the rule)
    │   ├── WriteScopeError         a write outside TEAM_VAULT_WRITE_PREFIXES
    │   └── NoProjectError          no ``projectId`` and no default project
    ├── NoteNotFoundError           ``Note not found: <path>``
    ├── SectionNotFoundError        no heading at that tocPath; names the headings that exist
    ├── NotTextError                ``Not a text file: <path> (<mimeType>).``
    ├── HTTPStatusError             the server answered with an error status
    │   ├── KeyInUseError           409 ``idempotency_key_in_use``: retried until the budget ends
    │   └── PreconditionFailedError 412: the note no longer has the hash ``If-Match`` named
    ├── UnexpectedAnswerError       a 2xx answer we cannot read (not JSON, wrong shape)
    ├── NetworkError                no answer: DNS, connect, reset, broken body
    │   ├── StaleConnectionError    a pooled connection the server had closed: sent again at once, uncounted
    │   └── AttemptTimeoutError     no complete answer within the attempt's limit
    ├── ConflictError               ``expectedHash`` differs from the note's current hash
    ├── ChangedMeanwhileError       a colleague's write landed during ours; theirs is current again
    ├── EditFailedError             an edit that does not apply (not found, ambiguous); nothing written
    ├── NotAppliedError             an unanswered write that a check found not applied
    ├── OutOfTimeError              the call's budget is too short to start a request
    └── CallCancelledError          the host cancelled the call

``retryable``: the retry loop may try the request again (spec §5.3).
``uncertain``: when this error ends a *write*, the change may or may not have been
applied (spec §5.7), so the message gets :data:`UNCERTAIN_WRITE_HINT`.
``pending``: an attempt may still be running on the server (it timed out on our side,
its key was in use, or a gateway timed out), so even a note found unchanged now may
change later.
"""

from __future__ import annotations

UNCERTAIN_WRITE_HINT = (
    "The change may or may not have been applied. "
    "Check the current state with read_note or list_notes before calling again."
)

#: Statuses that mean "not processed, try again later" (spec §5.3).
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})

BODY_EXCERPT_CHARS = 400


class TeamVaultError(Exception):
    """Base of every error teamvault-mcp reports."""

    retryable = False
    uncertain = False
    pending = False
    #: Seconds the server asked us to wait (``Retry-After``), when it did.
    retry_after: float | None = None

    def extend(self, note: str) -> None:
        """Append ``note`` to the message (the retry loop says how many attempts it made)."""
        self.args = (f"{self} {note}",)


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
    """A write tool named a note outside ``TEAM_VAULT_WRITE_PREFIXES``; no request was sent."""

    def __init__(self, tool: str, argument: str, path: str, prefixes: tuple[str, ...]) -> None:
        allowed = ", ".join(prefixes)
        super().__init__(
            f"{tool} refused: {argument} {printable(path)!r} is outside the folders this server may write to "
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


class SectionNotFoundError(TeamVaultError):
    """No heading ``missing`` under ``found`` in the note; ``available`` are the headings there."""

    def __init__(
        self, path: str, found: tuple[str, ...], missing: str, available: list[str], top_level: list[str]
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
        super().__init__(f"{text} Call note_outline to see the structure.")


class NotTextError(TeamVaultError):
    def __init__(self, path: str, mime_type: str) -> None:
        super().__init__(f"Not a text file: {printable(path)} ({mime_type}).")


class HTTPStatusError(TeamVaultError):
    """The server answered ``status``; ``code`` is the error envelope's code, if any."""

    def __init__(
        self,
        method: str,
        api_path: str,
        status: int,
        body: str,
        *,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.method = method
        self.api_path = api_path
        self.status = status
        self.code = code
        self.retry_after = retry_after
        self.retryable = status in RETRYABLE_STATUSES
        # 429 means "refused, not processed"; a 5xx may come after the work was done.
        self.uncertain = status >= 500
        excerpt = body.strip()[:BODY_EXCERPT_CHARS]
        text = f"{method} {api_path} → HTTP {status}"
        super().__init__(f"{text}: {excerpt}" if excerpt else text)


class KeyInUseError(HTTPStatusError):
    """An earlier attempt with the same Idempotency-Key is still being applied."""

    def __init__(self, method: str, api_path: str, body: str, *, retry_after: float | None) -> None:
        super().__init__(method, api_path, 409, body, code="idempotency_key_in_use", retry_after=retry_after)
        self.uncertain = True  # the first attempt is being applied right now


class PreconditionFailedError(HTTPStatusError):
    """412: a conditional write found the note at another content hash (``current_hash``); nothing changed."""

    def __init__(self, method: str, api_path: str, body: str, *, current_hash: str | None) -> None:
        super().__init__(method, api_path, 412, body, code="precondition_failed")
        self.current_hash = current_hash


class UnexpectedAnswerError(TeamVaultError):
    """A success status whose body is not what the API contract promises."""

    uncertain = True  # a write may have been applied even though we cannot read the answer

    def __init__(self, method: str, api_path: str, problem: str, body: str = "") -> None:
        excerpt = body.strip()[:BODY_EXCERPT_CHARS]
        text = f"{method} {api_path} → unexpected answer ({problem})"
        super().__init__(f"{text}: {excerpt}" if excerpt else text)


class NetworkError(TeamVaultError):
    """No answer from the server. ``sent=False`` when the connection never opened: nothing reached it."""

    retryable = True

    def __init__(self, method: str, api_path: str, detail: str, *, sent: bool = True) -> None:
        self.method = method
        self.api_path = api_path
        self.uncertain = sent
        super().__init__(f"Network error on {method} {api_path}: {detail}")


class StaleConnectionError(NetworkError):
    """A pooled keep-alive connection failed before any answer: most likely the server had closed it.

    The retry loop sends the request again at once, without counting an attempt. The
    request may still have reached the server (a server that applies a write and then
    drops the connection looks the same), so it stays uncertain like any network error.
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
            text = f"Conflict: {printable(path)} no longer exists (you expected contentHash {expected}). "
            text += "Nothing was written."
        else:
            text = (
                f"Conflict: {printable(path)} has changed since you read it: you expected contentHash {expected}, "
                f"it is now {current}. Nothing was written."
            )
            if diff:
                text += f" What changed since the version you saw:\n{diff}\n"
            text += " Read the note again, then redo your change on its current text."
        super().__init__(text)
        self.current = current


class ChangedMeanwhileError(TeamVaultError):
    """A colleague's write landed between our read and our write, and ours cannot stand on it.

    Raised only after their text was made current again (or when the message says
    exactly where it is): nothing of theirs is lost, and ours stays in the history.
    """


class EditFailedError(TeamVaultError):
    """An edit that cannot be applied as given; nothing was written."""


class NotAppliedError(TeamVaultError):
    """A write that got no definite answer, and a check right after found the note as it was before."""

    def __init__(self, error: TeamVaultError, state: str) -> None:
        super().__init__(f"{error} A check right after found {state}: the change was not applied. You can call again.")


class CallCancelledError(TeamVaultError):
    """The host cancelled the tool call; no further request is made."""

    uncertain = True

    def __init__(self) -> None:
        super().__init__("The call was cancelled.")


def write_failure_text(error: TeamVaultError) -> str:
    """The message of a failed write tool call: the error, plus the hint when uncertain."""
    return f"{error} {UNCERTAIN_WRITE_HINT}" if error.uncertain else str(error)


def printable(text: str) -> str:
    """``text`` with control characters escaped, so a path with NUL or a newline stays readable."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode() for ch in text)
