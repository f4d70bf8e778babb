"""``hive-rpc hook claude-code`` for Claude Code's other events, the real command fed
each event's JSON in the shape Claude Code 2.1.328 sends (measured with a recording
hook: docs/claude-code.md), against a real hub.

A Stop or SessionEnd of a session running in a ling's tmux pane (the hook sees the
pane's ``$TMUX_PANE``, as Claude Code passes its environment on) reaches the parent's
real tmux pane as seed 004's child-complete, once per turn; a Notification is an
entry on the activity stream.  Nothing is ever printed on stdout, and the exit code
is 0 whatever happens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import trio
from test_cli_spawn import LING, Tmux, ready, received, spawn
from test_cli_spawn import tmux as tmux  # the fixture: a private tmux server

from hive_rpc.cli.hook_events import STALE_S, Turns
from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

SESSION = "5f06378d-c0f4-4c8e-aed7-7e03915fa096"
COMPLETE = "[CHILD COMPLETE] Agent 'auth' on branch main.auth has completed."


def stop(prompt_id: str, **more: Any) -> dict[str, Any]:
    """A Stop as Claude Code 2.1.328 sends it."""
    return {
        "session_id": SESSION,
        "transcript_path": f"/nonexistent/{SESSION}.jsonl",
        "cwd": "/src/app",
        "prompt_id": prompt_id,
        "permission_mode": "default",
        "effort": {"level": "medium"},
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "All 42 tests pass.",
        "background_tasks": [],
        "session_crons": [],
        **more,
    }


def session_end(transcript: Path, prompt_id: str = "exit-prompt") -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": "/src/app",
        "prompt_id": prompt_id,
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }


def notification(kind: str, message: str) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": f"/nonexistent/{SESSION}.jsonl",
        "cwd": "/src/app",
        "hook_event_name": "Notification",
        "message": message,
        "title": "Claude Code",
        "notification_type": kind,
    }


async def run_hook(
    config: HubConfig, event: dict[str, Any], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    where = ["--socket", str(config.socket), "--data-dir", str(config.data_dir)]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "ZELLIJ", "HIVE"))}
    with trio.fail_after(30):
        done = await trio.run_process(
            [sys.executable, "-m", "hive_rpc", "hook", "claude-code", *where],
            stdin=json.dumps(event).encode(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env={**base, **(env or {})},
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"", done.stdout  # never a decision for these events
    return done


async def family(config: HubConfig, tmux: Tmux, short_tmp: Path) -> tuple[Path, dict[str, str]]:
    """Ling ``main`` (a scripted ling recording what it reads, in a real pane) and its
    child ``main.auth`` spawned in a pane of its own; the record of what the parent
    read, and the environment of a program in the child's pane."""
    record = short_tmp / "parent.jsonl"
    done = await spawn(config, tmux, "main", "--", sys.executable, str(LING), str(record))
    assert done.returncode == 0, done.stderr
    await ready(record)
    done = await spawn(config, tmux, "main.auth", "--json", "--", "sleep", "600")
    assert done.returncode == 0, done.stderr
    pane = json.loads(done.stdout)["pane"]
    return record, {**tmux.env, "TMUX_PANE": pane}


async def nothing_more(client: HubClient, record: Path, count: int) -> None:
    """The parent read ``count`` submissions and no more: a message sent now to its
    pane comes right after them (the hub types into one pane in order, and the hooks
    that were to post nothing have exited)."""
    await client.call("agent/answer", {"agent": "main", "message": "after the hooks"})
    got = await received(record, count + 1)
    assert got[count].endswith("after the hooks"), got
    assert len(got) == count + 1, got


def transcript(path: Path, *turns: tuple[str, bool]) -> Path:
    """A Claude Code transcript (JSONL) with these user turns, each answered or not."""
    lines = []
    for prompt_id, answered in turns:
        lines.append({"type": "user", "promptId": prompt_id, "message": {"content": "go"}})
        if answered:
            lines.append({"type": "assistant", "message": {"content": [{"type": "text"}]}})
    lines.append({"type": "system"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


async def test_a_lings_stop_reaches_its_parents_pane_once(
    hub: HubService, client: HubClient, hub_config: HubConfig, tmux: Tmux, short_tmp: Path
) -> None:
    record, child = await family(hub_config, tmux, short_tmp)
    done = await run_hook(hub_config, stop("turn-1"), child)
    assert b"child-complete to main: delivered" in done.stderr
    assert await received(record, 1) == [f"{COMPLETE}\nIts last words: All 42 tests pass."]
    # the same turn ending again (/exit after it: SessionEnd) is not reported twice
    ended = transcript(short_tmp / "t.jsonl", ("turn-1", True), ("exit-prompt", False))
    done = await run_hook(hub_config, session_end(ended), child)
    assert b"turn turn-1 was reported already" in done.stderr
    await nothing_more(client, record, 1)


async def test_a_new_turn_too_soon_and_a_continued_stop_are_not_reported(
    hub: HubService, client: HubClient, hub_config: HubConfig, tmux: Tmux, short_tmp: Path
) -> None:
    record, child = await family(hub_config, tmux, short_tmp)
    await run_hook(hub_config, stop("turn-1"), child)
    done = await run_hook(hub_config, stop("turn-2"), child)
    assert b"less than 5 s ago" in done.stderr
    done = await run_hook(hub_config, stop("turn-3", stop_hook_active=True), child)
    assert b"not a completion" in done.stderr
    await nothing_more(client, record, 1)


async def test_a_session_end_after_an_unreported_turn_is_reported(
    hub: HubService, hub_config: HubConfig, tmux: Tmux, short_tmp: Path
) -> None:
    record, child = await family(hub_config, tmux, short_tmp)
    ended = transcript(short_tmp / "t.jsonl", ("turn-1", True))
    done = await run_hook(hub_config, session_end(ended), child)
    assert b"child-complete to main: delivered" in done.stderr
    assert await received(record, 1) == [
        f"{COMPLETE}\nIts Claude Code session ended (prompt_input_exit)."
    ]
    # and the session's state is gone with it
    assert not (hub_config.data_dir / "claude-code-turns" / f"{SESSION}.json").exists()


async def test_hive_rpc_ling_names_the_ling_outright(
    hub: HubService, hub_config: HubConfig, tmux: Tmux, short_tmp: Path
) -> None:
    record, _ = await family(hub_config, tmux, short_tmp)
    done = await run_hook(hub_config, stop("turn-1"), {"HIVE_RPC_LING": "main.auth"})
    assert b"child-complete to main: delivered" in done.stderr
    assert len(await received(record, 1)) == 1


async def test_a_session_that_is_no_ling_posts_nothing(
    hub: HubService, client: HubClient, hub_config: HubConfig, tmux: Tmux
) -> None:
    done = await run_hook(hub_config, stop("turn-1"))
    assert done.stderr == b""  # the common case: nothing to say
    # a ling whose parent is not registered: nothing either
    spawned = await spawn(hub_config, tmux, "main.auth", "--json", "--", "sleep", "600")
    pane = json.loads(spawned.stdout)["pane"]
    done = await run_hook(hub_config, stop("turn-1"), {**tmux.env, "TMUX_PANE": pane})
    assert b"main.auth has no registered parent" in done.stderr
    entries = await client.call("hive/activity", {})
    assert not [e for e in entries if e["event"] == "child/child-complete"]


async def test_a_notification_is_an_activity_entry(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    await run_hook(
        hub_config, notification("permission_prompt", "Claude needs your permission to use Bash")
    )
    await run_hook(hub_config, notification("idle_prompt", "Claude is waiting for your input"))
    notices = [e for e in await client.call("hive/activity", {}) if e["kind"] == "notice"]
    assert [(n["message"], n["urgent"], n["type"]) for n in notices] == [
        ("Claude needs your permission to use Bash", True, "permission_prompt"),
        ("Claude is waiting for your input", False, "idle_prompt"),
    ]
    assert {n["agent_id"] for n in notices} == {f"claude-code-{SESSION[:8]}"}
    assert {(n["event"], n["key"], n["cwd"]) for n in notices} == {
        ("agent/notify", f"claude-code-{SESSION[:8]}", "/src/app")
    }


async def test_hub_down_or_anything_else_is_exit_0_and_nothing_printed(
    short_tmp: Path,
) -> None:
    config = HubConfig(socket=short_tmp / "none.sock", data_dir=short_tmp / "data")
    in_a_pane = {"TMUX": f"{short_tmp}/tmux.sock,1,0", "TMUX_PANE": "%3"}
    for event, env in ((stop("turn-1"), in_a_pane), (notification("idle_prompt", "hi"), {})):
        done = await run_hook(config, event, env)
        assert b"hive-rpc hook: " in done.stderr
    done = await run_hook(config, {"hook_event_name": "SubagentStop", "session_id": SESSION})
    assert done.stderr == b""  # a subagent's end is not the ling's: nothing to do
    # a session in no terminal a ling can be: its state only, and no hub to keep it
    done = await run_hook(config, stop("turn-1"))
    assert done.stderr == b""


def test_the_turns_of_a_session_quiet_for_a_week_are_deleted(tmp_path: Path) -> None:
    """A session that ended without a SessionEnd (killed) leaves its turns file; the
    next report of any session deletes it once it is ``STALE_S`` old, and no other."""
    now = time.time()
    killed, quiet = Turns(tmp_path, "killed-session"), Turns(tmp_path, "quiet-session")
    killed.reported("turn-1", now)
    quiet.reported("turn-1", now)
    os.utime(killed.path, (now - STALE_S - 60, now - STALE_S - 60))
    os.utime(quiet.path, (now - STALE_S + 3600, now - STALE_S + 3600))
    Turns(tmp_path, SESSION).reported("turn-9", now)
    assert not killed.path.exists()
    assert quiet.path.exists()
    left = {p.name for p in killed.path.parent.iterdir()}
    assert left == {"quiet-session.json", f"{SESSION}.json"}
