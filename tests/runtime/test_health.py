"""``Registry.health``: what the socket face's ``hive/health`` task waits on.  Level,
not edge: it answers at once when the state differs from what the caller last
told its client, and otherwise waits, without polling, for a change of reason."""

from __future__ import annotations

import trio
import trio.testing

from hive_rpc.core.errors import StoreWriteFailed
from hive_rpc.runtime.registry import open_registry
from hive_rpc.store import MemoryStore


def full(reason: str) -> StoreWriteFailed:
    return StoreWriteFailed("test", reason)


async def test_health_answers_changes_of_reason_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_registry(MemoryStore()) as registry:
        assert await registry.health("store: told earlier") is None  # differs: at once
        got: list[str | None] = []

        async def tell(seen: str | None) -> None:
            got.append(await registry.health(seen))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tell, None)
            await trio.testing.wait_all_tasks_blocked()
            registry.store_trouble("expire", None)  # healthy already: no change
            await trio.testing.wait_all_tasks_blocked()
            assert got == []
            registry.store_trouble("expire", full("disk full"))
        assert got == ["store: disk full"]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tell, "store: disk full")
            await trio.testing.wait_all_tasks_blocked()
            registry.store_trouble("expire", full("disk full"))  # the same, retried
            registry.store_trouble("checkpoint", full("I/O error"))  # shown: the first
            await trio.testing.wait_all_tasks_blocked()
            assert got == ["store: disk full"]
            registry.store_trouble("expire", None)  # the checkpoint's is what is left
        assert got[-1] == "store: I/O error"

        # Gone and back while nobody waited: folded into the state found.
        registry.store_trouble("checkpoint", None)
        registry.store_trouble("checkpoint", full("I/O error"))
        with trio.move_on_after(1) as waited:
            await registry.health("store: I/O error")
        assert waited.cancelled_caught
        registry.store_trouble("checkpoint", None)
        assert await registry.health("store: I/O error") is None
