"""Cancellable trio-native stdin/stdout for mcp.server.stdio.stdio_server (duck-typed AsyncFile[str])."""
import os
import trio
from mcp.server.stdio import stdio_server


class TrioLineReader:
    def __init__(self, fd: int):
        self._s = trio.lowlevel.FdStream(os.dup(fd))
        self._buf = b""

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self._buf:
            chunk = await self._s.receive_some(65536)
            if not chunk:
                if self._buf:
                    line, self._buf = self._buf, b""
                    return line.decode("utf-8", "replace")
                raise StopAsyncIteration
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode("utf-8", "replace") + "\n"


class TrioWriter:
    def __init__(self, fd: int):
        self._s = trio.lowlevel.FdStream(os.dup(fd))

    async def write(self, text: str) -> None:
        await self._s.send_all(text.encode("utf-8"))

    async def flush(self) -> None:
        pass


async def run_stdio_trio(mcp_server) -> None:
    """Like MCPServer.run_stdio_async(), but cancellable while stdin is idle."""
    low = mcp_server._lowlevel_server
    async with stdio_server(stdin=TrioLineReader(0), stdout=TrioWriter(1)) as (r, w):
        await low.run(r, w, low.create_initialization_options())
