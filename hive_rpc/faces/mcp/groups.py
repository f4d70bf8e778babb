"""MCP tool groups applied to a session: the server middleware (``offer``) that offers
only the enabled groups' tools.  The groups' names and their parser are
core/tool_groups.py, each group's tools are read from the tools' declarations
(tools.py); a session's groups (``AgentSession.groups``)
come from:

* stdio: ``hive-rpc mcp --tools ask,agora`` (fixed for the session, sent by the relay
  in ``hive/openMcp``);
* HTTP: the endpoint's sessions share the server's default session, so each request
  names its own groups, as it names its agent: ``?tools=ask,agora`` on the endpoint's
  URL or an ``X-Hive-Tools`` header.

``tools/list`` shows only the enabled groups' tools, and ``tools/call`` of any other
tool is refused with JSON-RPC error -32602 naming the tool's group and how to enable
it, rather than the SDK's bare "Unknown tool".  Resources are not grouped.  The list
also shows the session's own figures in a description that says them
(``AgentSession.descriptions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hive_rpc.core.tool_groups import DEFAULT_GROUPS, GROUP_NAMES, parse_groups
from hive_rpc.faces.mcp.session import session_of
from hive_rpc.faces.mcp.tools import GROUP_OF
from hive_rpc.protocol.jsonrpc import INVALID_PARAMS

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.shared.exceptions import MCPError


def _flag(groups: frozenset[str]) -> str:
    return ",".join(g for g in GROUP_NAMES if g in groups)


def _refusal(message: str, data: Any = None) -> MCPError:
    from mcp.shared.exceptions import MCPError

    return MCPError(INVALID_PARAMS, message, data)


class ToolGroups:
    """The tool groups a session offers.

    ``fixed``: the groups of every request (``hive-rpc mcp --tools``).  Without it,
    an HTTP request's ``X-Hive-Tools`` header or ``?tools=`` names them, else
    ``DEFAULT_GROUPS``.
    """

    def __init__(self, fixed: frozenset[str] | None = None) -> None:
        self.fixed = fixed

    def enabled(self, ctx: ServerRequestContext[Any, Any]) -> frozenset[str]:
        if self.fixed is not None:
            return self.fixed
        request = ctx.request
        if request is not None:
            named = request.headers.get("x-hive-tools") or request.query_params.get("tools")
            if named:
                try:
                    return parse_groups(named)
                except ValueError as e:
                    raise _refusal(f"X-Hive-Tools / ?tools=: {e}") from None
        return DEFAULT_GROUPS


async def offer(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """The server middleware: only the session's groups' tools are listed and called."""
    if ctx.method == "tools/call" and ctx.request_id is not None:
        name = (ctx.params or {}).get("name")
        group = GROUP_OF.get(name) if isinstance(name, str) else None
        enabled = session_of(ctx).groups.enabled(ctx)
        if group is not None and group not in enabled:
            wanted = _flag(enabled | {group})
            raise _refusal(
                f"tool {name!r} is in the tool group {group!r}, which this server does "
                f"not offer (it offers: {_flag(enabled)}); enable it with "
                f"`hive-rpc mcp --tools {wanted}` (over HTTP: ?tools={wanted})",
                {"tool": name, "group": group, "enabled": sorted(enabled)},
            )
        return await call_next(ctx)
    if ctx.method == "tools/list" and ctx.request_id is not None:
        session = session_of(ctx)
        enabled = session.groups.enabled(ctx)
        result = await call_next(ctx)
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            own = session.descriptions
            result["tools"] = [
                {**t, "description": own[t["name"]]} if t.get("name") in own else t
                for t in result["tools"]
                if GROUP_OF.get(t.get("name")) in enabled
            ]
        return result
    return await call_next(ctx)
