"""What a hub reads when it starts, and what ``hive-rpc status`` counts, on the NATS
store against SQLite in the same run: does it follow the pending prompts or all the
closed history?

For each case the store holds ``--pending`` pending prompts and some closed ones
(answered long ago).  "restart" is a registry opened on the store (``open_registry``:
``pending()`` and the resumed deadlines, what ``hive-rpc serve`` does before it
listens); "status" is ``counts()``.  Then the NATS case runs retention (``--retain``
with every closed prompt past it, in the hub's batches) and is timed again.  NATS is
a real ``nats-server -js`` on a loopback port; its buckets are filled with pipelined
publishes (as fast as the server takes them, not the hub's write path).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from pathlib import Path

import nats
import trio
from _common import print_machine, ratio, short_tmp, table
from store_roundtrip import nats_server

from hive_rpc.core import lifecycle
from hive_rpc.core.prompt import Action, Ask, Prompt, new_prompt
from hive_rpc.runtime.registry import open_registry
from hive_rpc.store.base import RETENTION_BATCH, PromptStore
from hive_rpc.store.nats import PROMPTS_BUCKET, encode_name, open_nats_store
from hive_rpc.store.nats.names import dumps
from hive_rpc.store.records import shared_record
from hive_rpc.store.sqlite import SqliteStore

LONG_AGO = time.time() - 90 * 86400


def prompts(pending: int, closed: int) -> list[Prompt]:
    """``closed`` prompts answered 90 days ago, then ``pending`` asked now."""
    out = []
    for i in range(closed):
        p = new_prompt(Ask(agent_id="bench", question=f"old {i}?"), now=LONG_AGO + i * 1e-3)
        done = lifecycle.respond(p, answer="yes", by="b", action=Action.ACCEPT, now=p.created_at)
        out.append(done)
    now = time.time()
    for i in range(pending):
        out.append(new_prompt(Ask(agent_id="bench", question=f"q {i}?", timeout_s=86400), now=now))
    return out


async def fill_nats(url: str, records: list[Prompt]) -> None:
    """Write the records as the hub would (same keys and values), 1,000 in flight."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    try:
        for start in range(0, len(records), 1000):
            await asyncio.gather(
                *(
                    js.publish(f"$KV.{PROMPTS_BUCKET}.{encode_name(p.id)}", dumps(shared_record(p)))
                    for p in records[start : start + 1000]
                )
            )
    finally:
        await nc.close()


async def timed(store: PromptStore) -> tuple[float, float, int]:
    """Seconds to open a registry on ``store``, seconds for ``counts()``, and how
    many pending prompts the registry resumed."""
    t0 = time.perf_counter()
    async with open_registry(store) as registry:
        started = time.perf_counter() - t0
        resumed = registry.statistics()["pending"]
    t0 = time.perf_counter()
    await store.counts()
    return started, time.perf_counter() - t0, resumed


async def prune_all(store: PromptStore) -> int:
    """Retention as the hub runs it (hub.run_retention's loop), with every closed
    prompt past ``--retain``."""
    deleted, before = 0, time.time() - 86400
    while (n := await store.prune_closed(before)) > 0:
        deleted += n
        if n < RETENTION_BATCH:
            break
    return deleted


async def nats_case(url: str, records: list[Prompt]) -> dict[str, float]:
    async with open_nats_store(url) as store:
        await store.counts()  # the buckets exist before they are filled
    await trio.to_thread.run_sync(lambda: asyncio.run(fill_nats(url, records)))
    async with open_nats_store(url, op_timeout_s=120) as store:
        restart, status, resumed = await timed(store)
        t0 = time.perf_counter()
        pruned = await prune_all(store)
        prune_s = time.perf_counter() - t0
    async with open_nats_store(url, op_timeout_s=120) as store:
        restart2, status2, resumed2 = await timed(store)
    assert resumed == resumed2, (resumed, resumed2)
    return {
        "restart": restart,
        "status": status,
        "pruned": pruned,
        "prune": prune_s,
        "restart_after": restart2,
        "status_after": status2,
    }


async def sqlite_case(path: Path, records: list[Prompt]) -> dict[str, float]:
    store = SqliteStore(path)
    try:
        for p in records:
            await store.insert(p)
        restart, status, _ = await timed(store)
    finally:
        await store.aclose()
    return {"restart": restart, "status": status}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pending", type=int, nargs="+", default=[1000, 5000], help="pending prompts"
    )
    parser.add_argument(
        "--closed", type=int, nargs="+", default=[0, 6000], help="closed history sizes"
    )
    args = parser.parse_args(argv)
    print_machine()
    rows = []
    with short_tmp() as tmp:
        for pending, closed in itertools.product(args.pending, args.closed):
            records = prompts(pending, closed)
            sql = trio.run(sqlite_case, tmp / f"s{pending}-{closed}.db", records)
            with nats_server(tmp / f"n{pending}-{closed}") as url:
                nat = trio.run(nats_case, url, records)
            rows.append(
                [
                    f"{pending:,}",
                    f"{closed:,}",
                    f"{sql['restart']:.2f}",
                    f"{nat['restart']:.2f} ({ratio(nat['restart'], sql['restart'])})",
                    f"{sql['status'] * 1e3:.0f}",
                    f"{nat['status'] * 1e3:.0f} ({ratio(nat['status'], sql['status'])})",
                    f"{nat['pruned']:,} in {nat['prune']:.1f} s",
                    f"{nat['restart_after']:.2f} ({ratio(nat['restart_after'], sql['restart'])})",
                    f"{nat['status_after'] * 1e3:.0f}",
                ]
            )
    print(
        table(
            [
                "pending",
                "closed",
                "sqlite restart (s)",
                "nats restart (s, vs sqlite)",
                "sqlite status (ms)",
                "nats status (ms, vs sqlite)",
                "nats retention",
                "nats restart after (s, vs sqlite)",
                "nats status after (ms)",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
