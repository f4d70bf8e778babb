"""``hive-rpc setup claude-code --http-hook``: PermissionRequest answered at the running
hub's own HTTP endpoint (faces/hook_http.py), with the hook token in the header; the
other events stay command hooks; never the approver token; a hub without HTTP, or
none, is refused with what to do, and nothing is written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import trio
from cli_support import run_setup

from hive_rpc.core.permission_hook import HOOK_PATH
from hive_rpc.host.paths import HOOK_TOKEN_NAME
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService


async def setup(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """setup as the user runs it, in a thread: the hub it asks runs in this test's loop."""
    return await trio.to_thread.run_sync(
        lambda: run_setup(
            "claude-code", *args, "--no-sandbox", home=home, cwd=home, hidden=("XDG_",)
        )
    )


def settings_of(home: Path) -> dict[str, Any]:
    settings: dict[str, Any] = json.loads((home / ".claude" / "settings.json").read_text())
    return settings


def other_tokens(service: HubService) -> list[str]:
    """The approver token and the MCP token: never written by setup."""
    files = [service.info.approver_token_file, service.info.token_file]
    return [Path(str(f)).read_text().strip() for f in files]


def hooks_of(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [h for group in settings["hooks"][event] for h in group["hooks"]]


async def test_the_permission_hook_is_the_hubs_http_endpoint(
    http_hub: HubService, hub_config: HubConfig, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = await setup(home, "--socket", str(hub_config.socket), "--http-hook")
    assert done.returncode == 0, done.stderr
    settings = settings_of(home)
    token = (Path(str(http_hub.info.data_dir)) / HOOK_TOKEN_NAME).read_text().strip()
    base = str(http_hub.info.http_url).removesuffix("/mcp")
    assert hooks_of(settings, "PermissionRequest") == [
        {
            "type": "http",
            "url": base + HOOK_PATH,
            "headers": {"Authorization": f"Bearer {token}"},
            "timeout": 600,
        }
    ]
    for event in ("Notification", "Stop", "SessionEnd"):
        assert [h["type"] for h in hooks_of(settings, event)] == ["command"]
    written = (home / ".claude" / "settings.json").read_text() + (home / ".claude.json").read_text()
    for secret in other_tokens(http_hub):
        assert secret not in written

    # Set up again without it: the command hook takes its place, one hook, not two.
    again = await setup(home, "--socket", str(hub_config.socket))
    assert again.returncode == 0, again.stderr
    [hook] = hooks_of(settings_of(home), "PermissionRequest")
    assert hook["type"] == "command"
    assert "hook claude-code" in hook["command"]

    # And --remove takes the http hook out too.
    await setup(home, "--socket", str(hub_config.socket), "--http-hook")
    removed = await setup(home, "--socket", str(hub_config.socket), "--remove")
    assert removed.returncode == 0, removed.stderr
    assert "hooks" not in settings_of(home)


async def test_a_hub_without_http_is_refused_and_nothing_written(
    hub: HubService, hub_config: HubConfig, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = await setup(home, "--socket", str(hub_config.socket), "--http-hook")
    assert done.returncode != 0
    assert "serves no HTTP" in done.stderr
    assert "hive-rpc serve --http 127.0.0.1:PORT" in done.stderr
    assert sorted(p.name for p in home.iterdir()) == []


async def test_no_hub_is_refused_and_nothing_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = await setup(home, "--socket", str(tmp_path / "none.sock"), "--http-hook")
    assert done.returncode != 0
    assert "none answers on" in done.stderr
    assert sorted(p.name for p in home.iterdir()) == []
