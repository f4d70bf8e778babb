"""Blocking tools end before the client's own tool timeout when the client says it
(Claude Code's ``MCP_TOOL_TIMEOUT``, inherited by ``hive-rpc mcp``): Claude Code cuts
a call off there whatever progress was sent, so the wait ends 2 s earlier (here, with
3000 ms: at half of it) in a result the agent can use, its ask kept pending. Driven by
the MCP SDK's client; with the real Claude Code: tests/claude/test_claude_mcp_timeout.py."""

from __future__ import annotations

import os
from typing import Any

import pytest
import trio
from mcp import Client
from test_mcp import stdio_params

from hive_rpc.faces.mcp.results import EXPIRED_MARKER
from hive_rpc.faces.mcp.stdio import client_timeout_s
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService


async def timed(client: Client, tool: str, args: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    start = trio.current_time()
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return trio.current_time() - start, result.structured_content


async def test_blocking_tools_return_before_mcp_tool_timeout(
    hub: HubService, hub_config: HubConfig
) -> None:
    params = stdio_params(hub_config, "--agent", "waiter", "--human-timeout", "60")
    params.env = {**os.environ, "MCP_TOOL_TIMEOUT": "3000"}
    with trio.fail_after(30):
        async with Client(params) as client:
            took, human = await timed(client, "request_human_input", {"prompt": "Which cache?"})
            assert took < 3
            assert (human["answer"], human["timed_out"], human["status"]) == (
                EXPIRED_MARKER,
                True,
                "pending",
            )
            took, asked = await timed(client, "hivemind_ask", {"question": "Merge now?"})
            assert took < 3
            assert asked["status"] == "pending"
            took, awaited = await timed(
                client, "hivemind_await", {"ask_id": asked["ask_id"], "timeout_s": 30}
            )
            assert took < 3
            assert awaited["status"] == "pending"
    # both asks are kept for the agent to collect
    kept = {(await hub.registry.poll(i)).status for i in (human["ask_id"], asked["ask_id"])}
    assert kept == {"pending"}


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("3000", 3.0), ("500", 1.0), ("", None), ("0", None), ("soon", None)],
)
def test_mcp_tool_timeout_is_read_as_claude_code_reads_it(
    value: str, seconds: float | None
) -> None:
    assert client_timeout_s({"MCP_TOOL_TIMEOUT": value}) == seconds
