"""Q2b: low-level stdio_client + ClientSession under trio (legacy initialize vs modern discover/adopt)."""
import warnings
import trio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client._probe import negotiate_auto          # what Client(mode="auto") uses (private module)
from mcp_types import Implementation

params = StdioServerParameters(command="/tmp/mcpenv/bin/python", args=["/tmp/mcpx/server_stdio.py"])


async def main():
    warnings.simplefilter("ignore")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=Implementation(name="ll", version="1")) as s:
            init = await s.initialize()                      # legacy handshake
            print("legacy:", init.protocol_version, s.protocol_version)
            r = await s.call_tool("just_int", {"x": 4})
            print("  ", r.structured_content)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=Implementation(name="ll", version="1")) as s:
            d = await s.discover()                           # 2026-07-28 server/discover
            s.adopt(d)
            print("modern:", s.protocol_version, d.supported_versions)
            r = await s.call_tool("just_int", {"x": 5})
            print("  ", r.structured_content)

trio.run(main)
