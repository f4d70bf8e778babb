import warnings, trio
from mcp import Client, StdioServerParameters
params = StdioServerParameters(command="/tmp/mcpenv/bin/python", args=["/tmp/mcpx/server_stdio_trio.py"])
async def main():
    warnings.simplefilter("ignore")
    for mode in ("legacy", "auto"):
        async with Client(params, mode=mode) as c:
            r = await c.call_tool("make_ask", {"title": "x"})
            print(mode, c.protocol_version, r.structured_content)
trio.run(main)
