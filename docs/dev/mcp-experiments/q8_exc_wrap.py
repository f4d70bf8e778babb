"""Q8: does an exception escaping `async with Client(...)` get wrapped in an ExceptionGroup? trio vs asyncio."""
import sys, warnings
sys.path.insert(0, "/tmp/mcpx")
import anyio
from mcp import Client, StdioServerParameters
import app as hive

params = StdioServerParameters(command="/tmp/mcpenv/bin/python", args=["/tmp/mcpx/server_stdio.py"])

async def probe(label, target, mode):
    try:
        async with Client(target, mode=mode):
            raise ValueError("boom")
    except BaseException as e:
        print(f"  {label:28s} mode={mode:7s} -> {type(e).__name__}: {e!r}"[:150])

async def main():
    warnings.simplefilter("ignore")
    for mode in ("legacy", "auto"):
        await probe("in-process MCPServer", hive.mcp, mode)
        await probe("stdio subprocess", params, mode)

for backend in ("trio", "asyncio"):
    print("backend", backend)
    anyio.run(main, backend=backend)
