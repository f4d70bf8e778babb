"""One Claude Code is one agent, whichever way it reaches the hub: its MCP server
(``hive-rpc mcp``, no ``--agent``) and its permission hook (``hive-rpc hook
claude-code``) name the same agent, ``claude-code-PID`` of the Claude Code process
both run under (the hub reads the server's from its relay's ``SO_PEERCRED`` pid, the
hook from its own ancestry: host/agent_process.py). Before, the server named itself
``claude-code-`` plus a random suffix, and one session showed as two agents in the
editors; then both named the session id Claude Code gives them, which ``/clear``
changes for the hook and not for the server (measured on 2.1.328, below)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from claude_session import claude_home
from editor import claude_running, human_editor, next_prompt
from scripted_model import ModelRequest, result_text, scripted_model, text, tool_use
from test_claude_mcp import ASK, QUESTION, register
from test_claude_permission_hook import claude_tui, install_hook, needs_tmux

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService


async def test_mcp_asks_and_permission_requests_are_one_agent(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    target = claude_root / "project" / "made-by-claude"

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        step = len([m for m in request.messages if m.get("role") == "assistant"])
        if step == 0:
            return [tool_use("ToolSearch", {"query": f"select:{ASK}", "max_results": 5})]
        if step == 1:
            return [tool_use(ASK, {"question": QUESTION})]
        if step == 2:
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        return [text("done")]

    prompts: list[dict[str, Any]] = []
    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        register(claude, hub_config.socket)
        install_hook(claude, hub_config.socket, "--timeout", "60")
        async with human_editor(hub_config.socket) as human:
            with trio.fail_after(120):
                async with claude_running(
                    claude,
                    "-p",
                    "ask, then make the file",
                    "--permission-mode",
                    "default",
                    "--allowedTools",
                    "mcp__hive-rpc",
                ) as runs:
                    while len(prompts) < 2:
                        note = await human.next_notification()
                        if note.method == "hive/prompt":
                            prompts.append(note.params)
                    question, permission = prompts
                    assert permission["kind"] == "permission", prompts
                    await human.call("hive/respond", {"id": permission["id"], "answer": "allow"})
    done = runs[0]
    assert model.errors == []
    assert done.returncode == 0, done.stderr
    assert target.exists()
    assert question["question"] == QUESTION
    assert question["kind"] == "question"
    # The MCP ask's result names the ask; the session is the one the hook saw.
    asked = json.loads(result_text(model.requests[2].tool_results()[1]))
    assert asked["ask_id"] == question["id"]
    assert question["agent_id"] == permission["agent_id"]
    pid = permission["agent_id"].removeprefix("claude-code-")
    assert pid.isdigit(), permission["agent_id"]
    # The question still names the session (its first 4 characters), not the process.
    assert "(session " in permission["question"]
    assert f"(session {pid[:4]})" not in permission["question"]


@needs_tmux
async def test_clear_keeps_one_agent(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """The interactive Claude Code asks over MCP, the human types ``/clear``, and the
    next turn's permission request comes from the same agent. Claude Code 2.1.328
    gives the hook a new ``session_id`` after ``/clear`` and keeps its MCP server, whose
    ``CLAUDE_CODE_SESSION_ID`` is the first session's: named by the session, one
    Claude Code in one terminal showed as two agents."""
    target = claude_root / "project" / "made-by-claude"

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        said = " ".join(request.user_texts())
        step = len([m for m in request.messages if m.get("role") == "assistant"])
        if "ask the human" in said:
            if step == 0:
                return [tool_use("ToolSearch", {"query": f"select:{ASK}", "max_results": 5})]
            if step == 1:
                return [tool_use(ASK, {"question": QUESTION})]
            return [text("asked")]
        if "make the file" in said and request.last_tool_result() is None:
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        register(claude, hub_config.socket)
        install_hook(claude, hub_config.socket, "--timeout", "60")
        async with human_editor(hub_config.socket) as human:
            with claude_tui(claude, claude_root, "--allowedTools", "mcp__hive-rpc") as tui:
                with trio.fail_after(120):
                    await trio.to_thread.run_sync(tui.submit, "ask the human")
                    question = await next_prompt(human)
                    await trio.to_thread.run_sync(tui.wait_for, "asked")
                    await trio.to_thread.run_sync(tui.submit, "/clear")
                    await trio.to_thread.run_sync(tui.submit, "make the file")
                    permission = await next_prompt(human)
                    await human.call(
                        "hive/respond", {"id": permission.params["id"], "answer": "allow"}
                    )
                    await trio.to_thread.run_sync(tui.wait_for, "done")
    assert model.errors == []
    assert target.exists()
    assert question.params["question"] == QUESTION
    assert permission.params["kind"] == "permission"
    assert question.params["agent_id"] == permission.params["agent_id"]
