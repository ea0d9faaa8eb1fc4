"""teamvault-mcp: an MCP server over stdio that gives AI agents a Team Vault project's notes."""

__version__ = "0.1.0"
