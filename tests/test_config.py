"""Configuration from the environment (README: Configuration): ``load_config`` and the frozen ``Config``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import pytest

from teamvault_mcp.config import Config, load_config
from teamvault_mcp.errors import ConfigError

URL = "https://vault.example.com"
KEY = "osync_S3cretKeyValue0123456789"
REQUIRED = ("TEAM_VAULT_URL", "TEAM_VAULT_API_KEY")


def env(**overrides: str) -> dict[str, str]:
    """A valid environment with the required variables, plus ``overrides`` (``TEAM_VAULT_`` prefix added)."""
    values = {"TEAM_VAULT_URL": URL, "TEAM_VAULT_API_KEY": KEY}
    values.update({f"TEAM_VAULT_{name}": value for name, value in overrides.items()})
    return values


def config_error(environ: Mapping[str, str]) -> str:
    """The message of the ConfigError that ``environ`` must raise."""
    with pytest.raises(ConfigError) as caught:
        load_config(environ)
    return str(caught.value)


def mentions_value(message: str, raw: str) -> bool:
    """True when ``message`` quotes ``raw`` (as repr, in double quotes, backticks or after ``=``)."""
    return any(form in message for form in (repr(raw), f'"{raw}"', f"`{raw}`", f"={raw}"))


# --- required variables ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "missing"),
    [
        ({"TEAM_VAULT_API_KEY": KEY}, ["TEAM_VAULT_URL"]),
        ({"TEAM_VAULT_URL": URL}, ["TEAM_VAULT_API_KEY"]),
        ({}, ["TEAM_VAULT_URL", "TEAM_VAULT_API_KEY"]),
        ({"TEAM_VAULT_URL": "", "TEAM_VAULT_API_KEY": KEY}, ["TEAM_VAULT_URL"]),
        ({"TEAM_VAULT_URL": URL, "TEAM_VAULT_API_KEY": ""}, ["TEAM_VAULT_API_KEY"]),
        ({"TEAM_VAULT_URL": "", "TEAM_VAULT_API_KEY": ""}, ["TEAM_VAULT_URL", "TEAM_VAULT_API_KEY"]),
    ],
    ids=["url", "key", "both", "url-empty", "key-empty", "both-empty"],
)
def test_missing_required_variables_are_named(environ: dict[str, str], missing: list[str]) -> None:
    message = config_error(environ)
    # The usage part names both variables anyway; the part before it says which are missing.
    head = message.lower().split("usage")[0]
    for name in REQUIRED:
        assert (name.lower() in head) == (name in missing), message


@pytest.mark.parametrize("blank", [" ", "   ", "\t", "\n", " \t\r\n "])
@pytest.mark.parametrize("name", REQUIRED)
def test_whitespace_only_required_variable_counts_as_missing(name: str, blank: str) -> None:
    message = config_error(env() | {name: blank})
    head = message.lower().split("usage")[0]
    assert name.lower() in head
    other = next(n for n in REQUIRED if n != name)
    assert other.lower() not in head


@pytest.mark.parametrize(
    "environ",
    [{}, {"TEAM_VAULT_URL": URL}, {"TEAM_VAULT_API_KEY": KEY}, {"TEAM_VAULT_URL": " ", "TEAM_VAULT_API_KEY": "\n"}],
    ids=["both", "key", "url", "blank"],
)
def test_missing_required_variables_give_a_one_line_usage_message(environ: dict[str, str]) -> None:
    message = config_error(environ)
    assert "\n" not in message
    assert "\r" not in message
    assert "usage" in message.lower()
    assert "TEAM_VAULT_URL" in message
    assert "TEAM_VAULT_API_KEY" in message


def test_load_config_reads_only_the_given_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_VAULT_URL", URL)
    monkeypatch.setenv("TEAM_VAULT_API_KEY", KEY)
    monkeypatch.setenv("TEAM_VAULT_READ_ONLY", "1")
    with pytest.raises(ConfigError):
        load_config({})
    assert load_config(env()).read_only is False


def test_defaults_apply_when_only_required_variables_are_set() -> None:
    config = load_config({**env(), "HOME": "/home/someone"})
    assert config == Config(
        base_url=URL,
        api_key=KEY,
        project_id=None,
        read_only=False,
        call_budget=45.0,
        attempt_timeout=20.0,
        log_level="warning",
        cache_dir=Path("/home/someone/.cache/teamvault-mcp"),
        cache_max_bytes=512 * 1024 * 1024,
    )


# --- TEAM_VAULT_URL -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://vault.example.com", "https://vault.example.com"),
        ("https://vault.example.com/", "https://vault.example.com"),
        ("https://vault.example.com///", "https://vault.example.com"),
        ("  https://vault.example.com/  ", "https://vault.example.com"),
        ("\thttps://vault.example.com\n", "https://vault.example.com"),
        ("http://localhost:8080/", "http://localhost:8080"),
        ("http://127.0.0.1:3000", "http://127.0.0.1:3000"),
    ],
)
def test_url_trailing_slashes_and_surrounding_whitespace_are_ignored(raw: str, expected: str) -> None:
    assert load_config(env(URL=raw)).base_url == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://vault.example.com/teamvault", "https://vault.example.com/teamvault"),
        ("https://vault.example.com/teamvault/", "https://vault.example.com/teamvault"),
        ("https://vault.example.com/a/b//", "https://vault.example.com/a/b"),
    ],
)
def test_url_path_prefix_is_kept(raw: str, expected: str) -> None:
    assert load_config(env(URL=raw)).base_url == expected


@pytest.mark.parametrize(
    "raw",
    [
        "ftp://vault.example.com",
        "file:///etc/passwd",
        "ws://vault.example.com",
        "vault.example.com",
        "//vault.example.com",
        "https:",
        "https://",
        "https:///",
        "https:///teamvault",
        "http://:8080",
        "https://vault.example.com:notaport",
        "https://vault.example.com?x=1",
        "https://vault.example.com/?x=1",
        "https://vault.example.com/teamvault?project=p1",
        "https://vault.example.com/#top",
        "https://user:password@vault.example.com",
        "https://user:password@vault.example.com/teamvault/",
    ],
)
def test_url_must_be_plain_http_or_https_with_a_host(raw: str) -> None:
    message = config_error(env(URL=raw))
    assert "TEAM_VAULT_URL" in message


@pytest.mark.parametrize(
    "raw",
    [
        "https://user:{key}@vault.example.com",
        "https://user:{key}@vault.example.com/?x=1",
        "https://user:{key}@vault.example.com/#top",
        "ftp://user:{key}@vault.example.com",
        "user:{key}@vault.example.com",
    ],
    ids=["credentials", "credentials-and-query", "credentials-and-fragment", "credentials-and-ftp", "no-scheme"],
)
def test_url_with_credentials_is_refused_without_echoing_the_password(raw: str) -> None:
    message = config_error(env(URL=raw.format(key=KEY)))
    assert "TEAM_VAULT_URL" in message
    assert KEY not in message


@pytest.mark.parametrize(
    "raw",
    ["https://vault.example.com/?api_key={key}", "https://vault.example.com/#{key}"],
    ids=["query", "fragment"],
)
def test_url_carrying_the_api_key_is_refused_without_echoing_it(raw: str) -> None:
    message = config_error(env(URL=raw.format(key=KEY)))
    assert "TEAM_VAULT_URL" in message
    assert KEY not in message


# --- TEAM_VAULT_READ_ONLY -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", ["1", "true", "TRUE", "True", "tRuE", "yes", "YES", "Yes", "on", "ON", "On", " yes ", "true\n"]
)
def test_read_only_accepts_yes_words_in_any_case(raw: str) -> None:
    assert load_config(env(READ_ONLY=raw)).read_only is True


@pytest.mark.parametrize("raw", ["0", "false", "FALSE", "False", "no", "NO", "No", "off", "OFF", "Off", "", "  "])
def test_read_only_accepts_no_words_in_any_case_and_empty(raw: str) -> None:
    assert load_config(env(READ_ONLY=raw)).read_only is False


def test_read_only_is_off_when_unset() -> None:
    assert load_config(env()).read_only is False


@pytest.mark.parametrize("raw", ["ture", "2", "-1", "y", "n", "enable", "yes please", "10", "truee", "nope"])
def test_read_only_refuses_other_values_naming_variable_and_value(raw: str) -> None:
    message = config_error(env(READ_ONLY=raw))
    assert "TEAM_VAULT_READ_ONLY" in message
    assert mentions_value(message, raw), message


# --- TEAM_VAULT_CALL_BUDGET and TEAM_VAULT_ATTEMPT_TIMEOUT ---------------------------------------------

SECONDS = [("CALL_BUDGET", "call_budget", 45.0), ("ATTEMPT_TIMEOUT", "attempt_timeout", 20.0)]


@pytest.mark.parametrize(("name", "attr", "default"), SECONDS)
@pytest.mark.parametrize("raw", [None, "", "   "])
def test_seconds_default_when_unset_or_blank(name: str, attr: str, default: float, raw: str | None) -> None:
    environ = env() if raw is None else env(**{name: raw})
    assert getattr(load_config(environ), attr) == default


@pytest.mark.parametrize(("name", "attr", "default"), SECONDS)
@pytest.mark.parametrize(
    ("raw", "expected"),
    [("30", 30.0), ("12.5", 12.5), ("2.75", 2.75), (" 30 ", 30.0), ("100.0", 100.0), ("3600", 3600.0)],
)
def test_seconds_accept_whole_and_decimal_numbers(
    name: str, attr: str, default: float, raw: str, expected: float
) -> None:
    value = getattr(load_config(env(**{name: raw})), attr)
    assert value == expected
    assert isinstance(value, float)


@pytest.mark.parametrize(("name", "attr", "default"), SECONDS)
@pytest.mark.parametrize(
    "raw",
    [
        "abc",
        "30s",
        "1,5",
        "-5",
        "-0.5",
        "-45",
        "0",
        "0.0",
        "-0",
        "nan",
        "NaN",
        "inf",
        "Infinity",
        "-inf",
        "3600.5",
        "3601",
        "1e9",
    ],
)
def test_seconds_refuse_malformed_values_naming_variable_and_value(
    name: str, attr: str, default: float, raw: str
) -> None:
    message = config_error(env(**{name: raw}))
    assert f"TEAM_VAULT_{name}" in message
    assert mentions_value(message, raw), message


@pytest.mark.parametrize("raw", ["2", "2.0", "1.5", "1", "0.5"])
def test_call_budget_must_be_more_than_two_seconds(raw: str) -> None:
    message = config_error(env(CALL_BUDGET=raw))
    assert "TEAM_VAULT_CALL_BUDGET" in message
    assert mentions_value(message, raw), message


@pytest.mark.parametrize(("raw", "expected"), [("2.01", 2.01), ("2.5", 2.5), ("3", 3.0)])
def test_call_budget_just_above_two_seconds_is_accepted(raw: str, expected: float) -> None:
    assert load_config(env(CALL_BUDGET=raw)).call_budget == expected


@pytest.mark.parametrize(("raw", "expected"), [("0.5", 0.5), ("1", 1.0), ("2", 2.0)])
def test_attempt_timeout_may_be_short(raw: str, expected: float) -> None:
    assert load_config(env(ATTEMPT_TIMEOUT=raw)).attempt_timeout == expected


# --- TEAM_VAULT_LOG_LEVEL -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("debug", "debug"),
        ("DEBUG", "debug"),
        ("info", "info"),
        ("Info", "info"),
        ("warning", "warning"),
        ("WARNING", "warning"),
        ("error", "error"),
        ("ErRoR", "error"),
        (" info ", "info"),
    ],
)
def test_log_level_accepts_the_four_levels_in_any_case(raw: str, expected: str) -> None:
    assert load_config(env(LOG_LEVEL=raw)).log_level == expected


@pytest.mark.parametrize("raw", [None, "", "  "])
def test_log_level_defaults_to_warning(raw: str | None) -> None:
    environ = env() if raw is None else env(LOG_LEVEL=raw)
    assert load_config(environ).log_level == "warning"


@pytest.mark.parametrize("raw", ["trace", "warn", "critical", "fatal", "verbose", "10", "infos", "debug info"])
def test_log_level_refuses_other_values_naming_variable_and_value(raw: str) -> None:
    message = config_error(env(LOG_LEVEL=raw))
    assert "TEAM_VAULT_LOG_LEVEL" in message
    assert mentions_value(message, raw), message


# --- TEAM_VAULT_PROJECT_ID ------------------------------------------------------------------------


def test_project_id_is_optional() -> None:
    assert load_config(env()).project_id is None


@pytest.mark.parametrize("raw", ["proj1", "cm3x9a7b00001", "00000000-0000-4000-8000-000000000000"])
def test_project_id_is_kept_when_set(raw: str) -> None:
    assert load_config(env(PROJECT_ID=raw)).project_id == raw


@pytest.mark.parametrize("raw", ["", " ", "\t", " \n "])
def test_project_id_whitespace_only_means_unset(raw: str) -> None:
    assert load_config(env(PROJECT_ID=raw)).project_id is None


# --- several problems at once ---------------------------------------------------------------------


def test_several_bad_values_are_all_reported_one_per_line() -> None:
    bad = env(
        URL="ftp://vault.example.com",
        READ_ONLY="ture",
        CALL_BUDGET="abc",
        ATTEMPT_TIMEOUT="-3",
        LOG_LEVEL="trace",
    )
    message = config_error(bad)
    lines = message.splitlines()
    names = ["URL", "READ_ONLY", "CALL_BUDGET", "ATTEMPT_TIMEOUT", "LOG_LEVEL"]
    assert len(lines) == len(names), message
    for name in names:
        assert sum(f"TEAM_VAULT_{name}" in line for line in lines) == 1, message
    for raw in ("ture", "abc", "-3", "trace"):
        assert mentions_value(message, raw), message


def test_malformed_key_is_reported_alongside_other_problems() -> None:
    message = config_error(env(API_KEY="osync_LEFTPART RIGHTPART", CALL_BUDGET="0", LOG_LEVEL="loud"))
    lines = message.splitlines()
    assert len(lines) == 3, message
    assert any("TEAM_VAULT_API_KEY" in line for line in lines)
    assert any("TEAM_VAULT_CALL_BUDGET" in line for line in lines)
    assert any("TEAM_VAULT_LOG_LEVEL" in line for line in lines)


@pytest.mark.parametrize("raw", ["yes\nno", "maybe\r\nTEAM_VAULT_FAKE=1", "a\x00b"])
def test_bad_value_with_a_newline_stays_on_one_line(raw: str) -> None:
    message = config_error(env(READ_ONLY=raw, LOG_LEVEL=raw))
    lines = message.splitlines()
    assert len(lines) == 2, message
    assert "TEAM_VAULT_READ_ONLY" in lines[0] or "TEAM_VAULT_READ_ONLY" in lines[1]
    assert "TEAM_VAULT_LOG_LEVEL" in lines[0] or "TEAM_VAULT_LOG_LEVEL" in lines[1]


# --- the API key ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(f"  {KEY}  ", KEY), (f"\t{KEY}\n", KEY), (f"{KEY}\r\n", KEY), (KEY, KEY)],
)
def test_api_key_surrounding_whitespace_is_stripped(raw: str, expected: str) -> None:
    assert load_config(env(API_KEY=raw)).api_key == expected


def test_api_key_not_in_repr_or_str_of_config() -> None:
    config = load_config(env(PROJECT_ID="proj1", READ_ONLY="yes"))
    for text in (repr(config), str(config), f"{config}", f"{config!r}"):
        assert KEY not in text
        assert "vault.example.com" in text  # the rest is still shown


@pytest.mark.parametrize(
    "overrides",
    [
        {"URL": "ftp://vault.example.com"},
        {"URL": "https://vault.example.com/?x=1"},
        {"URL": "https://user:pw@vault.example.com"},
        {"READ_ONLY": "ture"},
        {"CALL_BUDGET": "abc"},
        {"ATTEMPT_TIMEOUT": "inf"},
        {"LOG_LEVEL": "trace"},
        {"URL": "", "READ_ONLY": "ture"},
        {"URL": "ftp://x", "READ_ONLY": "2", "CALL_BUDGET": "0", "ATTEMPT_TIMEOUT": "nan", "LOG_LEVEL": "x"},
    ],
)
def test_api_key_never_in_config_error(overrides: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(env(**overrides))
    error = caught.value
    assert KEY not in str(error)
    assert KEY not in repr(error)
    assert all(KEY not in str(arg) for arg in error.args)


@pytest.mark.parametrize(
    ("raw", "parts"),
    [
        ("osync_LEFTPART RIGHTPART", ["osync_LEFTPART", "RIGHTPART"]),
        ("osync_LEFTPART\nRIGHTPART", ["osync_LEFTPART", "RIGHTPART"]),
        ("osync_LEFTPART\tRIGHTPART", ["osync_LEFTPART", "RIGHTPART"]),
        ("osync_LEFTPART\r\nRIGHTPART", ["osync_LEFTPART", "RIGHTPART"]),
        ("osync_LEFTPART\x00RIGHTPART", ["osync_LEFTPART", "RIGHTPART"]),
        ("osync_LEFTPART\x1bRIGHTPART", ["osync_LEFTPART", "RIGHTPART"]),
        ("  osync_LEFTPART MIDDLEPART RIGHTPART  ", ["osync_LEFTPART", "MIDDLEPART", "RIGHTPART"]),
    ],
)
def test_malformed_api_key_is_refused_without_echoing_it(raw: str, parts: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(env(API_KEY=raw))
    for text in (str(caught.value), repr(caught.value)):
        assert "TEAM_VAULT_API_KEY" in text
        for part in parts:
            assert part not in text, text


def test_malformed_api_key_is_refused_without_echoing_it_when_url_is_bad_too() -> None:
    message = config_error(env(URL="ftp://vault.example.com", API_KEY="osync_LEFTPART\nRIGHTPART"))
    assert "TEAM_VAULT_URL" in message
    assert "TEAM_VAULT_API_KEY" in message
    assert "osync_LEFTPART" not in message
    assert "RIGHTPART" not in message


# --- Config is frozen -----------------------------------------------------------------------------


@pytest.mark.parametrize("attr", [f.name for f in dataclasses.fields(Config)])
def test_config_is_frozen(attr: str) -> None:
    config = load_config(env())
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(config, attr, "changed")


# --- secrets in the wrong place -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["CALL_BUDGET", "ATTEMPT_TIMEOUT", "READ_ONLY", "LOG_LEVEL"])
def test_a_key_pasted_into_another_variable_is_not_echoed(name: str) -> None:
    message = config_error(env(**{name: KEY}))
    assert f"TEAM_VAULT_{name}" in message
    assert KEY not in message


@pytest.mark.parametrize("raw", ["https://vault.exa\nmple.com/x", "https://vault example.com", "https://v.com/a b"])
def test_url_with_whitespace_inside_is_refused(raw: str) -> None:
    assert "TEAM_VAULT_URL" in config_error(env(URL=raw))


# --- the content cache ----------------------------------------------------------------------------


def test_the_cache_follows_xdg_cache_home() -> None:
    config = load_config({**env(), "XDG_CACHE_HOME": "/var/cache/me"})
    assert config.cache_dir == Path("/var/cache/me/teamvault-mcp")


@pytest.mark.parametrize("raw", ["off", "OFF", " Off "])
def test_the_cache_can_be_turned_off(raw: str) -> None:
    assert load_config(env(CACHE_DIR=raw)).cache_dir is None


def test_the_cache_directory_can_be_chosen() -> None:
    assert load_config(env(CACHE_DIR="/tmp/tv-cache")).cache_dir == Path("/tmp/tv-cache")


def test_a_relative_cache_directory_is_refused() -> None:
    assert "TEAM_VAULT_CACHE_DIR='cache'" in config_error(env(CACHE_DIR="cache"))


@pytest.mark.parametrize(("raw", "expected"), [("64", 64 * 1024 * 1024), ("0.5", 512 * 1024)])
def test_the_cache_size_is_in_megabytes(raw: str, expected: int) -> None:
    assert load_config(env(CACHE_MAX_MB=raw)).cache_max_bytes == expected


@pytest.mark.parametrize("raw", ["0", "-5", "lots"])
def test_a_bad_cache_size_is_refused(raw: str) -> None:
    assert f"TEAM_VAULT_CACHE_MAX_MB={raw!r}" in config_error(env(CACHE_MAX_MB=raw))


# --- audit log and write scopes ---------------------------------------------------------------------


def test_audit_log_must_be_an_absolute_path(tmp_path: Path) -> None:
    assert load_config(env(AUDIT_LOG=str(tmp_path / "audit.jsonl"))).audit_log == tmp_path / "audit.jsonl"
    assert load_config(env()).audit_log is None
    message = config_error(env(AUDIT_LOG="audit.jsonl"))
    assert "TEAM_VAULT_AUDIT_LOG='audit.jsonl' must be an absolute path." in message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("agents/,inbox/", ("agents/", "inbox/")),
        (" agents , inbox/drafts ", ("agents/", "inbox/drafts/")),
        ("./agents//", ("agents/",)),
        ("agents/,agents", ("agents/",)),
        ("", ()),
    ],
)
def test_write_prefixes_are_folders_in_stored_spelling(raw: str, expected: tuple[str, ...]) -> None:
    assert load_config(env(WRITE_PREFIXES=raw)).write_prefixes == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("../agents", "'../agents' is not a folder a note could be in (Parent traversal is not allowed)"),
        ("agents/,.obsidian", "'.obsidian' is not a folder a note could be in"),
        ("/abs", "'/abs' is not a folder a note could be in (Absolute paths are not allowed)"),
        (" , ", "TEAM_VAULT_WRITE_PREFIXES names no folder; leave it unset to allow writes everywhere."),
    ],
)
def test_bad_write_prefixes_are_named(raw: str, expected: str) -> None:
    assert expected in config_error(env(WRITE_PREFIXES=raw))


@pytest.mark.parametrize(("raw", "expected"), [("", False), ("off", False), ("OFF", False), (" on ", True)])
def test_structured_content_is_off_unless_turned_on(raw: str, expected: bool) -> None:
    assert load_config(env(STRUCTURED_CONTENT=raw)).structured_content is expected


@pytest.mark.parametrize("raw", ["yes", "1", "structured", "true"])
def test_an_unknown_structured_content_value_is_refused_naming_the_accepted_ones(raw: str) -> None:
    message = config_error(env(STRUCTURED_CONTENT=raw))
    assert message == f"TEAM_VAULT_STRUCTURED_CONTENT={raw!r} is not one of off, on."
