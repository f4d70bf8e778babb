"""Q5: resource template + subscriptions (legacy resources/subscribe and 2026 subscriptions/listen). stdio, trio."""
import warnings
import trio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.client.subscriptions import ServerEvent  # noqa

params = StdioServerParameters(command="/tmp/mcpenv/bin/python", args=["/tmp/mcpx/server_stdio.py"])
URI = "hive://asks/1"


async def main():
    warnings.simplefilter("ignore")
    # ---------------- legacy ----------------
    got = []

    async def message_handler(msg):
        if isinstance(msg, types.ResourceUpdatedNotification):
            got.append(("updated", msg.params.uri))
        elif isinstance(msg, Exception):
            got.append(("transport-exc", repr(msg)))

    print("=== legacy (2025-11-25)")
    async with Client(params, mode="legacy", message_handler=message_handler) as c:
        print("  caps.resources:", c.server_capabilities.resources)
        print("  templates:", [(t.uri_template, t.name) for t in (await c.list_resource_templates()).resource_templates])
        r = await c.read_resource(URI)
        print("  read:", r.contents[0].mime_type, r.contents[0].text)
        try:
            await c.read_resource("hive://asks/999")
        except MCPError as e:
            print(f"  read missing -> MCPError code={e.code} {e.message!r}")
        await c.subscribe_resource(URI)
        print("  subscriber_count:", (await c.call_tool("subscriber_count", {"uri": URI})).structured_content)
        await c.call_tool("update_later", {"ask_id": "1", "text": "edited", "delay": 0.3})  # returns immediately
        await trio.sleep(0.8)
        print("  message_handler got:", got)
        await c.unsubscribe_resource(URI)
        print("  after unsubscribe count:", (await c.call_tool("subscriber_count", {"uri": URI})).structured_content)

    # ---------------- modern ----------------
    print("=== modern (2026-07-28) via Client.listen()")
    got.clear()
    async with Client(params, mode="auto", message_handler=message_handler) as c:
        print("  protocol:", c.protocol_version, "caps.resources:", c.server_capabilities.resources)
        try:
            await c.subscribe_resource(URI)
        except MCPError as e:
            print(f"  resources/subscribe on modern -> MCPError code={e.code} {e.message!r}")
        async with c.listen(resource_subscriptions=[URI]) as sub:
            print("  listen honored:", sub.honored)
            await c.call_tool("update_later", {"ask_id": "1", "text": "edited2", "delay": 0.3})
            with trio.move_on_after(2):
                async for ev in sub:
                    print("  listen event:", ev)
                    break
        print("  message_handler tee:", got)
        print("  re-read:", (await c.read_resource(URI)).contents[0].text)

trio.run(main)
