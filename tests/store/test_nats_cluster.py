"""The NATS store on a real 3-node nats-server cluster (the ``nats_cluster`` fixture of
tests/conftest.py): buckets kept with three replicas, an older one-replica bucket
raised, several server URLs, and a hub that keeps its prompts when the node it was
connected to is killed (issue 31)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
from nats_support import DEBIAN_NATS_SERVER, NATS_SERVER, NatsCluster, NatsServer, free_port

from hive_rpc.cli.parser import build_parser
from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError, StoreUnavailable
from hive_rpc.core.prompt import Ask, Prompt, new_prompt
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService
from hive_rpc.store.nats import BUCKETS, NatsStore, open_nats_store
from hive_rpc.store.nats.cluster import answers_at_risk

T = TypeVar("T")


async def replicas(store: NatsStore) -> dict[str, int]:
    """Each bucket's ``num_replicas``, as JetStream's stream info gives it."""
    found = {}
    for bucket in BUCKETS:
        info = await store._bridge.run(store._js.stream_info, f"KV_{bucket}")
        found[f"KV_{bucket}"] = info.config.num_replicas
    return found


def port_of(store: NatsStore) -> int:
    """The client port of the server the store is connected to now."""
    url = store._nc.connected_url
    assert url is not None
    assert url.port is not None
    return url.port


async def until_available(call: Callable[[], Awaitable[T]]) -> T:
    """``call()`` once the store answers: while a killed node's streams elect new
    leaders (inside the other nats-server processes, with no event to wait on) the
    store fails with -32007; the caller's ``fail_after`` is the deadline."""
    while True:
        try:
            return await call()
        except HiveError as e:
            if e.code != StoreUnavailable.code:
                raise
        await trio.sleep(0.1)


async def test_buckets_have_three_replicas_on_a_three_node_cluster(
    nats_cluster: NatsCluster,
) -> None:
    with trio.fail_after(20):
        async with open_nats_store(nats_cluster.urls[0]) as store:
            assert await replicas(store) == {"KV_hive_prompts": 3, "KV_hive_documents": 3}
            assert store.replicas == 3


async def test_a_one_replica_bucket_is_raised_to_three(
    nats_cluster: NatsCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "hive_rpc.store.nats")
    with trio.fail_after(20):
        async with open_nats_store(nats_cluster.urls[0], replicas=1) as old:
            assert await replicas(old) == {"KV_hive_prompts": 1, "KV_hive_documents": 1}
        async with open_nats_store(nats_cluster.urls[1]) as store:
            assert await replicas(store) == {"KV_hive_prompts": 3, "KV_hive_documents": 3}
    raised = [r.getMessage() for r in caplog.records if "raised it to" in r.getMessage()]
    assert raised == [
        "bucket hive_prompts (stream KV_hive_prompts) had 1 replica(s); raised it to 3",
        "bucket hive_documents (stream KV_hive_documents) had 1 replica(s); raised it to 3",
        "bucket hive_results (stream OBJ_hive_results) had 1 replica(s); raised it to 3",
    ]


async def test_a_bucket_that_cannot_be_raised_is_named_with_the_fix(
    nats_cluster: NatsCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "hive_rpc.store.nats")
    with trio.fail_after(20):
        async with open_nats_store(nats_cluster.urls[0], replicas=1):
            pass
        # Five replicas on three servers: JetStream refuses; the hub still works.
        async with open_nats_store(nats_cluster.urls[0], replicas=5) as store:
            assert await replicas(store) == {"KV_hive_prompts": 1, "KV_hive_documents": 1}
            assert await store.pending() == []
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 3, warned  # the two buckets and the object store of results
    assert warned[0].startswith(
        "bucket hive_prompts (stream KV_hive_prompts) has 1 replica(s), 5 wanted, and "
        "JetStream refused to raise it ("
    )
    assert "`nats stream edit KV_hive_prompts --replicas 5`" in warned[0]
    assert "`nats stream edit KV_hive_documents --replicas 5`" in warned[1]
    assert "`nats stream edit OBJ_hive_results --replicas 5`" in warned[2]


async def test_a_comma_separated_url_list_is_accepted(nats_cluster: NatsCluster) -> None:
    nobody = f"nats://127.0.0.1:{free_port()}"
    urls = f"{nobody},{nats_cluster.urls[2]}"
    args = build_parser().parse_args(["serve", "--store", urls, "--replicas", "3"])
    assert (args.store, args.replicas) == (urls, 3)
    with trio.fail_after(20):
        async with open_nats_store(urls) as store:
            assert store.url == urls
            assert port_of(store) == nats_cluster.nodes["n3"].port
            assert await store.pending() == []


async def test_a_hub_on_all_three_servers_survives_losing_its_server(
    nats_cluster: NatsCluster, short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "hive_rpc.store.nats")
    config = HubConfig(
        socket=short_tmp / "run" / "hub.sock",
        data_dir=short_tmp / "data",
        store=",".join(nats_cluster.urls),
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            service: HubService = await nursery.start(run_hub, config)
            store = service.registry.store
            assert isinstance(store, NatsStore)
            async with await HubClient.connect(config.socket) as client:
                asked = await client.call("hive/ask", {"question": "Deploy?", "agent_id": "a"})
                killed = nats_cluster.node_of(port_of(store))
                async with store.link_changes() as changes:
                    nats_cluster.kill(killed)
                    assert await changes.__anext__() is not None  # lost
                    assert await changes.__anext__() is None  # back, on another node
                reached = port_of(store)
                assert reached != nats_cluster.nodes[killed].port

                async def poll() -> Any:
                    return await client.call("hive/poll", {"id": asked["id"], "agent_id": "a"})

                assert await until_available(poll) == asked
                answered = await until_available(
                    lambda: client.call("hive/respond", {"id": asked["id"], "answer": "yes"})
                )
                assert answered["status"] == "responded"
                assert (await poll())["answer"] == "yes"
                again = await until_available(
                    lambda: client.call("hive/ask", {"question": "Again?", "agent_id": "a"})
                )
                assert (await poll())["status"] == "responded"
                assert again["status"] == "pending"
            nursery.cancel_scope.cancel()
    assert f"reconnected to NATS at nats://127.0.0.1:{reached}" in caplog.messages


async def test_a_lone_server_never_claims_three_copies(
    nats_server: NatsServer, caplog: pytest.LogCaptureFixture
) -> None:
    """nats-server 2.9 alone takes ``num_replicas`` 3 in an edit and keeps one copy:
    the hub said it had raised the bucket.  2.11 and later refuse the edit: the hub
    told to ``nats stream edit`` it to 3 replicas, which a lone server cannot, and
    said "buckets kept with 3 replicas".  Now it says why there is one copy, and
    that one is kept."""
    caplog.set_level(logging.INFO, "hive_rpc.store.nats")
    with trio.fail_after(20):
        async with open_nats_store(nats_server.url):
            pass  # created with one replica: a lone server
        async with open_nats_store(nats_server.url, replicas=3) as store:
            assert await store.pending() == []
            assert store.replicas == 1
    said = [r.getMessage() for r in caplog.records]
    assert not [m for m in said if "raised it to" in m or "stream edit" in m], said
    assert said[-1].endswith("(1 server); buckets kept with 1 replica"), said
    lone = [m for m in said if "not part of a cluster" in m]
    assert len(lone) == 3, said
    assert lone[0].startswith("bucket hive_prompts (stream KV_hive_prompts): 3 replicas wanted")


@pytest.mark.skipif(DEBIAN_NATS_SERVER is None, reason="needs Debian's nats-server")
async def test_a_cluster_older_than_2_11_is_named_as_a_risk_to_answers(
    short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Debian 12's nats-server 2.9.10 accepted both racing hubs' answers to one
    question in 4 of 8 leader faults (bench/nats_failover.py; nats-server#6194, fixed
    in 2.11): a hub on a replicated bucket there says so, naming the version, and one
    on the test venv's 2.15.1 (the ``nats_cluster`` fixture's) does not."""
    caplog.set_level(logging.WARNING, "hive_rpc.store.nats")
    assert DEBIAN_NATS_SERVER is not None
    for binary, warned in ((DEBIAN_NATS_SERVER, True), (NATS_SERVER, False)):
        cluster = NatsCluster(short_tmp / Path(str(binary)).parent.name, binary=binary)
        try:
            cluster.start()
            caplog.clear()
            with trio.fail_after(30):
                async with open_nats_store(cluster.urls[0]) as store:
                    assert store.replicas == 3
                    version = store._nc._server_info["version"]
        finally:
            cluster.stop()
        risks = [m for m in caplog.messages if "nats-server#6194" in m]
        assert bool(risks) is warned, (version, caplog.messages)
        if warned:
            assert risks == [
                f"nats-server {version} keeps the buckets with 3 replicas, and before 2.11 "
                "JetStream may accept two answers to one question while the bucket's "
                'leader changes (both hubs are told "ok", one answer is lost; '
                "nats-server#6194): run nats-server 2.11 or later on every node"
            ]


def test_a_lone_server_or_one_replica_is_no_risk_to_answers() -> None:
    assert answers_at_risk({"version": "2.9.10"}, 1) is None
    assert answers_at_risk({"version": "2.11.0"}, 3) is None
    assert answers_at_risk({"version": "2.15.1"}, 3) is None
    assert answers_at_risk({"version": "garbage"}, 3) is None
    assert answers_at_risk({"version": "2.10.24"}, 3) is not None


RACES = 150
"""Prompts two stores on different nodes create at once in the race test below."""


async def test_the_same_prompt_created_by_two_hubs_at_once_is_created_once(
    nats_cluster: NatsCluster,
) -> None:
    """Two hubs take the same keyed ask at once (an agent's retry on another hub):
    one ``insert`` creates the prompt, the other raises KeyError ("already exists"),
    and a ``get`` after it finds the prompt.  Before, the loser's create could meet
    the winner's write while the bucket's leader held it in flight, unreadable: the
    conflict said "exists", nats-py's check that it was not a deleted key found no
    message, and its KeyNotFoundError reached the asker as -32603 (a loaded run of
    test_nats_errors.py's retry test)."""
    prompts = [
        new_prompt(Ask(question=f"Deploy build {i}?", agent_id="ci"), now=0.0, prompt_id=f"p{i}")
        for i in range(RACES)
    ]
    with trio.fail_after(120):
        async with (
            open_nats_store(nats_cluster.urls[0]) as first,
            open_nats_store(nats_cluster.urls[1]) as second,
        ):
            outcomes: dict[str, list[str]] = {p.id: [] for p in prompts}

            async def insert(store: NatsStore, prompt: Prompt) -> None:
                try:
                    await store.insert(prompt)
                except KeyError:
                    found = await store.get(prompt.id)
                    assert found is not None, prompt.id
                    outcomes[prompt.id].append("exists")
                else:
                    outcomes[prompt.id].append("created")

            for prompt in prompts:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(insert, first, prompt)
                    nursery.start_soon(insert, second, prompt)
            assert all(sorted(o) == ["created", "exists"] for o in outcomes.values()), outcomes
