"""Which faces are approvers (service/approver.py), each against its real peer: the
MCP SDK's client (stdio ``hive-rpc mcp`` and Streamable HTTP) is never one, even
though ``hive-rpc mcp`` could read the token file; ``hive-rpc lsp`` (what VS Code
spawns) and ``hive-rpc epc`` prove it on their hub connection when they can read the
file; the dashboard is one only with the human's sign-in, never with the MCP token."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from test_activity_http import as_human, bearer, http, own_origin
from test_epc_face import epc_server, peer
from test_lsp import lsp
from test_mcp import http_client, stdio_params, tool_error

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)

REFUSED = "only an approver may answer a permission prompt"


async def ask_permission(client: HubClient) -> dict[str, Any]:
    asked: dict[str, Any] = await client.call(
        "hive/ask",
        {
            "question": "Claude Code in ~/src/app (session 3f2a) wants to run Bash: rm -rf /",
            "choices": ["allow", "deny"],
            "kind": "permission",
            "agent_id": "claude-code-3f2a9c1d",
        },
    )
    return asked


async def status_of(client: HubClient, prompt_id: str) -> str:
    return str((await client.call("hive/poll", {"id": prompt_id}))["status"])


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_mcp_client_cannot_answer_a_permission_prompt(
    http_hub: HubService, hub_config: HubConfig, transport: str
) -> None:
    async with await HubClient.connect(hub_config.socket) as client:
        await mcp_cannot_answer(http_hub, hub_config, client, transport)


async def mcp_cannot_answer(
    http_hub: HubService, hub_config: HubConfig, client: HubClient, transport: str
) -> None:
    asked = await ask_permission(client)
    question = await client.call("hive/ask", {"question": "Which DB?", "agent_id": "a"})
    with trio.fail_after(60):
        if transport == "http":
            session = http_client(http_hub, "legacy", agent="coordinator", tools="coordinator")
        else:
            params = stdio_params(hub_config, "--agent", "coordinator", "--tools", "coordinator")
            session = Client(params, mode="legacy")
        async with session as mcp:
            said = await tool_error(mcp, "hivemind_respond", ask_id=asked["id"], decision="allow")
            # A question is still answered: only the permission prompt is refused.
            result = await mcp.call_tool(
                "hivemind_respond", {"ask_id": question["id"], "decision": "sqlite"}
            )
            assert not result.is_error, result.content
    assert REFUSED in said
    assert await status_of(client, asked["id"]) == "pending"
    assert await status_of(client, question["id"]) == "responded"


async def test_the_lsp_window_proves_it_and_answers_a_permission_prompt(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    token_file = Path((await client.call("hive/status", {}))["approver_token_file"])
    first = await ask_permission(client)
    # A token file others could read proves nothing: the window is no approver.
    os.chmod(token_file, 0o644)
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        with pytest.raises(HiveError) as refused:
            await window.request("hive/respond", {"id": first["id"], "answer": "allow"})
        assert (refused.value.code, refused.value.data["kind"]) == (-32013, "not_an_approver")
        assert REFUSED in refused.value.message
    os.chmod(token_file, 0o600)
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        answered = await window.request(
            "hive/respond", {"id": first["id"], "answer": "deny", "by": "vscode"}
        )
        assert (answered["status"], answered["answer"]) == ("responded", "deny")


async def test_the_epc_face_proves_it_and_answers_a_permission_prompt(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    asked = await ask_permission(client)
    async with epc_server(hub_config) as port, peer(port, hub_config) as emacs:
        answered = await emacs.call("respond", {"id": asked["id"], "answer": "allow"})
    assert (answered["status"], answered["answer"]) == ("responded", "allow")


async def test_the_dashboard_answers_a_permission_prompt_only_with_the_humans_sign_in(
    http_hub: HubService,
) -> None:
    """The MCP token (the agent's credential) is refused; the human's (the approver
    token, what the dashboard signs in with) answers."""
    async with await HubClient.connect(Path(str(http_hub.info.socket))) as client:
        asked = await ask_permission(client)
        async with http(http_hub, **bearer(http_hub), **own_origin(http_hub)) as agent:
            reply = await agent.post("/api/respond", json={"id": asked["id"], "answer": "allow"})
        assert reply.status_code == 403
        error = reply.json()["error"]
        assert (error["code"], error["data"]["kind"]) == (-32013, "not_an_approver")
        assert error["data"]["lacks"] == "human"
        assert await status_of(client, asked["id"]) == "pending"
        async with http(http_hub, **as_human(http_hub), **own_origin(http_hub)) as human:
            reply = await human.post("/api/respond", json={"id": asked["id"], "answer": "deny"})
        assert (reply.status_code, reply.json()["answer"]) == (200, "deny")
