"""The start-up baseline: a bare ``mcp`` low-level server over stdio that registers one trivial tool.

With ``--lean`` it runs on teamvault-mcp's lean transport instead of the SDK's ``stdio_server``:
the transport's own cost, side by side with the SDK's (``bench/stdio_bench.py``).
"""

import sys

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOL = types.Tool(name="echo", description="Echo the text back.", input_schema={"type": "object"})


async def list_tools(ctx, params):  # type: ignore[no-untyped-def]
    return types.ListToolsResult(tools=[TOOL])


async def call_tool(ctx, params):  # type: ignore[no-untyped-def]
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(params.arguments))])


server = Server("bare", version="0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    if "--lean" in sys.argv:
        from teamvault_mcp.server.lean import serve_lean

        await serve_lean(server, server.create_initialization_options(), drain_limit=60)
        return
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


anyio.run(main)
