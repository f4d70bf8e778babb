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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio
from mcp.server.stdio import stdio_server

from hive_rpc.backends import open_remote_backend
from hive_rpc.client import HubClient, prove_approver
from hive_rpc.core.claude_code import PROJECT_ENV, SESSION_ENV
from hive_rpc.core.errors import HiveError
from hive_rpc.faces.mcp.approve_tool import SaveRule
from hive_rpc.faces.mcp.groups import DEFAULT_GROUPS, ToolGroups
from hive_rpc.faces.mcp.identity import Identity
from hive_rpc.faces.mcp.resources import lowlevel
from hive_rpc.faces.mcp.server import HiveMcp
from hive_rpc.hub_connection import HubUnreachable

TOOL_TIMEOUT_ENV = "MCP_TOOL_TIMEOUT"


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


def client_timeout_s(environ: Mapping[str, str]) -> float | None:
    """The client's limit on one tool call, when it says: Claude Code's
    ``MCP_TOOL_TIMEOUT`` (milliseconds, at least 1000; its servers inherit it).
    Measured on 2.1.328: a call still running then is cancelled and the model reads
    an error, whatever progress was sent (docs/mcp.md, "Blocking tools")."""
    try:
        ms = int(environ.get(TOOL_TIMEOUT_ENV, ""))
    except ValueError:
        return None
    return max(ms, 1000) / 1000 if ms > 0 else None


def approver_rules(socket: Path) -> SaveRule:
    """Adds a rule as an approver on a connection of its own, opened for that alone:
    the agent's connection must never become an approver's (its tools could then
    answer permission prompts), and ``rule/add`` wants one (service/approver.py).
    The hub checks the rule against the permission prompt the human answered
    (``from_prompt``)."""

    async def save(params: dict[str, Any]) -> str | None:
        try:
            async with await HubClient.connect(socket) as client:
                why = await prove_approver(client.call)
                if why is not None:
                    return why
                await client.call("rule/add", params)
        except (HiveError, HubUnreachable, OSError) as e:
            return str(e)
        return None

    return save


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
    ``progress_every_s`` of HiveMcp.  What Claude Code passes its servers in the
    environment (its session id, project and tool timeout) is read here."""
    async with open_remote_backend(socket, data_dir, start=start) as backend:
        identity = Identity(agent, claude_session=os.environ.get(SESSION_ENV))
        hive = HiveMcp(
            backend,
            identity,
            groups=ToolGroups(groups),
            client_timeout_s=client_timeout_s(os.environ),
            save_rule=approver_rules(socket),
            project_dir=os.environ.get(PROJECT_ENV) or os.getcwd(),
            **tuning,
        )
        low = lowlevel(hive.server)
        async with trio.open_nursery() as nursery:
            await nursery.start(hive.run_updates)
            # Duck-typed: the transport uses only iteration, write() and flush().
            stdin, stdout = _LineReader(0), _Writer(1)
            async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):  # type: ignore[arg-type]
                await low.run(read, write, low.create_initialization_options())
            nursery.cancel_scope.cancel()
