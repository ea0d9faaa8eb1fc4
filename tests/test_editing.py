"""Exact edits and simplified unified diffs (editing.py): matching, line endings, errors that teach."""

from __future__ import annotations

import pytest

from teamvault_mcp.errors import EditFailedError, ResultTooLargeError, ToolInputError
from teamvault_mcp.text.edits import Edit, apply_edits, closest_lines, edits_from_patch

NOTE = "# Tasks\n- [ ] call Kuzma\n- [ ] send the report\n- [ ] book the room\n"


def edited(text: str, *edits: Edit) -> str:
    return apply_edits(text, list(edits))


def failure(text: str, *edits: Edit) -> str:
    with pytest.raises(EditFailedError) as caught:
        apply_edits(text, list(edits))
    return str(caught.value)


def test_an_exact_edit_replaces_its_one_occurrence() -> None:
    assert edited(NOTE, Edit("- [ ] call Kuzma", "- [x] call Kuzma")) == NOTE.replace("[ ] call", "[x] call")


def test_replace_all_changes_every_occurrence() -> None:
    assert edited(NOTE, Edit("- [ ]", "- [x]", replace_all=True)) == NOTE.replace("[ ]", "[x]")


def test_a_missing_old_text_shows_the_closest_lines_with_their_numbers() -> None:
    message = failure(NOTE, Edit("- [ ] send the reprot", "x"))
    assert "The edit: oldText was not found." in message
    assert "     3| - [ ] send the report" in message
    assert "Nothing was changed." in message


def test_an_ambiguous_old_text_gives_every_line_number() -> None:
    message = failure("x\ny\nx\nz\nx\n", Edit("x", "w"))
    assert "oldText occurs 3 times (at lines 1, 3, 5)" in message
    assert "replaceAll" in message


def test_overlapping_occurrences_count_as_ambiguous() -> None:
    assert "occurs 2 times" in failure("aaa", Edit("aa", "b"))


def test_crlf_in_the_note_matches_lf_in_old_text_and_keeps_crlf() -> None:
    note = "one\r\ntwo\r\nthree\r\n"
    assert edited(note, Edit("two\nthree\n", "2\n3\n")) == "one\r\n2\r\n3\r\n"


def test_lf_in_the_note_matches_crlf_in_old_text_and_keeps_lf() -> None:
    assert edited("one\ntwo\n", Edit("one\r\ntwo", "1\r\n2")) == "1\n2\n"


def test_unicode_text_is_matched_exactly() -> None:
    note = "# Заметки\nЁлка — 🎄\n"
    assert edited(note, Edit("Ёлка — 🎄", "Ёлка — 🌲")) == "# Заметки\nЁлка — 🌲\n"
    assert "not found" in failure(note, Edit("Елка", "x"))  # Е is not Ё: no folding


def test_an_empty_new_text_deletes() -> None:
    assert edited(NOTE, Edit("- [ ] send the report\n", "")) == NOTE.replace("- [ ] send the report\n", "")


def test_an_empty_old_text_is_refused() -> None:
    assert "oldText is empty" in failure(NOTE, Edit("", "x"))


def test_edits_apply_in_order_each_to_the_text_the_previous_left() -> None:
    assert edited("a b c", Edit("a", "x y"), Edit("x y b", "z")) == "z c"


def test_an_edit_overlapping_what_an_earlier_one_changed_fails_and_nothing_applies() -> None:
    message = failure(NOTE, Edit("call Kuzma", "call Minin"), Edit("- [ ] call Kuzma", "- [x] call Kuzma"))
    assert message.startswith("Edit 2 of 2: oldText was not found.")


def test_all_or_nothing_the_first_edit_is_not_kept_when_the_second_fails() -> None:
    text = NOTE
    with pytest.raises(EditFailedError):
        apply_edits(text, [Edit("call Kuzma", "call Minin"), Edit("no such text", "x")])
    assert text == NOTE  # a pure function: the handler writes only a complete result


def test_a_mixed_line_ending_note_gets_its_dominant_ending_in_new_text() -> None:
    note = "a\r\nb\r\nc\nd\r\n"
    assert edited(note, Edit("c\n", "c1\nc2\n")) == "a\r\nb\r\nc1\r\nc2\r\nd\r\n"


def test_the_last_line_of_a_note_without_a_final_newline_can_be_edited() -> None:
    assert edited("one\ntwo", Edit("two\n", "2\n")) == "one\n2"


# -- patches --------------------------------------------------------------------------------------


def test_a_patch_with_headers_and_line_numbers() -> None:
    patch = (
        "--- a/tasks.md\n+++ b/tasks.md\n@@ -2,2 +2,2 @@\n - [ ] call Kuzma\n-- [ ] send the report\n"
        "+- [x] send the report\n"
    )
    assert edited(NOTE, *edits_from_patch(patch)) == NOTE.replace("[ ] send", "[x] send")


def test_a_patch_without_line_numbers() -> None:
    patch = "@@ @@\n # Tasks\n+Due Friday.\n - [ ] call Kuzma\n"
    assert edited(NOTE, *edits_from_patch(patch)) == NOTE.replace("# Tasks\n", "# Tasks\nDue Friday.\n")


def test_several_hunks_apply_in_order() -> None:
    patch = (
        "@@ -2 +2 @@\n-- [ ] call Kuzma\n+- [x] call Kuzma\n@@ -4 +4 @@\n-- [ ] book the room\n+- [x] book the room\n"
    )
    assert (
        edited(NOTE, *edits_from_patch(patch))
        == "# Tasks\n- [x] call Kuzma\n- [ ] send the report\n- [x] book the room\n"
    )


def test_a_hunk_that_no_longer_applies_is_not_found_and_nothing_changes() -> None:
    patch = "@@ -3 +3 @@\n-- [ ] send the weekly report\n+- [x] send the weekly report\n"
    message = failure(NOTE, *edits_from_patch(patch))
    assert "oldText was not found" in message
    assert "3| - [ ] send the report" in message


def test_hunk_line_numbers_pick_among_several_matches() -> None:
    note = "x\ny\nx\n"
    assert edited(note, *edits_from_patch("@@ -3,1 +3,1 @@\n-x\n+X\n")) == "x\ny\nX\n"


def test_no_newline_markers_are_ignored() -> None:
    patch = "@@ -2 +2 @@\n-two\n\\ No newline at end of file\n+2\n\\ No newline at end of file\n"
    assert edited("one\ntwo", *edits_from_patch(patch)) == "one\n2"


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("just some text\n", "comes before any '@@' hunk header"),
        ("@@ @@\n+only an addition\n", "has no context or removed lines"),
        ("@@ @@\n context\n", "The patch changes nothing"),
        ("@@ @@\n*bad line\n", "starts with '*'"),
    ],
)
def test_malformed_patches_are_refused(patch: str, message: str) -> None:
    with pytest.raises(ToolInputError, match=message.replace("(", r"\(").replace("*", r"\*")):
        edits_from_patch(patch)


def test_closest_lines_finds_a_multi_line_stretch() -> None:
    hint = closest_lines(NOTE, "- [ ] send the reprot\n- [ ] book the rom\n")
    assert hint.splitlines()[:2] == ["     3| - [ ] send the report", "     4| - [ ] book the room"]


# -- the size of a result, counted before it is built ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "edit", "what", "size"),
    [
        ("x" * 1_000, Edit("x", "yy", replace_all=True), "The edit (replaceAll, 1,000 matches)", 2_000),
        ("ab\r\nab\r\n", Edit("b\n", "é\n", replace_all=True), "The edit (replaceAll, 2 matches)", 10),
        ("one\ntwo\n", Edit("two", "three"), "The edit", 10),
        ("one\ntwo", Edit("two\n", "three\n"), "The edit", 9),  # the last line, without a final line break
    ],
)
def test_an_edit_past_max_bytes_is_refused_with_the_size_it_would_have_had(
    text: str, edit: Edit, what: str, size: int
) -> None:
    assert len(apply_edits(text, [edit]).encode("utf-8")) == size
    assert apply_edits(text, [edit], max_bytes=size) == apply_edits(text, [edit])  # exactly the limit: made
    with pytest.raises(ResultTooLargeError) as caught:
        apply_edits(text, [edit], max_bytes=size - 1, path="n.md")
    assert str(caught.value).startswith(f"{what} would make n.md {size:,} bytes")


def test_each_edit_is_sized_on_the_text_the_previous_ones_left() -> None:
    grow, shrink = Edit("x", "xx", replace_all=True), Edit("xx", "x", replace_all=True)
    assert apply_edits("x" * 10, [grow, shrink], max_bytes=20) == "x" * 10
    with pytest.raises(ResultTooLargeError, match=r"^Edit 1 of 2 \(replaceAll, 10 matches\) would make n.md 20 "):
        apply_edits("x" * 10, [grow, shrink], max_bytes=19, path="n.md")


def test_an_old_text_found_at_a_great_many_places_is_counted_up_to_a_bound() -> None:
    """A run of 3,699 spaces against a note of deep indentation (9 MB): it was matched at each of 2.6 million
    places (11 s) to say how often it occurs; now the first 1,001 are enough to say it is more than 1,000."""
    note = "".join("  " * n + f"- item {n}\n" for n in range(3_000))
    message = failure(note, Edit(" " * 3_699, ""))
    assert "oldText occurs more than 1,000 times (at lines 1851, 1851, " in message, message[:300]
    assert "occurs 2 times" in failure("a\nb\na\nb\n", Edit("a\nb", "c"))  # with line breaks, as before
