"""A blocking ask marked resumed (``_meta`` ``hive-rpc/resumed``, what ``hive-rpc mcp``
sets on a call it sends again after its hub went away) waits for the agent's pending
question asking the same, instead of asking the human twice; unmarked, or with other
options, it asks anew.  Through the MCP SDK's own client over ``hive-rpc mcp``; the
relay's side, with a hub really killed, is in test_mcp_relay_restart.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from mcp import Client, StdioServerParameters
from test_mcp import stdio_params

from hive_rpc.client.async_client import HubClient
from hive_rpc.faces.mcp.prompt_tools import RESUMED_META
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

QUESTION = "Which region should the cache live in?"
AGENT = "resumer"


def mcp_server(config: HubConfig) -> StdioServerParameters:
    return stdio_params(config, "--agent", AGENT, "--progress-every", "0.2")


async def answered_while_waiting(
    agent: Client, socket: Path, name: str, args: dict[str, Any], *, resumed: bool
) -> tuple[dict[str, Any], list[str]]:
    """Call ``name``; once its wait has begun (its first progress), the human answers
    every pending ask of the agent.  The call's structured result, and those asks."""
    waiting = trio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        waiting.set()

    meta: Any = {RESUMED_META: True} if resumed else None
    result: dict[str, Any] = {}

    async def call() -> None:
        done = await agent.call_tool(name, args, progress_callback=on_progress, meta=meta)
        assert not done.is_error, done.content
        assert done.structured_content is not None
        result.update(done.structured_content)

    async with await HubClient.connect(socket) as human, trio.open_nursery() as nursery:
        nursery.start_soon(call)
        await waiting.wait()
        pending = [r["id"] for r in await human.call("hive/list", {"agent_id": AGENT})]
        for prompt_id in pending:
            await human.call("hive/respond", {"id": prompt_id, "answer": "yes", "by": "ada"})
    return result, pending


async def asked(agent: Client, **args: Any) -> str:
    done = await agent.call_tool("hivemind_ask_async", {"question": QUESTION, **args})
    assert done.structured_content is not None
    ask_id: str = done.structured_content["ask_id"]
    return ask_id


async def test_a_resumed_call_waits_for_the_same_pending_question(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        async with Client(mcp_server(hub_config)) as agent:
            earlier = await asked(agent)
            result, pending = await answered_while_waiting(
                agent, hub_config.socket, "request_human_input", {"prompt": QUESTION},
                resumed=True,
            )  # fmt: skip
            assert pending == [earlier]  # not asked twice
            assert (result["ask_id"], result["answer"]) == (earlier, "yes")
            with_options = await asked(agent, options=["yes", "no"])
            result, pending = await answered_while_waiting(
                agent, hub_config.socket, "hivemind_ask",
                {"question": QUESTION, "options": ["yes", "no"]}, resumed=True,
            )  # fmt: skip
            assert pending == [with_options]
            assert (result["ask_id"], result["decision"]) == (with_options, "yes")


async def test_unmarked_or_asking_otherwise_asks_anew(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        async with Client(mcp_server(hub_config)) as agent:
            earlier = await asked(agent)
            result, pending = await answered_while_waiting(
                agent, hub_config.socket, "request_human_input", {"prompt": QUESTION},
                resumed=False,
            )  # fmt: skip
            assert pending[:1] == [earlier]
            assert len(pending) == 2
            assert result["ask_id"] == pending[1]
            earlier = await asked(agent)  # free text; the call offers options
            result, pending = await answered_while_waiting(
                agent, hub_config.socket, "hivemind_ask",
                {"question": QUESTION, "options": ["yes", "no"]}, resumed=True,
            )  # fmt: skip
            assert pending[:1] == [earlier]
            assert len(pending) == 2
            assert result["ask_id"] == pending[1]
