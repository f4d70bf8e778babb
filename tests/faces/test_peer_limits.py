"""Limits an agent cannot sidestep by naming itself (issue 26, section 3).

Seen: per-agent limits keyed on the name a client gives itself; one socket client
using 5 made-up names filled the hub's pending-characters budget in 1.3 s, and every
other agent, a separate MCP session and the permission hook were refused (-32012).
Here the in-process hub (limits scaled down, so the flood takes a few asks) and its
real socket: the flooder is this test's own client; the other agent is the real
``hive-rpc ask`` in a session of its own, and the permission hook the real ``hive-rpc
hook claude-code`` process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from hook_process import permission_event, start_hook, stopped_at_exit

from hive_rpc.client.async_client import HubClient
from hive_rpc.core import limits
from hive_rpc.core.errors import LimitReached
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

BIG = "x" * 10_000


@pytest.fixture(autouse=True)
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real limits' proportions at a size a test fills in a few asks."""
    monkeypatch.setattr(limits, "MAX_PENDING_CHARS", 100_000)
    monkeypatch.setattr(limits, "MAX_PENDING_CHARS_PER_AGENT", 40_000)
    monkeypatch.setattr(limits, "MAX_PENDING_CHARS_PER_PEER", 40_000)


async def flood(client: HubClient) -> LimitReached:
    """Ask big questions under five made-up names until the hub refuses."""
    with trio.fail_after(30):
        for n in range(100):
            try:
                await client.call("hive/ask", {"question": BIG, "agent_id": f"made-up-{n % 5}"})
            except LimitReached as refused:
                return refused
    raise AssertionError("the hub never refused the flood")


async def hook_asks(client: HubClient, config: HubConfig, home: Path) -> None:
    """The real hook's question reaches the human (a subscriber is told of it)."""
    await client.call("hive/subscribe", {})
    event = permission_event(home, "Bash", {"command": "make deploy"})
    hook = start_hook(event, socket=config.socket, data_dir=config.data_dir, home=home)
    with stopped_at_exit(hook), trio.fail_after(30):
        note = await client.next_notification()
        while note.method != "hive/prompt" or note.params["kind"] != "permission":
            note = await client.next_notification()


def cli(config: HubConfig, *args: str) -> list[str]:
    where = ["--socket", str(config.socket), "--data-dir", str(config.data_dir), "--no-start"]
    return [sys.executable, "-m", "hive_rpc", *args, *where]


async def test_made_up_names_do_not_take_the_room_of_other_agents_and_the_hook(
    hub: HubService, client: HubClient, hub_config: HubConfig, tmp_path: Path
) -> None:
    refused = await flood(client)
    assert refused.data["limit"] == "pending_chars_per_peer", refused.message
    assert f"session {os.getsid(0)}" in refused.message
    # Another agent, in a session of its own, still asks.
    other = await trio.run_process(
        cli(hub_config, "ask", BIG, "--agent", "other"),
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        start_new_session=True,
    )
    assert other.returncode == 0, other.stderr
    # And the permission hook's question reaches the human.
    await hook_asks(client, hub_config, tmp_path)


async def test_agents_together_leave_the_human_tools_their_room(
    hub: HubService, hub_config: HubConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many agents, each in its own session (as many processes as an attacker likes),
    fill at most the agents' share; an asker with the human's credential (the hook,
    proving the approver token) still finds room."""
    monkeypatch.setattr(limits, "MAX_PENDING_CHARS_PER_PEER", 10_000_000)
    monkeypatch.setattr(limits, "MAX_PENDING_CHARS_PER_AGENT", 10_000_000)
    answers = []
    for n in range(10):
        done = await trio.run_process(
            cli(hub_config, "ask", BIG, "--agent", f"agent-{n}"),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            start_new_session=True,
        )
        answers.append(done)
    refused = [a for a in answers if a.returncode != 0]
    assert len(answers) - len(refused) == 7  # 75% of 100,000 characters
    assert b"agent_share" in refused[0].stderr
    async with await HubClient.connect(hub_config.socket) as client:
        await hook_asks(client, hub_config, tmp_path)


def test_a_session_is_what_the_kernel_says() -> None:
    """The peer is read from /proc, not taken from the client: a child started in a
    new session is another peer, one in ours is the same."""
    from hive_rpc.relay.proc import stat

    same = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    apart = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1, start_new_session=True
    )
    try:
        mine, theirs, other = stat(os.getpid()), stat(same.pid), stat(apart.pid)
        assert mine is not None
        assert theirs is not None
        assert other is not None
        assert theirs.session == mine.session == os.getsid(0)
        assert other.session == apart.pid != mine.session
    finally:
        for child in (same, apart):
            child.communicate(b"")
