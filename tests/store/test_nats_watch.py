"""A store watch that cannot make a consumer reads what it missed itself
(store/nats/watch.py, issue 31), on a real nats-server.

When the node that led the cluster's metadata is frozen, no consumer can be made for
seconds after the bucket itself has a new leader; meanwhile each check of the watch
reads the revisions it missed one by one.  It read them with JetStream's direct get,
which the buckets do not allow (``allow_direct`` is off, as nats-py creates them):
every read timed out and nothing was delivered until a consumer could be made."""

from __future__ import annotations

import trio
from nats_support import NatsServer

from hive_rpc.core.prompt import Ask, new_prompt
from hive_rpc.store.nats import open_nats_store
from hive_rpc.store.nats.names import PROMPTS_BUCKET
from hive_rpc.store.nats.watch import Watch


async def test_a_watch_without_a_consumer_reads_each_missed_revision(
    nats_server: NatsServer,
) -> None:
    with trio.fail_after(30):
        async with open_nats_store(nats_server.url) as store:
            watch = Watch(store)
            await store._bridge.run(watch.start)
            try:
                # The consumers gone, as when their node is lost and none can be made.
                await store._bridge.run(watch._unsubscribe)
                asked = [
                    new_prompt(Ask(question=f"Deploy {n}?", agent_id="ci"), now=1e9)
                    for n in range(3)
                ]
                for prompt in asked:
                    await store.insert(prompt)
                await store._bridge.run(watch._catch_up)
                assert watch._queue.qsize() == len(asked)
                seen = [watch._queue.get_nowait() for _ in asked]
                assert [(c.kind, c.key) for c in seen] == [("prompt", p.id) for p in asked]
                info = await store._bridge.run(store._js.stream_info, f"KV_{PROMPTS_BUCKET}")
                assert watch._seen[PROMPTS_BUCKET] == info.state.last_seq
            finally:
                await store._bridge.run(watch.stop)
