"""``hive-rpc mcp`` started by Claude Code is the agent Claude Code's hooks name
(hive_rpc/core/claude_code.py): Claude Code sets ``CLAUDE_CODE_SESSION_ID`` for its MCP
servers and says ``clientInfo.name`` ``claude-code``; with both, the agent is
``claude-code-`` and the session id's first 8 characters, as ``hive-rpc hook
claude-code`` names it. Another client that inherited the variable (started from
Claude Code's Bash, say) keeps its own name, and ``--agent`` still wins. The real
Claude Code: tests/claude/test_claude_mcp_session.py."""

from __future__ import annotations

import os

import pytest
import trio
from mcp import Client
from mcp_types import Implementation
from test_mcp import stdio_params

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

SESSION = "3f2a9c1e-0b7d-4c55-9e61-0d2b8f4a7c13"


@pytest.mark.parametrize(
    ("client", "extra", "expected"),
    [
        ("claude-code", (), "claude-code-3f2a9c1e"),
        ("codex", (), None),
        ("claude-code", ("--agent", "deployer"), "deployer"),
    ],
)
async def test_claude_codes_session_names_the_agent(
    hub: HubService, hub_config: HubConfig, client: str, extra: tuple[str, ...], expected: str
) -> None:
    params = stdio_params(hub_config, *extra)
    params.env = {**os.environ, "CLAUDE_CODE_SESSION_ID": SESSION}
    with trio.fail_after(30):
        async with Client(params, client_info=Implementation(name=client, version="1")) as c:
            result = await c.call_tool("hivemind_ask_async", {"question": "Which cache?"})
    assert not result.is_error, result.content
    asked = await hub.registry.poll(result.structured_content["ask_id"])  # type: ignore[index]
    if expected is None:
        assert asked.agent_id.startswith("codex-")
        assert len(asked.agent_id) == len("codex-") + 6
    else:
        assert asked.agent_id == expected
