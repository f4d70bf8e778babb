"""MCP tool groups: which of the hub's tools an agent's session offers.

Every tool an MCP server lists is read into the agent's context on every turn, used or
not; an agent that only asks the human needs six tools, not twenty.  So the tools
come in groups (the table below), a session offers the groups it was given, and
``ask`` is the default:

* stdio: ``hive-rpc mcp --tools ask,agora`` (fixed for the process, one per session);
* HTTP: the hub serves every session from one server, so each request names its own
  groups, as it names its agent: ``?tools=ask,agora`` on the endpoint's URL or an
  ``X-Hive-Tools`` header.

The choice is applied by a server middleware (the SDK's seam for it): ``tools/list``
shows only the enabled groups' tools, and ``tools/call`` of any other tool is refused
with JSON-RPC error -32602 naming the tool's group and how to enable it, rather than
the SDK's bare "Unknown tool".  Resources are not grouped.

The table and ``parse_groups`` import nothing heavy: the CLI checks ``--tools`` with
them before anything loads the MCP SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.shared.exceptions import MCPError

INVALID_PARAMS = -32602
"""JSON-RPC's code for bad parameters: what MCP answers for a tool it does not offer."""

GROUPS: Mapping[str, tuple[str, ...]] = {
    # An agent that asks the human: the recommended pair, waiting, withdrawing, and
    # the two blocking tools older prompts expect (seed 002's request_human_input,
    # the deprecated hivemind_ask).
    "ask": (
        "hivemind_ask_async",
        "hivemind_poll",
        "hivemind_await",
        "hivemind_cancel",
        "hivemind_ask",
        "request_human_input",
    ),
    # An agent that answers other agents' asks on the human's behalf.
    "coordinator": ("hivemind_respond", "hivemind_list_pending", "hivemind_await_ask"),
    # Dialogues between agents (docs/agora.md).
    "agora": ("agora_create", "agora_dispatch", "agora_status", "agora_list", "agora_abort"),
    # The terminals turns and events are typed into (also `hive-rpc ling register`).
    "lings": ("ling_register", "ling_list", "ling_remove"),
    # Parent/child events through the terminals.
    "events": ("report_to_parent", "answer_question"),
    # Task outcomes on the activity stream (docs/activity.md).
    "tasks": ("task_report",),
    # Claude Code's permission prompt tool (claude -p --permission-prompt-tool).
    "permissions": ("approve",),
}
ALL = "all"
"""Names every group."""
DEFAULT_GROUPS = frozenset({"ask"})
GROUP_OF: Mapping[str, str] = {tool: group for group, tools in GROUPS.items() for tool in tools}
COMPOSITE_TOOLS = frozenset({"approve"})
"""The tools that run several methods (``approve``: rule/check, hive/ask, hive/await,
rule/add), so no one row of the method table names them; every other tool is its
row's ``Method.mcp``."""


def parse_groups(text: str) -> frozenset[str]:
    """``"ask,agora"`` -> the groups; ``all`` names every group.  An unknown name is
    a ValueError that lists the valid ones."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f"name at least one tool group: {valid_names()}")
    unknown = [n for n in names if n != ALL and n not in GROUPS]
    if unknown:
        raise ValueError(
            f"unknown tool group{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; valid: {valid_names()}"
        )
    return frozenset(GROUPS) if ALL in names else frozenset(names)


def valid_names() -> str:
    return ", ".join([*GROUPS, ALL])


def _flag(groups: frozenset[str]) -> str:
    return ",".join(g for g in GROUPS if g in groups)


def _refusal(message: str, data: Any = None) -> MCPError:
    from mcp.shared.exceptions import MCPError

    return MCPError(INVALID_PARAMS, message, data)


class ToolGroups:
    """The server middleware that offers only the enabled groups' tools.

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

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method == "tools/call" and ctx.request_id is not None:
            name = (ctx.params or {}).get("name")
            group = GROUP_OF.get(name) if isinstance(name, str) else None
            enabled = self.enabled(ctx)
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
            enabled = self.enabled(ctx)
            result = await call_next(ctx)
            if isinstance(result, dict) and isinstance(result.get("tools"), list):
                result["tools"] = [
                    t for t in result["tools"] if GROUP_OF.get(t.get("name")) in enabled
                ]
            return result
        return await call_next(ctx)
