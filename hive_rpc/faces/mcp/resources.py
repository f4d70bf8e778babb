"""``hive://asks/{ask_id}``: one of the agent's asks as a resource, and the
subscriptions that tell its readers when it is answered, expires or is cancelled;
``hive://sessions/{which}``: the agent sessions with their state.

The hub's one server keeps the subscriptions of all its sessions, by connection, and
is told each closed prompt once (``tell_closed``, from the hub's one registry watcher:
updates.py), which it sends to that prompt's subscribers only.

This is the only module that touches the MCP SDK's private attributes, with
coordinator_news.py, which reaches ``ServerSession._connection`` as below (written
against mcp 2.3.0; check them when the SDK is upgraded):

* ``MCPServer._lowlevel_server``: legacy sessions (protocol 2025-11-25) subscribe
  with ``resources/subscribe``, for which MCPServer has no public hook, so the
  handlers go on the low-level server; the stdio entry point serves that server
  itself on its own trio streams (docs/dev/mcp-sdk-notes.md, section 8);
* ``ServerSession._connection``: the connection a legacy subscriber's updates go to,
  with the exit stack that forgets it when the session ends.
"""

from __future__ import annotations

import logging
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

import trio
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.subscriptions import ResourceUpdated
from mcp_types import EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from hive_rpc.core.errors import HiveError
from hive_rpc.faces.mcp.session import session_of

if TYPE_CHECKING:
    from hive_rpc.faces.mcp.server import HiveMcp

log = logging.getLogger(__name__)

ASK_URI = "hive://asks/{ask_id}"
SEND_BOUND_S = 2.0
"""How long telling one subscriber may take: the hub's one watcher tells every
session in turn, so a relay that stopped reading must not hold up the others (it is
disconnected soon after: rpc_connection.FrameWriter)."""


def lowlevel(server: MCPServer) -> Server[Any]:
    """The SDK's low-level server under ``server`` (private: see above)."""
    return server._lowlevel_server


class LegacySessions:
    """Legacy sessions' connections (``ServerSession._connection``: see above) under
    a key, a resource URI here, a coordinator in coordinator_news.py.  Each is
    forgotten when its session ends, by its exit stack, and a key left with none is
    dropped: both tables are every session's, and live as long as the hub."""

    def __init__(self) -> None:
        self._by_key: dict[str, set[Any]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_key)

    def get(self, key: str) -> AbstractSet[Any]:
        return self._by_key.get(key, frozenset())

    def add(self, key: str, conn: Any) -> bool:
        """Keep ``conn`` under ``key`` until its session ends; False if it was."""
        conns = self._by_key.setdefault(key, set())
        if conn in conns:
            return False
        conns.add(conn)
        conn.exit_stack.callback(lambda: self.discard(key, conn))
        return True

    def discard(self, key: str, conn: Any) -> None:
        conns = self._by_key.get(key)
        if conns is not None:
            conns.discard(conn)
            if not conns:
                del self._by_key[key]


async def ask_resource(ask_id: str, ctx: Context) -> dict[str, Any]:
    """``hive://asks/{ask_id}``: the ask's record, if it is the session's agent's."""
    session = session_of(ctx)
    try:
        record: dict[str, Any] = await session.call(
            "hive/poll", id=ask_id, agent_id=session.agent(ctx)
        )
    except HiveError as e:
        raise ResourceError(e.message) from None
    return record


SESSIONS_URI = "hive://sessions/{which}"
EVERY_SESSION = "all"


async def sessions_resource(which: str, ctx: Context) -> list[dict[str, Any]]:
    """``hive://sessions/all`` and ``hive://sessions/AGENT``: the agent sessions and
    their state (docs/protocol.md "Agent sessions").  A coordinator's session (the
    ``coordinator`` tool group: it answers other agents on the human's behalf) reads
    every one, or any one; any other agent its own only, whichever it names, as
    ``hive/sessions`` with its agent id gives it: agents are untrusted, and another
    agent's project and prompts are not theirs to read."""
    session = session_of(ctx)
    try:
        if "coordinator" in session.groups.enabled(ctx.request_context):
            every: list[dict[str, Any]] = await session.call("hive/sessions")
            return every if which == EVERY_SESSION else [s for s in every if s["agent_id"] == which]
        own = await session.call("hive/sessions", agent_id=session.agent(ctx))
    except HiveError as e:
        raise ResourceError(e.message) from None
    return [own] if own is not None and which in (EVERY_SESSION, own["agent_id"]) else []


class AskResources:
    """Registers the ``ask`` resource and the legacy subscription handlers on
    ``hive.server``; ``tell_closed`` sends the updates."""

    def __init__(self, hive: HiveMcp) -> None:
        self.hive = hive
        self._subscribers = LegacySessions()
        """Legacy subscribers' connections by URI."""
        hive.server.resource(
            ASK_URI,
            name="ask",
            description="One of your asks as a JSON record; subscribe to be told when it "
            "is answered, expires or is cancelled.",
            mime_type="application/json",
        )(ask_resource)
        hive.server.resource(
            SESSIONS_URI,
            name="sessions",
            description="The agent sessions the human runs (which: all, or an agent id), each "
            "with its state (waiting on the human, working, idle, gone) and what it waits on; "
            "a coordinator reads every one, any other agent its own.",
            mime_type="application/json",
        )(sessions_resource)
        low = lowlevel(hive.server)
        low.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        low.add_request_handler(
            "resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe
        )

    async def _subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        self._subscribers.add(str(params.uri), ctx.session._connection)
        return EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        self._subscribers.discard(str(params.uri), ctx.session._connection)
        return EmptyResult()

    async def tell_closed(self, ask_id: str) -> None:
        """Send notifications/resources/updated for ``hive://asks/ID``, closed: to its
        legacy subscribers directly (each within ``SEND_BOUND_S``), and through the
        subscription bus to modern ``subscriptions/listen`` streams."""
        uri = ASK_URI.format(ask_id=ask_id)
        for conn in list(self._subscribers.get(uri)):
            with trio.move_on_after(SEND_BOUND_S):
                try:
                    await conn.send_resource_updated(uri)
                except Exception as e:  # best effort: a closing session
                    log.debug("could not tell a subscriber of %s: %s", uri, e)
        await self.hive.bus.publish(ResourceUpdated(uri=uri))
