"""One Claude Code session is one agent, whichever way it reaches the hub (issue 15,
section 1): its MCP server (``hive-rpc mcp``, no ``--agent``) and its permission hook
(``hive-rpc hook claude-code``) name the same agent, from the session id Claude Code
gives both (the hook's ``session_id``, the server's ``CLAUDE_CODE_SESSION_ID``: see
hive_rpc/core/claude_code.py). Before, the server named itself ``claude-code-`` plus
a random suffix, and one session showed as two agents in the editors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from claude_session import claude_home
from editor import claude_running, human_editor
from scripted_model import ModelRequest, result_text, scripted_model, text, tool_use
from test_claude_mcp import ASK, QUESTION, register
from test_claude_permission_hook import install_hook

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
    session = permission["agent_id"].removeprefix("claude-code-")
    assert len(session) == 8
    assert f"(session {session[:4]})" in permission["question"]
