"""Pure functions on text, no I/O: paths, markdown, diffs, edits, front matter, schemas, search, and the
vault's links, tags, tasks and property queries, section edits and find/replace.

Nothing is imported here: ``ruamel.yaml`` and ``regex`` are loaded by the modules that need them.
"""
