"""Two real interactive Claude Codes at once, each in its own tmux pane and project,
set up with ``hive-rpc setup claude-code`` only (issue 30, item 1): ``hive-rpc
sessions`` tells which one waits on the human, which works, which is idle, which is
gone.

Claude Code 2.1.328 runs the hooks setup wrote: SessionStart and UserPromptSubmit in
the background (``"async": true``), Stop, PermissionRequest and SessionEnd; the hub
sees the permission request itself and, through a pidfd, each process's exit. Each
session is one agent, ``claude-code-PID``, the pid of the claude process in its pane
(its MCP server, which setup registered too, names it so as well)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import trio
from claude_session import ClaudeHome
from editor import human_editor, next_prompt
from scripted_model import ModelRequest, Script, scripted_model, text, tool_use
from test_claude_permission_hook import claude_tui
from test_claude_setup import HIVE_RPC, run_setup
from waiting import logged

from hive_rpc.hub import HubConfig
from hive_rpc.runtime.activity import Entry
from hive_rpc.service import HubService

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


async def sessions_cli(config: HubConfig) -> list[dict[str, Any]]:
    """``hive-rpc sessions --json``, the real command (a child process the loop
    waits on: the hub runs in this test's loop)."""
    done = await trio.run_process(
        [str(HIVE_RPC), "sessions", "--json", "--socket", str(config.socket), "--no-start"],
        capture_stdout=True, capture_stderr=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


async def state_of(hub: HubService, agent: str, state: str, after: int = 0) -> Entry:
    def wanted(e: Entry) -> bool:
        return e.kind == "session" and e.key == agent and e.data.get("state") == state

    return await logged(hub.activity, wanted, within_s=120, after=after)


def make_the_file(target: Path) -> Script:
    """The model of an interactive session: asked to "make the file", it asks for
    ``Bash touch TARGET`` once, then says "made it"; to anything else, "hello there"."""

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        said = " ".join(request.user_texts())
        if "make the file" in said and request.last_tool_result() is None:
            return [tool_use("Bash", {"command": f"touch {target}", "description": "Make it"})]
        if "make the file" in said:
            return [text("made it")]
        return [text("hello there")]

    return script


def pane_pid(tui: Any) -> int:
    return int(tui.tmux("display-message", "-p", "-t", "0", "#{pane_pid}").strip())


@needs_tmux
async def test_two_claude_codes_at_once_one_waiting_one_idle(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    target = claude_root / "app" / "made-by-claude"
    with scripted_model(make_the_file(target)) as model:
        app = ClaudeHome(claude_bin, claude_root / "home", claude_root / "app", model.base_url)
        docs = ClaudeHome(claude_bin, claude_root / "home", claude_root / "docs", model.base_url)
        app.write_config()
        docs.write_config()
        run_setup(app, hub_config, "--user", "--no-sandbox")
        for pane_dir in ("tmux-app", "tmux-docs"):
            (claude_root / pane_dir).mkdir()
        async with human_editor(hub_config.socket) as human:
            with (
                claude_tui(app, claude_root / "tmux-app") as app_tui,
                claude_tui(docs, claude_root / "tmux-docs") as docs_tui,
            ):
                a, d = f"claude-code-{pane_pid(app_tui)}", f"claude-code-{pane_pid(docs_tui)}"
                with trio.fail_after(240):
                    # both started, and wait for a first prompt
                    await state_of(hub, a, "idle")
                    await state_of(hub, d, "idle")
                    mark = hub.activity.last_id
                    await trio.to_thread.run_sync(app_tui.submit, "make the file")
                    permission = await next_prompt(human)
                    assert permission.params["agent_id"] == a
                    await state_of(hub, a, "waiting", after=mark)
                    said = hub.activity.last_id
                    await trio.to_thread.run_sync(docs_tui.submit, "say hi")
                    # Each of the session's events is an entry with its state: an idle
                    # one after ``mark`` may be a late event of before "say hi" (CI saw
                    # 'working' listed after it), so its turn is followed from working.
                    working = await state_of(hub, d, "working", after=said)
                    await trio.to_thread.run_sync(docs_tui.wait_for, "hello there")
                    await state_of(hub, d, "idle", after=working.id)  # its turn ended

                    listed = {s["agent_id"]: s for s in await sessions_cli(hub_config)}
                    assert list(listed) == [a, d]  # the one waiting on the human first
                    assert (listed[a]["state"], listed[a]["permissions"]) == ("waiting", 1)
                    assert listed[a]["prompt_ids"] == [permission.params["id"]]
                    assert listed[a]["project_dir"] == str(app.project)
                    assert (listed[d]["state"], listed[d]["project_dir"]) == (
                        "idle",
                        str(docs.project),
                    )
                    assert {listed[a]["agent"], listed[d]["agent"]} == {"claude-code"}

                    mark = hub.activity.last_id
                    await human.call(
                        "hive/respond", {"id": permission.params["id"], "answer": "allow"}
                    )
                    await trio.to_thread.run_sync(app_tui.wait_for, "made it")
                    await state_of(hub, a, "idle", after=mark)  # answered, worked, done
                    assert target.exists()

                    await trio.to_thread.run_sync(docs_tui.submit, "/exit")
                    gone = await state_of(hub, d, "gone", after=mark)
                    assert gone.event in ("end", "exit")
                    states = {s["agent_id"]: s["state"] for s in await sessions_cli(hub_config)}
                    assert states == {a: "idle", d: "gone"}
    assert model.errors == []
