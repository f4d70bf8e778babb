import sys
sys.path.insert(0, "/tmp/mcpx")
import trio
import app
from trio_stdio import run_stdio_trio

async def main():
    async with trio.open_nursery() as n:
        app.TG = n
        await run_stdio_trio(app.mcp)
        n.cancel_scope.cancel()

trio.run(main)
