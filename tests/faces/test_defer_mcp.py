"""Seed 002's ``request_human_input`` through the MCP SDK's own stdio client, when the
human typed and then left (issue 14): the editor's ``hive/defer`` gives the countdown
back, so the tool returns the sentinel one countdown after the human left, not after
the hub's 24 h maximum lifetime.  And "hidden blank": a box closed without typing
changes nothing, so the countdown ends when it always would have."""

from __future__ import annotations

from typing import Any

import trio
from mcp import Client, StdioServerParameters
from test_mcp import stdio_params

from hive_rpc.client.async_client import HubClient
from hive_rpc.faces.mcp.results import EXPIRED_MARKER
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

COUNTDOWN_S = 2.0


def mcp_server(config: HubConfig) -> StdioServerParameters:
    return stdio_params(config, "--agent", "asker", "--human-timeout", str(COUNTDOWN_S))


async def ask(agent: Client, prompt: str) -> dict[str, Any]:
    result = await agent.call_tool("request_human_input", {"prompt": prompt})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_typed_then_left_returns_one_countdown_after_the_defer(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        async with (
            Client(mcp_server(hub_config)) as agent,
            await HubClient.connect(hub_config.socket) as editor,
        ):
            await editor.call("hive/subscribe")
            left_at: list[float] = []
            shown: list[dict[str, Any]] = []

            async def typed_then_left() -> None:
                note = await editor.next_notification()
                shown.append(note.params)
                await editor.notify("hive/typing", {"id": note.params["id"]})
                await trio.sleep(3)  # the human's pause, past the 2 s countdown
                left_at.append(hub.registry.now())
                await editor.notify("hive/defer", {"id": note.params["id"]})

            got: dict[str, Any] = {}
            async with trio.open_nursery() as nursery:
                nursery.start_soon(typed_then_left)
                got.update(await ask(agent, "which branch?"))
            returned_at = hub.registry.now()
            assert (got["answer"], got["timed_out"], got["status"]) == (
                EXPIRED_MARKER,
                True,
                "expired",
            )
            # One countdown from the defer (the hub's clock, read around it), not the
            # first deadline, which typing had stopped: no test of how long it took.
            record = await editor.call("hive/poll", {"id": shown[0]["id"]})
            assert record["deadline_at"] > shown[0]["deadline_at"]
            assert left_at[0] + COUNTDOWN_S <= record["deadline_at"] <= returned_at
            assert record["expiry_reason"] == "timeout"


async def test_hidden_blank_ends_when_the_countdown_would_have(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        async with (
            Client(mcp_server(hub_config)) as agent,
            await HubClient.connect(hub_config.socket) as editor,
        ):
            await editor.call("hive/subscribe")
            shown: list[dict[str, Any]] = []

            async def hidden_blank() -> None:
                note = await editor.next_notification()
                shown.append(note.params)
                await editor.notify("hive/defer", {"id": note.params["id"]})

            got: dict[str, Any] = {}
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hidden_blank)
                got.update(await ask(agent, "anyone?"))
            assert (got["answer"], got["status"]) == (EXPIRED_MARKER, "expired")
            record = await editor.call("hive/poll", {"id": shown[0]["id"]})
            assert record["deadline_at"] == shown[0]["deadline_at"]  # never moved
            assert record["expiry_reason"] == "timeout"
