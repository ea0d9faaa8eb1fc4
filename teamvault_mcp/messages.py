"""The words of failures: what an error answer means, the tools a message names, how texts quote.

:data:`STATUS_MEANINGS` says in English what each error answer of the server means (status, envelope code,
what the path names, the method) and what to do next; :class:`~teamvault_mcp.errors.HTTPStatusError` reads
it, after :func:`not_team_vault`, the one rule that tells an answer no Team Vault server gives (``check``
asks it too). A message that sends the agent to a tool says so as data, a :class:`Suggest`, worded against the tools
the server registered where a failure becomes an answer (``errors.for_tools``): never a tool it lacks.
:func:`printable`, :func:`short_hash` and :func:`server_said` are how every message shows what it quotes.
The error tree itself, and the one function that puts a failure's message together, are in ``errors.py``;
nothing here raises or catches.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

BODY_EXCERPT_CHARS = 400


# -- words that name tools ------------------------------------------------------------------------


@dataclass(frozen=True)
class Suggest:
    """Words of a message that send the agent to tools: ``text`` when all of ``tools`` are registered, else
    ``instead``: the same advice without them, fewer tools (another :class:`Suggest`), or nothing.
    ``tools.spec.See`` does this for descriptions."""

    tools: tuple[str, ...]
    text: str
    instead: str | Suggest = ""

    def __str__(self) -> str:
        return self.text

    def for_tools(self, offered: Collection[str] | None) -> str:
        """The words for a server that registered ``offered`` (None: every tool)."""
        if offered is None or set(self.tools) <= set(offered):
            return self.text
        return self.instead if isinstance(self.instead, str) else self.instead.for_tools(offered)


#: A message in parts: plain words, and the words that name tools.
Words = tuple[str | Suggest, ...]


def worded(words: Words, offered: Collection[str] | None = None) -> str:
    """The message ``words`` make for a server that registered ``offered`` (None: every tool)."""
    return "".join(word if isinstance(word, str) else word.for_tools(offered) for word in words)


# -- what an error answer means -------------------------------------------------------------------


#: The methods that change something on the server.
WRITES = ("POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class StatusMeaning:
    """One row of :data:`STATUS_MEANINGS`. ``None`` matches anything; ``status`` may be a range.

    ``target`` is what the API path names (see :func:`target_of`), ``methods`` the request
    methods the row is for (``PATCH`` on a file is a move). ``said`` says what happened and
    what to do next; the tools it names, as :class:`Suggest` words.
    """

    status: int | range
    said: str | Words
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

    @property
    def words(self) -> Words:
        return (self.said,) if isinstance(self.said, str) else self.said

    @property
    def text(self) -> str:
        """What it says with every tool registered."""
        return worded(self.words)


_BUG = "This is a bug in teamvault-mcp: nothing was changed; please report it with this message."
_NOT_TEAM_VAULT = (
    "there is no Team Vault API at this address. TEAM_VAULT_URL must be the address of the Team Vault web app, "
    "without /api (e.g. https://vault.example.com); run `teamvault-mcp check` to diagnose it."
)

_SEE_LIST_NOTES = Suggest(("list_notes",), " Call list_notes to see what is there now.")

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
        (
            "the key's user is not allowed to read this. Ask a project owner for access",
            Suggest(("list_projects",), "; list_projects shows the projects this key can use.", "."),
        ),
    ),
    StatusMeaning(
        404,
        (
            "the server has a record of this note, but its content is missing from the server's storage: a "
            "problem on the server. Tell the vault's administrator",
            Suggest(("list_note_versions",), "; list_note_versions may still give an earlier version.", "."),
        ),
        code="file_missing_on_disk",
    ),
    StatusMeaning(
        404,
        (
            "no such project, or the key's user is not a member of it. ",
            Suggest(
                ("list_projects",),
                "Call list_projects to see the projects this key can use, and pass one as projectId.",
                "Pass a project this key can use as projectId.",
            ),
        ),
        target="project",
    ),
    StatusMeaning(
        404,
        (
            "the note is no longer there: someone deleted or moved it after it was looked up. Nothing was changed.",
            _SEE_LIST_NOTES,
        ),
        target="file",
        methods=WRITES,
    ),
    StatusMeaning(
        404,
        ("the note is no longer there: someone deleted or moved it after it was looked up.", _SEE_LIST_NOTES),
        target="file",
    ),
    StatusMeaning(
        404,
        (
            "that version of the note does not exist (any more).",
            Suggest(("list_note_versions",), " Call list_note_versions to see the versions there are."),
        ),
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
        (
            "a note was created at {path} meanwhile. Nothing was written; read it, then replace it with ",
            Suggest(("write_note",), "write_note(mode='update')", "an update"),
            " or choose another path.",
        ),
        code="path_exists",
        target="project",
        methods=("POST",),
    ),
    StatusMeaning(
        409,
        (
            "no note can be created at {path}: a folder of that name holds notes, or a folder on the way to it "
            "is a note. Nothing was written; choose another path",
            Suggest(("list_notes",), " (list_notes shows what is there)"),
            ".",
        ),
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


#: What a 404 means when :func:`not_team_vault` says that no Team Vault server gave it.
NOT_TEAM_VAULT = StatusMeaning(404, _NOT_TEAM_VAULT)


def not_team_vault(status: int, code: str | None, api_path: str) -> bool:
    """Whether an error answer shows that there is no Team Vault API at the address: the one rule, for ``check``
    and for every tool call.

    A 404 on the account or the project list, which every Team Vault server has; or a 404 on a project's files
    without the ``code`` of Team Vault's error envelope, which each of its own 404s carries (teamvault-api.md
    §1.2, §1.4): a web server's page, another application's JSON. Routes that older servers lack (folder
    archives, versions) answer such a 404 from a real Team Vault, so they are left out.
    """
    if status != 404:
        return False
    target = target_of(api_path)
    if target in ("account", "projects"):
        return True
    parts = api_path.split("?", 1)[0].strip("/").split("/")
    return code is None and target in ("project", "file") and parts[3:4] == ["files"]


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


def tls_refusal(address: str, verify_message: str | None, reason: str, *, trust: str, url: str) -> tuple[str, str]:
    """What a TLS handshake that no retry can change says, and how to fix it: (what happened, what to do).

    ``verify_message`` is OpenSSL's reason for not accepting the certificate of ``address`` (``self-signed
    certificate``, ``Hostname mismatch, …``); None when the other side does not speak TLS at all (``reason``,
    OpenSSL's code, says how that showed). ``trust`` names the variable of the CA file this client reads,
    ``url`` the setting that holds the address.
    """
    if verify_message is None:
        return (
            f"TLS: {address} does not speak TLS ({reason.lower().replace('_', ' ')}): most likely the server there "
            "answers plain HTTP",
            f"use the server's https address in {url}, or http:// if it serves plain HTTP on purpose (on this "
            "machine, say)",
        )
    said = f"TLS: the certificate of {address} was not accepted: {verify_message.rstrip('.')}"
    if "mismatch" in verify_message:
        return said, f"{url} must name a host the certificate is made out to, or the server needs a certificate for it"
    if "expired" in verify_message or "not yet valid" in verify_message:
        return said, "the server's certificate must be renewed (or this machine's clock is wrong)"
    return said, (
        f"if it is the right server, trust its certificate: set {trust} to the PEM file of the CA that signed it "
        "(for a self-signed certificate, that certificate itself)"
    )


class Named(dict[str, str]):
    """What a meaning's text may name; a name the request did not give reads as "that path"."""

    def __missing__(self, key: str) -> str:
        return "that path"


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
