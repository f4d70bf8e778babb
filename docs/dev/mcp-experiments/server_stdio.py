"""Run the app over stdio under trio."""
import sys
sys.path.insert(0, "/tmp/mcpx")
import trio
import app


async def main():
    async with trio.open_nursery() as n:
        app.TG = n
        await app.mcp.run_stdio_async()
        n.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)
