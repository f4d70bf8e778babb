"""The real Claude Code asks the human through ``hive-rpc hook claude-code`` (issue 15,
section 2): the hook in the private HOME's ``~/.claude/settings.json`` as
docs/claude-code.md shows it, ``claude -p --permission-mode default`` (where the
PermissionRequest hook fires headless), the scripted model asking for ``Bash touch
FILE``, and the human answering from an editor-socket client. Allow: the file exists;
deny: no file, and the denial message reaches the model as the tool's result."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
from claude_session import ClaudeHome, claude_home
from editor import claude_running, human_editor, next_prompt
from scripted_model import ModelRequest, Script, result_text, scripted_model, text, tool_use

from hive_rpc.client.async_client import HubClient
from hive_rpc.host.agent_process import stat_fields
from hive_rpc.hub import HubConfig
from hive_rpc.protocol.jsonrpc import Notification
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


def touch(target: Path, times: int = 1) -> Script:
    """The model asking ``times`` times for ``Bash touch TARGET``, then done."""

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        if len(request.tool_results()) < times:
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        return [text("done")]

    return script


def made_file(claude_root: Path) -> Path:
    """The file the model asks to touch."""
    return claude_root / "project" / "made-by-claude"


HEADLESS = ("-p", "make the file", "--permission-mode", "default")
"""``claude -p`` where the PermissionRequest hook fires headless."""


@dataclass
class Answered:
    """One ``claude -p`` whose first question the editor answered."""

    run: subprocess.CompletedProcess[str]
    prompt: dict[str, Any]
    comm: str | None
    """The comm of the process the prompt's agent id names, while it asked."""
    more_prompts: list[Notification]
    """The editor's ``hive/prompt`` notifications after the first."""


async def answer_the_question(claude: ClaudeHome, socket: Path, answer: dict[str, Any]) -> Answered:
    """``claude -p`` (HEADLESS) run while the editor answers its first question with
    ``answer`` (hive/respond params); nothing is left pending once it has exited."""
    async with human_editor(socket) as human:
        with trio.fail_after(120):
            async with claude_running(claude, *HEADLESS) as runs:
                note = await next_prompt(human)
                prompt: dict[str, Any] = note.params
                comm = _comm_of_agent(prompt["agent_id"])
                await human.call("hive/respond", {"id": prompt["id"], **answer})
        assert await human.call("hive/list", {}) == []
        more = [n for n in human.notifications if n.method == "hive/prompt"]
    return Answered(runs[0], prompt, comm, more)


def _comm_of_agent(agent_id: str) -> str | None:
    """The comm of the process ``claude-code-PID`` names (while it runs)."""
    found = re.fullmatch(r"claude-code-(\d+)", agent_id)
    stat = stat_fields(int(found.group(1))) if found else None
    return stat[0] if stat else None


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
    target = made_file(claude_root)
    with scripted_model(touch(target, times)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        install_hook(claude, hub_config.socket, "--timeout", "60")
        answered = await answer_the_question(claude, hub_config.socket, answer)
        assert answered.more_prompts == [], "a second question was asked"
        return answered.run, list(model.requests), answered.prompt, target


def allowed_and_ran(
    done: subprocess.CompletedProcess[str],
    requests: list[ModelRequest],
    prompt: dict[str, Any],
    target: Path,
) -> None:
    """The editor's allow: the question named the command, its asker is Claude Code's
    process, and the command ran."""
    assert done.returncode == 0, done.stderr
    assert target.exists()
    project = target.parent
    assert re.fullmatch(
        rf"Claude Code in {re.escape(str(project))} \(session [0-9a-f]{{4}}\) "
        rf"wants to run Bash: {re.escape(f'touch {target}')}",
        prompt["question"],
    ), prompt["question"]
    assert re.fullmatch(r"claude-code-\d+", prompt["agent_id"]), prompt["agent_id"]
    assert prompt["kind"] == "permission"
    assert prompt["urgent"] is True
    result = requests[-1].last_tool_result()
    assert result is not None
    assert not result.get("is_error"), result


def denied_from_emacs(
    done: subprocess.CompletedProcess[str], requests: list[ModelRequest], target: Path
) -> None:
    """The editor's deny (``by`` emacs): nothing ran, and the model read why."""
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    result = requests[-1].last_tool_result()
    assert result is not None
    assert result.get("is_error") is True, result
    assert result_text(result) == "The human denied this Bash request from hive-rpc (emacs)."


async def next_dismissal(human: HubClient) -> Notification:
    """The next ``hive/dismiss`` the editor is sent (other notifications pass)."""
    note = await human.next_notification()
    while note.method != "hive/dismiss":
        note = await human.next_notification()
    return note


def claude_codes_own_refusal(requests: list[ModelRequest]) -> None:
    """The tool's result the model got last is Claude Code's refusal, not the hub's."""
    result = requests[-1].last_tool_result()
    assert result is not None
    assert result.get("is_error") is True, result
    assert "hive-rpc" not in result_text(result)


async def test_allow_from_the_editor_runs_the_command(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, requests, prompt, target = await permission_round(
        hub_config, claude_bin, claude_root, {"answer": "allow"}
    )
    allowed_and_ran(done, requests, prompt, target)
    assert json.loads(prompt["detail"])["command"] == f"touch {target}"


async def test_deny_from_the_editor_reaches_the_model_and_nothing_runs(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, requests, _, target = await permission_round(
        hub_config, claude_bin, claude_root, {"answer": "deny", "by": "emacs"}
    )
    denied_from_emacs(done, requests, target)


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
    target = made_file(claude_root)
    with scripted_model(touch(target)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        install_hook(claude, claude_root / "no-hub.sock")
        done = claude.run(*HEADLESS)
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    claude_codes_own_refusal(model.requests)


TUI_ENV = (
    "HOME",
    "XDG_CONFIG_HOME",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_AUTOUPDATER",
    "PATH",
)
PROCEED = "Do you want to proceed?"
"""Claude Code's own permission dialog (2.1.328)."""
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


@dataclass
class Tui:
    """The interactive Claude Code in a pane of a private tmux server."""

    socket: Path

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, check=False
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "0")

    def wait_for(self, words: str, timeout: float = 60) -> str:
        """The screen once it shows ``words`` (tmux gives no event: polled)."""
        deadline = time.monotonic() + timeout
        while words not in (screen := self.screen()):
            assert time.monotonic() < deadline, f"no {words!r} on the screen:\n{screen}"
            time.sleep(0.2)
        return screen

    def submit(self, words: str) -> None:
        self.wait_for("? for shortcuts")
        self.tmux("send-keys", "-t", "0", "-l", words)
        time.sleep(0.3)
        self.tmux("send-keys", "-t", "0", "Enter")


@contextmanager
def claude_tui(claude: ClaudeHome, root: Path, *extra: str) -> Iterator[Tui]:
    """``claude --permission-mode default`` (the TUI's own default, auto, runs
    ``touch`` with no dialog and no hook), with ``extra`` arguments, in a 160x45 tmux
    pane."""
    env = claude.env()
    tui = Tui(root / "tmux.sock")
    subprocess.run(
        ["tmux", "-S", str(tui.socket), "-f", "/dev/null", "new-session", "-d",
         "-x", "160", "-y", "45", "-c", str(claude.project),
         "env", *[f"{k}={env[k]}" for k in TUI_ENV if k in env], "TERM=xterm-256color",
         str(claude.claude), "--permission-mode", "default", *extra],
        check=True,
    )  # fmt: skip
    try:
        yield tui
    finally:
        tui.tmux("kill-server")


def touch_once(target: Path) -> Any:
    def script(request: ModelRequest) -> list[dict[str, Any]]:
        asked = any("make the file" in t for t in request.user_texts())
        if asked and request.last_tool_result() is None:
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        return [text("done")]

    return script


def own_dialog(claude: ClaudeHome, root: Path) -> str:
    """The TUI's screen once Claude Code shows its own permission dialog for "make
    the file"."""
    with claude_tui(claude, root) as tui:
        tui.submit("make the file")
        return tui.wait_for(PROCEED)


async def yes_in_the_terminal(claude: ClaudeHome, root: Path, socket: Path) -> dict[str, Any]:
    """The human answers Yes in Claude Code's own dialog, not in the editor; the
    editor's record of the question once the editor has been told it is gone."""
    async with human_editor(socket) as human:
        with claude_tui(claude, root) as tui:
            await trio.to_thread.run_sync(tui.submit, "make the file")
            with trio.fail_after(60):
                note = await next_prompt(human)
                await trio.to_thread.run_sync(tui.wait_for, PROCEED)
                await trio.sleep(0.5)  # drawn before the dialog takes the next key
                tui.tmux("send-keys", "-t", "0", "Enter")  # 1. Yes
                await trio.to_thread.run_sync(tui.wait_for, "done")
                await next_dismissal(human)
            record: dict[str, Any] = await human.call("hive/poll", {"id": note.params["id"]})
    return record


@needs_tmux
def test_tui_hub_down_shows_claude_codes_own_dialog(claude_bin: Path, claude_root: Path) -> None:
    target = made_file(claude_root)
    log = claude_root / "hook.log"
    with scripted_model(touch_once(target)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        install_hook(claude, claude_root / "no-hub.sock", f"2>>{log}")
        screen = own_dialog(claude, claude_root)
    assert f"touch {target}" in screen
    assert not target.exists()
    # the hook ran, found no hub, and left the question to this dialog
    assert "no hub answers on" in log.read_text()


@needs_tmux
async def test_tui_allow_from_the_editor_runs_it_and_closes_the_dialog(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Claude Code 2.1.328 draws its own dialog about half a second after the hook
    starts, whatever the hook does, and takes the first answer: the editor's allow
    runs the command and the dialog goes, with no key pressed in the terminal."""
    target = made_file(claude_root)
    with scripted_model(touch_once(target)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        install_hook(claude, hub_config.socket, "--timeout", "60")
        async with human_editor(hub_config.socket) as human:
            with claude_tui(claude, claude_root) as tui:
                await trio.to_thread.run_sync(tui.submit, "make the file")
                with trio.fail_after(60):
                    note = await next_prompt(human)
                    await human.call("hive/respond", {"id": note.params["id"], "answer": "allow"})
                    while not target.exists():  # noqa: ASYNC110 (another process's file)
                        await trio.sleep(0.1)
                screen = await trio.to_thread.run_sync(tui.wait_for, "done")
    assert PROCEED not in screen


@needs_tmux
async def test_tui_answered_in_the_terminal_the_editors_question_is_withdrawn(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """The human says Yes in Claude Code's own dialog: Claude Code tells the hook
    nothing, but the call's result in the session's transcript withdraws the
    editor's question (by "the terminal") instead of it waiting out the hook's
    --timeout."""
    target = made_file(claude_root)
    with scripted_model(touch_once(target)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        install_hook(claude, hub_config.socket, "--timeout", "60")
        record = await yes_in_the_terminal(claude, claude_root, hub_config.socket)
    assert target.exists()
    assert (record["status"], record["by"]) == ("cancelled", "the terminal")
