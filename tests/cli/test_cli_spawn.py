"""``hive-rpc spawn``: a child agent in a new tmux pane, registered as a ling without a
consent prompt because the pane registers itself from inside (relay/consent.py), then
runs the command.  Real tmux (a private server, the CLI run as if inside it), a real
hub, and tests/relay/scripted_ling.py as the child's "agent"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

LING = Path(__file__).parents[1] / "relay" / "scripted_ling.py"
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


@dataclass
class Tmux:
    socket: Path
    env: dict[str, str]
    """The environment of a shell inside the server's first pane."""

    async def run(self, *args: str) -> str:
        done = await trio.run_process(
            ["tmux", "-S", str(self.socket), *args], capture_stdout=True, capture_stderr=True
        )
        return done.stdout.decode().strip()


@pytest.fixture
async def tmux(short_tmp: Path) -> AsyncIterator[Tmux]:
    socket = short_tmp / "tmux.sock"
    await trio.run_process(
        ["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", "parent",
         "sleep", "600"],
    )  # fmt: skip
    server = Tmux(socket, {})
    pid = await server.run("display-message", "-p", "#{pid}")
    pane = await server.run("display-message", "-p", "-t", "parent", "#{pane_id}")
    server.env = {**os.environ, "TMUX": f"{socket},{pid},0", "TMUX_PANE": pane}
    try:
        yield server
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            await trio.run_process(
                ["tmux", "-S", str(socket), "kill-server"], check=False, capture_stderr=True
            )


async def spawn(
    config: HubConfig, tmux: Tmux, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    where = ["--socket", str(config.socket), "--data-dir", str(config.data_dir), "--no-start"]
    return await trio.run_process(
        [sys.executable, "-m", "hive_rpc", "spawn", *where, *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env=tmux.env,
        cwd=cwd,
    )


def is_ready(record: Path) -> bool:
    return record.exists() and '"ready"' in record.read_text()


async def ready(record: Path) -> None:
    """Until the scripted ling has set up its terminal (raw mode drops what came before)."""
    with trio.fail_after(20):
        while not is_ready(record):  # noqa: ASYNC110 (another process's file)
            await trio.sleep(0.05)


def submissions(record: Path) -> list[str]:
    lines = record.read_text().splitlines() if record.exists() else []
    raws = [bytes.fromhex(e["raw"]) for e in map(json.loads, lines) if "raw" in e]
    return [r.removeprefix(PASTE_START).removesuffix(PASTE_END).decode() for r in raws]


async def received(record: Path, count: int) -> list[str]:
    """The first ``count`` submissions to the scripted ling (tmux gives no event)."""
    with trio.fail_after(20):
        while len(got := submissions(record)) < count:  # noqa: ASYNC110 (another process's file)
            await trio.sleep(0.05)
    return got


async def test_spawn_opens_a_pane_registers_it_and_runs_the_command(
    hub: HubService, client: HubClient, hub_config: HubConfig, tmux: Tmux, short_tmp: Path
) -> None:
    record = short_tmp / "child.jsonl"
    done = await spawn(
        hub_config, tmux, "main.feature.auth", "--label", "auth-module", "--",
        sys.executable, str(LING), str(record),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (ling,) = await client.call("ling/list", {})
    assert (ling["name"], ling["state"], ling["label"]) == (
        "main.feature.auth",
        "registered",  # no consent prompt: the pane registered itself from inside
        "auth-module",
    )
    pane, _, socket = ling["address"].partition("@")
    assert socket == str(tmux.socket)
    assert done.stdout.decode().startswith(f"main.feature.auth: tmux {pane}@{tmux.socket} ")
    assert b"parent main.feature is not a registered ling" in done.stderr
    assert hub.registry.statistics()["pending"] == 0  # the human was not asked
    assert await tmux.run("display-message", "-p", "-t", pane, "#{window_name}") == "auth"
    await ready(record)
    shown = await tmux.run("capture-pane", "-p", "-t", pane)
    assert "Warning" not in shown, shown  # the pane shows the ling, not runpy's complaints
    # The pane's first process registered, then exec'd the command (issue 26): the
    # agent recorded is that process, bound to the command at the first delivery.
    assert "hive_rpc.cli.spawned_pane" in ling["agent"]["pending_exec"]
    answered = await client.call("agent/answer", {"agent": "main.feature.auth", "message": "go"})
    assert answered["delivery"]["state"] == "delivered", answered
    assert await received(record, 1) == ["[ANSWER from main.feature] go"]
    (bound,) = await client.call("ling/list", {})
    assert bound["agent"]["pid"] == ling["agent"]["pid"]
    assert bound["agent"]["pending_exec"] is None


async def test_spawn_in_a_new_worktree(
    hub: HubService, client: HubClient, hub_config: HubConfig, tmux: Tmux, short_tmp: Path
) -> None:
    repo = short_tmp / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    await trio.run_process([*git, "init", "-q", "-b", "main"])
    await trio.run_process([*git, "commit", "-q", "--allow-empty", "-m", "root"])
    record = short_tmp / "wt.jsonl"
    done = await spawn(
        hub_config, tmux, "main.wt", "--worktree", "feature/wt", "--",
        sys.executable, str(LING), str(record), cwd=repo,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    worktree = short_tmp / "repo-feature-wt"
    assert done.stdout.decode().strip().endswith(f" in {worktree}")
    (ling,) = await client.call("ling/list", {})
    pane = ling["address"].partition("@")[0]
    assert await tmux.run("display-message", "-p", "-t", pane, "#{pane_current_path}") == str(
        worktree
    )
    branch = await trio.run_process(
        ["git", "-C", str(worktree), "branch", "--show-current"], capture_stdout=True
    )
    assert branch.stdout.decode().strip() == "feature/wt"


async def test_spawn_refuses_a_bad_name_and_a_missing_command(
    hub: HubService, hub_config: HubConfig, tmux: Tmux
) -> None:
    bad = await spawn(hub_config, tmux, "not a name", "--", "true")
    assert bad.returncode == 2
    assert b"not a ling name" in bad.stderr
    empty = await spawn(hub_config, tmux, "main.x")
    assert empty.returncode == 2
    assert b"give the command to run after --" in empty.stderr
    # No window opened: only the fixture's own (its name, set by tmux's automatic
    # rename from the command it runs, may still be "tmux" on a busy machine).
    assert len((await tmux.run("list-windows", "-a", "-F", "#{window_id}")).splitlines()) == 1
