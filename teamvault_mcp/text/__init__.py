"""Pure text functions: parsing, diffs and edits of note texts, with no I/O."""
