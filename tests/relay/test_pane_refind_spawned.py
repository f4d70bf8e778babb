"""Issue 32, part 3, for a ling started by the real ``hive-rpc spawn``: its pane
registers itself by id from inside and then ``exec``s the command, so until a
delivery sees the command running, the hub knows the agent's program only as a word
of the registering command line (core/refind.py ``_named_in``).  Its window closed
and opened again under the same name, running the same program, before anything
was typed into it: found again, not typed into, the human asked; approved, typed
into.  A real hub and a real tmux server (tests/cli/test_cli_spawn.py's)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from test_agora import approve
from test_cli_spawn import LING, Tmux, ready, received, spawn, submissions, tmux

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

__all__ = ["tmux"]  # test_cli_spawn's fixture, for pytest to find here


async def test_a_spawned_pane_recreated_before_any_delivery_is_asked_about(
    hub: HubService, client: HubClient, hub_config: HubConfig, tmux: Tmux, short_tmp: Path
) -> None:
    first = short_tmp / "first.jsonl"
    done = await spawn(hub_config, tmux, "main.kid", "--", sys.executable, str(LING), str(first))
    assert done.returncode == 0, done.stderr
    await ready(first)
    (ling,) = await client.call("ling/list", {})
    assert ling["agent"]["pending_exec"] is not None  # no delivery has bound it yet
    assert (ling["place"]["session"], ling["place"]["window"]) == ("parent", "kid")
    old = ling["address"].partition("@")[0]

    await tmux.run("kill-window", "-t", "parent:kid")
    second = short_tmp / "second.jsonl"
    new = await tmux.run(
        "new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "parent:", "-n", "kid",
        f"{sys.executable} {LING} {second}",
    )  # fmt: skip
    await ready(second)
    sent = await client.call("agent/answer", {"agent": "main.kid", "message": "hello?"})
    delivery = sent["delivery"]
    assert delivery["state"] == "failed", delivery
    assert f"tmux pane {old} is gone; pane {new} was found in its place" in delivery["reason"]
    (prompt,) = await client.call("hive/list", {})
    assert f"the human is asked to approve it (prompt {prompt['id']})" in delivery["reason"]
    assert submissions(second) == []

    await approve(hub, client, "main.kid", prompt["id"])
    sent = await client.call("agent/answer", {"agent": "main.kid", "message": "hello"})
    assert sent["delivery"]["state"] == "delivered", sent
    assert await received(second, 1) == ["[ANSWER from main] hello"]
    assert submissions(first) == []
