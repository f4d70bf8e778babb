"""Every request is answered within the store's bound, however many queue behind a
hung write (issue 31).  The store here stands in for NatsStore on a frozen node: its
writes hang until its own bound (5 s) runs out, then raise StoreUnavailable, as
NatsStore's do.  Under trio's MockClock the bound is checked exactly, on the clock the
hub runs on, not on a loaded machine's wall clock.  tests/store/test_nats_errors.py
drives the same requests against a real frozen nats-server node, for the errors'
words and for what was saved."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import NoReturn

import pytest
import trio
import trio.testing

from hive_rpc.core.errors import StoreUnavailable
from hive_rpc.core.prompt import Ask, Prompt, Status
from hive_rpc.runtime.registry import Registry, open_registry
from hive_rpc.store import MemoryStore

QUEUED = 4
"""Requests sent one after another (a second apart) while the store hangs."""


class HungStore(MemoryStore):
    """A MemoryStore whose writes, while ``hung`` is set, wait out its bound and are
    refused, as a NATS write to a frozen node is."""

    url = "nats://127.0.0.1:4222"
    timeout = 5.0

    def __init__(self) -> None:
        super().__init__()
        self.hung = False

    async def _hang(self) -> NoReturn:
        await trio.sleep(self.timeout)
        raise StoreUnavailable(
            self.url, f"no answer within {self.timeout:g} s", write=True, maybe_saved=True
        )

    async def insert(self, prompt: Prompt) -> None:
        if self.hung:
            await self._hang()
        await super().insert(prompt)

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        if self.hung:
            await self._hang()
        return await super().update(prompt, expected=expected)


async def refusals(
    requests: list[Callable[[], Awaitable[object]]],
) -> list[tuple[float, dict[str, object]]]:
    """Start each request a second after the one before; for each, how long it took
    to be refused (trio's clock) and its error's data."""
    took: list[tuple[float, dict[str, object]]] = [(0.0, {})] * len(requests)

    async def one(i: int) -> None:
        await trio.sleep(i)
        started = trio.current_time()
        with pytest.raises(StoreUnavailable) as caught:
            await requests[i]()
        took[i] = (trio.current_time() - started, caught.value.data)

    async with trio.open_nursery() as nursery:
        for i in range(len(requests)):
            nursery.start_soon(one, i)
    return took


async def test_asks_queued_behind_a_hung_write_each_take_one_bound(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Before, each ask queued behind the hung one waited for it, then a bound of its
    own: the fourth was refused after four bounds."""
    store = HungStore()
    async with open_registry(store) as registry:
        store.hung = True
        took = await refusals(
            [
                lambda i=i: registry.ask(Ask(agent_id="ci", question=f"Deploy build {i}?"))
                for i in range(QUEUED)
            ]
        )
        assert [t for t, _ in took] == [store.timeout] * QUEUED, took
        assert all(data["kind"] == "store_unavailable" for _, data in took), took
        store.hung = False
        assert registry.list_pending() == []  # nothing refused was kept


def writes(registry: Registry, prompt_id: str) -> list[Callable[[], Awaitable[object]]]:
    """What the humans send about one prompt: typing, an answer, another editor's
    answer, a withdrawal.  Each has a write to make while the prompt stays pending."""
    return [
        lambda: registry.typing(prompt_id),
        lambda: registry.respond(prompt_id, answer="yes", by="al"),
        lambda: registry.respond(prompt_id, answer="no", by="bo"),
        lambda: registry.cancel(prompt_id, by="al"),
    ]


async def test_answers_and_typing_queued_behind_a_hung_write_each_take_two_bounds_at_most(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A change waits for the write lock within one bound, then its own write has the
    store's: two at most.  Before, the lock was waited for without a bound, and each
    change waited a whole bound more than the one before it."""
    store = HungStore()
    async with open_registry(store) as registry:
        asked = await registry.ask(Ask(agent_id="ci", question="Deploy?"))
        store.hung = True
        took = await refusals(writes(registry, asked.id))
        assert len(took) == QUEUED
        assert all(t <= 2 * store.timeout for t, _ in took), took
        # Those that waited for the lock were refused, when their bound ran out there,
        # with nothing sent: the words say so.
        waited = [d for _, d in took if d["reason"] == "earlier writes still wait on it after 5 s"]
        assert waited, took
        assert not any(d["maybe_saved"] for d in waited), took
        store.hung = False
        assert (await registry.poll(asked.id)).is_pending  # nothing refused was kept
