"""The client-side path gate against docs/teamvault-api.md §2 (the latest server, V3).

Every row of the §2.3 "Input → stored form" table is here, for the incoming gate
(create / move target) and, where §2.2 says the stored gate differs, for the stored
gate (lookups, move sources, deletes). The table is written as JS strings: ``dir\\a.md``
there is one backslash, ``a\\0b`` is a NUL, ``a\\|b.md`` is a markdown-escaped pipe.
"""

from __future__ import annotations

import pytest

from teamvault_mcp.errors import InvalidPathError
from teamvault_mcp.text.paths import (
    is_unsafe_for_windows,
    is_windows_alias,
    name_key,
    stored_path_of,
    utf16_length,
)

ABSOLUTE = "Absolute paths are not allowed"
PARENT = "Parent traversal is not allowed"
SINGLE_DOT = "Single-dot segments are not allowed"
NUL = "Path contains NUL byte"
EMPTY_SEGMENT = "Empty path segment"
TOO_LONG = "Path segment too long"
WINDOWS = "Name a Windows client can't keep: "
RESERVED = "Reserved folder name: "

GRINNING = "\U0001f600"  # 😀, an astral character: two UTF-16 code units


def refusal(path: str, *, incoming: bool) -> InvalidPathError:
    with pytest.raises(InvalidPathError) as caught:
        stored_path_of(path, incoming=incoming)
    return caught.value


# ---------------------------------------------------------------------------
# §2.3 rows accepted by both gates: the same stored form either way.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "stored"),
    [
        pytest.param("a.md", "a.md", id="plain"),
        pytest.param("dir/a.md", "dir/a.md", id="nested"),
        pytest.param("Dir/A.MD", "Dir/A.MD", id="case-preserved"),
        pytest.param("a b.md", "a b.md", id="inner-space"),
        pytest.param("  a.md", "  a.md", id="leading-spaces-never-trimmed"),
        pytest.param("%2e%2e/a.md", "%2e%2e/a.md", id="no-percent-decoding"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_ordinary_paths_are_stored_as_given(path: str, stored: str, incoming: bool) -> None:
    assert stored_path_of(path, incoming=incoming) == stored


@pytest.mark.parametrize(
    ("path", "stored"),
    [
        pytest.param("./a.md", "a.md", id="leading-dot-slash"),
        pytest.param("dir/./a.md", "dir/a.md", id="inner-dot"),
        pytest.param("x/../dir/a.md", "dir/a.md", id="parent-resolved"),
        pytest.param("x/./y/../z.md", "x/z.md", id="dot-and-parent"),
        pytest.param("a/.", "a", id="trailing-dot"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_dot_and_parent_segments_are_resolved_by_posix_normalisation_first(
    path: str, stored: str, incoming: bool
) -> None:
    assert stored_path_of(path, incoming=incoming) == stored


@pytest.mark.parametrize(
    ("path", "stored"),
    [
        pytest.param("dir//a.md", "dir/a.md", id="double-slash"),
        pytest.param("dir///a.md", "dir/a.md", id="triple-slash"),
        pytest.param("a.md/", "a.md", id="trailing-slash-file"),
        pytest.param("a/b/c/", "a/b/c", id="trailing-slash-nested"),
        pytest.param("dir/", "dir", id="dir-slash-names-a-file"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_empty_segments_and_trailing_slash_are_dropped(path: str, stored: str, incoming: bool) -> None:
    assert stored_path_of(path, incoming=incoming) == stored


@pytest.mark.parametrize(
    ("path", "stored"),
    [
        pytest.param("dir\\a.md", "dir/a.md", id="one-backslash"),
        pytest.param("dir\\\\a.md", "dir/a.md", id="two-backslashes-empty-segment-dropped"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_backslashes_are_converted_after_posix_normalisation(path: str, stored: str, incoming: bool) -> None:
    assert stored_path_of(path, incoming=incoming) == stored


@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_unicode_spelling_is_kept_not_normalised(incoming: bool) -> None:
    nfd = "Cafe\u0301.md"
    nfc = "Caf\u00e9.md"
    assert stored_path_of(nfd, incoming=incoming) == nfd
    assert stored_path_of(nfc, incoming=incoming) == nfc
    assert stored_path_of(nfd, incoming=incoming) != stored_path_of(nfc, incoming=incoming)


@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_case_is_not_folded_in_the_stored_path(incoming: bool) -> None:
    assert stored_path_of("Dir/A.MD", incoming=incoming) != stored_path_of("dir/a.md", incoming=incoming)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("~/readme.md", id="tilde-folder"),
        pytest.param("Chapter~1.md", id="nine-chars-before-extension"),
        pytest.param("a~1.markdown", id="extension-longer-than-three"),
        pytest.param("notes/draft~final.md", id="tilde-in-the-middle"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_tilde_names_that_are_not_8_3_short_names_are_stored_as_given(path: str, incoming: bool) -> None:
    assert stored_path_of(path, incoming=incoming) == path


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(".gitignore", id="gitignore"),
        pytest.param(".obsidian-notes/idea.md", id="obsidian-prefix"),
        pytest.param(".trashed.md", id="trash-prefix"),
        pytest.param("notes/.gitignore", id="nested-gitignore"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_only_whole_segments_are_reserved(path: str, incoming: bool) -> None:
    assert stored_path_of(path, incoming=incoming) == path


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("Straße/Übersicht.md", id="german"),
        pytest.param("заметки/Ёлка.md", id="cyrillic"),
        pytest.param("日記/メモ.md", id="japanese"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_non_ascii_names_are_stored_as_given(path: str, incoming: bool) -> None:
    assert stored_path_of(path, incoming=incoming) == path


# ---------------------------------------------------------------------------
# §2.3 rows refused by both gates (steps 1, 2, 4, 6.1, 6.2, 6.3, 6.5).
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/a.md", id="leading-slash"),
        pytest.param("//server/a.md", id="unc-style"),
        pytest.param("/", id="root"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_absolute_paths_are_refused(path: str, incoming: bool) -> None:
    assert refusal(path, incoming=incoming).rule == ABSOLUTE


@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_a_leading_backslash_becomes_an_absolute_path(incoming: bool) -> None:
    assert refusal("\\a.md", incoming=incoming).rule == ABSOLUTE


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("..", id="dotdot"),
        pytest.param("../a.md", id="dotdot-file"),
        pytest.param("a/../../b", id="escape-after-descent"),
        pytest.param("dir/../../x", id="escape-after-dir"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_parent_traversal_above_the_root_is_refused(path: str, incoming: bool) -> None:
    assert refusal(path, incoming=incoming).rule == PARENT


@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_backslash_parent_traversal_survives_normalisation_and_is_refused(incoming: bool) -> None:
    assert refusal("x\\..\\dir\\a.md", incoming=incoming).rule == PARENT
    # The `/` spelling of the same path is resolved instead.
    assert stored_path_of("x/../dir/a.md", incoming=incoming) == "dir/a.md"


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("a/..", id="normalises-to-dot"),
        pytest.param(".", id="dot"),
        pytest.param("./", id="dot-slash"),
        pytest.param(".\\a.md", id="dot-backslash"),
        pytest.param("", id="empty-string-becomes-dot"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_single_dot_segments_are_refused(path: str, incoming: bool) -> None:
    assert refusal(path, incoming=incoming).rule == SINGLE_DOT


@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_nul_byte_is_refused(incoming: bool) -> None:
    assert refusal("a\0b", incoming=incoming).rule == NUL


@pytest.mark.parametrize(
    ("path", "segment"),
    [
        pytest.param(".versions/x", ".versions", id="versions"),
        pytest.param("a/.versions/b", ".versions", id="nested-versions"),
        pytest.param(".staging/x", ".staging", id="staging"),
        pytest.param(".VERSIONS/x", ".VERSIONS", id="versions-upper-case"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_storage_folders_are_reserved_on_both_gates(path: str, segment: str, incoming: bool) -> None:
    assert refusal(path, incoming=incoming).rule == RESERVED + segment


# ---------------------------------------------------------------------------
# §2.3 rows refused by the incoming gate only (step 6.4, V3); §2.2: still reachable stored.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "segment"),
    [
        pytest.param(".obsidian/x.md", ".obsidian", id="obsidian"),
        pytest.param(".OBSIDIAN/x.md", ".OBSIDIAN", id="obsidian-upper-case"),
        pytest.param(".Trash/note.md", ".Trash", id="trash-mixed-case"),
        pytest.param("notes/.git/HEAD", ".git", id="nested-git"),
    ],
)
def test_client_folders_are_reserved_for_incoming_paths(path: str, segment: str) -> None:
    assert refusal(path, incoming=True).rule == RESERVED + segment


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(".obsidian/x.md", id="obsidian"),
        pytest.param(".OBSIDIAN/x.md", id="obsidian-upper-case"),
        pytest.param(".Trash/note.md", id="trash-mixed-case"),
        pytest.param("notes/.git/HEAD", id="nested-git"),
        pytest.param(".trash/x.md", id="trash-stored-before-the-rule"),
    ],
)
def test_client_folders_stay_reachable_on_the_stored_gate(path: str) -> None:
    assert stored_path_of(path, incoming=False) == path


@pytest.mark.parametrize(
    ("path", "segment"),
    [
        pytest.param(".obſidian/x", ".obſidian", id="long-s"),
        pytest.param("．git/x", "．git", id="fullwidth-full-stop"),
        pytest.param(".ＧＩＴ/config", ".ＧＩＴ", id="fullwidth-letters"),
        pytest.param(".tra\u200csh/x.md", ".tra\u200csh", id="zero-width-non-joiner"),
    ],
)
def test_reserved_names_are_compared_with_the_unicode_fold(path: str, segment: str) -> None:
    assert refusal(path, incoming=True).rule == RESERVED + segment
    # No fold on the stored gate: the spelling is kept as given.
    assert stored_path_of(path, incoming=False) == path


def test_a_segment_that_folds_to_nothing_is_an_empty_path_segment() -> None:
    path = "\u200c\ufeff/x.md"
    assert refusal(path, incoming=True).rule == EMPTY_SEGMENT
    # §2.1 step 6.4: nameKey is computed for incoming paths only.
    assert stored_path_of(path, incoming=False) == path


@pytest.mark.parametrize(
    ("path", "segment"),
    [
        pytest.param(" a.md ", " a.md ", id="trailing-space"),
        pytest.param("Notes /x.md", "Notes ", id="folder-trailing-space"),
        pytest.param("a.md.", "a.md.", id="trailing-dot"),
    ],
)
def test_a_trailing_space_or_dot_is_refused_for_incoming_paths(path: str, segment: str) -> None:
    assert refusal(path, incoming=True).rule == WINDOWS + segment
    assert stored_path_of(path, incoming=False) == path


@pytest.mark.parametrize(
    ("path", "segment", "stored"),
    [
        pytest.param("C:\\notes\\a.md", "C:", "C:/notes/a.md", id="drive-backslashes"),
        pytest.param("C:/notes/a.md", "C:", "C:/notes/a.md", id="drive-slashes"),
        pytest.param("a:b.md", "a:b.md", "a:b.md", id="colon"),
        pytest.param("notes/a:b.md", "a:b.md", "notes/a:b.md", id="nested-colon"),
        pytest.param("desktop.ini::$DATA", "desktop.ini::$DATA", "desktop.ini::$DATA", id="alternate-stream"),
    ],
)
def test_a_colon_is_a_windows_alias_and_is_refused_for_incoming_paths(path: str, segment: str, stored: str) -> None:
    assert refusal(path, incoming=True).rule == WINDOWS + segment
    # Not absolute on Linux: the stored gate keeps it.
    assert stored_path_of(path, incoming=False) == stored


@pytest.mark.parametrize(
    ("path", "segment"),
    [
        pytest.param("OBSIDI~1/x.md", "OBSIDI~1", id="obsidian-short-name"),
        pytest.param("DRAFT~1.md", "DRAFT~1.md", id="short-name-with-extension"),
        pytest.param("docs/DROPBO~1.CAC", "DROPBO~1.CAC", id="nested-short-name"),
        pytest.param("obsidi~1/x.md", "obsidi~1", id="lower-case-short-name"),
        pytest.param("GIT~1/config", "GIT~1", id="git-short-name"),
    ],
)
def test_8_3_short_names_are_refused_for_incoming_paths(path: str, segment: str) -> None:
    assert refusal(path, incoming=True).rule == WINDOWS + segment
    assert stored_path_of(path, incoming=False) == path


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("Why?.md", id="question-mark"),
        pytest.param("a*b.md", id="asterisk"),
        pytest.param("a<b.md", id="less-than"),
        pytest.param("a>b.md", id="greater-than"),
        pytest.param('a"b.md', id="double-quote"),
        pytest.param("a|b.md", id="pipe"),
        pytest.param("a\tb.md", id="tab"),
        pytest.param("x\u0001.md", id="u0001"),
        pytest.param("x\u001f.md", id="u001f"),
    ],
)
def test_windows_forbidden_characters_are_refused_for_incoming_paths(path: str) -> None:
    assert refusal(path, incoming=True).rule == WINDOWS + path
    assert stored_path_of(path, incoming=False) == path


# ---------------------------------------------------------------------------
# Segment length: 255 UTF-16 code units (step 6.5), on both gates.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "segment",
    [
        pytest.param("a" * 255, id="255-ascii"),
        pytest.param("é" * 255, id="255-bmp"),
        pytest.param(GRINNING * 127 + "a", id="127-astral-plus-1-is-255"),
        pytest.param("a" * 253 + GRINNING, id="253-plus-astral-is-255"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_a_segment_of_255_utf16_units_is_allowed(segment: str, incoming: bool) -> None:
    assert utf16_length(segment) == 255
    assert stored_path_of(f"dir/{segment}", incoming=incoming) == f"dir/{segment}"
    assert stored_path_of(f"{segment}/x.md", incoming=incoming) == f"{segment}/x.md"


@pytest.mark.parametrize(
    "segment",
    [
        pytest.param("a" * 256, id="256-ascii"),
        pytest.param(GRINNING * 128, id="128-astral-is-256"),
        pytest.param("a" * 254 + GRINNING, id="254-plus-astral-is-256"),
        pytest.param("a" * 1000, id="1000-ascii"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_a_segment_of_256_utf16_units_is_too_long(segment: str, incoming: bool) -> None:
    assert utf16_length(segment) >= 256
    assert refusal(f"dir/{segment}", incoming=incoming).rule == TOO_LONG
    assert refusal(f"{segment}/x.md", incoming=incoming).rule == TOO_LONG


def test_an_astral_character_counts_as_two_units_even_under_256_code_points() -> None:
    segment = GRINNING * 128
    assert len(segment) == 128
    assert refusal(segment, incoming=True).rule == TOO_LONG


# ---------------------------------------------------------------------------
# The error: exact server wording in ``rule``, readable path in ``str``.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "incoming", "rule"),
    [
        pytest.param("a\0b", True, "Path contains NUL byte", id="nul"),
        pytest.param("/a.md", True, "Absolute paths are not allowed", id="absolute"),
        pytest.param("../a.md", False, "Parent traversal is not allowed", id="parent"),
        pytest.param("a/..", False, "Single-dot segments are not allowed", id="single-dot"),
        pytest.param(".obsidian/x.md", True, "Reserved folder name: .obsidian", id="reserved-client"),
        pytest.param("a/.staging/b", False, "Reserved folder name: .staging", id="reserved-storage"),
        pytest.param("a:b.md", True, "Name a Windows client can't keep: a:b.md", id="windows"),
        pytest.param("\u200c/x.md", True, "Empty path segment", id="empty-segment"),
        pytest.param("a" * 256, True, "Path segment too long", id="too-long"),
    ],
)
def test_a_refusal_names_the_server_rule_verbatim(path: str, incoming: bool, rule: str) -> None:
    error = refusal(path, incoming=incoming)
    assert error.rule == rule
    assert error.path == path


@pytest.mark.parametrize(
    ("path", "incoming", "message"),
    [
        pytest.param("../a.md", True, "Parent traversal is not allowed: ../a.md", id="plain-rule"),
        pytest.param("/a.md", False, "Absolute paths are not allowed: /a.md", id="absolute"),
        pytest.param(
            "notes/.git/HEAD", True, "Reserved folder name: .git (in notes/.git/HEAD)", id="rule-naming-a-segment"
        ),
        pytest.param(
            "notes/a:b.md",
            True,
            "Name a Windows client can't keep: a:b.md (in notes/a:b.md)",
            id="windows-rule-naming-a-segment",
        ),
        pytest.param("a\0b", True, "Path contains NUL byte: a\\x00b", id="nul-escaped"),
    ],
)
def test_the_error_message_names_the_rule_and_the_path(path: str, incoming: bool, message: str) -> None:
    assert str(refusal(path, incoming=incoming)) == message


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("../a.md", id="parent"),
        pytest.param("/a.md", id="absolute"),
        pytest.param(".obsidian/x.md", id="reserved"),
        pytest.param("docs/DROPBO~1.CAC", id="short-name"),
        pytest.param("Notes /x.md", id="trailing-space"),
        pytest.param("dir/" + "a" * 256, id="too-long"),
    ],
)
def test_the_error_message_contains_the_input_path(path: str) -> None:
    assert path in str(refusal(path, incoming=True))


@pytest.mark.parametrize(
    ("path", "escaped"),
    [
        pytest.param("a\0b", "a\\x00b", id="nul"),
        pytest.param("notes/a\0b.md", "notes/a\\x00b.md", id="nested-nul"),
    ],
)
@pytest.mark.parametrize("incoming", [True, False], ids=["incoming", "stored"])
def test_a_nul_byte_is_escaped_in_the_error_message(path: str, escaped: str, incoming: bool) -> None:
    message = str(refusal(path, incoming=incoming))
    assert "\0" not in message
    assert escaped in message


@pytest.mark.parametrize(
    ("path", "escaped"),
    [
        pytest.param("a\tb.md", "a\\tb.md", id="tab"),
        pytest.param("x\u0001.md", "x\\x01.md", id="u0001"),
    ],
)
def test_control_characters_are_escaped_in_the_error_message_but_not_in_the_rule(path: str, escaped: str) -> None:
    error = refusal(path, incoming=True)
    assert error.rule == WINDOWS + path  # the server's text, raw
    message = str(error)
    assert message.isprintable()
    assert escaped in message


# ---------------------------------------------------------------------------
# The helpers, on cases from §2.1.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("segment", "key"),
    [
        pytest.param(".obſidian", ".obsidian", id="long-s-folds-to-s"),
        pytest.param(".ＧＩＴ", ".git", id="fullwidth-letters"),
        pytest.param("．git", ".git", id="fullwidth-full-stop"),
        pytest.param(".OBSIDIAN", ".obsidian", id="upper-case"),
        pytest.param(".tra\u200csh", ".trash", id="zwnj-removed"),
        pytest.param("a\u200db", "ab", id="zwj-removed"),
        pytest.param("\ufeff.git", ".git", id="bom-removed"),
        pytest.param("a\u202eb", "ab", id="bidi-override-removed"),
        pytest.param("a\u206ab", "ab", id="u206a-removed"),
        pytest.param("\u200c\ufeff", "", id="only-ignorables-is-empty"),
        pytest.param("Straße", "strasse", id="full-case-fold-sharp-s"),
        pytest.param("Cafe\u0301", "caf\u00e9", id="nfd-composed"),
        pytest.param("Caf\u00e9", "caf\u00e9", id="nfc-unchanged"),
    ],
)
def test_name_key_is_nfkc_case_folded_without_hfs_ignorables(segment: str, key: str) -> None:
    assert name_key(segment) == key


@pytest.mark.parametrize(
    ("segment", "alias"),
    [
        pytest.param("OBSIDI~1", True, id="OBSIDI~1"),
        pytest.param("obsidi~1", True, id="obsidi~1"),
        pytest.param("GIT~1", True, id="GIT~1"),
        pytest.param("DRAFT~1.md", True, id="DRAFT~1.md"),
        pytest.param("DROPBO~1.CAC", True, id="DROPBO~1.CAC"),
        pytest.param("ABCD~123", True, id="eight-chars-multi-digit"),
        pytest.param("a:b.md", True, id="colon"),
        pytest.param("C:", True, id="drive"),
        pytest.param("desktop.ini::$DATA", True, id="stream"),
        pytest.param("Chapter~1.md", False, id="Chapter~1.md-nine-chars"),
        pytest.param("ABCDEFG~1", False, id="nine-chars-no-extension"),
        pytest.param("a~1.markdown", False, id="a~1.markdown-long-extension"),
        pytest.param("draft~final.md", False, id="tilde-in-the-middle"),
        pytest.param("a~1b.md", False, id="digits-not-at-the-end"),
        pytest.param("~", False, id="lone-tilde"),
        pytest.param("A B~1", False, id="whitespace"),
        pytest.param("a.md", False, id="plain"),
    ],
)
def test_is_windows_alias_matches_a_colon_or_an_8_3_short_name(segment: str, alias: bool) -> None:
    assert is_windows_alias(segment) is alias


@pytest.mark.parametrize(
    ("segment", "unsafe"),
    [
        pytest.param("Why?.md", True, id="question-mark"),
        pytest.param("a*b.md", True, id="asterisk"),
        pytest.param("a<b.md", True, id="less-than"),
        pytest.param("a>b.md", True, id="greater-than"),
        pytest.param('a"b.md', True, id="double-quote"),
        pytest.param("a|b.md", True, id="pipe"),
        pytest.param("a\tb.md", True, id="tab"),
        pytest.param("x\u0001.md", True, id="u0001"),
        pytest.param("a.md.", True, id="trailing-dot"),
        pytest.param(" a.md ", True, id="trailing-space"),
        pytest.param("DRAFT~1.md", True, id="short-name"),
        pytest.param("a:b.md", True, id="colon"),
        pytest.param("a.md", False, id="plain"),
        pytest.param("  a.md", False, id="leading-spaces"),
        pytest.param("a b.md", False, id="inner-space"),
        pytest.param(".gitignore", False, id="leading-dot"),
        pytest.param("Chapter~1.md", False, id="not-a-short-name"),
    ],
)
def test_is_unsafe_for_windows_covers_aliases_forbidden_characters_and_trailing_dot_or_space(
    segment: str, unsafe: bool
) -> None:
    assert is_unsafe_for_windows(segment) is unsafe


@pytest.mark.parametrize(
    ("text", "units"),
    [
        pytest.param("", 0, id="empty"),
        pytest.param("a", 1, id="ascii"),
        pytest.param("é", 1, id="bmp-composed"),
        pytest.param("Cafe\u0301", 5, id="combining-mark"),
        pytest.param("日記", 2, id="cjk"),
        pytest.param(GRINNING, 2, id="astral"),
        pytest.param(GRINNING * 127 + "a", 255, id="127-astral-plus-1"),
        pytest.param(GRINNING * 128, 256, id="128-astral"),
    ],
)
def test_utf16_length_counts_an_astral_character_as_two_units(text: str, units: int) -> None:
    assert utf16_length(text) == units
