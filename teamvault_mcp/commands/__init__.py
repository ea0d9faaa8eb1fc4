"""The commands of the command line, one module each; ``cli.py`` parses the line and picks one.

serve.py   ``serve``: the MCP server over stdio, or over HTTP with ``--http``; the signals that stop it
check.py   ``check``: the doctor, or a running HTTP endpoint checked from outside
call.py    ``call``: one tool call through the server's own code path, and ``call --help``'s examples
local.py   ``local-vault`` and ``--local DIR``: the embedded local vault, its data directory's checks
shared.py  what they all use: the program's name, logging to stderr, a configuration's failure
"""
