"""``python -m teamvault_mcp``: the same program as the ``teamvault-mcp`` command."""

from teamvault_mcp.cli import main

raise SystemExit(main())
