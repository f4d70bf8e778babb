"""The real Claude Code asks the human through ``hive-rpc hook claude-code`` (issue 15,
section 2): the hook in the private HOME's ``~/.claude/settings.json`` as
docs/claude-code.md shows it, ``claude -p --permission-mode default`` (where the
PermissionRequest hook fires headless), the scripted model asking for ``Bash touch
FILE``, and the human answering from an editor-socket client. Allow: the file exists;
deny: no file, and the denial message reaches the model as the tool's result."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import trio
from claude_session import ClaudeHome, claude_home
from scripted_model import ModelRequest, result_text, scripted_model, text, tool_use

from hive_rpc.client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

HIVE_RPC = Path(sys.executable).parent / "hive-rpc"


def install_hook(claude: ClaudeHome, socket: Path, *extra: str) -> None:
    """The hook in the private HOME's ``~/.claude/settings.json``, as
    docs/claude-code.md shows it (with the test hub's socket)."""
    hook = " ".join([str(HIVE_RPC), "hook", "claude-code", "--socket", str(socket), *extra])
    settings = {
        "hooks": {
            "PermissionRequest": [{"matcher": "*", "hooks": [{"type": "command", "command": hook}]}]
        }
    }
    (claude.home / ".claude").mkdir(parents=True, exist_ok=True)
    (claude.home / ".claude" / "settings.json").write_text(json.dumps(settings))


async def permission_round(
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
    answer: dict[str, Any],
    times: int = 1,
) -> tuple[Any, list[ModelRequest], dict[str, Any], Path]:
    """``claude -p`` asking ``times`` times to touch a file, the human answering the
    first question with ``answer`` (hive/respond params), and no other question
    asked. Returns claude's run, the model requests, the prompt, and the file."""
    target = claude_root / "project" / "made-by-claude"

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        if len(request.tool_results()) < times:
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        install_hook(claude, hub_config.socket, "--timeout", "60")
        async with await HubClient.connect(hub_config.socket) as human:
            await human.call("hive/subscribe", {})
            with trio.fail_after(120):
                async with trio.open_nursery() as nursery:
                    runs: list[Any] = []

                    async def run_claude() -> None:
                        runs.append(
                            await trio.to_thread.run_sync(
                                lambda: claude.run(
                                    "-p", "make the file", "--permission-mode", "default"
                                )
                            )
                        )

                    nursery.start_soon(run_claude)
                    note = await human.next_notification()
                    while note.method != "hive/prompt":
                        note = await human.next_notification()
                    prompt: dict[str, Any] = note.params
                    await human.call("hive/respond", {"id": prompt["id"], **answer})
            assert await human.call("hive/list", {}) == []
            asked = [n for n in human.notifications if n.method == "hive/prompt"]
            assert asked == [], "a second question was asked"
        return runs[0], list(model.requests), prompt, target


async def test_allow_from_the_editor_runs_the_command(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, requests, prompt, target = await permission_round(
        hub_config, claude_bin, claude_root, {"answer": "allow"}
    )
    assert done.returncode == 0, done.stderr
    assert prompt["question"].startswith(
        f"Claude Code in {claude_root / 'project'} (session {prompt['agent_id'][12:16]}) "
        f"wants to run Bash: touch {target}\n\n"
    )
    assert prompt["urgent"] is True
    assert target.exists()
    result = requests[-1].last_tool_result()
    assert result is not None
    assert not result.get("is_error"), result


async def test_deny_from_the_editor_reaches_the_model_and_nothing_runs(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, requests, _, target = await permission_round(
        hub_config, claude_bin, claude_root, {"answer": "deny", "by": "emacs"}
    )
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    result = requests[-1].last_tool_result()
    assert result is not None
    assert result.get("is_error") is True, result
    assert result_text(result) == "The human denied this Bash request from hive-rpc (emacs)."


async def test_allow_for_this_session_is_not_asked_again(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, requests, _, target = await permission_round(
        hub_config, claude_bin, claude_root, {"answer": "allow for this session"}, times=2
    )
    assert done.returncode == 0, done.stderr
    assert target.exists()
    results = requests[-1].tool_results()
    assert len(results) == 2
    assert not any(r.get("is_error") for r in results), results


def test_hub_down_leaves_it_to_claude_code(claude_bin: Path, claude_root: Path) -> None:
    """No hub: the hook prints nothing, so Claude Code decides itself; in ``-p`` (no
    dialog) it refuses. Never an allow by default."""
    target = claude_root / "project" / "made-by-claude"

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        if request.last_tool_result() is None:
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        install_hook(claude, claude_root / "no-hub.sock")
        done = claude.run("-p", "make the file", "--permission-mode", "default")
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    result = model.requests[-1].last_tool_result()
    assert result is not None
    assert result.get("is_error") is True, result
    assert "hive-rpc" not in result_text(result)  # Claude Code's own refusal, not ours
