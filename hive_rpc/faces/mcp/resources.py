"""``hive://asks/{ask_id}``: one of the agent's asks as a resource, and the
subscriptions that tell its readers when it is answered, expires or is cancelled.

This is the only module that touches the MCP SDK's private attributes, with
coordinator_news.py, which reaches ``ServerSession._connection`` as below (written
against mcp 2.3.0; check them when the SDK is upgraded):

* ``MCPServer._lowlevel_server``: legacy sessions (protocol 2025-11-25) subscribe
  with ``resources/subscribe``, for which MCPServer has no public hook, so the
  handlers go on the low-level server; the stdio entry point runs that server itself
  on its own trio streams (docs/dev/mcp-sdk-notes.md, section 8);
* ``ServerSession._connection``: the connection a legacy subscriber's updates go to,
  with the exit stack that forgets it when the session ends;
* ``MCPServer._tool_manager``: the names of the tools registered, read synchronously
  when the server is built to check that each belongs to a tool group
  (``MCPServer.list_tools`` is async).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.tools import Tool
from mcp.server.subscriptions import ResourceUpdated
from mcp_types import EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from hive_rpc.core.errors import HiveError

if TYPE_CHECKING:
    from hive_rpc.faces.mcp.server import HiveMcp

ASK_URI = "hive://asks/{ask_id}"


def lowlevel(server: MCPServer) -> Server[Any]:
    """The SDK's low-level server under ``server`` (private: see above)."""
    return server._lowlevel_server


def tools(server: MCPServer) -> list[Tool]:
    """The tools registered on ``server`` (private: see above)."""
    return server._tool_manager.list_tools()


def tool_names(server: MCPServer) -> set[str]:
    """The names of the tools registered on ``server`` (private: see above)."""
    return {t.name for t in tools(server)}


class AskResources:
    """Registers the ``ask`` resource and the legacy subscription handlers on
    ``hive.server``; ``run_updates`` sends the updates."""

    def __init__(self, hive: HiveMcp) -> None:
        self.hive = hive
        self._subscribers: dict[str, set[Any]] = {}
        me = hive.identity

        @hive.server.resource(
            ASK_URI,
            name="ask",
            description="One of your asks as a JSON record; subscribe to be told when it "
            "is answered, expires or is cancelled.",
            mime_type="application/json",
        )
        async def ask_resource(ask_id: str, ctx: Context) -> dict[str, Any]:
            try:
                record: dict[str, Any] = await hive.call("hive/poll", id=ask_id, agent_id=me(ctx))
            except HiveError as e:
                raise ResourceError(e.message) from None
            return record

        low = lowlevel(hive.server)

        async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
            conn, uri = ctx.session._connection, str(params.uri)
            subscribers = self._subscribers.setdefault(uri, set())
            if conn not in subscribers:
                subscribers.add(conn)
                conn.exit_stack.callback(lambda: self._forget(uri, conn))
            return EmptyResult()

        async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
            self._forget(str(params.uri), ctx.session._connection)
            return EmptyResult()

        low.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
        low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)

    def _forget(self, uri: str, conn: Any) -> None:
        subscribers = self._subscribers.get(uri)
        if subscribers is not None:
            subscribers.discard(conn)
            if not subscribers:
                del self._subscribers[uri]

    async def run_updates(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Send notifications/resources/updated for ``hive://asks/ID`` whenever a prompt
        is closed: to legacy subscribers directly, and through the subscription bus
        to modern ``subscriptions/listen`` streams."""
        async with self.hive.backend.closed_prompts() as closed:
            task_status.started()
            async for ask_id in closed:
                uri = ASK_URI.format(ask_id=ask_id)
                for conn in list(self._subscribers.get(uri, ())):
                    await conn.send_resource_updated(uri)
                await self.hive.bus.publish(ResourceUpdated(uri=uri))
