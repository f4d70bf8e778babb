"""Failover that hides nothing (issue 31): three hubs, one on each node of a real
3-node nats-server cluster (the ``nats_cluster`` fixture), each asked questions
steadily by an agent, an editor subscribed on each.  A node is frozen (SIGSTOP, then
SIGCONT) or killed (SIGKILL) under that traffic, the prompts bucket's leader or a
follower; once every hub takes asks again, every editor must be shown every
acknowledged prompt, from every hub: none hidden.  Each prompt is answered by the
two hubs other than its asker's, racing: none of the asks acknowledged may be lost,
no answer told "ok" may be lost, no prompt answered twice, and no prompt left that
no agent holds an id for (the agents retry with their ``idempotency_key``).  On
nats-server 2.9.10 the race was won twice in 4 leader faults of 8
(bench/nats_failover.py); the tests run 2.15.1.

The wait for that is on the editors' notifications, with a deadline that only tells
"never" from "slow" (``SHOWN_DEADLINE_S``); how fast it happens is what
bench/nats_failover.py measures, against the cluster's own leader election."""

from __future__ import annotations

import os
import signal
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest
import trio
from nats_support import NatsCluster
from test_nats_cluster import until_available

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import AlreadyAnswered, HiveError
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
        """Each question with its own ``idempotency_key``, asked again with that key
        while the hub refuses it, as an agent that must not leave an orphan does: a
        refusal that "may or may not have been saved" returns the saved prompt."""
        async with await HubClient.connect(socket) as client:
            n = 0
            while not self.stopping:
                n += 1
                question = {
                    "question": f"{self.hub} #{n}?",
                    "agent_id": self.hub,
                    "idempotency_key": f"{self.hub}-{n}",
                }
                while True:
                    try:
                        asked = await client.call("hive/ask", question)
                    except HiveError:
                        self.refused += 1
                        await trio.sleep(ASK_EVERY_S)  # the pace of the retries
                    else:
                        break
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
    answers: Answers = field(init=False)
    """The two other hubs' racing answers to each prompt (``open_hive`` starts them)."""

    def __post_init__(self) -> None:
        self.answers = Answers(self)

    async def stop_asking(self) -> None:
        """Every agent stops asking; returns once each has its last ask acknowledged."""
        async with trio.open_nursery() as nursery:
            for agent in self.agents.values():
                nursery.start_soon(agent.stop)

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


class Answers:
    """Both hubs other than the asker's answer each prompt once every editor shows it:
    a race exactly one must win.  A refused answer is sent again (the store failing
    over); ``already_answered`` ends a hub's part."""

    def __init__(self, hive: Hive) -> None:
        self.hive = hive
        self.ok: dict[str, list[str]] = defaultdict(list)
        """Per prompt, the hubs that said "ok" to their answer: one, or a double."""
        self.settled: dict[str, int] = defaultdict(int)
        """Per prompt, the hubs done answering it ("ok" or already answered)."""
        self.refused = 0
        self.refusals: dict[str, list[str]] = defaultdict(list)
        """Per prompt, each refusal's hub and words (the diagnosis of a lost answer)."""
        self.more = trio.Event()

    async def run(self, hub: str) -> None:
        socket = Path(self.hive.services[hub].info.socket)
        editors = list(self.hive.editors.values())
        mine = self.hive.editors[hub]
        done: set[str] = set()
        async with await HubClient.connect(socket) as client:
            while True:
                ready = [
                    i
                    for i in mine.shown
                    if i not in done
                    and mine.asker.get(i) != hub
                    and all(i in e.shown for e in editors)
                ]
                for prompt_id in ready:
                    await self.answer(client, hub, prompt_id)
                    done.add(prompt_id)
                if not ready:
                    with trio.move_on_after(0.2):  # another editor's show wakes nobody here
                        await mine.more.wait()

    async def answer(self, client: HubClient, hub: str, prompt_id: str) -> None:
        while True:
            try:
                await client.call("hive/respond", {"id": prompt_id, "answer": hub})
            except AlreadyAnswered:
                break
            except HiveError as e:
                self.refused += 1
                self.refusals[prompt_id].append(f"{hub}: {e.message}")
                await trio.sleep(0.2)  # the store is failing over: answer again
            else:
                self.ok[prompt_id].append(hub)
                break
        self.settled[prompt_id] += 1
        self.more.set()
        self.more = trio.Event()

    async def all_settled(self, ids: set[str]) -> None:
        """Until both answering hubs are done with each of ``ids``."""
        while not all(self.settled[i] >= 2 for i in ids):
            await self.more.wait()


async def outcome_counts(hive: Hive, answers: Answers) -> dict[str, int]:
    """What the store holds against what the agents and answering hubs were told,
    each acknowledged prompt read by its key on a hub of its own (a scan just after
    a leader change was seen stale): asks lost, answers lost (an "ok" that is not
    the stored answer), double answers, and orphans (prompts of these agents that
    no agent was given an id for)."""
    store = next(iter(hive.services.values())).registry.store
    acked = hive.acknowledged()
    stored = {i: await until_available(partial(store.get, i)) for i in acked}
    found = {p.id for p in await until_available(partial(store.find, ""))}
    return {
        "asks lost": sum(1 for p in stored.values() if p is None),
        "answers lost": sum(
            1
            for i, hubs in answers.ok.items()
            for hub in hubs
            if (p := stored.get(i)) is not None and (p.status.value, p.answer) != ("responded", hub)
        ),
        "double answers": sum(1 for hubs in answers.ok.values() if len(hubs) > 1),
        "orphans": len(found - acked),
    }


NOTHING_LOST = {"asks lost": 0, "answers lost": 0, "double answers": 0, "orphans": 0}


def hub_config(root: Path, name: str, url: str, **options: float) -> HubConfig:
    return HubConfig(
        socket=root / name / "hub.sock", data_dir=root / name / "data", store=url, **options
    )


@asynccontextmanager
async def open_hive(
    cluster: NatsCluster, root: Path, **options: float
) -> AsyncIterator[tuple[Hive, trio.Nursery]]:
    """Three hubs on the cluster, an editor following each, an agent asking each, and
    the two other hubs answering each prompt; all stop when the block ends (the
    caller's nursery is for its own tasks)."""
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
            nursery.start_soon(hive.answers.run, name)
        yield hive, nursery
        nursery.cancel_scope.cancel()


def signal_node(cluster: NatsCluster, name: str, sig: signal.Signals) -> None:
    process = cluster.nodes[name].process
    assert process is not None
    os.kill(process.pid, sig)


async def prompts_node(hive: Hive, role: str) -> str:
    """The node leading the prompts bucket (``leader``), or one following it."""
    leader = await hive.prompts_leader()
    if role == "leader":
        return leader
    return next(n for n in hive.cluster.NAMES if n != leader)


@pytest.mark.slow
@pytest.mark.parametrize("role", ["leader", "follower"])
async def test_a_frozen_node_hides_no_prompt_from_any_editor(
    nats_cluster: NatsCluster, short_tmp: Path, role: str
) -> None:
    with trio.fail_after(WORKING_DEADLINE_S * 2 + SHOWN_DEADLINE_S + 60):
        async with open_hive(nats_cluster, short_tmp) as (hive, _):
            await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            frozen = await prompts_node(hive, role)
            signal_node(nats_cluster, frozen, signal.SIGSTOP)
            try:
                with trio.fail_after(WORKING_DEADLINE_S):
                    await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            finally:
                signal_node(nats_cluster, frozen, signal.SIGCONT)
            with trio.fail_after(WORKING_DEADLINE_S):
                await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            await hive.stop_asking()
            hidden = await hive.hidden(SHOWN_DEADLINE_S)
            assert hidden == dict.fromkeys(nats_cluster.NAMES, 0), (frozen, hidden)
            with trio.fail_after(SHOWN_DEADLINE_S):
                await hive.answers.all_settled(hive.acknowledged())
            counts = await outcome_counts(hive, hive.answers)
    assert counts == NOTHING_LOST, (frozen, counts, dict(hive.answers.refusals))


@pytest.mark.slow
@pytest.mark.parametrize("role", ["leader", "follower"])
async def test_a_killed_node_hides_no_prompt_from_any_editor(
    nats_cluster: NatsCluster, short_tmp: Path, role: str
) -> None:
    with trio.fail_after(WORKING_DEADLINE_S + SHOWN_DEADLINE_S + 60):
        async with open_hive(nats_cluster, short_tmp) as (hive, _):
            await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            killed = await prompts_node(hive, role)
            nats_cluster.kill(killed)
            with trio.fail_after(WORKING_DEADLINE_S):
                await hive.every_hub_acknowledges(ASKS_PER_PHASE)
            await hive.stop_asking()
            hidden = await hive.hidden(SHOWN_DEADLINE_S)
            assert hidden == dict.fromkeys(nats_cluster.NAMES, 0), (killed, hidden)
            with trio.fail_after(SHOWN_DEADLINE_S):
                await hive.answers.all_settled(hive.acknowledged())
            counts = await outcome_counts(hive, hive.answers)
    assert counts == NOTHING_LOST, (killed, counts, dict(hive.answers.refusals))
