"""Q4(e): client closes the connection (no explicit cancel of the call): server sees stdin EOF and cancels handlers."""
import os, warnings
import trio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

MARKER = "/tmp/mcpx/cancel_marker.txt"
params = StdioServerParameters(command="/tmp/mcpenv/bin/python", args=["/tmp/mcpx/server_stdio.py"],
                               env={"MCPX_MARKER": MARKER})

async def main():
    warnings.simplefilter("ignore")
    if os.path.exists(MARKER): os.remove(MARKER)
    async with trio.open_nursery() as n:
        c = Client(params, mode="legacy")
        await c.__aenter__()
        async def bg():
            try:
                await c.call_tool("hang", {"tag": "eof"})
            except MCPError as e:
                print("  in-flight caller got MCPError", e.code, e.message)
        n.start_soon(bg)
        await trio.sleep(0.5)
        await c.__aexit__(None, None, None)
    await trio.sleep(0.3)
    print("  server marker:", open(MARKER).read().split("\n")[:-1])

trio.run(main)
