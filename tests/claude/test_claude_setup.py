"""``hive-rpc setup claude-code`` with the real Claude Code 2.1.328: nothing written by
hand, only what setup wrote into a scratch project (``--project``: ``.mcp.json`` and
``.claude/settings.json``).

- ``claude mcp list`` finds the server and connects to it (no "pending approval":
  setup approved the project's server);
- Claude Code's Read of the approver token file is refused by the deny rule setup
  wrote (``Read(//ABSOLUTE)``), before any permission is asked;
- with the sandbox setup turned on, a Bash the human allows can neither read the token
  nor reach the hub's socket;
- the interactive Claude Code in a tmux pane, asked to ``touch`` a file, asks the hub
  through the PermissionRequest hook setup wrote, and the editor's allow runs it;
- when the human declines in the editor, Claude Code shows its own dialog, and its
  Notification ("Claude needs your permission", measured: about 6 s after the dialog)
  reaches the hub's activity stream as an urgent notice from the same agent;
- a ling spawned with ``hive-rpc spawn`` running ``claude -p`` reports its Stop to
  its parent's real tmux pane as seed 004's child-complete, once."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from claude_session import ClaudeHome, claude_home
from editor import human_editor, next_prompt
from scripted_model import ModelRequest, result_text, scripted_model, text, tool_use
from test_claude_permission_hook import PROCEED, TUI_ENV, claude_tui, touch_once
from test_cli_spawn import LING, Tmux, ready, received, spawn, submissions
from test_cli_spawn import tmux as tmux  # the fixture: a private tmux server
from waiting import logged, until

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

HIVE_RPC = Path(sys.executable).parent / "hive-rpc"
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def run_setup(claude: ClaudeHome, config: HubConfig, *args: str) -> None:
    """``hive-rpc setup claude-code ARGS`` in the scratch project, as its user would
    run it (their HOME), pointed at the test hub."""
    done = subprocess.run(
        [str(HIVE_RPC), "setup", "claude-code", *args, "--socket", str(config.socket),
         "--data-dir", str(config.data_dir)],
        cwd=claude.project, env=claude.env(), capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def setup_project(claude: ClaudeHome, config: HubConfig) -> None:
    run_setup(claude, config, "--project")
    assert not (claude.home / ".claude" / "settings.json").exists()  # the project's only


async def test_claude_mcp_list_connects_to_the_server_setup_wrote(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    with scripted_model(lambda _: [text("done")]) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        setup_project(claude, hub_config)
        listed = await trio.to_thread.run_sync(lambda: claude.run("mcp", "list"))
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("hive-rpc:"))
    assert line.startswith(f"hive-rpc: {HIVE_RPC} mcp --socket {hub_config.socket}")
    assert "Connected" in line, listed.stdout


async def test_user_scope_is_where_claude_code_reads_it(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """``--user``: ``~/.claude.json``'s ``mcpServers``, merged into the state Claude
    Code keeps there (its onboarding and trust answers survive: no welcome screen)."""
    with scripted_model(lambda _: [text("done")]) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        run_setup(claude, hub_config, "--user", "--no-sandbox")
        config = json.loads((claude.home / ".claude.json").read_text())
        assert config["hasCompletedOnboarding"] is True
        got = await trio.to_thread.run_sync(lambda: claude.run("mcp", "get", "hive-rpc"))
        listed = await trio.to_thread.run_sync(lambda: claude.run("mcp", "list"))
    assert "Scope: User config" in got.stdout, got.stdout
    line = next(x for x in listed.stdout.splitlines() if x.startswith("hive-rpc:"))
    assert "Connected" in line, listed.stdout
    assert (claude.home / ".claude" / "settings.json").exists()


async def test_the_deny_rule_keeps_claude_codes_read_from_the_approver_token(
    hub: HubService, client: HubClient, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    token_file = hub_config.data_dir / "approver-token"
    token = token_file.read_text().strip()

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        if request.last_tool_result() is None:
            return [tool_use("Read", {"file_path": str(token_file)})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        setup_project(claude, hub_config)
        await client.call("hive/subscribe", {})
        done = await trio.to_thread.run_sync(
            lambda: claude.run("-p", "read it", "--permission-mode", "default")
        )
    assert done.returncode == 0, done.stderr
    result = model.requests[-1].last_tool_result()
    assert result is not None
    assert result.get("is_error") is True, result
    assert token not in result_text(result)
    assert "denied" in result_text(result).lower(), result
    # refused by the rule itself: no permission request reached the hook, so no prompt
    assert [n for n in client.notifications if n.method == "hive/prompt"] == []


@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("bwrap", "socat")), reason="the sandbox needs bwrap, socat"
)
async def test_in_the_sandbox_setup_turned_on_bash_reaches_neither_token_nor_hub(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """A Bash naming the token file is refused by the Read deny rule itself (measured:
    Claude Code checks the paths a Bash command reads against it, through a shell
    variable too), nobody asked; one hiding the path where Claude Code cannot read it
    (base64) is asked, the human allows it, and the sandbox keeps both the file and
    the socket from it."""
    token_file = hub_config.data_dir / "approver-token"
    token = token_file.read_text().strip()
    named = f"cat {token_file}"
    encoded = base64.b64encode(str(token_file).encode()).decode()
    hidden = (
        f'cat "$(echo {encoded} | base64 -d)"; '
        f"{HIVE_RPC} status --no-start --socket {hub_config.socket}"
    )

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        done = len(request.tool_results())
        if done < 2:
            return [tool_use("Bash", {"command": [named, hidden][done], "description": "Look"})]
        return [text("done")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        setup_project(claude, hub_config)
        settings = json.loads((claude.project / ".claude" / "settings.json").read_text())
        assert settings["sandbox"] == {"enabled": True}
        async with human_editor(hub_config.socket) as human:
            async with trio.open_nursery() as nursery:
                runs: list[Any] = []

                async def run() -> None:
                    runs.append(
                        await trio.to_thread.run_sync(
                            lambda: claude.run("-p", "look", "--permission-mode", "default")
                        )
                    )

                nursery.start_soon(run)
                with trio.fail_after(60):
                    note = await next_prompt(human)
                assert f'wants to run Bash: cat "$(echo {encoded}' in note.params["question"]
                await human.call("hive/respond", {"id": note.params["id"], "answer": "allow"})
            asked = [n for n in human.notifications if n.method == "hive/prompt"]
    assert asked == []  # the named one was never asked
    assert runs[0].returncode == 0, runs[0].stderr
    refused, sandboxed = (result_text(r) for r in model.requests[-1].tool_results())
    assert refused == f"Permission to use Bash with command {named} has been denied."
    assert token not in sandboxed
    assert "Permission denied" in sandboxed, sandboxed
    # its socket(AF_UNIX) refused by the sandbox's seccomp filter: the hub is out of reach
    assert "hive-rpc: [Errno 1] Operation not permitted" in sandboxed, sandboxed


@needs_tmux
async def test_tui_permission_reaches_the_hub_through_the_hooks_setup_wrote(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    target = claude_root / "project" / "made-by-claude"
    with scripted_model(touch_once(target)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        setup_project(claude, hub_config)
        async with human_editor(hub_config.socket) as human:
            with claude_tui(claude, claude_root) as tui:
                await trio.to_thread.run_sync(tui.submit, "make the file")
                with trio.fail_after(60):
                    note = await next_prompt(human)
                    assert f"wants to run Bash: touch {target}" in note.params["question"]
                    # With the sandbox on (setup's default here), Claude Code shows its
                    # own dialog while the hook waits (measured on 2.1.328; without the
                    # sandbox it shows none): the first answer wins, here the editor's.
                    await human.call("hive/respond", {"id": note.params["id"], "answer": "allow"})
                    while not target.exists():  # noqa: ASYNC110 (another process's file)
                        await trio.sleep(0.1)
                screen = await trio.to_thread.run_sync(tui.wait_for, "done")
    assert "Allowed by PermissionRequest hook" in screen
    assert PROCEED not in screen


@needs_tmux
async def test_tui_notification_reaches_the_activity_stream(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    target = claude_root / "project" / "made-by-claude"
    with scripted_model(touch_once(target)) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        setup_project(claude, hub_config)
        async with human_editor(hub_config.socket) as human:
            with claude_tui(claude, claude_root) as tui:
                await trio.to_thread.run_sync(tui.submit, "make the file")
                with trio.fail_after(60):
                    note = await next_prompt(human)
                    await human.call("hive/respond", {"id": note.params["id"], "action": "decline"})
                    await trio.to_thread.run_sync(tui.wait_for, PROCEED)
                    await logged(hub.activity, lambda e: e.kind == "notice", within_s=60)
                    notices = await _notices(human)
    assert [(n["message"], n["type"], n["urgent"]) for n in notices] == [
        ("Claude needs your permission", "permission_prompt", True)
    ]
    assert notices[0]["agent_id"] == note.params["agent_id"]  # the session that asked
    assert not target.exists()


async def _notices(client: HubClient) -> list[dict[str, Any]]:
    return [e for e in await client.call("hive/activity", {}) if e["kind"] == "notice"]


@needs_tmux
async def test_a_spawned_claude_lings_stop_reaches_its_parents_pane(
    hub: HubService,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
    tmux: Tmux,
    short_tmp: Path,
) -> None:
    def script(request: ModelRequest) -> list[dict[str, Any]]:
        return [text("The JWT middleware is in and its tests pass.")]

    record = short_tmp / "parent.jsonl"
    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        setup_project(claude, hub_config)
        parent = await spawn(hub_config, tmux, "main", "--", sys.executable, str(LING), str(record))
        assert parent.returncode == 0, parent.stderr
        await ready(record)
        env = claude.env()
        child = await spawn(
            hub_config, tmux, "main.auth", "--json", "--",
            "env", *[f"{k}={env[k]}" for k in TUI_ENV if k in env],
            str(claude.claude), "-p", "implement it",
            cwd=claude.project,
        )  # fmt: skip
        assert child.returncode == 0, child.stderr
        assert json.loads(child.stdout)["name"] == "main.auth"
        got = await received(record, 1)
        # The SessionEnd after it is the same turn: not a second one.  Its hook forgets
        # the session's turns last (another process's file: polled); a message sent
        # after that is what the parent reads next.
        turns = hub_config.data_dir / "claude-code-turns"
        await until(lambda: not any(turns.iterdir()), "the SessionEnd hook", within_s=60)
        await hub.call("agent/answer", {"agent": "main", "message": "after the session"})
        after = await received(record, 2)
    assert got[:1] == [
        "[CHILD COMPLETE] Agent 'auth' on branch main.auth has completed.\n"
        "Its last words: The JWT middleware is in and its tests pass."
    ]
    assert after[1].endswith("after the session"), after
    assert len(submissions(record)) == 2
