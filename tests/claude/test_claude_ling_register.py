"""The real Claude Code (2.1.328) registers its own tmux pane from its Bash tool,
the flow docs/agora.md gives an agent (issue 26, section 2).

Claude Code runs a Bash command in a session of its own, without the pane's
terminal, so the hub cannot tell the CLI runs inside the pane: it asks the human.
The process the request approves is read from the pane, not from the CLI: the
leader of its foreground process group, Claude Code itself (not the CLI, which
ends, nor a shell).  The prompt names it; once the human approves, a turn is
typed into it and reaches the model as a prompt."""

from __future__ import annotations

import shlex
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import trio
from claude_session import claude_home
from scripted_model import ModelRequest, scripted_model, text, tool_use
from test_claude_agora import HIVE_RPC, TUI_ENV, prompts, since_prompt, tmux_server
from waiting import logged

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.hub import HubConfig
from hive_rpc.relay.proc import stat
from hive_rpc.service import HubService

__all__: list[str] = []


async def test_claude_code_registers_its_own_pane_from_its_bash_tool(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    register = shlex.join(
        [
            str(HIVE_RPC), "ling", "register", "main.c", "--tmux", "--socket",
            str(hub_config.socket), "--data-dir", str(hub_config.data_dir), "--no-start",
        ]
    )  # fmt: skip

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        prompt, step, _ = since_prompt(request)
        if prompt == "register this pane" and step == 0:
            return [tool_use("Bash", {"command": register, "description": "Register"})]
        return [text("Registered.")]

    with ExitStack() as stack:
        model = stack.enter_context(scripted_model(script))
        claude = claude_home(claude_bin, claude_root / "main.c", model.base_url)
        tmux = stack.enter_context(tmux_server(claude_root))
        env = claude.env()
        command = [
            "env", *[f"{k}={env[k]}" for k in TUI_ENV if k in env], "TERM=xterm-256color",
            str(claude.claude), "--permission-mode", "default", "--allowedTools", "Bash",
        ]  # fmt: skip
        pane = tmux.run(
            "new-window", "-d", "-P", "-F", "#{pane_id}", "-c", str(claude.project), *command
        ).strip()
        await trio.to_thread.run_sync(tmux.submit, pane, "register this pane")
        await trio.to_thread.run_sync(tmux.wait_for, pane, "Registered.")
        (ling,) = await hub.call("ling/list", {})
        assert ling["state"] == "pending", ling
        pane_pid = int(tmux.run("display-message", "-p", "-t", pane, "#{pane_pid}"))
        leader = stat(pane_pid)
        assert leader is not None
        agent = ling["agent"]
        # Claude Code (exec'd by env: the pane's own process) leads the foreground.
        assert (agent["pid"], leader.tpgid) == (pane_pid, pane_pid), agent
        assert "claude" in agent["exe"], agent
        assert agent["pending_exec"] is None
        (prompt,) = await hub.call("hive/list", {})
        assert (
            f"Approving types only into: {agent['comm']} (pid {pane_pid}, " in (prompt["question"])
        )
        async with await HubClient.connect(hub_config.socket) as editor:
            assert await prove_approver(editor.call) is None
            await editor.call("hive/respond", {"id": prompt["id"], "answer": "approve"})
        await logged(  # the hub's own task registers it, then says so
            hub.activity,
            lambda e: e.kind == "ling" and (e.event, e.key) == ("ling/approved", "main.c"),
            within_s=20,
        )
        assert (await hub.call("ling/list", {}))[0]["state"] == "registered"

        sent = await hub.call("agent/answer", {"agent": "main.c", "message": "ok, go on"})
        assert sent["delivery"]["state"] == "delivered", sent

        await model.request_where(
            lambda r: "[ANSWER from main] ok, go on" in prompts(r), within_s=60
        )
