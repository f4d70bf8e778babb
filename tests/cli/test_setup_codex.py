"""``hive-rpc setup codex``: the real command with a scratch ``CODEX_HOME``, its
config.toml read back.  It merges into the user's file keeping their comments and
order, changes nothing when run again, ``--remove`` gives back the user's own file,
a file that is not TOML (or whose tables have another shape) is refused and left
alone, and ``--print`` writes nothing.  That Codex itself runs what it writes is
tests/agents/test_codex_mcp.py's part."""

from __future__ import annotations

import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from cli_support import HIVE_RPC, run_setup

USERS = """\
# my Codex settings
model = "o3"  # the one I like

[mcp_servers.other]
command = "other-server"   # keep me

[[hooks.PermissionRequest]]
matcher = "Bash"

[[hooks.PermissionRequest.hooks]]
type = "command"
command = "my-own-hook"
"""


def setup(codex_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_setup(
        "codex",
        *args,
        home=codex_home.parent,
        hidden=("CODEX_",),
        env={"CODEX_HOME": str(codex_home)},
    )


def read(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


SESSION_EVENTS = {
    "SessionStart": 10,
    "UserPromptSubmit": 10,
    "Stop": 10,
    "Interrupt": 3,
    "SessionEnd": 3,
}
"""The events of the agent's session setup hooks, with their timeouts (Codex clamps
SessionEnd's and Interrupt's to 3 s)."""


def session_hooks(command: str) -> dict[str, Any]:
    """The session events' groups as setup writes them on their own: no matcher."""
    return {
        event: [{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]
        for event, timeout in SESSION_EVENTS.items()
    }


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    home = tmp_path / "codex"
    home.mkdir()
    return home


def test_a_new_config_gets_the_server_and_the_hook(codex_home: Path) -> None:
    done = setup(codex_home, "--socket", "/run/hub.sock", "--data-dir", "/var/hub")
    assert done.returncode == 0, done.stderr
    config = codex_home / "config.toml"
    options = ["--socket", "/run/hub.sock", "--data-dir", "/var/hub"]
    command = shlex.join([str(HIVE_RPC), "hook", "codex", *options])
    assert read(config) == {
        "mcp_servers": {
            "hive-rpc": {
                "command": str(HIVE_RPC),
                "args": ["mcp", *options],
                "default_tools_approval_mode": "approve",
                "required": True,
                "startup_timeout_sec": 60,
                "tool_timeout_sec": 600,
                "env": {"MCP_TOOL_TIMEOUT": "600000"},
            }
        },
        "hooks": {
            "PermissionRequest": [
                {
                    "matcher": "*",
                    "hooks": [{"type": "command", "command": command, "timeout": 600}],
                }
            ],
            **session_hooks(command),
        },
    }
    assert done.stdout.splitlines()[0] == f"{config}: written"
    # the one step left to the user: trust the hooks, the session's too
    assert "/hooks" in done.stdout
    assert "SessionStart, UserPromptSubmit, Stop, Interrupt, SessionEnd" in done.stdout


def test_merges_keeping_comments_then_remove_gives_the_file_back(codex_home: Path) -> None:
    config = codex_home / "config.toml"
    config.write_text(USERS)
    done = setup(codex_home)
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert text.startswith(USERS.split("[[hooks")[0])  # comments, order, other server
    assert 'command = "my-own-hook"' in text
    merged = read(config)
    assert merged["model"] == "o3"
    assert merged["mcp_servers"]["other"] == {"command": "other-server"}
    assert merged["mcp_servers"]["hive-rpc"]["args"] == ["mcp"]
    groups = merged["hooks"]["PermissionRequest"]
    assert groups[0] == {
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": "my-own-hook"}],
    }
    assert groups[1]["hooks"][0]["command"] == f"{HIVE_RPC} hook codex"
    backups = list(codex_home.glob("config.toml.hive-rpc-*.bak"))
    assert [b.read_text() for b in backups] == [USERS]
    assert f"(the old one is in {backups[0]})" in done.stdout

    again = setup(codex_home)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == f"{config}: already set up"
    assert config.read_text() == text
    assert len(list(codex_home.glob("*.bak"))) == 1

    removed = setup(codex_home, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert config.read_text() == USERS
    assert "hive-rpc's entries removed" in removed.stdout
    once_more = setup(codex_home, "--remove")
    assert once_more.stdout.strip() == f"{config}: nothing of hive-rpc's there"


def test_an_existing_entry_is_updated_where_it_stands(codex_home: Path) -> None:
    """The user's own timeout is kept (and MCP_TOOL_TIMEOUT follows it), their other
    keys and env too; an old hook of ours in their group is updated there, a second
    one dropped."""
    config = codex_home / "config.toml"
    config.write_text(
        '[mcp_servers."hive-rpc"]\n'
        'command = "hive-rpc"  # old\n'
        "tool_timeout_sec = 1800\n"
        "enabled = true\n"
        '[mcp_servers."hive-rpc".env]\n'
        'MINE = "1"\n\n'
        "[[hooks.PermissionRequest]]\n"
        'matcher = "Bash"\n'
        "[[hooks.PermissionRequest.hooks]]\n"
        'type = "command"\n'
        'command = "hive-rpc hook codex"\n'
        "[[hooks.PermissionRequest]]\n"
        'matcher = "*"\n'
        "[[hooks.PermissionRequest.hooks]]\n"
        'type = "command"\n'
        'command = "/old/bin/hive-rpc hook codex --timeout 5"\n'
    )
    done = setup(codex_home)
    assert done.returncode == 0, done.stderr
    merged = read(config)
    entry = merged["mcp_servers"]["hive-rpc"]
    assert entry["command"] == str(HIVE_RPC)
    assert entry["tool_timeout_sec"] == 1800
    assert entry["enabled"] is True
    assert entry["env"] == {"MINE": "1", "MCP_TOOL_TIMEOUT": "1800000"}
    assert merged["hooks"]["PermissionRequest"] == [
        {
            "matcher": "Bash",
            "hooks": [{"type": "command", "command": f"{HIVE_RPC} hook codex", "timeout": 600}],
        }
    ]


def test_a_session_hook_of_the_users_group_is_updated_there_and_theirs_kept(
    codex_home: Path,
) -> None:
    """The session events are merged as PermissionRequest is: a ``hook codex`` in the
    user's own Stop group is updated where it stands, beside their own hook; the
    user's SessionStart hook stays, setup's own group after it; ``--remove`` leaves
    only theirs."""
    config = codex_home / "config.toml"
    users = (
        "[[hooks.SessionStart]]\n"
        'matcher = "startup"\n'
        "[[hooks.SessionStart.hooks]]\n"
        'type = "command"\n'
        'command = "my-start-hook"\n'
        "[[hooks.Stop]]\n"
        "[[hooks.Stop.hooks]]\n"
        'type = "command"\n'
        'command = "my-stop-hook"\n'
    )
    config.write_text(
        users + "[[hooks.Stop.hooks]]\n" + 'type = "command"\n'
        'command = "/old/hive-rpc hook codex"\n'
    )
    done = setup(codex_home)
    assert done.returncode == 0, done.stderr
    hooks = read(config)["hooks"]
    ours = {"type": "command", "command": f"{HIVE_RPC} hook codex", "timeout": 10}
    assert hooks["Stop"] == [{"hooks": [{"type": "command", "command": "my-stop-hook"}, ours]}]
    assert hooks["SessionStart"] == [
        {"matcher": "startup", "hooks": [{"type": "command", "command": "my-start-hook"}]},
        {"hooks": [ours]},
    ]
    assert setup(codex_home).stdout.splitlines()[0] == f"{config}: already set up"
    removed = setup(codex_home, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert read(config) == tomllib.loads(users)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("model = \n", "is not valid TOML"),
        ("mcp_servers = 3\n", 'cannot be merged: "mcp_servers" is not a table'),
        ("[hooks]\nPermissionRequest = 1\n", '"hooks.PermissionRequest" is not an array'),
        ("[hooks]\nStop = 1\n", '"hooks.Stop" is not an array'),
    ],
)
def test_a_file_it_cannot_merge_is_refused_and_left_alone(
    codex_home: Path, text: str, said: str
) -> None:
    config = codex_home / "config.toml"
    config.write_text(text)
    for args in ((), ("--remove",)):
        done = setup(codex_home, *args)
        assert done.returncode == 1
        assert f"{config} " in done.stderr
        assert said in done.stderr
        assert "nothing was changed" in done.stderr
        assert config.read_text() == text
    assert list(codex_home.iterdir()) == [config]


def test_print_writes_nothing(codex_home: Path) -> None:
    config = codex_home / "config.toml"
    config.write_text(USERS)
    done = setup(codex_home, "--print")
    assert done.returncode == 0, done.stderr
    head, _, printed = done.stdout.partition("\n")
    assert head == f"# {config}"
    assert printed.startswith(USERS.split("[[hooks")[0])
    assert tomllib.loads(printed)["mcp_servers"]["hive-rpc"]["required"] is True
    assert config.read_text() == USERS
    assert list(codex_home.iterdir()) == [config]


def trusted(config: Path, *positions: tuple[str, int, int, str]) -> str:
    """``[hooks.state]`` as Codex 0.171.0 writes it when the user trusts hooks in
    ``/hooks``: one table per hook, keyed by this file's path, the event in
    snake_case, the group's and the hook's index, holding the hash of the hook it
    trusted (tests/agents/test_codex_tui.py)."""
    return "".join(
        f'\n[hooks.state."{config}:{event}:{group}:{hook}"]\ntrusted_hash = "sha256:{what}"\n'
        for event, group, hook, what in positions
    )


def test_remove_takes_our_trust_out_and_moves_the_users_with_their_hooks(
    codex_home: Path,
) -> None:
    """Codex keys a hook's trust by its position: taking hive-rpc's group out moves
    the user's hook after it up one, and its trust must move with it (left where it
    was, Codex 0.171.0 showed the user's hook "modified - review required" and
    skipped it).  The trust Codex recorded for hive-rpc's hook goes (left behind, a
    later setup's hook was trusted with no /hooks at all); another event's stays."""
    config = codex_home / "config.toml"
    config.write_text(
        # setup's hook, then one the user added below it
        "[[hooks.PermissionRequest]]\n"
        'matcher = "*"\n'
        "[[hooks.PermissionRequest.hooks]]\n"
        'type = "command"\n'
        f'command = "{HIVE_RPC} hook codex"\n'
        "timeout = 600\n"
        "[[hooks.PermissionRequest]]\n"
        'matcher = "Bash"\n'
        "[[hooks.PermissionRequest.hooks]]\n"
        'type = "command"\n'
        'command = "my-own-hook"\n'
        + trusted(
            config,
            ("permission_request", 0, 0, "hive-rpc"),
            ("permission_request", 1, 0, "mine"),
            ("pre_tool_use", 0, 0, "other-event"),
        )
    )
    assert [g["matcher"] for g in read(config)["hooks"]["PermissionRequest"]] == ["*", "Bash"]
    done = setup(codex_home, "--remove")
    assert done.returncode == 0, done.stderr
    after = read(config)
    assert after["hooks"]["PermissionRequest"] == [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-own-hook"}]}
    ]
    assert after["hooks"]["state"] == {
        f"{config}:permission_request:0:0": {"trusted_hash": "sha256:mine"},
        f"{config}:pre_tool_use:0:0": {"trusted_hash": "sha256:other-event"},
    }


def test_setup_moves_trust_with_the_hooks_a_dropped_duplicate_shifts(codex_home: Path) -> None:
    """A second hive-rpc hook is dropped, and its emptied group: the trust of the
    user's hook after it moves up with it; the hook setup keeps keeps its own (Codex
    compares the hash, so a changed command is asked about again)."""
    config = codex_home / "config.toml"
    config.write_text(
        "[[hooks.PermissionRequest]]\n"
        'matcher = "Bash"\n'
        "[[hooks.PermissionRequest.hooks]]\n"
        'type = "command"\n'
        f'command = "{HIVE_RPC} hook codex"\n'
        "timeout = 600\n"
        "[[hooks.PermissionRequest.hooks]]\n"
        'type = "command"\n'
        'command = "my-own-hook"\n'
        "[[hooks.PermissionRequest]]\n"
        'matcher = "*"\n'
        "[[hooks.PermissionRequest.hooks]]\n"
        'type = "command"\n'
        'command = "/old/bin/hive-rpc hook codex --timeout 5"\n'
        "[[hooks.PermissionRequest]]\n"
        'matcher = "Edit"\n'
        "[[hooks.PermissionRequest.hooks]]\n"
        'type = "command"\n'
        'command = "my-other-hook"\n'
        + trusted(
            config,
            ("permission_request", 0, 0, "hive-rpc"),
            ("permission_request", 0, 1, "mine"),
            ("permission_request", 1, 0, "old-hive-rpc"),
            ("permission_request", 2, 0, "my-other"),
        )
    )
    done = setup(codex_home)
    assert done.returncode == 0, done.stderr
    after = read(config)
    assert [g["matcher"] for g in after["hooks"]["PermissionRequest"]] == ["Bash", "Edit"]
    assert after["hooks"]["state"] == {
        f"{config}:permission_request:0:0": {"trusted_hash": "sha256:hive-rpc"},
        f"{config}:permission_request:0:1": {"trusted_hash": "sha256:mine"},
        f"{config}:permission_request:1:0": {"trusted_hash": "sha256:my-other"},
    }


def test_remove_moves_the_trust_of_a_session_events_hooks_too(codex_home: Path) -> None:
    """Trust records are keyed per event: taking setup's Stop group out moves the
    record of the user's Stop hook after it up one, drops the records of setup's own
    session hooks, and leaves the user's PermissionRequest hook's where it stands."""
    config = codex_home / "config.toml"
    assert setup(codex_home).returncode == 0
    text = config.read_text() + (
        "\n[[hooks.Stop]]\n"
        "[[hooks.Stop.hooks]]\n"
        'type = "command"\n'
        'command = "my-stop-hook"\n'
        "\n[[hooks.PermissionRequest]]\n"
        "[[hooks.PermissionRequest.hooks]]\n"
        'type = "command"\n'
        'command = "my-permission-hook"\n'
    )
    config.write_text(
        text
        + trusted(
            config,
            ("stop", 0, 0, "hive-rpc-stop"),
            ("stop", 1, 0, "my-stop"),
            ("session_start", 0, 0, "hive-rpc-start"),
            ("interrupt", 0, 0, "hive-rpc-interrupt"),
            ("permission_request", 1, 0, "my-permission"),
        )
    )
    assert len(read(config)["hooks"]["Stop"]) == 2  # setup's group, then the user's
    done = setup(codex_home, "--remove")
    assert done.returncode == 0, done.stderr
    after = read(config)
    assert after["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "my-stop-hook"}]}]
    assert sorted(after["hooks"]) == ["PermissionRequest", "Stop", "state"]
    assert after["hooks"]["state"] == {
        f"{config}:stop:0:0": {"trusted_hash": "sha256:my-stop"},
        f"{config}:permission_request:0:0": {"trusted_hash": "sha256:my-permission"},
    }
