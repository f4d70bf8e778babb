"""Telling a dialogue's coordinator, on its own MCP session, what it should act on.

When a ling is dead or a stranger takes a turn, the coordinator is to be told, so
that it can intervene or end the dialogue.  The coordinator is the agent that
called ``agora_create``; the hub names it in the dialogue's events and keeps the
ones it should hear (``agora/news``: consensus, timeout, absent or unavailable
participants, strangers' turns, aborts).  Here, every session that created a
dialogue is remembered under its agent id, and the hub's one task (run by updates.py
for all its sessions) long-polls ``agora/news`` while some are, and sends each event
naming one of those ids to their sessions as a ``notifications/message``
(level ``warning`` for trouble, ``info`` for an ending; logger ``hive-rpc.agora``;
``data`` the event, whose ``message`` says it in words).  A session that dispatched a
turn is remembered the same way under the turn's sender, and told when that turn
could not be delivered after its result said ``queued`` (the event names it as
``sender``).

Only sessions on a handshake protocol version (2025-11-25 and before) can be told
so: from 2026-07-28 on the spec forbids a ``notifications/message`` outside the
request it belongs to (the SDK's ``Connection.log`` drops it), so those
coordinators follow their dialogues with ``agora_status`` or the activity stream,
whose entries name them too.

Like resources.py, this reaches the SDK's private ``ServerSession._connection``
(the connection to write to, with the exit stack that forgets it when the session
ends); the logging calls are deprecated by the SDK, hence the warning filter.

The poll asks for every coordinator's news and picks here: a poll naming the
coordinators of the moment would move past the news of one remembered while it
waits (``agora/news`` answers with the last event it looked at).
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any

import trio
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from hive_rpc.faces.mcp.resources import LegacySessions

if TYPE_CHECKING:
    from hive_rpc.faces.mcp.server import HiveMcp

log = logging.getLogger(__name__)

LOGGER = "hive-rpc.agora"
WAIT_S = 30.0
"""One long poll of ``agora/news``."""
RETRY_S = 2.0
"""After a failed poll (the hub away), wait this long before the next."""
SEND_BOUND_S = 2.0
"""How long telling one session may take: the one task tells every session in turn,
so a relay that stopped reading must not hold up the others."""


class CoordinatorNews:
    """The sessions of coordinators, every session's, and the task that tells them."""

    def __init__(self, hive: HiveMcp) -> None:
        self.hive = hive
        self._connections = LegacySessions()
        """Coordinators' sessions by agent id."""
        self._changed = trio.Event()
        self._since: int | None = None
        """The last news seen; None until the first coordinator comes."""

    async def remember(self, ctx: Context, coordinator: str) -> bool:
        """The session behind ``ctx`` is about to create a dialogue as
        ``coordinator`` (or dispatch a turn as its sender): tell it that dialogue's
        news (that turn's) from now on.  False when its protocol cannot be told
        outside a request (see the module)."""
        conn = ctx.session._connection
        if conn.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return False
        if self._since is None:  # older news is not this process's to tell
            self._since = (await self.hive.call("agora/news", since=0))["last"]
        if self._connections.add(coordinator, conn):
            self._changed.set()
            self._changed = trio.Event()
        return True

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Long-poll ``agora/news`` while some coordinator has a session; tell it.  Run
        by one task at a time (updates.py); a new one goes on from the last news seen."""
        task_status.started()
        while True:
            if not self._connections or self._since is None:
                await self._changed.wait()
                continue
            try:
                got = await self.hive.call("agora/news", since=self._since, wait_s=WAIT_S)
            except Exception as e:  # the hub is away or restarting: try again
                log.debug("agora/news: %s", e)
                await trio.sleep(RETRY_S)
                continue
            self._since = got["last"]
            for event in got["events"]:
                await self._tell(event)

    async def _tell(self, event: dict[str, Any]) -> None:
        level = "warning" if event.get("level") == "warn" else "info"
        conns: list[Any] = []
        for name in (event.get("coordinator"), event.get("sender")):
            conns += [c for c in self._connections.get(name or "") if c not in conns]
        for conn in conns:
            with warnings.catch_warnings(), trio.move_on_after(SEND_BOUND_S):
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                try:
                    await conn.log(level, event, LOGGER)
                except Exception as e:  # best effort: a closing session
                    log.debug("could not tell %s: %s", event.get("coordinator"), e)
