"""``hive-rpc hook codex`` as the real Codex CLI's (0.171.0) PermissionRequest hook, in
the same ``codex exec`` run as its MCP server: the human's question names Codex, and the
permission request and the MCP question are one agent (``codex-PID`` of the Codex
process both run under; core/agents.py, faces/mcp/identity.py).  Config written by hand
(agent_homes.write_codex_config) until ``hive-rpc setup codex`` registers the hook."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
from agent_homes import HIVE_RPC, AgentHome, Codex, hive_rpc_mcp, write_codex_config
from editor import human_editor, next_prompt
from scripted_responses import function_call, in_turns, message, output_text, scripted_responses

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

NAMESPACE = "mcp__hive_rpc"


@pytest.mark.parametrize("answer", ["allow", "deny"])
async def test_codex_hook_names_codex_and_is_the_mcp_sessions_agent(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome, answer: str
) -> None:
    """The model asks the human through MCP, then runs ``touch`` outside the sandbox;
    the hook's question says "Codex in ...", carries the MCP question's agent id, and
    the human's allow runs the command, a deny reaches the model and nothing runs."""
    target = agent_home.project / "made-by-codex"
    ask = function_call("hivemind_ask_async", {"question": "Go on?"}, namespace=NAMESPACE)
    touch = function_call(
        "exec_command",
        {"cmd": f"touch {target}", "sandbox_permissions": "require_escalated",
         "justification": "Make the file"},
    )  # fmt: skip
    hook = " ".join(
        [str(HIVE_RPC), "hook", "codex", "--socket", str(hub_config.socket), "--timeout", "60"]
    )
    with scripted_responses(in_turns([ask], [touch], [message("done")])) as model:
        codex = Codex(codex_bin, agent_home)
        write_codex_config(
            agent_home,
            base_url=model.base_url,
            mcp_command=hive_rpc_mcp(hub_config.socket),
            hook=hook,
        )
        async with human_editor(hub_config.socket) as human:
            prompts: list[dict[str, Any]] = []
            runs: list[Any] = []
            asked = threading.Event()
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    runs.append(
                        await trio.to_thread.run_sync(
                            lambda: codex.exec(
                                "--dangerously-bypass-hook-trust", "--approve-for-me", "Go."
                            )
                        )
                    )
                    assert asked.is_set(), f"codex ended first:\n{runs[0].stderr}"

                nursery.start_soon(run)
                with trio.fail_after(50):
                    prompts.append((await next_prompt(human)).params)
                await human.call("hive/respond", {"id": prompts[0]["id"], "answer": "yes"})
                with trio.fail_after(50):
                    prompts.append((await next_prompt(human)).params)
                asked.set()
                await human.call(
                    "hive/respond", {"id": prompts[1]["id"], "answer": answer, "by": "emacs"}
                )
    done = runs[0]
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    question, permission = prompts
    assert question["question"] == "Go on?"
    assert permission["kind"] == "permission"
    assert permission["question"].startswith(f"Codex in {agent_home.project} (session "), permission
    assert re.fullmatch(r"codex-\d+", permission["agent_id"]), permission["agent_id"]
    assert permission["agent_id"] == question["agent_id"]
    output = model.requests[-1].output_for(touch)
    assert output is not None
    if answer == "allow":
        assert target.exists()
    else:
        assert not target.exists()
        assert "The human denied this Bash request from hive-rpc (emacs)." in output_text(output)
