"""The real Claude Code asks the human through the MCP tool ``approve`` (issue 15,
section 2): ``claude -p --permission-prompt-tool mcp__hive-rpc__approve``, with
``hive-rpc mcp --tools ask,permissions`` registered as docs/claude-code.md says, the
scripted model asking for ``Bash touch FILE`` and the human answering from an
approver's editor-socket client. Allow: the file exists; deny: no file, and the
model reads the denial; nobody answering within Claude Code's tool timeout
(``MCP_TOOL_TIMEOUT``): hive-rpc's deny, which says why, reaches the model, not
Claude Code's "timed out" error, and the question leaves the editors."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from claude_session import ClaudeHome, claude_home
from editor import claude_running, human_editor, next_prompt
from scripted_model import ModelRequest, result_text, scripted_model, text, tool_use
from test_claude_permission_hook import install_hook
from waiting import until

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

HIVE_RPC = Path(sys.executable).parent / "hive-rpc"
APPROVE = "mcp__hive-rpc__approve"
APPROVED_RUN = (
    "-p",
    "make the file",
    "--permission-mode",
    "default",
    "--permission-prompt-tool",
    APPROVE,
)
"""``claude`` asked to make the file, the approve tool deciding its permissions."""
STANDS_ASIDE = f"this run's --permission-prompt-tool {APPROVE} decides; printing no decision"
"""What ``hive-rpc hook claude-code`` says in such a run, where it stands aside."""


def register(claude: ClaudeHome, socket: Path) -> None:
    done = claude.run(
        "mcp",
        "add",
        "hive-rpc",
        "--",
        str(HIVE_RPC),
        "mcp",
        "--socket",
        str(socket),
        "--tools",
        "ask,permissions",
    )
    assert done.returncode == 0, done.stderr


async def approve_round(
    hub_config: HubConfig, claude_bin: Path, claude_root: Path, answer: dict[str, Any] | None
) -> tuple[Any, list[ModelRequest], dict[str, Any], Path]:
    """``claude -p`` asking to touch a file through the approve tool; the human
    answers with ``answer`` (hive/respond params), or not at all (None: the prompt is
    then read back once it closed). Returns claude's run, the model requests, the
    prompt as the editor last saw it, and the file."""
    target = claude_root / "project" / "made-by-claude"

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        if request.last_tool_result() is None:
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        register(claude, hub_config.socket)
        async with human_editor(hub_config.socket) as human:
            with trio.fail_after(120):
                async with claude_running(claude, *APPROVED_RUN) as runs:
                    note = await next_prompt(human)
                    prompt: dict[str, Any] = note.params
                    if answer is not None:
                        await human.call("hive/respond", {"id": prompt["id"], **answer})
            prompt = await human.call("hive/poll", {"id": prompt["id"]})
            assert await human.call("hive/list", {}) == []
    assert model.errors == []
    return runs[0], list(model.requests), prompt, target


async def test_allow_from_the_editor_runs_the_command(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, requests, prompt, target = await approve_round(
        hub_config, claude_bin, claude_root, {"answer": "allow"}
    )
    assert done.returncode == 0, done.stderr
    assert target.exists()
    result = requests[-1].last_tool_result()
    assert result is not None
    assert not result.get("is_error"), result
    assert prompt["kind"] == "permission"
    assert prompt["question"].endswith(f"wants to run Bash: touch {target}")
    # the Claude Code process's agent, as its hooks name it (core/agents.py), and
    # the session's first characters in the question
    assert re.fullmatch(r"claude-code-\d+", prompt["agent_id"]), prompt["agent_id"]
    assert re.search(r"\(session [0-9a-f]{4}\)", prompt["question"]), prompt["question"]


async def test_deny_from_the_editor_reaches_the_model(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, requests, _, target = await approve_round(
        hub_config, claude_bin, claude_root, {"answer": "deny", "by": "emacs"}
    )
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    result = requests[-1].last_tool_result()
    assert result is not None
    assert result.get("is_error") is True, result
    assert result_text(result) == "The human denied this Bash request from hive-rpc (emacs)."


async def test_no_answer_within_claude_codes_tool_timeout_is_our_deny(
    hub: HubService,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Claude Code cuts a tool call off at ``MCP_TOOL_TIMEOUT`` whatever progress came
    (measured: "MCP server ... tool "approve" timed out after 4s"); approve answers
    before that with a deny that says nobody answered, and withdraws the question."""
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", "4000")
    done, requests, prompt, target = await approve_round(hub_config, claude_bin, claude_root, None)
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    result = requests[-1].last_tool_result()
    assert result is not None
    assert result.get("is_error") is True, result
    assert result_text(result) == (
        "hive-rpc denied this Bash request: nobody answered in time. Nothing was allowed "
        "by default; ask again once the human is there."
    )
    assert prompt["status"] in ("expired", "cancelled")


async def test_with_the_hook_installed_too_the_human_is_asked_once(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Claude Code asks its PermissionRequest hooks and the prompt tool at once and
    takes the first answer (measured on 2.1.328): with ``hive-rpc hook claude-code``
    installed (as ``hive-rpc setup claude-code`` does) the hook stands aside in a run
    started with ``--permission-prompt-tool``, so one question is asked, not two."""
    target = claude_root / "project" / "made-by-claude"

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        if request.last_tool_result() is None:
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        register(claude, hub_config.socket)
        # What the hook says (its stderr) goes to a file: the test's proof that it ran.
        said = claude_root / "hook-stderr"
        install_hook(claude, hub_config.socket, "--timeout", "60", "2>>", str(said))
        async with human_editor(hub_config.socket) as human:
            with trio.fail_after(120):
                async with claude_running(claude, *APPROVED_RUN) as runs:
                    note = await next_prompt(human)
                    # Before the human answers, the hook has run and stood aside (a
                    # file another process writes: polled).
                    await until(
                        lambda: said.exists() and STANDS_ASIDE in said.read_text(),
                        "the hook to stand aside",
                        within_s=60,
                    )
                    await human.call("hive/respond", {"id": note.params["id"], "answer": "allow"})
            assert await human.call("hive/list", {}) == []
            others = [n.params for n in human.notifications if n.method == "hive/prompt"]
    assert model.errors == []
    assert runs[0].returncode == 0, runs[0].stderr
    assert target.exists()
    assert others == [], "a second question was asked"
