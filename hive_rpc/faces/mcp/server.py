"""``HiveMcp``: the hub's one MCP server, for every agent session.

The tools are plain functions written once, against a ``Backend`` with a single
``call(method, params)``, and added once to one ``MCPServer`` per hub (``for_hub``).
Both MCP transports run in the hub on ``LocalBackend`` (the hub's service,
in-process) and share it: the Streamable HTTP endpoint (``http.py``) and the session
of each ``hive-rpc mcp`` relay (``stdio.py``).  Either way the hub holds the prompt,
so an answer outlives any client's tool-call timeout.

What differs from one session to another (the agent it acts as, its tool groups, how
long its blocking tools wait) is an ``AgentSession`` (session.py) that each request
reads from its own context; what sessions are told without asking comes from the
hub's one registry watcher (updates.py).  So a new agent session costs the hub a small
object, not a server: building one took 40-90 ms and kept ~455 KiB, one registry
watcher each (bench/mcp_session_cost.py).

Two ways to wait, because MCP clients abort a tool that is silent for too long:

* non-blocking: ``hivemind_ask_async`` returns an id at once; ``hivemind_poll`` or
  ``hivemind_await`` (a long poll) collect the answer later;
* blocking (``hivemind_ask``, ``request_human_input``, ``hivemind_await``,
  ``hivemind_await_ask``): a heartbeat sends ``notifications/progress`` every
  ``PROGRESS_EVERY_S`` while waiting, and MCP cancellation of the call withdraws the
  prompt so the editors take it off the screen.

Identity: every request acts as the agent its session's ``Identity`` names.
``poll``, ``await``, ``cancel`` and the ``hive://asks/{ask_id}`` resource see only
that agent's prompts; the coordinator tools (``respond``, ``list_pending``,
``await_ask``) see all.

Groups: a session offers only the tool groups it was given (``groups.py``; ``ask`` by
default), so an agent that only asks is not handed the Agora's tools.

Hints: each tool carries MCP annotations saying whether it only reads (``hints.py``,
named where the tool is declared), so hosts can run polls and lists without asking the
human.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Unpack

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus

from hive_rpc import __version__
from hive_rpc.faces.backends import Backend, LocalBackend
from hive_rpc.faces.mcp import prompt_tools
from hive_rpc.faces.mcp.coordinator_news import CoordinatorNews
from hive_rpc.faces.mcp.groups import ToolGroups, offer
from hive_rpc.faces.mcp.identity import Identity
from hive_rpc.faces.mcp.resources import AskResources
from hive_rpc.faces.mcp.session import (
    APPROVE_TIMEOUT_S,
    CLIENT_MARGIN_S,
    HUMAN_INPUT_TIMEOUT_S,
    PROGRESS_EVERY_S,
    AgentSession,
    SessionSettings,
)
from hive_rpc.faces.mcp.tools import TABLES
from hive_rpc.faces.mcp.updates import HubUpdates, OpenWatch

if TYPE_CHECKING:
    from hive_rpc.service import HubService

__all__ = [
    "APPROVE_TIMEOUT_S",
    "CLIENT_MARGIN_S",
    "HUMAN_INPUT_TIMEOUT_S",
    "INSTRUCTIONS",
    "PROGRESS_EVERY_S",
    "TABLES",
    "AgentSession",
    "HiveMcp",
]

INSTRUCTIONS = """\
hive-rpc lets you ask the human a question without blocking.
Recommended: hivemind_ask_async(question, options?) returns an ask_id at once; keep
working, then hivemind_poll(ask_id) (or hivemind_await(ask_id, timeout_s) to wait).
An answer is never lost: it is kept until you collect it.  status "expired" means
nobody answered in time; it is not a "no".
"""


class HiveMcp:
    """The hub's MCP server: the tools, added once; the ``hive://asks`` resource and
    its subscriptions, every session's; the coordinators' news; and the hub's one
    registry watcher, run while some face serves (``run_updates``).

    ``identity``, ``groups`` and the figures make the server's default session: the
    HTTP endpoint's, and an in-process client's (``Client(hive.server)``).  A relayed
    session gets its own (``session``)."""

    def __init__(
        self,
        backend: Backend,
        identity: Identity | None = None,
        *,
        groups: ToolGroups | None = None,
        open_watch: OpenWatch | None = None,
        **settings: Unpack[SessionSettings],
    ) -> None:
        self.backend = backend
        self.default = self.session(identity or Identity(), groups=groups, **settings)
        self.bus = InMemorySubscriptionBus()
        self.server: MCPServer[AgentSession] = MCPServer(
            "hive-rpc",
            version=__version__,
            instructions=INSTRUCTIONS,
            subscriptions=self.bus,
            middleware=[offer],
            lifespan=self._default_session,
        )
        for table in TABLES:
            table.register(self.server)
        self.resources = AskResources(self)
        self.news = CoordinatorNews(self)
        self.updates = HubUpdates(open_watch, self.resources.tell_closed, self.news)

    @classmethod
    def for_hub(cls, service: HubService) -> HiveMcp:
        """The hub's one server, built on first use (in a worker thread, by stdio.py's
        caller: ~40-90 ms of pydantic models for the tools)."""
        with _BUILDING:
            hive = _HUBS.get(service)
            if hive is None:
                hive = _HUBS[service] = cls(
                    LocalBackend(service), open_watch=service.registry.watch
                )
            return hive

    def session(
        self,
        identity: Identity,
        *,
        groups: ToolGroups | None = None,
        **settings: Unpack[SessionSettings],
    ) -> AgentSession:
        """A session's settings (a relayed one's: stdio.session_hive)."""
        descriptions = {}
        human_input_s = settings.get("human_input_timeout_s", HUMAN_INPUT_TIMEOUT_S)
        if human_input_s != HUMAN_INPUT_TIMEOUT_S:
            descriptions[prompt_tools.request_human_input.__name__] = (
                prompt_tools.human_input_description(human_input_s)
            )
        return AgentSession(
            self, identity, groups or ToolGroups(), descriptions=descriptions, **settings
        )

    @asynccontextmanager
    async def _default_session(
        self, server: MCPServer[AgentSession]
    ) -> AsyncIterator[AgentSession]:
        """The server's lifespan state: what a connection served without a session of
        its own reads (session.py)."""
        yield self.default

    def within_client(self, seconds: float) -> float:
        """The default session's ``AgentSession.within_client``."""
        return self.default.within_client(seconds)

    def approve_wait_s(self) -> float:
        return self.default.approve_wait_s()

    async def call(self, method: str, **params: Any) -> Any:
        """The hub's ``method``, with the parameters that are not None, as the wire
        would carry them (a tuple, ``Ask.choices``, as a list: the in-hub backend
        checks the values themselves, and a tuple is no JSON array)."""
        return await self.backend.call(
            method,
            {k: list(v) if isinstance(v, tuple) else v for k, v in params.items() if v is not None},
        )

    async def run_updates(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Take part, until cancelled, in telling subscribers of ``hive://asks/ID``
        whenever a prompt is closed, and dialogues' coordinators what they should act
        on: one watcher and one news poll for the hub, however many faces take part
        (updates.py).  Every serving face runs this while it serves."""
        await self.updates.take_part(task_status=task_status)


_HUBS: weakref.WeakKeyDictionary[HubService, HiveMcp] = weakref.WeakKeyDictionary()
_BUILDING = threading.Lock()
"""Sessions' first builds run in worker threads: two at once must not build two."""
