import warnings, trio
import mcp_types as types
from mcp import Client, StdioServerParameters
params = StdioServerParameters(command="/tmp/mcpenv/bin/python", args=["/tmp/mcpx/server_stdio.py"])
URI = "hive://asks/1"
async def main():
    warnings.simplefilter("ignore")
    seen = []
    async def mh(msg):
        seen.append((type(msg).__module__, type(msg).__name__, getattr(msg, "method", None)))
    async with Client(params, mode="auto", message_handler=mh) as c:
        async with c.listen(resource_subscriptions=[URI]) as sub:
            await c.call_tool("update_later", {"ask_id": "1", "text": "x", "delay": 0.2})
            async for ev in sub:
                break
            await trio.sleep(0.3)
    print(seen)
trio.run(main)
