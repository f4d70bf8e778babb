"""An agent's MCP session outlives a restart of the hub (issue 18): the hub is killed
between two tool calls of one MCP SDK client session over ``hive-rpc mcp``, and the
second call works, against a hub ``hive-rpc mcp`` started again itself.  The ask made
before the kill is still there (the sqlite store).  True of today's stdio face (its
RemoteBackend reconnects); it must stay true of the relay, which replays the client's
``initialize`` to a new in-hub session."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import pytest
import trio
from cli_support import Shell
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ResourceUpdatedNotification


async def test_a_tool_call_after_the_hub_restarts_works(sh: Shell) -> None:
    assert sh.run("status").returncode == 0
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hive_rpc", "mcp", "--agent", "restarted"],
        env=dict(sh.env),
    )
    async with Client(params, mode="legacy") as client:
        asked = await client.call_tool("hivemind_ask_async", {"question": "Still there?"})
        assert not asked.is_error, asked.content
        assert asked.structured_content is not None
        ask_id = asked.structured_content["ask_id"]
        old = sh.hub_pid()
        os.kill(old, signal.SIGKILL)
        await trio.to_thread.run_sync(sh.wait_hub_gone)
        with trio.fail_after(20):
            polled = await client.call_tool("hivemind_poll", {"ask_id": ask_id})
        assert not polled.is_error, polled.content
        assert polled.structured_content is not None
        assert polled.structured_content["status"] == "pending"
    assert sh.hub_pid() != old


async def test_a_resource_subscription_outlives_the_hub_restart(sh: Shell) -> None:
    """A legacy session's ``resources/subscribe`` lives in its session: the relay
    replays it with ``initialize``, so the answer given on the new hub is told."""
    assert sh.run("status").returncode == 0
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hive_rpc", "mcp", "--agent", "subscribed"],
        env=dict(sh.env),
    )
    updated = trio.Event()

    async def on_message(msg: Any) -> None:
        if isinstance(msg, ResourceUpdatedNotification):
            updated.set()

    async with Client(params, mode="legacy", message_handler=on_message) as client:
        asked = await client.call_tool("hivemind_ask_async", {"question": "Tell me later"})
        assert asked.structured_content is not None
        ask_id = asked.structured_content["ask_id"]
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(f"hive://asks/{ask_id}")
        os.kill(sh.hub_pid(), signal.SIGKILL)
        await trio.to_thread.run_sync(sh.wait_hub_gone)
        with trio.fail_after(20):
            polled = await client.call_tool("hivemind_poll", {"ask_id": ask_id})
            assert not polled.is_error, polled.content
            answered = await trio.to_thread.run_sync(sh.run, "answer", ask_id, "now")
            assert answered.returncode == 0, answered.stderr
            await updated.wait()


async def test_a_blocking_ask_the_hub_died_under_waits_for_its_question(sh: Shell) -> None:
    """``hivemind_ask`` blocks while the human thinks, and the hub is killed then.  The
    question was saved (the sqlite store), so the relay sends the call again, marked
    resumed, to the hub it starts, and that hub waits for the same question: the human
    sees it once, and their answer there is the call's result.  Before, the call
    failed ("the hub went away"), and the agent's retry asked a second question.

    The progress a wait sends (``--progress-every``) says where the call waits: on the
    first hub before the kill, on the new one before the human answers."""
    assert sh.run("status").returncode == 0
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hive_rpc", "mcp", "--agent", "blocked", "--progress-every", "0.2"],
        env=dict(sh.env),
    )
    restarted = False
    waiting, waiting_on_new_hub = trio.Event(), trio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        (waiting_on_new_hub if restarted else waiting).set()

    async with Client(params, mode="legacy") as client:
        called: dict[str, Any] = {}

        async def call() -> None:
            called["result"] = await client.call_tool(
                "hivemind_ask",
                {"question": "Deploy build 412?", "options": ["yes", "no"], "timeout_s": 600},
                progress_callback=on_progress,
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            with trio.fail_after(30):
                await waiting.wait()
            (asked,) = await trio.to_thread.run_sync(sh.json, "list")
            os.kill(sh.hub_pid(), signal.SIGKILL)
            await trio.to_thread.run_sync(sh.wait_hub_gone)
            restarted = True
            with trio.fail_after(30):
                await waiting_on_new_hub.wait()
            (still,) = await trio.to_thread.run_sync(sh.json, "list")
            assert still["id"] == asked["id"]  # asked once
            answered = await trio.to_thread.run_sync(sh.run, "answer", asked["id"], "yes")
            assert answered.returncode == 0, answered.stderr
    result = called["result"]
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert (result.structured_content["ask_id"], result.structured_content["decision"]) == (
        asked["id"],
        "yes",
    )
    assert await trio.to_thread.run_sync(sh.json, "list") == []
