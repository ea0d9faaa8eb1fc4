"""The MCP face of teamvault-mcp: the protocol, the call pipeline, the stdio transport, the audit log.

Nothing is imported here: each module is imported where it is used.
"""
