"""One MCP server and one registry watcher per hub, however many agent sessions.

Each relayed session (``hive-rpc mcp``, opened here as the relay opens it:
``hive/openMcp`` on the hub's socket, then MCP lines) used to build an MCP server of
its own and watch the registry itself.  Now the hub builds one server (faces/mcp/
server.py ``HiveMcp.for_hub``), each session is served with its own settings
(session.py), and one watcher tells every session's subscribers (updates.py).
Counted, not timed: the SDK servers built, ``registry.statistics()["watchers"]``."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing
from mcp.server.mcpserver import MCPServer
from mcp_support import INITIALIZED, initialize_params, open_mcp, receive_line

from hive_rpc.faces.mcp.server import HiveMcp
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

SESSIONS = 5


class Session:
    """One relayed MCP session, driven by hand as the relay drives it."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._buf = bytearray()
        self._next_id = 100
        self.notes: list[dict[str, Any]] = []

    @classmethod
    async def open(cls, config: HubConfig, agent: str, tools: list[str]) -> Session:
        stream, reply = await open_mcp(config, {"agent": agent, "tools": tools})
        assert reply["result"]["opened"] is True
        session = cls(stream)
        await session.request("initialize", initialize_params("relayed"))
        await session.send(INITIALIZED)
        return session

    async def send(self, msg: dict[str, Any]) -> None:
        await self.stream.send_all(json.dumps(msg).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        return await receive_line(self.stream, self._buf, "the hub closed the session")

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """The result of ``method``; notifications read meanwhile go to ``notes``."""
        self._next_id += 1
        msg_id = self._next_id
        await self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        while True:
            msg = await self.receive()
            if msg.get("id") == msg_id and "method" not in msg:
                assert "result" in msg, msg
                return msg["result"]
            self.notes.append(msg)

    async def call_tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        assert not result.get("isError"), result
        structured: dict[str, Any] = result["structuredContent"]
        return structured

    async def next_note(self) -> dict[str, Any]:
        if self.notes:
            return self.notes.pop(0)
        return await self.receive()


def watchers(hub: HubService) -> int:
    return hub.registry.statistics()["watchers"]


@pytest.fixture
def servers_built(monkeypatch: pytest.MonkeyPatch) -> list[MCPServer[Any]]:
    """Every SDK ``MCPServer`` built in the test."""
    built: list[MCPServer[Any]] = []
    init = MCPServer.__init__

    def counted(self: MCPServer[Any], *args: Any, **kwargs: Any) -> None:
        built.append(self)
        init(self, *args, **kwargs)

    monkeypatch.setattr(MCPServer, "__init__", counted)
    return built


async def test_n_sessions_share_one_server_and_one_registry_watcher(
    hub: HubService, hub_config: HubConfig, servers_built: list[MCPServer[Any]]
) -> None:
    idle = watchers(hub)
    with trio.fail_after(60):
        sessions = [await Session.open(hub_config, f"agent-{i}", ["ask"]) for i in range(SESSIONS)]
        hive = HiveMcp.for_hub(hub)
        assert servers_built == [hive.server]  # built once, by the first session
        assert hive.updates.participants == SESSIONS
        assert watchers(hub) == idle + 1
        # Each session acts as its own agent on the one server.
        asked = [await s.call_tool("hivemind_ask_async", question="q?") for s in sessions]
        agents = [(await hub.registry.poll(a["ask_id"])).agent_id for a in asked]
        assert agents == [f"agent-{i}" for i in range(SESSIONS)]
        for s in sessions:
            await s.stream.aclose()
        await trio.testing.wait_all_tasks_blocked()  # the hub has seen them go
        assert hive.updates.participants == 0
        assert watchers(hub) == idle


async def test_the_one_watcher_tells_each_subscriber_its_own_and_outlives_its_host(
    hub: HubService, hub_config: HubConfig
) -> None:
    """The first session hosts the watcher; when it leaves, another goes on with the
    same watch: a prompt closed after that still reaches its subscriber."""
    idle = watchers(hub)
    with trio.fail_after(60):
        first = await Session.open(hub_config, "first", ["ask"])
        second = await Session.open(hub_config, "second", ["ask"])
        third = await Session.open(hub_config, "third", ["ask"])
        mine = await second.call_tool("hivemind_ask_async", question="second's?")
        theirs = await third.call_tool("hivemind_ask_async", question="third's?")
        for session, asked in ((second, mine), (third, theirs)):
            uri = f"hive://asks/{asked['ask_id']}"
            await session.request("resources/subscribe", {"uri": uri})
        await first.stream.aclose()
        await trio.testing.wait_all_tasks_blocked()
        hive = HiveMcp.for_hub(hub)
        assert hive.updates.participants == 2
        assert watchers(hub) == idle + 1

        await hub.registry.respond(mine["ask_id"], answer="yes", by="human")
        note = await second.next_note()
        assert note["method"] == "notifications/resources/updated"
        assert note["params"]["uri"] == f"hive://asks/{mine['ask_id']}"
        # third was not told of second's prompt: the next thing it hears is its own.
        await hub.registry.respond(theirs["ask_id"], answer="no", by="human")
        note = await third.next_note()
        assert note["params"]["uri"] == f"hive://asks/{theirs['ask_id']}"
        for s in (second, third):
            await s.stream.aclose()
