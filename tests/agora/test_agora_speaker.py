"""Who an agent speaks as (an event's, an answer's, a turn's ``from``) is the ling whose
approved agent runs it, when the hub can see its process: a fact the hub verifies, not
a name the agent gives.  A real MCP client (the SDK's, over stdio) runs as the approved
agent of ling ``main`` in a tmux pane (tests/agora/spawning_agent.py), as Claude Code
does; the hub sees its ``hive-rpc mcp`` relay's peer process and walks up to it.

Before, an agent whose MCP id was not its ling's name (``claude-code-PID``: every
Claude Code without ``--agent``) was refused ("'claude-code-31260' has no parent"), and
any agent could name any ling as ``sender`` and have text typed as that ling."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from test_agora_spawn import Family, parent_agent

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService


@pytest.fixture
async def agent(hub: HubService, hub_config: HubConfig, short_tmp: Path) -> AsyncIterator[Family]:
    async with parent_agent(hub_config, short_tmp, tools="agora,events") as family:
        yield family


async def test_an_agent_speaks_as_its_ling_and_not_as_another(
    hub: HubService, agent: Family
) -> None:
    agora = hub.require_agora()
    # Another ling (its terminal is not the point here: nothing reaches it).
    await agora.register("main.kid", "tmux", "%99", owner=True)
    # No sender: the hub takes main, the ling whose agent this is, not the agent's id.
    orphan = await agent.call("report_to_parent", kind="child-note", message="hello")
    assert orphan["is_error"], orphan
    assert "'main' has no parent" in orphan["text"], orphan
    # Naming another registered ling is refused: an agent speaks for its own terminal.
    posing = await agent.call(
        "report_to_parent", kind="child-note", message="all done", sender="main.kid"
    )
    assert posing["is_error"], posing
    assert posing["text"].startswith("sender: 'main.kid' is another ling; the hub sees that")
    assert "you are main (your process runs as its approved agent)" in posing["text"]
    # A turn, likewise: the dialogue's participant main is this agent, whatever id it has.
    made = await agent.call("agora_create", topic="Cache?", participants=["main", "main.kid"])
    dialogue = made["structured"]["id"]
    as_kid = await agent.call(
        "agora_dispatch", dialogue_id=dialogue, to="main", signal="approve",
        message="fine", sender="main.kid",
    )  # fmt: skip
    assert as_kid["is_error"], as_kid
    assert "'main.kid' is another ling" in as_kid["text"], as_kid
    with trio.fail_after(30):
        turn = await agent.call(
            "agora_dispatch", dialogue_id=dialogue, to="main.kid", signal="propose",
            message="Use Redis.",
        )  # fmt: skip
    assert not turn["is_error"], turn  # taken (main.kid's pane is gone: not delivered)
    (taken,) = agora.status(dialogue)["turns"]
    assert taken["from"] == "main"
