"""``hive-rpc hook codex`` and ``hive-rpc hook gemini``: the agents table's adapters
(core/agents.py), the question naming the agent, Gemini's BeforeTool decision format,
the gate mode failing closed, and the agent process found from /proc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from hive_rpc.cli.hook import gemini_output, permission_ask
from hive_rpc.core.agents import AGENTS, CLAUDE_CODE, CODEX, GEMINI, of_mcp_client
from hive_rpc.host.agent_process import agent_ancestor, parent_and_comm
from hive_rpc.hub import HubConfig

SESSION = "01a2c3d4-5b7e-4c1a-9d2f-0e8b6a4c2d10"


def before_tool(home: Path) -> dict[str, Any]:
    """A BeforeTool event with the fields Gemini CLI 0.61.0 sends."""
    return {
        "session_id": SESSION,
        "transcript_path": str(home / "t.json"),
        "cwd": str(home / "app"),
        "hook_event_name": "BeforeTool",
        "timestamp": "2026-11-28T21:00:00Z",
        "tool_name": "run_shell_command",
        "tool_input": {"command": "rm -rf build"},
    }


async def run(config: HubConfig, agent: str, stdin: bytes, *extra: str) -> Any:
    return await trio.run_process(
        [sys.executable, "-m", "hive_rpc", "hook", agent, "--socket", str(config.socket),
         "--data-dir", str(config.data_dir), *extra],
        stdin=stdin, capture_stdout=True, capture_stderr=True, check=False,
    )  # fmt: skip


def test_every_agent_has_a_display_name_an_event_format_and_fails_safe() -> None:
    assert {a.name: a.display for a in AGENTS.values()} == {
        "claude-code": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"
    }  # fmt: skip
    assert not any(a.fails_closed for a in AGENTS.values())
    assert of_mcp_client("codex-mcp-client") is CODEX
    assert of_mcp_client("gemini-cli-mcp-client") is GEMINI
    assert of_mcp_client("claude-code") is CLAUDE_CODE


def test_the_codex_question_names_codex_and_a_codex_agent(short_tmp: Path) -> None:
    event = {**before_tool(short_tmp), "hook_event_name": "PermissionRequest"}
    ask = permission_ask(event, timeout_s=60, home=str(short_tmp), agent=CODEX)
    assert ask.question.startswith("Codex in ~/app (session 01a2) wants to use "), ask.question
    assert ask.agent_id.startswith("codex-")


def test_gemini_decisions_are_its_before_tool_output() -> None:
    assert gemini_output({"behavior": "allow"}) == {"decision": "allow"}
    deny = gemini_output({"behavior": "deny", "message": "no"})
    assert deny == {"decision": "deny", "reason": "no"}


async def test_gemini_gate_denies_when_the_hub_is_down(
    hub_config: HubConfig, short_tmp: Path
) -> None:
    stdin = json.dumps(before_tool(short_tmp)).encode()
    done = await run(hub_config, "gemini", stdin, "--gate")
    assert done.returncode == 0
    output = json.loads(done.stdout)
    assert output["decision"] == "deny"
    assert "gate" in output["reason"]
    assert "run_shell_command" in output["reason"]
    assert not hub_config.socket.exists()  # and it started none


async def test_gemini_gate_denies_what_it_cannot_read(
    hub_config: HubConfig, short_tmp: Path
) -> None:
    done = await run(hub_config, "gemini", b"not json", "--gate")
    assert (done.returncode, json.loads(done.stdout)["decision"]) == (0, "deny")


async def test_gemini_without_gate_prints_no_decision_when_the_hub_is_down(
    hub_config: HubConfig, short_tmp: Path
) -> None:
    done = await run(hub_config, "gemini", json.dumps(before_tool(short_tmp)).encode())
    assert (done.returncode, done.stdout) == (0, b"{}\n")
    assert b"Gemini CLI goes on to its own confirmation" in done.stderr


def test_the_agent_process_is_the_nearest_ancestor_of_its_name() -> None:
    """A child of this process, through a shell, finds this process by its comm."""
    found = parent_and_comm(os.getpid())
    assert found is not None
    me = parent_and_comm(found[0])
    mine = Path(f"/proc/{os.getpid()}/comm").read_text().strip()
    code = (
        "import os, sys; from hive_rpc.host.agent_process import agent_ancestor; "
        f"print(agent_ancestor(os.getpid(), ({mine!r},)))"
    )
    done = subprocess.run(
        ["/bin/sh", "-c", f'"{sys.executable}" -c "{code}"; true'],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == str(os.getpid()), (done.stdout, done.stderr, me)
    assert agent_ancestor(os.getpid(), ("no-such-agent",)) is None
