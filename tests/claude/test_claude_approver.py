"""The real Claude Code's Bash tries to answer a permission prompt of its own agent
with ``hive-rpc answer`` (issue 15's threat: an agent's Bash runs as the same user and
can open the hub's socket).  Measured on 2.1.328 on Linux, with bubblewrap and socat
installed, ``claude -p --allowedTools Bash``:

- Without Claude Code's sandbox the Bash reads the approver token like any file of
  the user's, so ``hive-rpc answer`` proves itself and the answer lands: the token
  holds only where the agent cannot read it (docs/security.md says so).
- With the sandbox on (``"sandbox": {"enabled": true}``) its seccomp filter refuses
  every Unix socket (EPERM): the Bash cannot reach the hub at all.
- With Unix sockets let through (``network.allowAllUnixSockets``: the path list
  ``allowUnixSockets`` is "macOS only ... Ignored on Linux") and the Read deny rule
  ``hive-rpc setup claude-code`` writes, the Bash cannot read the file ("Permission
  denied") and the hub refuses its answer (-32013): the case the token is for.
- Without that deny rule the sandboxed Bash reads the file and the answer lands.
- Hooks run outside the sandbox: with it on and the token denied, the permission
  hook still asks the hub, and saves "allow for this session" as an approver.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from claude_session import claude_home
from editor import claude_running, human_editor, next_prompt
from scripted_model import ModelRequest, result_text, scripted_model, text, tool_use

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

HIVE_RPC = Path(sys.executable).parent / "hive-rpc"


async def bash_answers_its_own_prompt(
    hub_config: HubConfig, claude_bin: Path, claude_root: Path, settings: dict[str, Any]
) -> tuple[str, dict[str, Any], Any]:
    """``claude -p`` whose scripted model runs, in Bash, ``cat`` of the token file and
    ``hive-rpc answer ID allow`` on a pending permission prompt of its own agent.
    Returns the tool result's text, the prompt as it is afterwards, and the run."""
    async with await HubClient.connect(hub_config.socket) as hub:
        status = await hub.call("hive/status", {})
        token_file = status["approver_token_file"]
        asked = await hub.call(
            "hive/ask",
            {
                "question": "Claude Code in ~/project (session 3f2a) wants to run Bash: rm -rf ~",
                "choices": ["allow", "deny"],
                "kind": "permission",
                "agent_id": "claude-code-3f2a9c1d",
            },
        )
        command = (
            f"cat {token_file} >/dev/null && echo token-read || echo token-unread; "
            f"{HIVE_RPC} answer {asked['id']} allow --socket {hub_config.socket} --no-start; "
            "echo answer-exit=$?"
        )

        def script(request: ModelRequest) -> list[dict[str, Any]]:
            if not request.tool_results():
                return [tool_use("Bash", {"command": command, "description": "Answer it"})]
            return [text("done")]

        with scripted_model(script) as model:
            claude = claude_home(claude_bin, claude_root, model.base_url)
            (claude.home / ".claude").mkdir(parents=True, exist_ok=True)
            (claude.home / ".claude" / "settings.json").write_text(json.dumps(settings))
            run = await trio.to_thread.run_sync(
                lambda: claude.run("-p", "answer it", "--allowedTools", "Bash", timeout=180)
            )
            requests = list(model.requests)
        result = requests[-1].last_tool_result() if requests else None
        assert result is not None, (run.stdout, run.stderr)
        after = await hub.call("hive/poll", {"id": asked["id"]})
    return result_text(result), after, run


def sandbox(hub_config: HubConfig, *, socket: bool, deny: bool) -> dict[str, Any]:
    """Claude Code settings: its sandbox on (Bash then runs without asking), the hub's
    socket let through its Unix-socket filter or not, and the deny rules
    ``hive-rpc setup claude-code`` writes for the token file or not."""
    token_file = hub_config.data_dir.absolute() / "approver-token"
    settings: dict[str, Any] = {"sandbox": {"enabled": True, "autoAllowBashIfSandboxed": True}}
    if socket:  # allowUnixSockets takes paths on macOS only: "Ignored on Linux"
        settings["sandbox"]["network"] = {"allowAllUnixSockets": True}
    if deny:
        settings["permissions"] = {"deny": [f"Read(/{token_file})", f"Edit(/{token_file})"]}
    return settings


async def test_an_unsandboxed_bash_reads_the_token_and_answers(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    said, after, _ = await bash_answers_its_own_prompt(hub_config, claude_bin, claude_root, {})
    assert said.splitlines()[0] == "token-read"
    assert "answer-exit=0" in said
    assert (after["status"], after["answer"]) == ("responded", "allow")


needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="Claude Code's sandbox needs bwrap on Linux"
)


@needs_bwrap
async def test_a_sandboxed_bash_let_to_the_socket_is_refused_by_the_hub(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """The case the token is for: the Bash reaches the hub (Unix sockets allowed, as a
    user who wants the agent's Bash to run ``hive-rpc`` would set) but cannot read the
    token (the deny rule), so the hub refuses the answer."""
    settings = sandbox(hub_config, socket=True, deny=True)
    said, after, run = await bash_answers_its_own_prompt(
        hub_config, claude_bin, claude_root, settings
    )
    assert "approver-token: Permission denied" in said, (said, run.stderr)
    assert "token-unread" in said
    assert "only an approver may answer a permission prompt" in said
    assert "answer-exit=1" in said
    assert after["status"] == "pending"


@needs_bwrap
async def test_without_the_deny_rule_the_sandboxed_bash_reads_the_token(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """The sandbox reads every path by default: the deny rule is what hides the file."""
    settings = sandbox(hub_config, socket=True, deny=False)
    said, after, _ = await bash_answers_its_own_prompt(
        hub_config, claude_bin, claude_root, settings
    )
    assert said.splitlines()[0] == "token-read"
    assert after["status"] == "responded"


@needs_bwrap
async def test_by_default_the_sandbox_keeps_bash_from_the_socket_too(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Claude Code's default sandbox filters Unix sockets: the Bash cannot even connect
    (EPERM), whatever the token."""
    settings = sandbox(hub_config, socket=False, deny=True)
    said, after, _ = await bash_answers_its_own_prompt(
        hub_config, claude_bin, claude_root, settings
    )
    assert "hive-rpc: [Errno 1] Operation not permitted" in said
    assert after["status"] == "pending"


@needs_bwrap
async def test_the_hook_outside_the_sandbox_still_proves_and_saves_a_rule(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Claude Code runs its hooks outside the sandbox: with the sandbox on and the
    token denied to it, the permission hook still reaches the hub, and once the
    editor answers "allow for this session" it reads the token to save the rule."""
    target = claude_root / "project" / "made-in-sandbox"
    token_file = hub_config.data_dir.absolute() / "approver-token"
    hook = f"{HIVE_RPC} hook claude-code --socket {hub_config.socket} --timeout 60"
    settings = {
        "sandbox": {"enabled": True},
        "permissions": {"deny": [f"Read(/{token_file})", f"Edit(/{token_file})"]},
        "hooks": {
            "PermissionRequest": [{"matcher": "*", "hooks": [{"type": "command", "command": hook}]}]
        },
    }

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        if not request.tool_results():
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        (claude.home / ".claude").mkdir(parents=True, exist_ok=True)
        (claude.home / ".claude" / "settings.json").write_text(json.dumps(settings))
        async with human_editor(hub_config.socket) as human:
            with trio.fail_after(150):
                async with claude_running(
                    claude, "-p", "make the file", "--permission-mode", "default"
                ) as runs:
                    note = await next_prompt(human)
                    await human.call(
                        "hive/respond",
                        {"id": note.params["id"], "answer": "allow for this session"},
                    )
            rules = await human.call("rule/list", {})
    assert target.exists(), (runs[0].stdout, runs[0].stderr)
    assert [r["made_by"] for r in rules] == [f"prompt {note.params['id']}"], rules
