"""``hive-rpc mcp``: the MCP server an agent's client starts over stdio, one per session.

It is a client of the hub (see backends.RemoteBackend), so every agent session's
questions land in the one registry the editors watch.

stdin and stdout are read and written as trio streams rather than through the
SDK's default wrappers, which read stdin in a worker thread that cannot be cancelled
while the client is idle (see docs/dev/mcp-sdk-notes.md, section 8).  So nothing in
this process may print to stdout: logs go to stderr.
"""

from __future__ import annotations

import os
from pathlib import Path

import trio
from mcp.server.stdio import stdio_server

from hive_rpc.backends import open_remote_backend
from hive_rpc.core.claude_code import SESSION_ENV
from hive_rpc.faces.mcp.groups import DEFAULT_GROUPS, ToolGroups
from hive_rpc.faces.mcp.identity import Identity
from hive_rpc.faces.mcp.resources import lowlevel
from hive_rpc.faces.mcp.server import HiveMcp


class _LineReader:
    """stdin as the async iterator of str lines the SDK's stdio transport expects."""

    def __init__(self, fd: int) -> None:
        self._stream = trio.lowlevel.FdStream(os.dup(fd))
        self._buf = bytearray()

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        while (end := self._buf.find(b"\n")) < 0:
            chunk = await self._stream.receive_some(65536)
            if not chunk:
                if not self._buf:
                    raise StopAsyncIteration
                line = bytes(self._buf)
                self._buf.clear()
                return line.decode("utf-8", "replace")
            self._buf += chunk
        line = bytes(self._buf[: end + 1])
        del self._buf[: end + 1]
        return line.decode("utf-8", "replace")


class _Writer:
    """stdout as the async text file the SDK's stdio transport expects."""

    def __init__(self, fd: int) -> None:
        self._stream = trio.lowlevel.FdStream(os.dup(fd))

    async def write(self, text: str) -> None:
        await self._stream.send_all(text.encode("utf-8"))

    async def flush(self) -> None:
        """Writes go straight to the pipe."""


async def run_mcp_stdio(
    socket: Path,
    data_dir: Path,
    *,
    start: bool = True,
    agent: str | None = None,
    groups: frozenset[str] = DEFAULT_GROUPS,
    **tuning: float,
) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin, offering the tool
    ``groups`` (``hive-rpc mcp --tools``).  ``tuning``: ``human_input_timeout_s`` and
    ``progress_every_s`` of HiveMcp."""
    async with open_remote_backend(socket, data_dir, start=start) as backend:
        identity = Identity(agent, claude_session=os.environ.get(SESSION_ENV))
        hive = HiveMcp(backend, identity, groups=ToolGroups(groups), **tuning)
        low = lowlevel(hive.server)
        async with trio.open_nursery() as nursery:
            await nursery.start(hive.run_updates)
            # Duck-typed: the transport uses only iteration, write() and flush().
            stdin, stdout = _LineReader(0), _Writer(1)
            async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):  # type: ignore[arg-type]
                await low.run(read, write, low.create_initialization_options())
            nursery.cancel_scope.cancel()
