"""Q8: hypercorn-trio shutdown while clients hold open SSE streams (legacy GET stream / in-flight call)."""
import sys, warnings
sys.path.insert(0, "/tmp/mcpx")
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from mcp import Client
import app as hive


async def main():
    warnings.simplefilter("ignore")
    shutdown = trio.Event()
    cfg = Config(); cfg.bind = ["127.0.0.1:0"]; cfg.accesslog = None
    cfg.graceful_timeout = 2.0
    print("hypercorn graceful_timeout:", cfg.graceful_timeout)
    async with trio.open_nursery() as outer:
        async with trio.open_nursery() as srv_n:
            hive.TG = srv_n
            binds = await srv_n.start(lambda task_status: serve(hive.mcp.streamable_http_app(), cfg,
                                                                shutdown_trigger=shutdown.wait, task_status=task_status))
            url = binds[0] + "/mcp"

            async def client_task():
                try:
                    async with Client(url, mode="legacy") as c:
                        await c.call_tool("hang", {"tag": "shutdown"})
                except BaseException as e:
                    print("  client ended with", type(e).__name__, getattr(e, "exceptions", ""))
            outer.start_soon(client_task)
            await trio.sleep(1.0)
            t0 = trio.current_time()
            shutdown.set()
        print(f"  server nursery exited {trio.current_time() - t0:.2f}s after shutdown_trigger")
        outer.cancel_scope.cancel()

trio.run(main)
