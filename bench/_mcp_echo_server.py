"""The peer for bench/mcp_roundtrip.py: one trivial tool served by the MCP SDK over stdio.

``echo(text) -> {"text": text}`` on ``MCPServer``, under trio.  It does no work of its
own, so a call through it costs what the SDK's client, server and stdio transport
cost for one tool call.

    python bench/_mcp_echo_server.py               # trio.run(server.run_stdio_async)
    python bench/_mcp_echo_server.py --trio-stdio  # stdin/stdout as hive-rpc mcp reads them

By default the SDK's own stdio transport, which reads stdin and writes stdout through
worker threads.  With ``--trio-stdio`` the same server gets the line reader and
writer that the hub's session for ``hive-rpc mcp`` passes to ``stdio_server`` instead
(hive_rpc/faces/mcp/stdio.py, there over the relay's socket, here over trio streams
on stdin and stdout), so the transport is the same as on the hive-rpc path.
"""

from __future__ import annotations

import os
import sys

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

server = MCPServer("bench-echo")


@server.tool(name="echo", description="Return the text it was given.")
async def echo(text: str) -> dict[str, str]:
    return {"text": text}


async def run_trio_stdio() -> None:
    from hive_rpc.faces.mcp.stdio import _LineReader, _Writer

    low = server._lowlevel_server
    stdin = _LineReader(trio.lowlevel.FdStream(os.dup(0)))
    stdout = _Writer(trio.lowlevel.FdStream(os.dup(1)))
    async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):  # type: ignore[arg-type]
        await low.run(read, write, low.create_initialization_options())


if __name__ == "__main__":
    trio.run(run_trio_stdio if "--trio-stdio" in sys.argv[1:] else server.run_stdio_async)
