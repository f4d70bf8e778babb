"""Q6: per-connection state + Connection.exit_stack cleanup on disconnect (legacy, in-process and HTTP)."""
import sys, warnings
sys.path.insert(0, "/tmp/mcpx")
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from mcp import Client
import app as hive
URI = "hive://asks/1"

async def check(label, target):
    async with Client(target, mode="legacy") as c1:
        await c1.subscribe_resource(URI)
        print(f"  [{label}] while connected:", (await c1.call_tool("subscriber_count", {"uri": URI})).structured_content)
    await trio.sleep(0.3)
    print(f"  [{label}] SUBSCRIBERS after disconnect:", {k: len(v) for k, v in hive.SUBSCRIBERS.items()})

async def main():
    warnings.simplefilter("ignore")
    await check("in-process", hive.mcp)
    shutdown = trio.Event()
    async with trio.open_nursery() as n:
        hive.TG = n
        cfg = Config(); cfg.bind = ["127.0.0.1:0"]; cfg.accesslog = None
        binds = await n.start(lambda task_status: serve(hive.mcp.streamable_http_app(), cfg,
                                                        shutdown_trigger=shutdown.wait, task_status=task_status))
        await check("http", binds[0] + "/mcp")
        shutdown.set()

trio.run(main)
