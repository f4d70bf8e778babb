"""Q4: client-side cancellation reaches the server-side tool coroutine (finally runs). stdio subprocess, trio."""
import os, warnings
import trio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

MARKER = "/tmp/mcpx/cancel_marker.txt"
params = StdioServerParameters(command="/tmp/mcpenv/bin/python", args=["/tmp/mcpx/server_stdio.py"],
                               env={"MCPX_MARKER": MARKER})


def marker():
    return open(MARKER).read().split("\n")[:-1] if os.path.exists(MARKER) else []


async def run(mode):
    print(f"=== mode={mode}")
    async with Client(params, mode=mode) as c:
        # (a) cancel the caller's scope (trio.move_on_after)
        with trio.move_on_after(0.5) as s:
            await c.call_tool("hang", {"tag": f"{mode}-scope"})
        await trio.sleep(0.3)
        print("  (a) caller scope cancelled:", s.cancelled_caught, "| server marker:", marker())
        os.remove(MARKER)

        # (b) read_timeout_seconds expiry -> courtesy notifications/cancelled
        try:
            await c.call_tool("hang", {"tag": f"{mode}-timeout"}, read_timeout_seconds=0.5)
        except MCPError as e:
            print(f"  (b) timeout MCPError code={e.code}", end="")
        await trio.sleep(0.3)
        print(" | server marker:", marker())
        os.remove(MARKER)

        # (c) connection still healthy afterwards
        r = await c.call_tool("just_int", {"x": 1})
        print("  (c) follow-up call ok:", r.structured_content)

        # (d) client exits while a call is in flight (stdin EOF -> server dispatcher cancels handlers)
        async with trio.open_nursery() as n:
            async def bg():
                try:
                    await c.call_tool("hang", {"tag": f"{mode}-exit"})
                except BaseException as e:
                    pass
            n.start_soon(bg)
            await trio.sleep(0.3)
            n.cancel_scope.cancel()
    await trio.sleep(0.3)
    print("  (d) after client exit, server marker:", marker())
    os.remove(MARKER)


async def main():
    warnings.simplefilter("ignore")
    if os.path.exists(MARKER):
        os.remove(MARKER)
    await run("legacy")
    await run("auto")

trio.run(main)
