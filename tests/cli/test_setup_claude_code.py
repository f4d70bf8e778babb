"""``hive-rpc setup claude-code --remove``: what setup wrote into a project's files
(and the user's) is taken out again, the user's own servers, hooks and rules stay,
and the sandbox setting is left as it is (setup cannot tell who wants it).  The
setting up itself is tests/cli/test_cli_setup.py's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from cli_support import run_setup

MCP = {"mcpServers": {"other": {"type": "stdio", "command": "other", "args": [], "env": {}}}}
SETTINGS: dict[str, Any] = {
    "model": "opus",
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "my-stop-hook"}]}]},
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
}


def setup(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_setup("claude-code", *args, home=home, cwd=cwd, hidden=("XDG_",))


def read(path: Path) -> Any:
    return json.loads(path.read_text())


def test_remove_gives_back_the_users_files(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    (project / ".mcp.json").write_text(json.dumps(MCP))
    settings = project / ".claude" / "settings.json"
    settings.write_text(json.dumps(SETTINGS))
    done = setup(home, project, "--project", "--no-sandbox")
    assert done.returncode == 0, done.stderr
    assert "hive-rpc" in read(project / ".mcp.json")["mcpServers"]
    assert "PermissionRequest" in read(settings)["hooks"]

    removed = setup(home, project, "--project", "--remove")
    assert removed.returncode == 0, removed.stderr
    assert read(project / ".mcp.json") == MCP
    assert read(settings) == SETTINGS
    assert removed.stdout.count("hive-rpc's entries removed") == 2
    again = setup(home, project, "--project", "--remove")
    assert again.stdout.count("nothing of hive-rpc's there") == 2
    assert not (home / ".claude.json").exists()


def test_remove_of_a_new_setup_leaves_the_sandbox_and_empties_the_rest(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (home / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True}))
    done = setup(home, project)
    assert done.returncode == 0, done.stderr
    settings = home / ".claude" / "settings.json"
    sandbox = read(settings).get("sandbox")
    removed = setup(home, project, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert read(home / ".claude.json") == {"hasCompletedOnboarding": True}
    assert read(settings) == ({"sandbox": sandbox} if sandbox else {})


def test_remove_with_no_files_writes_none(tmp_path: Path) -> None:
    done = setup(tmp_path, tmp_path, "--remove")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
