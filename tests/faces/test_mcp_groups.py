"""MCP tool groups, driven by the MCP SDK's own client against a real ``hive-rpc mcp``
process (and the hub's HTTP endpoint): a session lists and runs only the groups it
was given, ``ask`` by default."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import trio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from test_mcp import mcp_argv, stdio_params

from hive_rpc.faces.mcp.tools import GROUPS
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)

MODES = ["legacy", "2026-07-28"]
ALL_TOOLS = {tool for tools in GROUPS.values() for tool in tools}


def tools_of(*groups: str) -> set[str]:
    return {tool for group in groups for tool in GROUPS[group]}


@asynccontextmanager
async def stdio(config: HubConfig, *extra: str, mode: str = "legacy") -> AsyncIterator[Client]:
    params = stdio_params(config, "--agent", "grouped", *extra)
    async with Client(params, mode=mode) as client:
        yield client


async def listed(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


@pytest.mark.parametrize("mode", MODES)
async def test_the_default_is_the_ask_group_alone(
    hub: HubService, hub_config: HubConfig, mode: str
) -> None:
    with trio.fail_after(30):
        async with stdio(hub_config, mode=mode) as client:
            assert await listed(client) == tools_of("ask")
            asked = await client.call_tool("hivemind_ask_async", {"question": "Grouped?"})
            assert not asked.is_error, asked.content


async def test_groups_add_their_tools(hub: HubService, hub_config: HubConfig) -> None:
    with trio.fail_after(60):
        async with stdio(hub_config, "--tools", "ask,agora") as client:
            assert await listed(client) == tools_of("ask", "agora")
            made = await client.call_tool(
                "agora_create", {"topic": "Cache?", "participants": ["main.a", "main.b"]}
            )
            assert not made.is_error, made.content
        async with stdio(hub_config, "--tools", "agora") as client:
            assert await listed(client) == tools_of("agora")
        async with stdio(hub_config, "--tools", "all") as client:
            assert await listed(client) == ALL_TOOLS
            assert len(ALL_TOOLS) == 23


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_outside_the_groups_is_refused_saying_how_to_enable_it(
    hub: HubService, hub_config: HubConfig, mode: str
) -> None:
    with trio.fail_after(30):
        async with stdio(hub_config, mode=mode) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool(
                    "agora_create", {"topic": "Cache?", "participants": ["main.a", "main.b"]}
                )
            # And nothing was done: no dialogue exists.
            async with stdio(hub_config, "--tools", "agora") as agora:
                dialogues = await agora.call_tool("agora_list", {})
                assert dialogues.structured_content == {"count": 0, "items": []}
    assert refused.value.code == -32602
    message = refused.value.message
    assert "'agora_create' is in the tool group 'agora'" in message
    assert "it offers: ask" in message
    assert "hive-rpc mcp --tools ask,agora" in message


def test_an_unknown_group_names_the_valid_ones(short_tmp: Path) -> None:
    config = HubConfig(socket=short_tmp / "hub.sock", data_dir=short_tmp / "data")
    done = subprocess.run(
        [
            sys.executable,
            *mcp_argv(config, "--no-start", "--agent", "grouped", "--tools", "ask,agroa"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""  # stdout is the protocol's alone
    assert (
        "unknown tool group 'agroa'; valid: ask, coordinator, agora, lings, events, spawn, "
        "tasks, permissions, all" in (done.stderr)
    )


# --- over HTTP: each request names its groups ---------------------------------------


def read_token(service: HubService) -> str:
    return Path(str(service.info.token_file)).read_text().strip()


@asynccontextmanager
async def http(
    service: HubService, mode: str, query: str = "", **headers: str
) -> AsyncIterator[Client]:
    token = read_token(service)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", **headers}) as client,
        Client(
            streamable_http_client(str(service.info.http_url) + query, http_client=client),
            mode=mode,
        ) as session,
    ):
        yield session


@pytest.mark.parametrize("mode", MODES)
async def test_http_sessions_name_their_groups(http_hub: HubService, mode: str) -> None:
    with trio.fail_after(60):
        async with http(http_hub, mode) as client:
            assert await listed(client) == tools_of("ask")
            with pytest.raises(MCPError, match="in the tool group 'tasks'"):
                await client.call_tool("task_report", {"task_id": "t", "outcome": "success"})
        async with http(http_hub, mode, "?tools=ask,agora") as client:
            assert await listed(client) == tools_of("ask", "agora")
        async with http(http_hub, mode, **{"X-Hive-Tools": "coordinator,tasks"}) as client:
            assert await listed(client) == tools_of("coordinator", "tasks")
        async with http(http_hub, mode, "?tools=nope") as client:
            with pytest.raises(MCPError, match="unknown tool group 'nope'; valid: ask"):
                await client.list_tools()


def listed_bytes(result: object) -> int:
    """The size docs/mcp.md gives a ``tools/list`` result: its JSON, compact, as the
    SDK's model dumps it (wire names, no nulls)."""
    data = result.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[attr-defined]
    return len(json.dumps(data, separators=(",", ":")))


async def test_the_groups_table_in_mcp_md_is_what_tools_list_returns(
    hub: HubService, hub_config: HubConfig
) -> None:
    """Every tool listed is read into the agent's context on every turn, and
    docs/mcp.md tells users what each group costs them: its counts and sizes must be
    the ones a client gets (they had drifted by up to a third as tools grew)."""
    doc = (Path(__file__).parents[2] / "docs" / "mcp.md").read_text()
    rows = re.findall(
        r"^\| `([a-z,]+)`(?: \(default\))? \|[^|]*\| (\d+) \| ([\d,]+) \|$", doc, re.M
    )
    assert {r[0] for r in rows} >= {*GROUPS, "all"}, rows
    measured = []
    with trio.fail_after(60):
        for groups, _, _ in rows:
            async with stdio(hub_config, "--tools", groups) as client:
                result = await client.list_tools()
            measured.append((groups, str(len(result.tools)), f"{listed_bytes(result):,}"))
    assert measured == rows, "\n".join(map(str, measured))
