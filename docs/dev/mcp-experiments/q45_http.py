"""Q4+Q5 over Streamable HTTP (hypercorn trio): cancellation reaches tool; resource-updated delivery."""
import os, sys, warnings
sys.path.insert(0, "/tmp/mcpx")
os.environ["MCPX_MARKER"] = "/tmp/mcpx/http_marker.txt"
import httpx2, trio
import mcp_types as types
from hypercorn.config import Config
from hypercorn.trio import serve
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
import app as hive

M = hive.MARKER
URI = "hive://asks/1"


def marker():
    out = open(M).read().split("\n")[:-1] if os.path.exists(M) else []
    if os.path.exists(M): os.remove(M)
    return out


async def main():
    warnings.simplefilter("ignore")
    marker()
    shutdown = trio.Event()
    async with trio.open_nursery() as n:
        hive.TG = n
        cfg = Config(); cfg.bind = ["127.0.0.1:0"]; cfg.accesslog = None
        binds = await n.start(lambda task_status: serve(hive.mcp.streamable_http_app(), cfg,
                                                        shutdown_trigger=shutdown.wait, task_status=task_status))
        url = binds[0] + "/mcp"
        for mode in ("legacy", "auto"):
            got = []
            async def mh(msg):
                if isinstance(msg, types.ResourceUpdatedNotification):
                    got.append(msg.params.uri)
            async with Client(url, mode=mode, message_handler=mh) as c:       # URL string -> streamable HTTP
                with trio.move_on_after(0.5):
                    await c.call_tool("hang", {"tag": f"http-{mode}-scope"})
                await trio.sleep(0.5)
                print(f"[{mode}] cancel scope -> server marker {marker()}")
                try:
                    await c.call_tool("hang", {"tag": f"http-{mode}-timeout"}, read_timeout_seconds=0.5)
                except MCPError as e:
                    pass
                await trio.sleep(0.5)
                print(f"[{mode}] read timeout -> server marker {marker()}")
                if mode == "legacy":
                    await c.subscribe_resource(URI)
                    await c.call_tool("update_later", {"ask_id": "1", "text": "h1", "delay": 0.2})
                    await trio.sleep(0.8)
                    print(f"[{mode}] resources/subscribe -> message_handler got {got}")
                else:
                    async with c.listen(resource_subscriptions=[URI]) as sub:
                        await c.call_tool("update_later", {"ask_id": "1", "text": "h2", "delay": 0.2})
                        with trio.move_on_after(2):
                            async for ev in sub:
                                print(f"[{mode}] listen event {ev}")
                                break
        shutdown.set()

trio.run(main)
