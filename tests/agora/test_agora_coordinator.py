"""The coordinator of a dialogue (whoever created it) is told of its consensus,
timeout and trouble (issue 14, seed 001: "coordinator notified, can intervene or
timeout dialogue"): on the activity stream, through ``agora/news``, and on its own
MCP session as ``notifications/message``, driven by the MCP SDK's client."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
import trio.testing
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import LoggingMessageNotificationParams
from waiting import Collected

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

# As in tests/faces/test_mcp.py: the SDK's HTTP client leaves httpx2's SSE generators
# to the garbage collector.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)


def read_token(hub: HubService) -> str:
    return Path(str(hub.info.token_file)).read_text().strip()


@asynccontextmanager
async def coordinator(
    transport: str, hub: HubService, config: HubConfig, told: Collected[dict[str, Any]]
) -> AsyncIterator[Client]:
    """An MCP session as agent ``lead`` with the agora tools, on the legacy protocol
    (2025-11-25), collecting the log messages it is sent."""

    async def log(params: LoggingMessageNotificationParams) -> None:
        told.append({"level": params.level, "logger": params.logger, "data": params.data})

    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "hive_rpc", "mcp", "--socket", str(config.socket), "--data-dir",
                  str(config.data_dir), "--no-start", "--agent", "lead", "--tools", "agora"],
            env=dict(os.environ),
        )  # fmt: skip
        async with Client(params, mode="legacy", logging_callback=log) as c:
            yield c
        return
    token = read_token(hub)
    headers = {"Authorization": f"Bearer {token}", "X-Hive-Agent": "lead", "X-Hive-Tools": "agora"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        Client(
            streamable_http_client(str(hub.info.http_url), http_client=http),
            mode="legacy",
            logging_callback=log,
        ) as c,
    ):
        yield c


async def until_told(told: Collected[dict[str, Any]], event: str) -> dict[str, Any]:
    return await told.first(lambda note: note["data"]["event"] == event, within_s=20)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_coordinator_is_told_on_its_mcp_session(
    http_hub: HubService, hub_config: HubConfig, transport: str
) -> None:
    told: Collected[dict[str, Any]] = Collected()
    async with (
        coordinator(transport, http_hub, hub_config, told) as lead,
        await HubClient.connect(hub_config.socket) as hub,
    ):
        created = await lead.call_tool(
            "agora_create", {"topic": "Cache?", "participants": ["main.a", "main.b"]}
        )
        d = created.structured_content
        assert d is not None
        assert d["coordinator"] == "lead"
        # main.b has no terminal: absent at once, and unavailable (both warnings)
        await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main.a", "to": "main.b", "signal": "propose",
             "message": "Redis"},
        )  # fmt: skip
        absent = await until_told(told, "agora/participant-absent")
        assert (absent["level"], absent["logger"]) == ("warning", "hive-rpc.agora")
        assert (absent["data"]["ling"], absent["data"]["dialogue_id"]) == ("main.b", d["id"])
        with pytest.raises(Exception, match="not a participant"):
            await hub.call(
                "agora/dispatch",
                {"dialogue_id": d["id"], "from": "main.z", "to": "main.b", "signal": "approve",
                 "message": "me too"},
            )  # fmt: skip
        stranger = await until_told(told, "agora/not-a-participant")
        assert (stranger["level"], stranger["data"]["name"]) == ("warning", "main.z")
        levels = {e.event: e.data["level"] for e in http_hub.activity.recent()}
        assert levels["agora/not-a-participant"] == "warn"  # the activity stream's too
        assert levels["agora/ling-unavailable"] == "warn"
        await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main.b", "to": "main.a", "signal": "approve",
             "message": "ok"},
        )  # fmt: skip
        done = await until_told(told, "agora/consensus")
        assert done["level"] == "info"
        # Another coordinator's dialogue is not this one's news.
        other = await hub.call(
            "agora/create",
            {"topic": "t", "participants": ["main.a", "main.b"], "coordinator": "someone",
             "max_turns": 1},
        )  # fmt: skip
        await hub.call(
            "agora/dispatch",
            {"dialogue_id": other["id"], "from": "main.a", "to": "main.b", "signal": "counter",
             "message": "m"},
        )  # fmt: skip
        news = await hub.call("agora/news", {"coordinators": ["someone"]})
        assert [e["event"] for e in news["events"]] == [
            "agora/participant-absent",
            "agora/max-turns-reached",
        ]
        assert news["events"][-1]["level"] == "warn"
        # News of lead's own after those: lead is told news in order, so once it has
        # this, it would have had the others' before it.
        own = await hub.call(
            "agora/create",
            {"topic": "t", "participants": ["main.a", "main.b"], "coordinator": "lead"},
        )
        await hub.call("agora/abort", {"dialogue_id": own["id"], "reason": "done"})
        aborted = await until_told(told, "agora/aborted")
        assert aborted["data"]["dialogue_id"] == own["id"]
        assert {n["data"]["coordinator"] for n in told.items} == {"lead"}


async def test_news_waits_and_resumes(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    """``agora/news`` is a long poll: it answers as soon as news comes, and ``last``
    resumes it."""
    d = await client.call(
        "agora/create", {"topic": "t", "participants": ["main.a", "main.b"], "coordinator": "c1"}
    )
    first = await client.call("agora/news", {})
    assert first == {"events": [], "last": 0}
    async with trio.open_nursery() as nursery:
        got: list[dict[str, Any]] = []

        async def wait() -> None:
            async with await HubClient.connect(hub_config.socket) as waiter:
                got.append(await waiter.call("agora/news", {"since": 0, "wait_s": 30}))

        nursery.start_soon(wait)
        # Every task blocked: the waiter's call is in the hub, waiting for news.
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        await client.call("agora/abort", {"dialogue_id": d["id"], "reason": "done"})
    ((event,), last) = got[0]["events"], got[0]["last"]
    assert (event["event"], event["coordinator"], event["seq"], last) == (
        "agora/aborted",
        "c1",
        1,
        1,
    )
    assert await client.call("agora/news", {"since": last}) == {"events": [], "last": 1}
    assert (await client.call("agora/news", {"coordinators": ["c2"]}))["events"] == []
