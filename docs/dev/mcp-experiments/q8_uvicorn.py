"""Q8: MCPServer.run_streamable_http_async (uvicorn) under trio."""
import trio
from mcp.server.mcpserver import MCPServer
m = MCPServer("u")
async def main():
    with trio.move_on_after(3):
        await m.run_streamable_http_async(port=18765)
try:
    trio.run(main)
    print("returned")
except BaseException as e:
    print("FAILED:", type(e).__name__, str(e)[:200])
