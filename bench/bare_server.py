"""The start-up baseline: a bare ``mcp`` low-level server over stdio that registers one trivial tool."""

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
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


anyio.run(main)
