"""The blocking tools through the real Claude Code, against its MCP tool timeout
(issue 15, section 1).

Claude Code 2.1.328 bounds every MCP tool call by ``MCP_TOOL_TIMEOUT`` (milliseconds,
in its environment, which its MCP servers inherit) or a server's own ``timeout`` in
its MCP config; by default 100,000,000 ms. Progress notifications do not extend it
(its settings schema says "Hard wall-clock limit per call; progress notifications do
not extend it", and it is measured here): at the limit it sends
``notifications/cancelled`` and the model reads ``MCP server "hive-rpc" tool "X" timed
out after Ns`` as an error. So:

* a blocking tool that knows the limit (``MCP_TOOL_TIMEOUT``) returns before it, the
  ask kept pending, and the agent polls it: the human's late answer reaches the model;
* one that does not (a per-server ``timeout``) is cut off, and its question is
  withdrawn from the editors, as it is when the ``claude`` process dies mid-call."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
from claude_session import claude_home
from editor import claude_running, human_editor, next_prompt
from scripted_model import ModelRequest, result_text, scripted_model, text, tool_use
from test_claude_mcp import register, structured

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

HIVE_RPC = Path(sys.executable).parent / "hive-rpc"
ASK = "mcp__hive-rpc__hivemind_ask"
POLL = "mcp__hive-rpc__hivemind_poll"
HUMAN_INPUT = "mcp__hive-rpc__request_human_input"
QUESTION = "Which database should the cache use?"


def step_of(request: ModelRequest) -> int:
    return len([m for m in request.messages if m.get("role") == "assistant"])


async def test_a_blocking_ask_returns_before_claude_codes_timeout_and_is_polled(
    hub: HubService,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MCP_TOOL_TIMEOUT=4000 and the human answers after it: hivemind_ask comes back
    pending at about 2 s (not cut off), the model polls, and gets the answer."""
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", "4000")
    answered = threading.Event()
    seen: dict[str, Any] = {}

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        step = step_of(request)
        if step == 0:
            return [tool_use("ToolSearch", {"query": f"select:{ASK},{POLL}", "max_results": 5})]
        if step == 1:
            return [tool_use(ASK, {"question": QUESTION, "options": ["SQLite", "Postgres"]})]
        if step == 2:  # the blocking ask came back before Claude Code's limit
            seen["asked"] = structured(request)
            assert answered.wait(60), "the human never answered"
            return [tool_use(POLL, {"ask_id": seen["asked"]["ask_id"]})]
        seen["answer"] = structured(request)
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        register(claude, hub_config.socket)
        async with human_editor(hub_config.socket, approver=False) as human:
            with trio.fail_after(120):
                async with claude_running(
                    claude, "-p", "ask", "--allowedTools", "mcp__hive-rpc"
                ) as runs:
                    prompt = (await next_prompt(human)).params
                    await trio.sleep(6)  # past Claude Code's 4 s
                    await human.call(
                        "hive/respond", {"id": prompt["id"], "answer": "Postgres", "by": "ada"}
                    )
                    answered.set()
    assert model.errors == []
    assert runs[0].returncode == 0, runs[0].stderr
    assert seen["asked"]["status"] == "pending"
    assert seen["asked"]["ask_id"] == prompt["id"]
    assert seen["answer"]["status"] == "responded"
    assert seen["answer"]["decision"] == "Postgres"


async def test_progress_does_not_extend_claude_codes_timeout_and_the_question_is_withdrawn(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """The server's own ``timeout`` (3000 ms) is Claude Code's alone: hive-rpc cannot
    see it. Progress every 0.5 s does not keep the call alive; Claude Code cancels it
    at 3 s, the model reads its error, and the question leaves the editors."""

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        step = step_of(request)
        if step == 0:
            return [tool_use("ToolSearch", {"query": f"select:{HUMAN_INPUT}", "max_results": 5})]
        if step == 1:
            return [tool_use(HUMAN_INPUT, {"prompt": QUESTION})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        server = {
            "command": str(HIVE_RPC),
            "args": ["mcp", "--socket", str(hub_config.socket), "--progress-every", "0.5"],
            "timeout": 3000,
        }
        config = claude_root / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"hive-rpc": server}}))
        async with human_editor(hub_config.socket, approver=False) as human:
            with trio.fail_after(120):
                done = await trio.to_thread.run_sync(
                    lambda: claude.run(
                        "-p",
                        "ask",
                        "--mcp-config",
                        str(config),
                        "--allowedTools",
                        "mcp__hive-rpc",
                    )
                )
                prompt = (await next_prompt(human)).params
                note = await human.next_notification()
    assert model.errors == []
    assert done.returncode == 0, done.stderr
    result = model.requests[-1].last_tool_result()
    assert result is not None
    assert result.get("is_error") is True
    assert (
        result_text(result) == 'MCP server "hive-rpc" tool "request_human_input" timed out after 3s'
    )
    assert (note.method, note.params["id"]) == ("hive/dismiss", prompt["id"])
    assert note.params["status"] == "cancelled"
    # Withdrawn by the call's cancellation (the agent), or, when Claude Code ends its
    # MCP server before the hub has acted on that cancellation, by the asker's end:
    # both are this asker taking its question back, and which comes first is the
    # machine's scheduling.
    assert note.params["by"] in (prompt["agent_id"], "the asker stopped waiting")


async def test_claude_killed_mid_call_withdraws_the_question(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """``claude -p`` killed while request_human_input waits: its ``hive-rpc mcp``
    sees stdin close and withdraws the question."""

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        step = step_of(request)
        if step == 0:
            return [tool_use("ToolSearch", {"query": f"select:{HUMAN_INPUT}", "max_results": 5})]
        if step == 1:
            return [tool_use(HUMAN_INPUT, {"prompt": QUESTION})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        register(claude, hub_config.socket)
        async with human_editor(hub_config.socket, approver=False) as human:
            process = await trio.lowlevel.open_process(
                [str(claude.claude), "-p", "ask", "--allowedTools", "mcp__hive-rpc"],
                cwd=claude.project,
                env=claude.env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                with trio.fail_after(60):
                    prompt = (await next_prompt(human)).params
                    process.send_signal(signal.SIGKILL)
                    note = await human.next_notification()
            finally:
                process.kill()
                await process.wait()
    assert model.errors == []
    assert (note.method, note.params["id"]) == ("hive/dismiss", prompt["id"])
    assert note.params["status"] == "cancelled"
    assert note.params["by"] == prompt["agent_id"]
