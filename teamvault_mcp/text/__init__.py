"""Pure text models of a note: links, tags, tasks and front matter queries (no I/O)."""
