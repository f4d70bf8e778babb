"""Failover that hides nothing (issue 31): three hubs, one on each node of a real
3-node nats-server cluster (the ``nats_cluster`` fixture), each asked questions
steadily by an agent, an editor subscribed on each.  A node is frozen (SIGSTOP, then
SIGCONT) or the prompts bucket's leader is killed (SIGKILL) under that traffic; once
every hub takes asks again, every editor must be shown every acknowledged prompt,
from every hub: none hidden.

The wait for that is on the editors' notifications, with a deadline that only tells
"never" from "slow" (``SHOWN_DEADLINE_S``); how fast it happens is what
bench/nats_failover.py measures, against the cluster's own leader election."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio
from nats_support import NatsCluster

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService
from hive_rpc.store.nats import NatsStore

SHOWN_DEADLINE_S = 60.0
"""How long after the cluster is whole again every editor may take to be shown every
prompt before the test calls them hidden: far beyond the 2 s the issue asks for (the
benchmark's figure), so a loaded machine is not mistaken for a lost prompt."""
WORKING_DEADLINE_S = 90.0
"""How long the hubs may take to take asks again after a fault (the frozen node's hub
must notice that its server stopped answering and move to another)."""
ASK_EVERY_S = 0.1
"""Each agent's pace: about 30 asks a second over the three hubs, as in the issue."""
ASKS_PER_PHASE = 3
"""Asks each hub must acknowledge before, during and after a fault."""


@dataclass
class Editor:
    """An editor subscribed to one hub (``hive/subscribe``): the prompts it was shown,
    each with when it was first shown (trio's clock) and which agent asked it."""

    hub: str
    shown: dict[str, float] = field(default_factory=dict)
    asker: dict[str, str] = field(default_factory=dict)
    more: trio.Event = field(default_factory=trio.Event)

    async def follow(self, socket: Path) -> None:
        async with await HubClient.connect(socket) as client:
            await client.call("hive/subscribe", {})
            while True:
                note = await client.next_notification()
                if note.method == "hive/prompt" and isinstance(note.params, dict):
                    prompt_id = note.params["id"]
                    self.shown.setdefault(prompt_id, trio.current_time())
                    self.asker[prompt_id] = note.params["agent_id"]
                    self.more.set()
                    self.more = trio.Event()

    async def shows(self, ids: set[str]) -> None:
        while not ids <= self.shown.keys():
            await self.more.wait()


@dataclass
class Agent:
    """An agent asking through one hub at ``ASK_EVERY_S``: what the hub acknowledged,
    in order (with when: ``acked_at``), and how many asks it refused meanwhile."""

    hub: str
    acked: list[str] = field(default_factory=list)
    acked_at: list[float] = field(default_factory=list)
    refused: int = 0
    more: trio.Event = field(default_factory=trio.Event)
    stopping: bool = False
    stopped: trio.Event = field(default_factory=trio.Event)

    async def ask(self, socket: Path) -> None:
        async with await HubClient.connect(socket) as client:
            n = 0
            while not self.stopping:
                n += 1
                question = {"question": f"{self.hub} #{n}?", "agent_id": self.hub}
                try:
                    asked = await client.call("hive/ask", question)
                except HiveError:
                    self.refused += 1  # not acknowledged: the agent asks the next one
                else:
                    self.acked.append(asked["id"])
                    self.acked_at.append(trio.current_time())
                    self.more.set()
                    self.more = trio.Event()
                await trio.sleep(ASK_EVERY_S)  # the traffic's pace, not a wait for a state
        self.stopped.set()

    async def stop(self) -> None:
        """Ask no more; returns once the ask in flight, if any, has its answer."""
        self.stopping = True
        await self.stopped.wait()

    async def acknowledged(self, count: int) -> None:
        """Until ``count`` more asks than now are acknowledged."""
        target = len(self.acked) + count
        while len(self.acked) < target:
            await self.more.wait()


@dataclass
class Hive:
    """The three hubs (hub ``n1`` on node n1 ...) with their editors and agents."""

    cluster: NatsCluster
    services: dict[str, HubService]
    editors: dict[str, Editor]
    agents: dict[str, Agent]

    async def every_hub_acknowledges(self, count: int) -> None:
        async with trio.open_nursery() as nursery:
            for agent in self.agents.values():
                nursery.start_soon(agent.acknowledged, count)

    async def prompts_leader(self) -> str:
        """The node leading the prompts bucket's stream (JetStream's stream info)."""
        store = next(iter(self.services.values())).registry.store
        assert isinstance(store, NatsStore)
        info = await store._bridge.run(store._js.stream_info, "KV_hive_prompts")
        assert info.cluster is not None
        assert info.cluster.leader is not None
        return info.cluster.leader

    def acknowledged(self) -> set[str]:
        return {i for agent in self.agents.values() for i in agent.acked}

    async def hidden(self, deadline_s: float) -> dict[str, int]:
        """Per hub, the acknowledged prompts its editor was not shown by the deadline."""
        acked = self.acknowledged()
        with trio.move_on_after(deadline_s):
            async with trio.open_nursery() as nursery:
                for editor in self.editors.values():
                    nursery.start_soon(editor.shows, acked)
        return {hub: len(acked - editor.shown.keys()) for hub, editor in self.editors.items()}


def hub_config(root: Path, name: str, url: str, **options: float) -> HubConfig:
    return HubConfig(
        socket=root / name / "hub.sock", data_dir=root / name / "data", store=url, **options
    )


@asynccontextmanager
async def open_hive(
    cluster: NatsCluster, root: Path, **options: float
) -> AsyncIterator[tuple[Hive, trio.Nursery]]:
    """Three hubs on the cluster, an editor following each and an agent asking each;
    the agents stop when the block ends (the caller's nursery is for its own tasks)."""
    async with trio.open_nursery() as nursery:
        services: dict[str, HubService] = {}
        for name, node in cluster.nodes.items():
            config = hub_config(root, name, node.url, **options)
            services[name] = await nursery.start(run_hub, config)
        hive = Hive(
            cluster,
            services,
            {name: Editor(name) for name in services},
            {name: Agent(name) for name in services},
        )
        for name, service in services.items():
            socket = Path(service.info.socket)
            nursery.start_soon(hive.editors[name].follow, socket)
            nursery.start_soon(hive.agents[name].ask, socket)
        yield hive, nursery
        nursery.cancel_scope.cancel()


def signal_node(cluster: NatsCluster, name: str, sig: signal.Signals) -> None:
    process = cluster.nodes[name].process
    assert process is not None
    os.kill(process.pid, sig)


@pytest.mark.slow
async def test_a_frozen_node_hides_no_prompt_from_any_editor(
    nats_cluster: NatsCluster, short_tmp: Path
) -> None:
    with trio.fail_after(WORKING_DEADLINE_S * 2 + SHOWN_DEADLINE_S + 60):
        async with open_hive(nats_cluster, short_tmp) as (hive, _):
            await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            frozen = await hive.prompts_leader()
            signal_node(nats_cluster, frozen, signal.SIGSTOP)
            try:
                with trio.fail_after(WORKING_DEADLINE_S):
                    await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            finally:
                signal_node(nats_cluster, frozen, signal.SIGCONT)
            with trio.fail_after(WORKING_DEADLINE_S):
                await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            hidden = await hive.hidden(SHOWN_DEADLINE_S)
    assert hidden == dict.fromkeys(nats_cluster.NAMES, 0), (frozen, hidden)


@pytest.mark.slow
async def test_killing_the_buckets_leader_hides_no_prompt_from_any_editor(
    nats_cluster: NatsCluster, short_tmp: Path
) -> None:
    with trio.fail_after(WORKING_DEADLINE_S + SHOWN_DEADLINE_S + 60):
        async with open_hive(nats_cluster, short_tmp) as (hive, _):
            await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            killed = await hive.prompts_leader()
            nats_cluster.kill(killed)
            with trio.fail_after(WORKING_DEADLINE_S):
                await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            hidden = await hive.hidden(SHOWN_DEADLINE_S)
    assert hidden == dict.fromkeys(nats_cluster.NAMES, 0), (killed, hidden)
