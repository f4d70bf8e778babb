"""``hive-rpc setup claude-code``: the real command in a scratch HOME and project,
its files read back.  It merges into what is there (other servers, hooks and rules
kept), backs a changed file up once, changes nothing when run again, refuses a file
that is not JSON and leaves it alone, and ``--print`` writes nothing."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_support import HIVE_RPC, run_setup

from hive_rpc.cli.setup import HOOK_EVENTS

EVENTS = [
    "PermissionRequest",
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStop",
    "SessionStart",
    "UserPromptSubmit",
    "SessionEnd",
]


def setup(
    home: Path, cwd: Path, *args: str, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = None if path is None else {"PATH": path}
    return run_setup("claude-code", *args, home=home, cwd=cwd, hidden=("XDG_",), env=env)


def read(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def our_hooks(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [
        h
        for group in settings["hooks"][event]
        for h in group["hooks"]
        if "hook claude-code" in h["command"]
    ]


def test_project_writes_the_server_and_the_hooks(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    done = setup(home, project, "--project", "--socket", "/run/hub.sock")
    assert done.returncode == 0, done.stderr
    assert read(project / ".mcp.json") == {
        "mcpServers": {
            "hive-rpc": {
                "type": "stdio",
                "command": str(HIVE_RPC),
                "args": ["mcp", "--socket", "/run/hub.sock"],
                "env": {},
            }
        }
    }
    settings = read(project / ".claude" / "settings.json")
    assert list(settings["hooks"]) == EVENTS
    hook = f"{HIVE_RPC} hook claude-code --socket /run/hub.sock"
    assert settings["hooks"]["PermissionRequest"] == [
        {"matcher": "*", "hooks": [{"type": "command", "command": hook, "timeout": 600}]}
    ]
    assert settings["hooks"]["Stop"] == [
        {"hooks": [{"type": "command", "command": hook, "timeout": 10}]}
    ]
    assert settings["permissions"]["allow"] == ["mcp__hive-rpc"]
    data = home / ".local" / "share" / "hive-rpc"
    token, epc = data / "approver-token", data / "epc-token"  # each makes an approver
    assert settings["permissions"]["deny"] == [
        f"Read(/{token})",
        f"Edit(/{token})",
        f"Read(/{epc})",
        f"Edit(/{epc})",
    ]
    assert settings["enabledMcpjsonServers"] == ["hive-rpc"]
    assert not (home / ".claude.json").exists()  # the project's files only
    assert f"{project / '.mcp.json'}: written" in done.stdout


def test_user_merges_into_claude_codes_own_file(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    state = {
        "hasCompletedOnboarding": True,
        "projects": {"/src/app": {"mcpServers": {}}},
        "mcpServers": {
            "other": {"type": "stdio", "command": "other", "args": [], "env": {}},
            "hive-rpc": {"command": "hive-rpc", "args": ["mcp"], "env": {"HIVE_RPC_X": "1"}},
        },
    }
    (home / ".claude.json").write_text(json.dumps(state))
    os.chmod(home / ".claude.json", 0o600)
    done = setup(home, project, "--user")
    assert done.returncode == 0, done.stderr
    config = read(home / ".claude.json")
    assert config["hasCompletedOnboarding"] is True
    assert config["projects"] == state["projects"]
    assert config["mcpServers"]["other"] == state["mcpServers"]["other"]
    assert config["mcpServers"]["hive-rpc"] == {
        "type": "stdio",
        "command": str(HIVE_RPC),
        "args": ["mcp"],
        "env": {"HIVE_RPC_X": "1"},  # the user's own variables stay
    }
    assert (home / ".claude.json").stat().st_mode & 0o777 == 0o600
    backups = list(home.glob(".claude.json.hive-rpc-*.bak"))
    assert [json.loads(b.read_text()) for b in backups] == [state]
    assert backups[0].stat().st_mode & 0o777 == 0o600
    settings = read(home / ".claude" / "settings.json")
    assert "enabledMcpjsonServers" not in settings
    assert all(len(our_hooks(settings, e)) == 1 for e in EVENTS)
    assert not (project / ".mcp.json").exists()


def test_user_is_the_default(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    assert setup(home, project).returncode == 0
    assert "hive-rpc" in read(home / ".claude.json")["mcpServers"]


def test_others_hooks_and_rules_are_kept_and_ours_replaced(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    theirs = {"type": "command", "command": "notify-send done"}
    old_ours = {"type": "command", "command": "hive-rpc hook claude-code --timeout 30"}
    settings = {
        "model": "opus",
        "hooks": {
            "Stop": [{"hooks": [theirs]}],
            "PermissionRequest": [{"matcher": "Bash", "hooks": [old_ours, theirs]}],
            "PreToolUse": [{"matcher": "*", "hooks": [theirs]}],
        },
        "permissions": {"allow": ["Bash(npm test)"], "deny": ["Bash(rm:*)"]},
    }
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    assert setup(home, project, "--project").returncode == 0
    after = read(project / ".claude" / "settings.json")
    assert after["model"] == "opus"
    assert after["hooks"]["PreToolUse"] == settings["hooks"]["PreToolUse"]
    new = f"{HIVE_RPC} hook claude-code"
    # ours updated where it stood, in the user's matcher group, the user's own kept
    assert after["hooks"]["PermissionRequest"] == [
        {
            "matcher": "Bash",
            "hooks": [{"type": "command", "command": new, "timeout": 600}, theirs],
        }
    ]
    assert after["hooks"]["Stop"] == [
        {"hooks": [theirs]},
        {"hooks": [{"type": "command", "command": new, "timeout": 10}]},
    ]
    assert after["permissions"]["allow"] == ["Bash(npm test)", "mcp__hive-rpc"]
    assert after["permissions"]["deny"][0] == "Bash(rm:*)"


def test_twice_changes_nothing_and_backs_up_once(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    (project / ".mcp.json").write_text('{"mcpServers": {}}')
    assert setup(home, project, "--project").returncode == 0
    files = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    stats = {p: p.stat().st_mtime_ns for p in files}
    again = setup(home, project, "--project")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already set up") == 2
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == files
    assert {p: p.stat().st_mtime_ns for p in files} == stats
    assert [p.name for p in project.glob(".mcp.json.*.bak")] != []
    assert len(list(project.glob(".mcp.json.*.bak"))) == 1


def test_a_file_that_is_not_json_is_refused_and_left_alone(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    (project / ".claude").mkdir()
    broken = project / ".claude" / "settings.json"
    broken.write_text('{"hooks": {,}')
    done = setup(home, project, "--project")
    assert done.returncode == 1
    assert f"{broken} is not valid JSON" in done.stderr
    assert "nothing was changed" in done.stderr
    assert broken.read_text() == '{"hooks": {,}'
    assert not (project / ".mcp.json").exists()  # nothing written, not even the other file
    assert list(project.rglob("*.bak")) == []


def test_a_hooks_block_of_another_shape_is_refused(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"hooks": {"Stop": "no"}}')
    done = setup(home, project, "--project")
    assert done.returncode == 1
    assert '"hooks.Stop" is not a list' in done.stderr
    assert not (project / ".mcp.json").exists()


def test_print_writes_nothing(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    done = setup(home, project, "--project", "--print")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert set(printed) == {str(project / ".mcp.json"), str(project / ".claude" / "settings.json")}
    assert list(project.iterdir()) == []
    assert list(home.iterdir()) == []


def test_every_hook_runs_the_same_command(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    setup(home, project, "--project", "--data-dir", str(home / "data"))
    settings = read(project / ".claude" / "settings.json")
    commands = {h["command"] for e in HOOK_EVENTS for h in our_hooks(settings, e)}
    assert [shlex.split(c) for c in commands] == [
        [str(HIVE_RPC), "hook", "claude-code", "--data-dir", str(home / "data")]
    ]
    assert f"Read(/{home / 'data' / 'approver-token'})" in settings["permissions"]["deny"]


SANDBOX_WORKS = all(shutil.which(tool) for tool in ("bwrap", "socat"))


@pytest.mark.skipif(not SANDBOX_WORKS, reason="Claude Code's Linux sandbox needs bwrap and socat")
def test_the_sandbox_is_turned_on_where_it_works(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    done = setup(home, project, "--project")
    assert done.returncode == 0, done.stderr
    assert read(project / ".claude" / "settings.json")["sandbox"] == {"enabled": True}
    assert "note" not in done.stderr
    assert "Claude Code's sandbox turned on" in done.stdout
    assert "turned on" not in setup(home, project, "--project").stdout  # said once


def test_a_sandbox_the_user_set_is_kept(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    (project / ".claude").mkdir()
    mine = {"sandbox": {"enabled": False, "excludedCommands": ["docker"]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(mine))
    assert setup(home, project, "--project").returncode == 0
    assert read(project / ".claude" / "settings.json")["sandbox"] == mine["sandbox"]


def test_without_bwrap_the_sandbox_is_left_off_and_it_says_so(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    done = setup(home, project, "--project", path=str(home))  # no bwrap, no socat
    assert done.returncode == 0, done.stderr
    assert "sandbox" not in read(project / ".claude" / "settings.json")
    assert "Claude Code's sandbox needs bwrap and socat on Linux" in done.stderr
    assert "not its Bash" in done.stderr


def test_no_sandbox_leaves_it_alone(dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    done = setup(home, project, "--project", "--no-sandbox")
    assert done.returncode == 0, done.stderr
    assert "sandbox" not in read(project / ".claude" / "settings.json")
    assert done.stderr == ""
