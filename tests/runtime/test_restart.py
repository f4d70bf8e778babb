"""A registry restarted on the same store resumes every pending prompt with its
remaining time, expires the overdue at their own deadline, and keeps every answer."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from hive_rpc.core.prompt import Ask, ExpiryReason, Status
from hive_rpc.runtime.registry import open_registry
from hive_rpc.store import MemoryStore, SqliteStore

EPOCH = 1_800_000_000.0


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_restart_resumes_remaining_time(
    kind: str, short_tmp: Path, autojump_clock: trio.testing.MockClock
) -> None:
    store = MemoryStore() if kind == "memory" else SqliteStore(short_tmp / "p.db")
    async with open_registry(store, epoch=EPOCH) as first:
        waiting = await first.ask(Ask(agent_id="a", question="wait", timeout_s=60))
        overdue = await first.ask(Ask(agent_id="a", question="overdue", timeout_s=30))
        answered = await first.ask(Ask(agent_id="a", question="done"))
        typed = await first.ask(Ask(agent_id="a", question="typed", timeout_s=10))
        await first.respond(answered.id, answer="yes", by="h")
        await first.typing(typed.id)
        await trio.sleep(20)
    t_down = trio.current_time()
    await trio.sleep(15)  # the hub is down: overdue's deadline (t=30) passes meanwhile
    if kind == "sqlite":
        await store.aclose()
        store = SqliteStore(short_tmp / "p.db")
    async with open_registry(store, epoch=EPOCH) as second:
        got = await second.poll(overdue.id)
        assert got.status is Status.EXPIRED
        assert got.expired_at == pytest.approx(overdue.deadline_at)
        assert (await second.poll(answered.id)).answer == "yes"
        assert (await second.poll(typed.id)).status is Status.PENDING
        t_up = trio.current_time()
        final = await second.wait(waiting.id, timeout_s=1000)
        assert final.status is Status.EXPIRED
        # 60 s countdown: 20 s in the first life, 15 s down, 25 s in the second.
        assert trio.current_time() - t_up == pytest.approx(25)
        assert t_up - t_down == pytest.approx(15)
        typed_final = await second.wait(typed.id, timeout_s=100_000)
        assert typed_final.expiry_reason is ExpiryReason.MAX_LIFETIME
    await store.aclose()
