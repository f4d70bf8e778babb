"""``hive/ask`` with an ``idempotency_key`` (issue 31): a retried ask, after a failure
or a reply that never came, returns the prompt the first try made, pending or closed,
instead of leaving an orphan nobody holds an id for.  Here on the memory and SQLite
stores, through a real hub's socket; across two hubs on NATS in
tests/store/test_nats_errors.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from cli_support import Shell
from test_mcp import MODES, http_client, tool

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.runtime.registry import keyed_id
from hive_rpc.service import HubService

ASK = {"question": "Deploy build 412?", "choices": ["yes", "no"], "agent_id": "ci"}


@pytest.fixture(params=["memory", "sqlite"])
def config(request: pytest.FixtureRequest, short_tmp: Path) -> HubConfig:
    return HubConfig(
        socket=short_tmp / "run" / "hub.sock", data_dir=short_tmp / "data", store=request.param
    )


async def call(config: HubConfig, method: str, params: dict[str, Any]) -> Any:
    async with await HubClient.connect(config.socket) as client:
        return await client.call(method, params)


async def test_a_retried_ask_returns_the_same_pending_prompt(config: HubConfig) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            hub = await nursery.start(run_hub, config)
            first = await call(config, "hive/ask", {**ASK, "idempotency_key": "deploy-412"})
            again = await call(config, "hive/ask", {**ASK, "idempotency_key": "deploy-412"})
            assert again == first
            assert first["id"] == keyed_id("ci", "deploy-412")
            assert [p.id for p in hub.registry.list_pending()] == [first["id"]]
            # Another key, or no key: another prompt.
            other = await call(config, "hive/ask", {**ASK, "idempotency_key": "deploy-413"})
            plain = await call(config, "hive/ask", ASK)
            assert len({first["id"], other["id"], plain["id"]}) == 3
            nursery.cancel_scope.cancel()


async def test_a_retry_after_the_answer_returns_the_closed_prompt(config: HubConfig) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(run_hub, config)
            first = await call(config, "hive/ask", {**ASK, "idempotency_key": "k"})
            await call(config, "hive/respond", {"id": first["id"], "answer": "yes", "by": "al"})
            again = await call(config, "hive/ask", {**ASK, "idempotency_key": "k"})
            assert (again["id"], again["status"], again["answer"]) == (
                first["id"],
                "responded",
                "yes",
            )
            nursery.cancel_scope.cancel()


async def test_the_key_is_the_agents_own(config: HubConfig) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(run_hub, config)
            mine = await call(config, "hive/ask", {**ASK, "idempotency_key": "k"})
            theirs = await call(
                config, "hive/ask", {**ASK, "agent_id": "cd", "idempotency_key": "k"}
            )
            assert mine["id"] != theirs["id"]
            assert (mine["agent_id"], theirs["agent_id"]) == ("ci", "cd")
            nursery.cancel_scope.cancel()


async def test_a_key_used_for_another_question_is_refused(config: HubConfig) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(run_hub, config)
            first = await call(config, "hive/ask", {**ASK, "idempotency_key": "k"})
            with pytest.raises(HiveError) as refused:
                await call(
                    config, "hive/ask", {**ASK, "question": "Roll back?", "idempotency_key": "k"}
                )
            assert refused.value.code == -32602
            assert refused.value.data["param"] == "idempotency_key"
            assert refused.value.data["id"] == first["id"]
            assert "used by agent 'ci' for another question" in refused.value.message
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("", "must be a non-empty string"),
        ("  ", "must be a non-empty string"),
        ("k" * 201, "longer than 200"),
    ],
)
async def test_a_bad_key_is_refused(config: HubConfig, key: str, words: str) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(run_hub, config)
            with pytest.raises(HiveError) as refused:
                await call(config, "hive/ask", {**ASK, "idempotency_key": key})
            assert refused.value.code == -32602
            assert words in refused.value.message
            assert await call(config, "hive/list", {}) == []
            nursery.cancel_scope.cancel()


async def test_a_retry_after_a_restart_returns_the_same_prompt(short_tmp: Path) -> None:
    config = HubConfig(socket=short_tmp / "run" / "hub.sock", data_dir=short_tmp / "data")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(run_hub, config)
            first = await call(config, "hive/ask", {**ASK, "idempotency_key": "k"})
            nursery.cancel_scope.cancel()
        async with trio.open_nursery() as nursery:
            await nursery.start(run_hub, config)
            assert await call(config, "hive/ask", {**ASK, "idempotency_key": "k"}) == first
            nursery.cancel_scope.cancel()


# The SDK's HTTP client leaves httpx2's SSE generators to the garbage collector (as in
# tests/faces/test_mcp.py): the client library's doing, not the hub's.
@pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)2\.:ResourceWarning")
async def test_the_mcp_tool_takes_the_key(http_hub: HubService) -> None:
    """``hivemind_ask_async`` with ``idempotency_key``: the agent's retry gets the
    same ask_id, and its status as it is now."""
    with trio.fail_after(30):
        async with http_client(http_hub, MODES[0], agent="ci") as agent:
            first = await tool(agent, "hivemind_ask_async", question="Go?", idempotency_key="k")
            again = await tool(agent, "hivemind_ask_async", question="Go?", idempotency_key="k")
            assert again["ask_id"] == first["ask_id"] == keyed_id("ci", "k")
            await http_hub.registry.respond(first["ask_id"], answer="yes", by="al")
            closed = await agent.call_tool(
                "hivemind_ask_async", {"question": "Go?", "idempotency_key": "k"}
            )
            assert closed.structured_content is not None
            assert closed.structured_content["status"] == "responded"
            assert f"Asked (ask_id {first['ask_id']}, responded)" in closed.content[0].text  # type: ignore[union-attr]


def test_the_cli_takes_the_key(sh: Shell) -> None:
    """``hive-rpc ask --key``: run twice, one prompt; another question, refused."""
    first = sh.run("ask", "Ship it?", "--agent", "ci", "--key", "ship-1")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == keyed_id("ci", "ship-1")
    again = sh.run("ask", "Ship it?", "--agent", "ci", "--key", "ship-1", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {"id": keyed_id("ci", "ship-1"), "status": "pending"}
    other = sh.run("ask", "Roll back?", "--agent", "ci", "--key", "ship-1")
    assert other.returncode == 1  # EXIT_REFUSED, as any invalid question
    assert "for another question" in other.stderr
    assert len(sh.json("list")) == 1
