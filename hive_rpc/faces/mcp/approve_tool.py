"""The tool ``approve``: Claude Code's permission requests in ``claude -p``, answered by
the human from an editor (``claude -p ... --permission-prompt-tool
mcp__hive-rpc__approve``; docs/mcp.md, docs/claude-code.md).

Claude Code (2.1.328, measured) calls it with ``{"tool_name", "input",
"tool_use_id"}`` for each tool use that needs permission, and reads its answer from
exactly one text block holding ``{"behavior": "allow", "updatedInput": ...}`` or
``{"behavior": "deny", "message": ...}``: a result that also carries
``structuredContent`` is refused as invalid, so this tool, unlike the others,
declares no output schema.

It decides as the ``PermissionRequest`` hook does (core/claude_code.py): an answer
rule first (``rule/check``), else an urgent permission prompt with the same question
and choices, a lasting answer saving its rule.  Where the hook prints nothing so that
Claude Code asks in its own dialog, this tool denies, saying why: a ``-p`` run has no
dialog, and Claude Code turns an error result into a refusal too, but one that tells
the model less.  So nobody answering in time, a dismissed question, a lost hub or a
bug all deny; nothing is ever allowed by default.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent

from hive_rpc.client.async_client import ask_until_closed
from hive_rpc.core.claude_code import (
    NoRule,
    PermissionRequest,
    approve_reply,
    human_decision,
    lasting_rule,
    no_decision,
    permission_ask,
    rule_check_params,
    rule_decision,
)
from hive_rpc.core.errors import HiveError
from hive_rpc.faces.mcp.hints import ADDS
from hive_rpc.faces.mcp.session import AgentSession, session_of
from hive_rpc.faces.mcp.tool_table import ToolTable
from hive_rpc.rpc.dispatch import error_for
from hive_rpc.service.approver import APPROVER

if TYPE_CHECKING:
    from hive_rpc.service import HubService

log = logging.getLogger(__name__)

SaveRule = Callable[[dict[str, Any]], Awaitable[str | None]]
"""Adds an answer rule as an approver (``rule/add`` wants one); None once saved, else
why it was not.  The agent's own session is never an approver (service/approver.py),
so the entry point gives a way that is, used for this only (``hub_rules``)."""


def hub_rules(service: HubService) -> SaveRule:
    """Adds the rule of a lasting answer by a direct call of the hub's service, as an
    approver for that one call only (``APPROVER`` is set in the calling task's own
    context, which no other request shares).  What keeps an agent from adding rules
    of its own is ``from_prompt``: the hub adds a rule only if it matches the
    permission prompt the human answered with that decision (service/rules.py)."""

    async def save(params: dict[str, Any]) -> str | None:
        if params.get("from_prompt") is None:
            return "a rule from approve names the prompt the human answered"
        token = APPROVER.set(True)
        try:
            await service.call("rule/add", params)
        except HiveError as e:
            return e.message
        finally:
            APPROVER.reset(token)
        return None

    return save


def reply(text: str) -> CallToolResult:
    """The one text block Claude Code reads; nothing structured beside it."""
    return CallToolResult(content=[TextContent(type="text", text=text)])


async def ask_and_wait(
    session: AgentSession, request: PermissionRequest, wait_s: float
) -> dict[str, Any]:
    """Ask the permission question and wait up to ``wait_s`` for it to close
    (``ask_until_closed``: withdrawn, by the agent, if still pending when the wait
    ends, as when Claude Code cancelled the call or went away)."""
    ask = permission_ask(request, timeout_s=wait_s, home=os.environ.get("HOME"))

    async def call(method: str, params: dict[str, Any]) -> Any:
        return await session.call(method, **params)

    return await ask_until_closed(call, ask, wait_s, by=ask.agent_id)


async def decide(session: AgentSession, request: PermissionRequest) -> dict[str, Any]:
    """A rule's decision, else the human's (saving the rule a lasting answer asks
    for), else a deny saying why there is none."""
    tool = request.tool_name
    params = rule_check_params(request)
    if params is not None:
        try:
            checked = await session.call("rule/check", **params)
        except HiveError as e:
            if e.kind != "method_not_found":  # a hub older than rules: ask
                raise
            checked = None
        if checked is not None:
            return rule_decision(checked, tool)
    record = await ask_and_wait(session, request, session.approve_wait_s())
    decision = human_decision(record, tool)
    if decision is None:
        return no_decision(record, tool, "nobody answered in time")
    try:
        rule = lasting_rule(request, record)
    except NoRule as e:
        log.warning("allowed once: %s", e)
        rule = None
    if rule is not None:
        save = session.save_rule
        why = await save(rule) if save is not None else "no approver connection here"
        if why is not None:
            log.warning("allowed once: the rule %s was not saved: %s", rule["pattern"], why)
    return decision


TOOLS = ToolTable()


@TOOLS.tool(
    group="permissions",
    description=(
        "Claude Code's permission prompt tool (claude -p --permission-prompt-tool "
        "mcp__hive-rpc__approve): asks the human, in their editor, whether a tool "
        "may run, and returns Claude Code's decision JSON. Answer rules decide "
        "first; no answer in time denies."
    ),
    hints=ADDS,
    structured_output=False,
    guard=False,
    composite=True,
)
async def approve(
    ctx: Context,
    tool_name: str,
    input: dict[str, Any],
    tool_use_id: str | None = None,
) -> CallToolResult:
    session = session_of(ctx)
    request = PermissionRequest(
        tool_name=tool_name,
        tool_input=input,
        session_id=session.identity.claude_session,
        cwd=session.project_dir,
        agent_id=session.agent(ctx),
    )
    try:
        decision = await decide(session, request)
    except Exception as e:  # fail closed: deny, saying what went wrong
        problem = error_for("approve", e)  # logs a bug with its traceback
        decision = no_decision(None, tool_name, f"the human could not be asked ({problem.message})")
    return reply(approve_reply(decision, input))
