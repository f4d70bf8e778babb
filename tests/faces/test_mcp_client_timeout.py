"""Blocking tools end before the client's own tool timeout when the client says it
(Claude Code's ``MCP_TOOL_TIMEOUT``, inherited by ``hive-rpc mcp``): Claude Code cuts
a call off there whatever progress was sent, so the wait ends 2 s earlier (here, with
3000 ms: at half of it) in a result the agent can use, its ask kept pending. Driven by
the MCP SDK's client; with the real Claude Code: tests/claude/test_claude_mcp_timeout.py.

No test here measures how long a call took (the machine may be loaded): each call
asks to wait an hour, nobody answers, and what it returns says which bound ended
it; ``within_client`` is checked for the figures."""

from __future__ import annotations

import os
from typing import Any

import pytest
import trio
from mcp import Client
from test_mcp import stdio_params

from hive_rpc.faces.mcp.results import EXPIRED_MARKER
from hive_rpc.faces.mcp.server import HiveMcp
from hive_rpc.faces.mcp.stdio import client_timeout_s
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

HOUR = 3600
"""The wait every call below asks for, and the hub's countdown for the human: far
past the test's own guard (``fail_after``), so a call that returns at all was ended
by the client's timeout, as its result says (pending, timed out, its ask kept)."""


async def result_of(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


class NoHub:
    """A backend for a HiveMcp whose tools are not called."""

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        raise AssertionError(f"{method} called")


async def test_blocking_tools_return_before_mcp_tool_timeout(
    hub: HubService, hub_config: HubConfig
) -> None:
    params = stdio_params(hub_config, "--agent", "waiter", "--human-timeout", str(HOUR))
    params.env = {**os.environ, "MCP_TOOL_TIMEOUT": "3000"}
    with trio.fail_after(60):  # far under HOUR: a wait not cut short fails here
        async with Client(params) as client:
            human = await result_of(client, "request_human_input", {"prompt": "Which cache?"})
            assert (human["answer"], human["timed_out"], human["status"]) == (
                EXPIRED_MARKER,
                True,
                "pending",
            )
            asked = await result_of(
                client, "hivemind_ask", {"question": "Merge now?", "timeout_s": HOUR}
            )
            assert asked["status"] == "pending"
            awaited = await result_of(
                client, "hivemind_await", {"ask_id": asked["ask_id"], "timeout_s": HOUR}
            )
            assert awaited["status"] == "pending"
    # both asks are kept for the agent to collect
    kept = {(await hub.registry.poll(i)).status for i in (human["ask_id"], asked["ask_id"])}
    assert kept == {"pending"}


@pytest.mark.parametrize(
    ("client_s", "wait_s"), [(3.0, 1.5), (10.0, 8.0), (1.0, 0.5), (None, float(HOUR))]
)
def test_a_wait_ends_2_s_before_the_clients_timeout_or_at_half_of_it(
    client_s: float | None, wait_s: float
) -> None:
    hive = HiveMcp(NoHub(), client_timeout_s=client_s)
    assert hive.within_client(HOUR) == wait_s
    assert hive.within_client(0.25) == 0.25  # a shorter wait is the caller's


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("3000", 3.0), ("500", 1.0), ("", None), ("0", None), ("soon", None)],
)
def test_mcp_tool_timeout_is_read_as_claude_code_reads_it(
    value: str, seconds: float | None
) -> None:
    assert client_timeout_s({"MCP_TOOL_TIMEOUT": value}) == seconds
