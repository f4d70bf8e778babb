import sys, time
sys.path.insert(0, "/tmp/mcpx")
import trio
import app
from trio_stdio import run_stdio_trio

async def main():
    t0 = time.monotonic()
    with trio.move_on_after(1.0):
        await run_stdio_trio(app.mcp)
    print(f"run_stdio_trio returned after {time.monotonic()-t0:.2f}s", file=sys.stderr)

trio.run(main)
