"""``hivemind_ask_async`` carries seed 003's correlation ids: an agent asks under its
``task_id`` and, following up something, ``in_reply_to``; the result names both, so
the agent can match what the activity stream later says about that task without
keeping its own table.  Through the MCP SDK's client, over stdio and HTTP."""

from __future__ import annotations

import pytest
import trio
from test_mcp import Connect, connect, tool

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

__all__ = ["connect"]  # the fixture, imported for pytest

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)


async def test_ask_async_takes_and_returns_task_id_and_in_reply_to(
    connect: Connect, hub_config: HubConfig, http_hub: HubService
) -> None:
    with trio.fail_after(30):
        async with (
            connect("builder") as agent,
            await HubClient.connect(hub_config.socket) as editor,
        ):
            asked = await tool(
                agent,
                "hivemind_ask_async",
                question="Retry the failed deploy?",
                options=["yes", "no"],
                task_id="deploy-412",
                in_reply_to="ae2e864737323176",
            )
            assert (asked["task_id"], asked["in_reply_to"]) == ("deploy-412", "ae2e864737323176")
            polled = await editor.call("hive/poll", {"id": asked["ask_id"]})
            assert (polled["task_id"], polled["in_reply_to"]) == (
                "deploy-412",
                "ae2e864737323176",
            )
            (entry,) = http_hub.activity.task("deploy-412")
            assert entry.data["in_reply_to"] == "ae2e864737323176"
            plain = await tool(agent, "hivemind_ask_async", question="Anything else?")
            assert (plain["task_id"], plain["in_reply_to"]) == (None, None)
