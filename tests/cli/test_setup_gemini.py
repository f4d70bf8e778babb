"""``hive-rpc setup gemini``: the real command with a scratch ``GEMINI_CLI_HOME``, its
settings.json read back.  It merges into the user's settings (other servers, hooks
and keys kept), changes nothing when run again, ``--remove`` gives back the user's
settings, a file that is not a JSON object is refused and left alone (Gemini CLI's
comments included), and ``--print`` writes nothing.  That Gemini CLI itself runs
what it writes is tests/agents/test_gemini_mcp.py's part."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_support import HIVE_RPC, run_setup

from hive_rpc.cli.setup.gemini import GATE_MATCHER, HOOK_MATCHER

USERS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "mcpServers": {"other": {"command": "other-server"}},
    "hooks": {
        "BeforeTool": [
            {"matcher": "write_file", "hooks": [{"type": "command", "command": "my-own-hook"}]}
        ]
    },
}


def setup(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_setup("gemini", *args, home=root, hidden=("GEMINI_",))


def read(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path


def settings_of(home: Path) -> Path:
    return home / ".gemini" / "settings.json"


SESSION_EVENTS = ("SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd", "Notification")


def session_hooks(command: str) -> dict[str, Any]:
    """The session events' groups as setup writes them on their own: no matcher."""
    hook = {"name": "hive-rpc", "type": "command", "command": command, "timeout": 10000}
    return {event: [{"hooks": [hook]}] for event in SESSION_EVENTS}


def test_a_new_file_gets_the_server_and_the_hook(home: Path) -> None:
    done = setup(home, "--socket", "/run/hub.sock")
    assert done.returncode == 0, done.stderr
    path = settings_of(home)
    assert read(path) == {
        "mcpServers": {
            "hive-rpc": {
                "command": str(HIVE_RPC),
                "args": ["mcp", "--socket", "/run/hub.sock"],
                "trust": True,
                "timeout": 600000,
                "env": {"MCP_TOOL_TIMEOUT": "600000"},
            }
        },
        "hooks": {
            "BeforeTool": [
                {
                    "matcher": HOOK_MATCHER,
                    "hooks": [
                        {
                            "name": "hive-rpc",
                            "type": "command",
                            "command": f"{HIVE_RPC} hook gemini --socket /run/hub.sock",
                            "timeout": 600000,
                        }
                    ],
                }
            ],
            **session_hooks(f"{HIVE_RPC} hook gemini --socket /run/hub.sock"),
        },
    }
    assert done.stdout.splitlines()[0] == f"{path}: written"
    assert "trust" in done.stdout.splitlines()[1]  # the folder trust left to the user
    assert not (home / ".gemini" / "trustedFolders.json").exists()


def test_gemini_cli_home_moves_the_file(home: Path) -> None:
    elsewhere = home / "elsewhere"
    done = run_setup(
        "gemini", home=home, hidden=("GEMINI_",), env={"GEMINI_CLI_HOME": str(elsewhere)}
    )
    assert done.returncode == 0, done.stderr
    assert "hive-rpc" in read(settings_of(elsewhere))["mcpServers"]
    assert not settings_of(home).exists()


def test_merges_into_the_users_settings_then_remove_gives_them_back(home: Path) -> None:
    path = settings_of(home)
    path.parent.mkdir()
    original = json.dumps(USERS, indent=4)
    path.write_text(original)
    done = setup(home)
    assert done.returncode == 0, done.stderr
    merged = read(path)
    assert merged["security"] == USERS["security"]
    assert merged["mcpServers"]["other"] == USERS["mcpServers"]["other"]
    assert merged["mcpServers"]["hive-rpc"]["trust"] is True
    groups = merged["hooks"]["BeforeTool"]
    assert groups[0] == USERS["hooks"]["BeforeTool"][0]
    assert groups[1]["hooks"][0]["command"] == f"{HIVE_RPC} hook gemini"
    backups = list(path.parent.glob("settings.json.hive-rpc-*.bak"))
    assert [b.read_text() for b in backups] == [original]

    text = path.read_text()
    again = setup(home)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == f"{path}: already set up"
    assert path.read_text() == text
    assert len(backups) == len(list(path.parent.glob("*.bak")))

    removed = setup(home, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert read(path) == USERS
    assert "hive-rpc's entries removed" in removed.stdout


def test_an_existing_entry_keeps_the_users_timeout_and_env(home: Path) -> None:
    path = settings_of(home)
    path.parent.mkdir()
    old_hook = {"type": "command", "command": "/old/hive-rpc hook gemini"}
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "hive-rpc": {"command": "hive-rpc", "timeout": 1200000, "env": {"MINE": "1"}}
                },
                "hooks": {
                    "BeforeTool": [
                        {"matcher": "run_shell_command", "hooks": [old_hook]},
                        {"matcher": "*", "hooks": [old_hook]},
                    ]
                },
            }
        )
    )
    done = setup(home)
    assert done.returncode == 0, done.stderr
    merged = read(path)
    entry = merged["mcpServers"]["hive-rpc"]
    assert entry["timeout"] == 1200000
    assert entry["env"] == {"MINE": "1", "MCP_TOOL_TIMEOUT": "1200000"}
    hook = {
        "type": "command",
        "command": f"{HIVE_RPC} hook gemini",
        "name": "hive-rpc",
        "timeout": 600000,
    }
    assert merged["hooks"]["BeforeTool"] == [{"matcher": "run_shell_command", "hooks": [hook]}]


def test_session_hooks_are_merged_beside_the_users_and_removed_again(home: Path) -> None:
    """A ``hook gemini`` in the user's AfterAgent group is updated where it stands,
    beside their own hook; their SessionStart hook stays, setup's group after it;
    setup again changes nothing, and ``--remove`` leaves only theirs.  The gate is
    never on a session hook: those decide nothing."""
    path = settings_of(home)
    path.parent.mkdir()
    mine = {"type": "command", "command": "my-start-hook"}
    users = {
        "hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [mine]}],
            "AfterAgent": [{"hooks": [{"type": "command", "command": "my-after-hook"}]}],
        }
    }
    old = json.loads(json.dumps(users))
    old["hooks"]["AfterAgent"][0]["hooks"].append({"command": "/old/hive-rpc hook gemini"})
    path.write_text(json.dumps(old))
    done = setup(home, "--gate")
    assert done.returncode == 0, done.stderr
    hooks = read(path)["hooks"]
    ours = session_hooks(f"{HIVE_RPC} hook gemini")["SessionStart"][0]["hooks"][0]
    assert hooks["AfterAgent"] == [
        {"hooks": [{"type": "command", "command": "my-after-hook"}, ours]}
    ]
    assert hooks["SessionStart"] == [{"matcher": "startup", "hooks": [mine]}, {"hooks": [ours]}]
    assert hooks["BeforeAgent"] == [{"hooks": [ours]}]
    assert setup(home).stdout.splitlines()[0] == f"{path}: already set up"
    removed = setup(home, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert read(path) == users


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('// Gemini CLI reads comments\n{"mcpServers": {}}', "is not valid JSON"),
        ("[1, 2]", "holds JSON that is not an object"),
        ('{"hooks": {"BeforeTool": {}}}', 'cannot be merged: "hooks.BeforeTool" is not a list'),
        ('{"hooks": {"AfterAgent": 1}}', 'cannot be merged: "hooks.AfterAgent" is not a list'),
        ('{"mcpServers": []}', 'cannot be merged: "mcpServers" is not an object'),
    ],
)
def test_a_file_it_cannot_merge_is_refused_and_left_alone(home: Path, text: str, said: str) -> None:
    path = settings_of(home)
    path.parent.mkdir()
    path.write_text(text)
    done = setup(home)
    assert done.returncode == 1
    assert f"{path} {said}" in done.stderr
    assert "nothing was changed" in done.stderr
    assert path.read_text() == text
    assert list(path.parent.iterdir()) == [path]


def test_print_writes_nothing(home: Path) -> None:
    done = setup(home, "--print")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert list(printed) == [str(settings_of(home))]
    assert printed[str(settings_of(home))]["mcpServers"]["hive-rpc"]["trust"] is True
    assert not (home / ".gemini").exists()


@pytest.mark.parametrize(
    ("tool", "asked"),
    [
        ("run_shell_command", True),
        ("write_file", True),
        ("replace", True),
        ("web_fetch", True),
        ("mcp_github_create_issue", True),
        ("read_file", False),
        ("grep_search", False),
        ("mcp_hive-rpc_hivemind_ask", False),
        ("mcp_hive-rpc_hivemind_poll", False),
    ],
)
def test_the_hook_asks_about_tools_that_act_not_reads_nor_our_own(tool: str, asked: bool) -> None:
    """Gemini CLI tests the matcher as a JavaScript RegExp (``new RegExp(m).test(name)``);
    this one means the same in Python's ``re.search``."""
    assert bool(re.search(HOOK_MATCHER, tool)) is asked


@pytest.mark.parametrize(
    "tool",
    ["run_shell_command", "read_file", "grep_search", "a_tool_added_later", "mcp_github_x"],
)
def test_the_gate_asks_about_every_tool_but_ours(tool: str) -> None:
    """In yolo mode the hook is all that asks: a tool a list of names left out (a new
    built-in, ``read_file``) would run unasked."""
    assert re.search(GATE_MATCHER, tool)
    assert not re.search(GATE_MATCHER, "mcp_hive-rpc_request_human_input")


def our_group(path: Path) -> dict[str, Any]:
    (group,) = [
        g for g in read(path)["hooks"]["BeforeTool"]
        if any("hook gemini" in h["command"] for h in g["hooks"])
    ]  # fmt: skip
    return group


def test_gate_writes_the_gated_hook_for_every_tool_and_keeps_it(home: Path) -> None:
    path = settings_of(home)
    plain = setup(home)
    assert plain.returncode == 0, plain.stderr
    assert our_group(path)["matcher"] == HOOK_MATCHER
    gate = setup(home, "--gate")
    assert gate.returncode == 0, gate.stderr
    group = our_group(path)
    assert group["matcher"] == GATE_MATCHER
    assert group["hooks"][0]["command"] == f"{HIVE_RPC} hook gemini --gate"
    assert "denied when the hub is down" in gate.stdout
    # Run again without --gate (to move the socket, say): the gate stays; dropping it
    # would let a yolo Gemini run every tool unasked.
    again = setup(home, "--socket", "/run/other.sock")
    assert again.returncode == 0, again.stderr
    group = our_group(path)
    assert (group["matcher"], group["hooks"][0]["command"]) == (
        GATE_MATCHER, f"{HIVE_RPC} hook gemini --socket /run/other.sock --gate"
    )  # fmt: skip
    assert "denied when the hub is down" in again.stdout
    assert setup(home, "--remove").returncode == 0
    assert "hooks" not in read(path)


def test_the_users_own_matcher_is_kept_under_the_gate(home: Path) -> None:
    path = settings_of(home)
    path.parent.mkdir()
    mine = {"matcher": "run_shell_command", "hooks": [{"command": f"{HIVE_RPC} hook gemini"}]}
    path.write_text(json.dumps({"hooks": {"BeforeTool": [mine]}}))
    assert setup(home, "--gate").returncode == 0
    group = our_group(path)
    assert group["matcher"] == "run_shell_command"
    assert group["hooks"][0]["command"] == f"{HIVE_RPC} hook gemini --gate"
