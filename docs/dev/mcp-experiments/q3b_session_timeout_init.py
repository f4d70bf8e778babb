"""Q3b: Client(read_timeout_seconds=X) also bounds the initialize/discover handshake (slow-starting server)."""
import warnings, trio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
params = StdioServerParameters(command="/tmp/mcpenv/bin/python", args=["/tmp/mcpx/server_stdio.py"])

def leaf(e):
    while isinstance(e, BaseExceptionGroup):
        e = e.exceptions[0]
    return e

async def main():
    warnings.simplefilter("ignore")
    for t in (0.05, 5.0):
        t0 = trio.current_time()
        try:
            async with Client(params, mode="legacy", read_timeout_seconds=t) as c:
                print(f"read_timeout_seconds={t}: connected in {trio.current_time()-t0:.2f}s")
        except BaseException as e:
            e = leaf(e)
            print(f"read_timeout_seconds={t}: connect failed after {trio.current_time()-t0:.2f}s -> {type(e).__name__} {e}")
trio.run(main)
