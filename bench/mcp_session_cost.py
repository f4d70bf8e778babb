"""What one agent session's MCP server costs the hub, and the registry watchers N
sessions hold.

Every agent session starts a ``hive-rpc mcp`` relay, which opens an MCP session in the
hub (``hive/openMcp``); the hub builds what serves it with
``faces/mcp/stdio.session_hive(service, params)``.  Measured in this process on a hub
on the memory store (``hub.run_hub``):

* build: ``session_hive`` called ``-n`` times (after one call that pays what the hub
  pays once), median time of one call, and memory: what ``tracemalloc`` sees still
  allocated per session while all ``-n`` are kept; and the same for what the hub pays
  once, when its first session comes: its one server (``HiveMcp``, the tools'
  schemas), which every session used to build for itself;
* floor, built the same way in the same run: the SDK's ``MCPServer`` with one tool
  (``echo(text) -> str``), the least a server of the kind the hub uses costs; and
  for scale, the SDK's low-level ``Server`` with one tool handler;
* watchers: ``--sessions`` real sessions opened on the hub's socket as the relay
  opens them (``hive/openMcp``, then MCP's ``initialize`` and
  ``notifications/initialized``), and ``registry.statistics()["watchers"]`` before
  and with them open.

Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
import trio.testing
from _common import print_machine, ratio, short_tmp, table
from mcp_cold_start import INITIALIZE, INITIALIZED, line

from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.protocol.framing import Frame, FrameDecoder, encode_frame
from hive_rpc.service import HubService

OPEN_TIMEOUT_S = 30.0
"""A guard against a hung hub, not a measurement."""


def bare_server() -> object:
    """The SDK's low-level ``Server`` with one tool handler: its smallest server."""
    import mcp_types as types
    from mcp.server.lowlevel.server import Server

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="x")])

    return Server("bench", on_call_tool=call_tool)


def one_tool_server() -> object:
    """The SDK's ``MCPServer`` with one tool: the least an ``MCPServer`` costs."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


def cost(build: Callable[[], object], n: int) -> tuple[float, float]:
    """Median seconds of one ``build()`` and bytes still allocated per object kept."""
    build()  # what is paid once (imports, caches) is not one session's cost
    times = []
    for _ in range(n):
        start = time.perf_counter()
        build()
        times.append(time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = [build() for _ in range(n)]
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    del kept
    return statistics.median(times), grown / n


async def open_session(socket: Path, agent: str) -> trio.SocketStream:
    """A session opened as ``hive-rpc mcp`` opens one, initialized."""
    stream = await trio.open_unix_socket(os.fspath(socket))
    request = {"jsonrpc": "2.0", "id": 1, "method": "hive/openMcp", "params": {"agent": agent}}
    await stream.send_all(encode_frame(json.dumps(request).encode()))
    decoder, frame = FrameDecoder(), None
    while frame is None:
        decoder.receive_data(await stream.receive_some(65536))
        frame = decoder.next_event()
    assert isinstance(frame, Frame), frame
    assert b'"opened"' in frame.body, frame.body
    await stream.send_all(line(INITIALIZE))
    got = b""
    while not got.endswith(b"\n"):
        got += await stream.receive_some(65536)
    assert b'"result"' in got, got
    await stream.send_all(line(INITIALIZED))
    return stream


async def session_costs(n: int, sessions: int) -> None:
    with short_tmp() as tmp:
        config = HubConfig(socket=tmp / "hub.sock", data_dir=tmp / "data", store="memory")
        async with trio.open_nursery() as nursery:
            service: HubService = await nursery.start(run_hub, config)
            from hive_rpc.faces.backends import LocalBackend
            from hive_rpc.faces.mcp import stdio
            from hive_rpc.faces.mcp.server import HiveMcp

            params = {"agent": "bench", "tools": ["ask", "agora"]}
            builds: list[tuple[str, Callable[[], object]]] = [
                ("SDK MCPServer, one tool (floor)", one_tool_server),
                ("SDK low-level Server, one tool handler", bare_server),
                ("one agent session (stdio.session_hive)",
                 lambda: stdio.session_hive(service, params)),
                ("the hub's one server, once (HiveMcp)", lambda: HiveMcp(LocalBackend(service))),
            ]  # fmt: skip
            measured = [(name, *cost(build, n)) for name, build in builds]
            floor_s, floor_b = measured[0][1], measured[0][2]
            print(f"\n{n} builds each, median time of one; memory kept per object\n")
            print(table(
                ["object", "median ms", "vs floor", "KiB kept", "vs floor"],
                [(name, f"{s * 1000:.3f}", ratio(s, floor_s), f"{b / 1024:.1f}", ratio(b, floor_b))
                 for name, s, b in measured],
            ))  # fmt: skip

            idle = service.registry.statistics()["watchers"]
            streams = []
            with trio.fail_after(OPEN_TIMEOUT_S):
                for i in range(sessions):
                    streams.append(await open_session(config.socket, f"bench-{i}"))
                # The sessions' tasks start their watchers as they serve: settled once
                # every task in this run waits.
                await trio.testing.wait_all_tasks_blocked()
            busy = service.registry.statistics()["watchers"]
            print("\nregistry watchers (registry.statistics()['watchers'])\n")
            print(table(
                ["MCP sessions open", "watchers", "added by the sessions"],
                [(0, idle, 0), (sessions, busy, busy - idle)],
            ))  # fmt: skip
            for stream in streams:
                await stream.aclose()
            nursery.cancel_scope.cancel()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=50, help="builds of each object")
    ap.add_argument("--sessions", type=int, default=20, help="sessions opened for the watchers")
    args = ap.parse_args()
    print_machine()
    trio.run(session_costs, args.n, args.sessions)


if __name__ == "__main__":
    main()
