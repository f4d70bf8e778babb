"""One agent session of the hub's MCP server: who it acts as, which tools it offers,
how long its blocking tools wait.

The hub has one MCP server for all its sessions (server.py).  What differs from one
session to the next is an ``AgentSession``, and every request finds its own in the
context the SDK hands its handler: ``ServerRequestContext.lifespan_context``, the state
the SDK's serving loop was started with, which the hub gives per connection:

* a relayed session (``hive-rpc mcp``, stdio.py) is served with its own, made from
  ``hive/openMcp``'s params (the agent's name, its tool groups, Claude Code's session
  id, project dir and tool timeout);
* the Streamable HTTP endpoint and in-process clients are served with the server's
  default one, whose agent and tool groups each request names (``X-Hive-Agent``,
  ``X-Hive-Tools`` or the URL's query; identity.py, groups.py).

Like groups.py, which reads it, this file loads no SDK module when imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.mcpserver import Context

    from hive_rpc.faces.mcp.approve_tool import SaveRule
    from hive_rpc.faces.mcp.groups import ToolGroups
    from hive_rpc.faces.mcp.identity import Identity
    from hive_rpc.faces.mcp.server import HiveMcp

HUMAN_INPUT_TIMEOUT_S = 60.0
PROGRESS_EVERY_S = 10.0
APPROVE_TIMEOUT_S = 540.0
"""How long ``approve`` waits for the human before it denies (as long as the
permission hook waits by default)."""
CLIENT_MARGIN_S = 2.0
"""How long before the client's own tool timeout a blocking tool returns."""


class SessionSettings(TypedDict, total=False):
    """The figures and hooks a session may be given (``HiveMcp(...)`` for the default
    one, ``HiveMcp.session`` for a relayed one), named once for both; each is the
    ``AgentSession`` field of that name, whose default and meaning stand there."""

    human_input_timeout_s: float
    progress_every_s: float
    approve_timeout_s: float
    client_timeout_s: float | None
    save_rule: SaveRule | None
    project_dir: str | None


@dataclass(eq=False)
class AgentSession:
    """What one session's requests act with; made by ``HiveMcp.session``."""

    hive: HiveMcp
    """The hub's one MCP server, whose backend the tools call."""
    identity: Identity
    groups: ToolGroups
    human_input_timeout_s: float = HUMAN_INPUT_TIMEOUT_S
    progress_every_s: float = PROGRESS_EVERY_S
    approve_timeout_s: float = APPROVE_TIMEOUT_S
    client_timeout_s: float | None = None
    """The client's limit on one tool call, when known (Claude Code's
    ``MCP_TOOL_TIMEOUT``): progress does not extend it, so a blocking tool returns
    before it rather than be cut off."""
    save_rule: SaveRule | None = None
    """Adds the rule of a lasting ``approve`` answer as an approver; None: the answer
    allows once (approve_tool.py)."""
    project_dir: str | None = None
    """The agent's project (Claude Code's ``CLAUDE_PROJECT_DIR``), which a "this
    project" rule of ``approve`` covers."""
    descriptions: Mapping[str, str] = field(default_factory=dict)
    """Tool descriptions that say this session's own figures (``request_human_input``'s
    countdown), shown by ``tools/list`` in place of the registered ones (groups.py)."""

    def agent(self, ctx: Context[Any, Any]) -> str:
        """The agent the request behind ``ctx`` acts as (identity.py)."""
        return self.identity(ctx)

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
        """The hub's ``method`` (``HiveMcp.call``)."""
        return await self.hive.call(method, **params)


def session_of(ctx: Context[Any, Any] | ServerRequestContext[Any, Any]) -> AgentSession:
    """The session a tool's ``ctx`` (or a middleware's request context) belongs to."""
    from mcp.server.mcpserver import Context  # loaded by then: groups.py loads no SDK

    request = ctx.request_context if isinstance(ctx, Context) else ctx
    session = request.lifespan_context
    if not isinstance(session, AgentSession):
        raise TypeError(f"served without an AgentSession: {type(session).__name__}")
    return session
