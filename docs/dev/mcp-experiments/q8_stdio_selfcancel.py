"""Q8: can a trio stdio server cancel itself while stdin is still open? (stdin is read in a worker thread)"""
import sys, time
sys.path.insert(0, "/tmp/mcpx")
import trio
import app

async def main():
    t0 = time.monotonic()
    with trio.move_on_after(1.0):
        await app.mcp.run_stdio_async()
    print(f"run_stdio_async returned after {time.monotonic()-t0:.2f}s", file=sys.stderr)

trio.run(main)
