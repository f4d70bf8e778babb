"""``HiveMcp``: the MCP server for one backend.

The tools are written once, against a ``Backend`` with a single ``call(method,
params)``.  Both MCP transports run in the hub on ``LocalBackend`` (the hub's service,
in-process): the Streamable HTTP endpoint (``http.py``) and the session of each
``hive-rpc mcp`` relay (``stdio.py``, one per agent session).  Either way the hub
holds the prompt, so an answer outlives any client's tool-call timeout.

Two ways to wait, because MCP clients abort a tool that is silent for too long:

* non-blocking: ``hivemind_ask_async`` returns an id at once; ``hivemind_poll`` or
  ``hivemind_await`` (a long poll) collect the answer later;
* blocking (``hivemind_ask``, ``request_human_input``, ``hivemind_await``,
  ``hivemind_await_ask``): a heartbeat sends ``notifications/progress`` every
  ``PROGRESS_EVERY_S`` while waiting, and MCP cancellation of the call withdraws the
  prompt so the editors take it off the screen.

Identity: every request acts as the agent ``Identity`` names.  ``poll``, ``await``,
``cancel`` and the ``hive://asks/{ask_id}`` resource see only that agent's prompts;
the coordinator tools (``respond``, ``list_pending``, ``await_ask``) see all.

Groups: a session offers only the tool groups it was given (``groups.py``; ``ask`` by
default), so an agent that only asks is not handed the Agora's tools.

Hints: each tool carries MCP annotations saying whether it only reads (``hints.py``),
so hosts can run polls and lists without asking the human.
"""

from __future__ import annotations

from typing import Any

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus

from hive_rpc import __version__
from hive_rpc.backends import Backend
from hive_rpc.faces.mcp import agora_tools, approve_tool, prompt_tools, resources
from hive_rpc.faces.mcp.approve_tool import SaveRule
from hive_rpc.faces.mcp.coordinator_news import CoordinatorNews
from hive_rpc.faces.mcp.groups import GROUP_OF, ToolGroups
from hive_rpc.faces.mcp.hints import HINTS
from hive_rpc.faces.mcp.identity import Identity

HUMAN_INPUT_TIMEOUT_S = 60.0
PROGRESS_EVERY_S = 10.0
APPROVE_TIMEOUT_S = 540.0
"""How long ``approve`` waits for the human before it denies (as long as the
permission hook waits by default)."""
CLIENT_MARGIN_S = 2.0
"""How long before the client's own tool timeout a blocking tool returns."""

INSTRUCTIONS = """\
hive-rpc lets you ask the human a question without blocking.
Recommended: hivemind_ask_async(question, options?) returns an ask_id at once; keep
working, then hivemind_poll(ask_id) (or hivemind_await(ask_id, timeout_s) to wait).
An answer is never lost: it is kept until you collect it.  status "expired" means
nobody answered in time; it is not a "no".
"""


class HiveMcp:
    """The MCPServer for one backend, plus the task that tells subscribers when
    answers land (``run_updates``, to be started in the caller's nursery)."""

    def __init__(
        self,
        backend: Backend,
        identity: Identity | None = None,
        *,
        groups: ToolGroups | None = None,
        human_input_timeout_s: float = HUMAN_INPUT_TIMEOUT_S,
        progress_every_s: float = PROGRESS_EVERY_S,
        approve_timeout_s: float = APPROVE_TIMEOUT_S,
        client_timeout_s: float | None = None,
        save_rule: SaveRule | None = None,
        project_dir: str | None = None,
    ) -> None:
        self.backend = backend
        self.identity = identity or Identity()
        self.human_input_timeout_s = human_input_timeout_s
        self.progress_every_s = progress_every_s
        self.approve_timeout_s = approve_timeout_s
        self.client_timeout_s = client_timeout_s
        """The client's limit on one tool call, when known (Claude Code's
        ``MCP_TOOL_TIMEOUT``): progress does not extend it, so a blocking tool
        returns before it rather than be cut off."""
        self.save_rule = save_rule
        """Adds the rule of a lasting ``approve`` answer as an approver; None: the
        answer allows once (approve_tool.py)."""
        self.project_dir = project_dir
        """The agent's project (Claude Code's ``CLAUDE_PROJECT_DIR``), which a
        "this project" rule of ``approve`` covers."""
        self.bus = InMemorySubscriptionBus()
        self.groups = groups or ToolGroups()
        self.server = MCPServer(
            "hive-rpc",
            version=__version__,
            instructions=INSTRUCTIONS,
            subscriptions=self.bus,
            middleware=[self.groups],
        )
        self.news = CoordinatorNews(self)
        prompt_tools.register(self)
        agora_tools.register(self)
        approve_tool.register(self)
        self.resources = resources.AskResources(self)
        ungrouped = resources.tool_names(self.server) - set(GROUP_OF)
        assert not ungrouped, f"tools missing from mcp.groups.GROUPS: {sorted(ungrouped)}"
        for tool in resources.tools(self.server):
            tool.annotations = HINTS[tool.name]  # KeyError: a tool missing from hints.py

    def within_client(self, seconds: float) -> float:
        """``seconds``, or less: what is left before the client's tool timeout (less
        a margin) when that comes first.  A wait of this long ends in a result the
        agent can use, where the client's timeout would end it in an error."""
        if self.client_timeout_s is None:
            return seconds
        limit = max(self.client_timeout_s / 2, self.client_timeout_s - CLIENT_MARGIN_S)
        return min(seconds, limit)

    def approve_wait_s(self) -> float:
        return self.within_client(self.approve_timeout_s)

    async def call(self, method: str, **params: Any) -> Any:
        """The hub's ``method``, with the parameters that are not None, as the wire
        would carry them (a tuple, ``Ask.choices``, as a list: the in-hub backend
        checks the values themselves, and a tuple is no JSON array)."""
        return await self.backend.call(
            method,
            {k: list(v) if isinstance(v, tuple) else v for k, v in params.items() if v is not None},
        )

    async def run_updates(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Tell subscribers of ``hive://asks/ID`` whenever a prompt is closed, and
        dialogues' coordinators what they should act on (coordinator_news.py)."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self.news.run)
            await self.resources.run_updates(task_status=task_status)
