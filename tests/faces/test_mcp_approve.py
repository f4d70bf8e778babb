"""The MCP tool ``approve`` (Claude Code's ``--permission-prompt-tool``), driven by the
MCP SDK's client against a real ``hive-rpc mcp`` started as Claude Code starts it
(``clientInfo.name`` claude-code, ``CLAUDE_CODE_SESSION_ID`` and
``CLAUDE_PROJECT_DIR`` in its environment), the human played by an approver's
editor-socket client. What Claude Code reads from it is one text block of JSON and
nothing structured (measured on 2.1.328: a result with ``structuredContent`` is
refused as invalid). With the real Claude Code: tests/claude/test_claude_approve.py."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from mcp import Client
from mcp_types import CallToolResult, Implementation
from test_mcp import stdio_params

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.claude_code import CHOICES
from hive_rpc.faces.mcp.server import APPROVE_TIMEOUT_S
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService

SESSION = "5e1d7c2a-9b04-4f3e-8a61-2c7d0e9f1b34"
AGENT = "claude-code-5e1d7c2a"
TOUCH = {"command": "touch /tmp/x", "description": "Make it"}


@asynccontextmanager
async def claude_like(config: HubConfig, project: Path, **env: str) -> AsyncIterator[Client]:
    """``hive-rpc mcp --tools ask,permissions`` as Claude Code would start it."""
    params = stdio_params(config, "--tools", "ask,permissions")
    params.env = {
        **os.environ,
        "CLAUDE_CODE_SESSION_ID": SESSION,
        "CLAUDE_PROJECT_DIR": str(project),
        **env,
    }
    async with Client(params, client_info=Implementation(name="claude-code", version="2")) as c:
        yield c


@asynccontextmanager
async def approver(config: HubConfig) -> AsyncIterator[HubClient]:
    """An editor that proved it is an approver, subscribed."""
    async with await HubClient.connect(config.socket) as editor:
        assert await prove_approver(editor.call) is None
        await editor.call("hive/subscribe", {})
        yield editor


async def next_prompt(editor: HubClient) -> dict[str, Any]:
    note = await editor.next_notification()
    while note.method != "hive/prompt":
        note = await editor.next_notification()
    params: dict[str, Any] = note.params
    return params


def decision(result: CallToolResult) -> dict[str, Any]:
    """What Claude Code reads: exactly one text block, JSON; nothing structured."""
    assert not result.is_error, result.content
    assert result.structured_content is None
    assert len(result.content) == 1
    assert result.content[0].type == "text"
    parsed: dict[str, Any] = json.loads(result.content[0].text)
    return parsed


async def approve_answered(
    client: Client, editor: HubClient, answer: str, tool_input: dict[str, Any] = TOUCH
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Call approve for Bash ``tool_input``; the human answers ``answer``."""
    got: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:

        async def call() -> None:
            args = {"tool_name": "Bash", "input": tool_input, "tool_use_id": "toolu_01"}
            got["result"] = await client.call_tool("approve", args)

        nursery.start_soon(call)
        prompt = await next_prompt(editor)
        await editor.call("hive/respond", {"id": prompt["id"], "answer": answer, "by": "emacs"})
    return prompt, decision(got["result"])


async def test_approve_is_listed_without_an_output_schema(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> None:
    with trio.fail_after(30):
        async with claude_like(hub_config, short_tmp) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
    approve = tools["approve"]
    assert approve.output_schema is None
    assert set(approve.input_schema["properties"]) == {"tool_name", "input", "tool_use_id"}
    assert set(approve.input_schema["required"]) == {"tool_name", "input"}


async def test_allow_and_deny_from_the_editor(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> None:
    with trio.fail_after(30):
        async with approver(hub_config) as editor, claude_like(hub_config, short_tmp) as client:
            prompt, allowed = await approve_answered(client, editor, "allow")
            _, denied = await approve_answered(client, editor, "deny")
    assert allowed == {"behavior": "allow", "updatedInput": TOUCH}
    assert denied == {
        "behavior": "deny",
        "message": "The human denied this Bash request from hive-rpc (emacs).",
    }
    # The hook's question, word for word, from the session's agent.
    assert (
        prompt["question"]
        == f"Claude Code in {short_tmp} (session 5e1d) wants to run Bash: touch /tmp/x"
    )
    assert json.loads(prompt["detail"]) == TOUCH
    assert prompt["choices"] == list(CHOICES)
    assert prompt["kind"] == "permission"
    assert prompt["urgent"] is True
    assert prompt["agent_id"] == AGENT


async def test_allow_for_this_session_saves_a_rule_that_answers_next_time(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> None:
    with trio.fail_after(30):
        async with approver(hub_config) as editor, claude_like(hub_config, short_tmp) as client:
            prompt, allowed = await approve_answered(client, editor, "allow for this session")
            again = await client.call_tool("approve", {"tool_name": "Bash", "input": TOUCH})
            rules = await editor.call("rule/list", {})
            asked = [n for n in editor.notifications if n.method == "hive/prompt"]
    assert allowed == {"behavior": "allow", "updatedInput": TOUCH}
    assert decision(again) == {"behavior": "allow", "updatedInput": TOUCH}
    assert asked == []  # the rule answered: nobody was asked the second time
    [rule] = rules
    assert (rule["pattern"], rule["decision"], rule["scope"]) == (
        "Bash(touch /tmp/x)",
        "allow",
        "session",
    )
    assert rule["where"] == SESSION
    assert rule["from_prompt"] == prompt["id"]


async def test_no_answer_before_claude_codes_tool_timeout_denies(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> None:
    """MCP_TOOL_TIMEOUT (3 s here) bounds the wait: approve denies before Claude Code
    would cut the call off, and withdraws the question.  Nobody answers, and approve's
    own wait is APPROVE_TIMEOUT_S (9 minutes): a deny within the test's guard came
    from the client's bound (``HiveMcp.within_client``, checked for its figures in
    test_mcp_client_timeout.py), with no clock read here."""
    assert APPROVE_TIMEOUT_S > 60
    with trio.fail_after(30):
        async with (
            approver(hub_config) as editor,
            claude_like(hub_config, short_tmp, MCP_TOOL_TIMEOUT="3000") as client,
        ):
            result = await client.call_tool("approve", {"tool_name": "Bash", "input": TOUCH})
            prompt = await next_prompt(editor)
            record = await editor.call("hive/poll", {"id": prompt["id"]})
    assert decision(result) == {
        "behavior": "deny",
        "message": "hive-rpc denied this Bash request: nobody answered in time. Nothing "
        "was allowed by default; ask again once the human is there.",
    }
    assert record["status"] in ("expired", "cancelled")


async def test_a_dismissed_question_denies(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> None:
    with trio.fail_after(30):
        async with approver(hub_config) as editor, claude_like(hub_config, short_tmp) as client:
            got: dict[str, Any] = {}
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    got["r"] = await client.call_tool(
                        "approve", {"tool_name": "Bash", "input": TOUCH}
                    )

                nursery.start_soon(call)
                prompt = await next_prompt(editor)
                await editor.call(
                    "hive/respond", {"id": prompt["id"], "action": "decline", "by": "code"}
                )
    assert decision(got["r"])["behavior"] == "deny"
    assert "code dismissed the question" in decision(got["r"])["message"]


async def test_a_lost_hub_denies_saying_so(hub_config: HubConfig, short_tmp: Path) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            hub_scope, stopped = trio.CancelScope(), trio.Event()

            async def serve(*, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
                with hub_scope:
                    await run_hub(hub_config, task_status=task_status)
                stopped.set()

            await nursery.start(serve)
            async with claude_like(hub_config, short_tmp) as client:
                await client.list_tools()
                hub_scope.cancel()
                await stopped.wait()
                result = await client.call_tool("approve", {"tool_name": "Bash", "input": TOUCH})
    denied = decision(result)
    assert denied["behavior"] == "deny"
    assert denied["message"].startswith(
        "hive-rpc denied this Bash request: the human could not be asked (approve: the hub "
        "could not be reached"
    ), denied


async def test_a_cancelled_call_withdraws_the_question(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> None:
    """Claude Code cancels a call it no longer waits for (its tool timeout, or the
    hook answered first): the question leaves the editors."""
    with trio.fail_after(30):
        async with approver(hub_config) as editor, claude_like(hub_config, short_tmp) as client:
            with trio.move_on_after(1):  # the SDK sends notifications/cancelled
                await client.call_tool("approve", {"tool_name": "Bash", "input": TOUCH})
            prompt = await next_prompt(editor)
            note = await editor.next_notification()
    assert note.method == "hive/dismiss"
    assert note.params["id"] == prompt["id"]
    assert note.params["status"] == "cancelled"
    assert note.params["by"] == AGENT
