"""The real Claude Code asks the human through the hub's own http hook (issue 30, part
2): a ``"type": "http"`` PermissionRequest hook POSTing to ``/hook/claude-code`` with
the hook token, as ``hive-rpc setup claude-code`` writes it (faces/hook_http.py), no
process per request. ``claude -p --permission-mode default`` (where the hook fires
headless), the scripted model asking for ``Bash touch FILE``, and the human answering
from an editor-socket client: allow runs it, deny's message reaches the model, no hub
leaves it to Claude Code, and Claude Code giving up on the request (its hook timeout)
withdraws the editor's question at once."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio
from ask_user_question import DATABASE
from claude_session import ClaudeHome, claude_home
from editor import claude_running, human_editor, next_prompt
from scripted_model import (
    ModelRequest,
    Script,
    ScriptedModel,
    result_text,
    scripted_model,
)
from test_claude_permission_hook import (
    HEADLESS,
    allowed_and_ran,
    answer_the_question,
    claude_codes_own_refusal,
    claude_tui,
    denied_from_emacs,
    made_file,
    needs_tmux,
    next_dismissal,
    own_dialog,
    touch,
    touch_once,
    yes_in_the_terminal,
)
from test_claude_questions import asking
from test_claude_setup import run_setup

from hive_rpc.core.permission_hook import HOOK_PATH, SETTLED_BY
from hive_rpc.host.paths import HOOK_TOKEN_NAME
from hive_rpc.hub import HubConfig
from hive_rpc.protocol.jsonrpc import Notification
from hive_rpc.service import HubService
from hive_rpc.service.askers import GONE


def hook_url(service: HubService) -> str:
    return str(service.info.http_url).removesuffix("/mcp") + HOOK_PATH


def hook_token(service: HubService) -> str:
    return (Path(str(service.info.data_dir)) / HOOK_TOKEN_NAME).read_text().strip()


def install_http_hook(
    claude: ClaudeHome, url: str, token: str, *, hook_timeout_s: int = 120
) -> None:
    """The http hook in the private HOME's ``~/.claude/settings.json``, the token in
    the header itself."""
    hook = {
        "type": "http",
        "url": url,
        "headers": {"Authorization": f"Bearer {token}"},
        "timeout": hook_timeout_s,
    }
    settings = {"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [hook]}]}}
    (claude.home / ".claude").mkdir(parents=True, exist_ok=True)
    (claude.home / ".claude" / "settings.json").write_text(json.dumps(settings))


def dead_hook_url() -> str:
    """The hook's URL on a port nothing listens on (once this closes it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{HOOK_PATH}"


@contextmanager
def claude_asking(
    script: Script,
    claude_bin: Path,
    claude_root: Path,
    service: HubService | None,
    *,
    wait_s: int = 60,
    hook_timeout_s: int = 120,
) -> Iterator[tuple[ScriptedModel, ClaudeHome]]:
    """The scripted model and a Claude Code home whose http hook asks ``service``'s
    hub, which waits ``wait_s`` for the human (``service`` None: a URL nothing
    listens at)."""
    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        if service is None:
            install_http_hook(claude, dead_hook_url(), "x" * 43)
        else:
            url = f"{hook_url(service)}?timeout={wait_s}"
            install_http_hook(claude, url, hook_token(service), hook_timeout_s=hook_timeout_s)
        yield model, claude


async def unanswered(
    claude: ClaudeHome, hub_config: HubConfig, within_s: float, *, dismissal: bool = False
) -> tuple[subprocess.CompletedProcess[str], Notification, dict[str, Any], Notification | None]:
    """``claude -p`` asking the editor, who does not answer, all within ``within_s``:
    Claude Code's run, the prompt, its record once Claude Code has exited, and (if
    ``dismissal``) the ``hive/dismiss`` the editor got while Claude Code ran."""
    dismissed = None
    async with human_editor(hub_config.socket) as human:
        with trio.fail_after(within_s):
            async with claude_running(claude, *HEADLESS) as runs:
                note = await next_prompt(human)
                if dismissal:
                    dismissed = await next_dismissal(human)
        record = await human.call("hive/poll", {"id": note.params["id"]})
    return runs[0], note, record, dismissed


async def http_round(
    service: HubService,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
    answer: dict[str, Any],
) -> tuple[Any, list[ModelRequest], dict[str, Any], Path]:
    """``claude -p`` asking once to touch a file through the http hook, the human
    answering with ``answer`` (hive/respond params)."""
    target = made_file(claude_root)
    with claude_asking(touch(target), claude_bin, claude_root, service) as (model, claude):
        answered = await answer_the_question(claude, hub_config.socket, answer)
        prompt = {**answered.prompt, "comm": answered.comm}
        return answered.run, list(model.requests), prompt, target


async def test_allow_from_the_editor_runs_the_command(
    http_hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, requests, prompt, target = await http_round(
        http_hub, hub_config, claude_bin, claude_root, {"answer": "allow"}
    )
    allowed_and_ran(done, requests, prompt, target)
    # The asker is the claude process holding the connection, as /proc says.
    assert prompt["comm"] == "claude"


async def test_deny_from_the_editor_reaches_the_model_and_nothing_runs(
    http_hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, requests, _, target = await http_round(
        http_hub, hub_config, claude_bin, claude_root, {"answer": "deny", "by": "emacs"}
    )
    denied_from_emacs(done, requests, target)


def test_hub_down_leaves_it_to_claude_code(claude_bin: Path, claude_root: Path) -> None:
    """Nothing listens at the hook's URL: Claude Code decides itself; in ``-p`` (no
    dialog) it refuses. Never an allow by default."""
    target = made_file(claude_root)
    with claude_asking(touch(target), claude_bin, claude_root, None) as (model, claude):
        done = claude.run(*HEADLESS)
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    claude_codes_own_refusal(model.requests)


async def test_claude_code_giving_up_withdraws_the_editors_question(
    http_hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """The hook's own timeout (3 s) ends before the hub's wait (60 s): Claude Code
    closes the request, and every editor's question is withdrawn then, ``by`` GONE,
    not 60 s later; Claude Code decides itself (a refusal in ``-p``)."""
    target = made_file(claude_root)
    hooked = claude_asking(touch(target), claude_bin, claude_root, http_hub, hook_timeout_s=3)
    with hooked as (_, claude):
        run, note, record, dismissed = await unanswered(claude, hub_config, 50, dismissal=True)
    assert dismissed is not None
    assert (record["status"], record["by"]) == ("cancelled", GONE)
    assert dismissed.params["id"] == note.params["id"]
    assert run.returncode == 0, run.stderr
    assert not target.exists()


async def test_no_decision_in_time_leaves_it_to_claude_code(
    http_hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Nobody answers within the hub's wait (1 s here): the reply is ``{}``, which
    decides nothing, and Claude Code decides itself (a refusal in ``-p``, not ours);
    the editor's question is withdrawn."""
    target = made_file(claude_root)
    hooked = claude_asking(touch(target), claude_bin, claude_root, http_hub, wait_s=1)
    with hooked as (model, claude):
        run, _, record, _ = await unanswered(claude, hub_config, 60)
    assert run.returncode == 0, run.stderr
    assert not target.exists()
    assert record["status"] in ("cancelled", "expired")  # the wait and the ask end together
    claude_codes_own_refusal(model.requests)


async def test_set_up_by_setup_http_hook_the_editors_allow_runs_it(
    http_hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """``hive-rpc setup claude-code --project --http-hook`` as a user runs it: Claude
    Code POSTs to the hub with the token setup wrote, and the editor's allow runs the
    command.  Without the sandbox, which runs a ``touch`` in the project unasked."""
    target = made_file(claude_root)
    with scripted_model(touch(target)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        await trio.to_thread.run_sync(
            lambda: run_setup(claude, hub_config, "--project", "--http-hook", "--no-sandbox")
        )
        settings = json.loads((claude.project / ".claude" / "settings.json").read_text())
        [group] = settings["hooks"]["PermissionRequest"]
        assert group["hooks"][0]["type"] == "http"
        async with human_editor(hub_config.socket) as human:
            with trio.fail_after(120):
                async with claude_running(claude, *HEADLESS) as runs:
                    note = await next_prompt(human)
                    await human.call("hive/respond", {"id": note.params["id"], "answer": "allow"})
    assert runs[0].returncode == 0, runs[0].stderr
    assert target.exists()
    assert re.fullmatch(r"claude-code-\d+", note.params["agent_id"]), note.params


@needs_tmux
def test_tui_hub_down_shows_claude_codes_own_dialog(claude_bin: Path, claude_root: Path) -> None:
    target = made_file(claude_root)
    with claude_asking(touch_once(target), claude_bin, claude_root, None) as (_, claude):
        screen = own_dialog(claude, claude_root)
    assert f"touch {target}" in screen
    assert not target.exists()


@needs_tmux
async def test_tui_answered_in_the_terminal_the_editors_question_is_withdrawn(
    http_hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """The human says Yes in Claude Code's own dialog: Claude Code leaves the hook's
    request open (measured on 2.1.328: it ran on to the hub's wait, the question
    pending all along), and the call's result in the session's transcript withdraws
    the editor's question (``by`` "the terminal"), as for the command hook."""
    target = made_file(claude_root)
    with claude_asking(touch_once(target), claude_bin, claude_root, http_hub) as (_, claude):
        record = await yes_in_the_terminal(claude, claude_root, hub_config.socket)
    assert target.exists()
    assert (record["status"], record["by"]) == ("cancelled", SETTLED_BY)


@needs_tmux
async def test_tui_claude_codes_question_answered_in_the_editor(
    http_hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """``AskUserQuestion`` through the http hook: one prompt, the editor's pick goes
    back in the tool's input and reaches the model."""
    with claude_asking(asking(DATABASE), claude_bin, claude_root, http_hub) as (model, claude):
        async with human_editor(hub_config.socket) as human:
            with claude_tui(claude, claude_root) as tui:
                await trio.to_thread.run_sync(tui.submit, "ask me")
                with trio.fail_after(60):
                    note = await next_prompt(human)
                    answer = {"q1": "Postgres"}
                    await human.call("hive/respond", {"id": note.params["id"], "answer": answer})
                screen = await trio.to_thread.run_sync(tui.wait_for, "done")
        result = model.requests[-1].last_tool_result()
    assert "Allowed by PermissionRequest hook" in screen
    assert note.params["schema"]["properties"]["q1"]["title"] == "Database"
    assert result is not None
    assert result_text(result).startswith(
        'Your questions have been answered: "Which database should the cache use?"="Postgres".'
    ), result_text(result)


async def test_allow_for_this_session_is_not_asked_again(
    http_hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """The lasting answer saves its rule through the http hook too (the hub adds it
    for the prompt the human answered): the same command a second time is allowed by
    the rule, nobody asked."""
    target = made_file(claude_root)
    twice = touch(target, times=2)
    with claude_asking(twice, claude_bin, claude_root, http_hub) as (model, claude):
        async with human_editor(hub_config.socket) as human:
            with trio.fail_after(120):
                async with claude_running(claude, *HEADLESS) as runs:
                    note = await next_prompt(human)
                    answer = {"id": note.params["id"], "answer": "allow for this session"}
                    await human.call("hive/respond", answer)
            asked = [n for n in human.notifications if n.method == "hive/prompt"]
            assert asked == [], "a second question was asked"
            rules = await human.call("rule/list", {})
    assert runs[0].returncode == 0, runs[0].stderr
    results = model.requests[-1].tool_results()
    assert len(results) == 2
    assert not any(r.get("is_error") for r in results), results
    assert [r["pattern"] for r in rules] == [f"Bash(touch {target})"], rules
