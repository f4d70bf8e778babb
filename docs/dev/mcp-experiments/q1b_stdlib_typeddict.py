"""Q1b: stdlib typing.TypedDict return on Python 3.11 (SDK rebuilds it) -> structured content?"""
import typing, warnings, trio
from mcp import Client
from mcp.server.mcpserver import MCPServer
class TD(typing.TypedDict):
    a: int
m = MCPServer("td")
@m.tool()
async def f() -> TD:
    return {"a": 1}
async def main():
    warnings.simplefilter("ignore")
    async with Client(m, mode="legacy") as c:
        t = (await c.list_tools()).tools[0]
        r = await c.call_tool("f", {})
        print("outputSchema:", t.output_schema, "| structured:", r.structured_content)
trio.run(main)
