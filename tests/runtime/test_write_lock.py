"""Where the registry's writes yield: every write takes one ``trio.Lock``, a schedule
point each time, so a loop of writes lets subscribers and the deadline task run; a
cancelled writer writes nothing; writers waiting on a held lock go first come first
served, and one cancelled while waiting leaves its turn to the next."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import trio
import trio.testing

from hive_rpc.core.prompt import Ask, Prompt
from hive_rpc.runtime.registry import Registry, Watch, open_registry
from hive_rpc.store import MemoryStore

LOOP = 8
"""Writes in a row in the loops below."""


@pytest.fixture
async def reg(autojump_clock: trio.testing.MockClock) -> AsyncIterator[Registry]:
    async with open_registry(MemoryStore(), max_lifetime_s=3600) as registry:
        yield registry


def schedule_points() -> int:
    """The current task's schedule points so far: the counter trio.testing's
    ``assert_checkpoints`` reads (which also counts cancellation points, and these
    writes stay cancellation points)."""
    points: int = trio.lowlevel.current_task()._schedule_points
    return points


Write = Callable[[Registry, Prompt], Awaitable[Prompt]]
WRITES: dict[str, Write] = {
    "respond": lambda reg, p: reg.respond(p.id, answer="yes", by="h"),
    "cancel": lambda reg, p: reg.cancel(p.id, by="h"),
    "typing": lambda reg, p: reg.typing(p.id),
    "defer": lambda reg, p: reg.defer(p.id),
}


@pytest.mark.parametrize("name", sorted(WRITES))
async def test_every_write_is_a_schedule_point(
    reg: Registry, name: str, autojump_clock: trio.testing.MockClock
) -> None:
    prompt = await reg.ask(Ask(agent_id="a1", question="Ship it?", timeout_s=60))
    if name == "defer":
        prompt = await reg.typing(prompt.id)
    before = schedule_points()
    await WRITES[name](reg, prompt)
    assert schedule_points() > before


async def test_every_ask_is_a_schedule_point(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    before = schedule_points()
    for i in range(LOOP):
        await reg.ask(Ask(agent_id="a1", question=f"q{i}"))
    assert schedule_points() >= before + LOOP


async def test_an_ask_loop_lets_the_deadline_task_expire_a_due_prompt(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    due = await reg.ask(Ask(agent_id="a1", question="due", timeout_s=1))
    autojump_clock.jump(2)  # past its deadline, with no schedule point
    for i in range(LOOP):
        await reg.ask(Ask(agent_id="a1", question=f"q{i}"))
    assert not (await reg.poll(due.id)).is_pending


async def test_a_reading_subscriber_keeps_up_with_an_ask_loop(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    """Each change wakes the subscriber, so the next ask lets it read: a buffer of
    two holds a loop of asks that yields nowhere else."""
    received: list[str] = []

    async def subscriber(watch: Watch) -> None:
        async for change in watch:
            received.append(change.prompt.question)

    with reg.watch(buffer=2) as watch:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(subscriber, watch)
            await trio.testing.wait_all_tasks_blocked()
            for i in range(10 * LOOP):
                await reg.ask(Ask(agent_id="a1", question=f"q{i}"))
            await trio.testing.wait_all_tasks_blocked()
            assert reg.statistics()["watchers"] == 1
            assert received == [f"q{i}" for i in range(10 * LOOP)]
            nursery.cancel_scope.cancel()


async def test_a_cancelled_asker_asks_nothing(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    for _ in range(2):
        with trio.CancelScope() as scope:
            scope.cancel()
            await reg.ask(Ask(agent_id="a1", question="Ship it?"))
        assert scope.cancelled_caught
    assert reg.list_pending() == []


@pytest.mark.parametrize("name", sorted(WRITES))
async def test_a_cancelled_caller_writes_nothing(
    reg: Registry, name: str, autojump_clock: trio.testing.MockClock
) -> None:
    prompt = await reg.ask(Ask(agent_id="a1", question="Ship it?", timeout_s=60))
    if name == "defer":
        prompt = await reg.typing(prompt.id)
    before = await reg.poll(prompt.id)
    with trio.CancelScope() as scope:
        scope.cancel()
        await WRITES[name](reg, prompt)
    assert scope.cancelled_caught
    assert await reg.poll(prompt.id) == before


async def test_writers_on_a_held_lock_go_in_the_order_they_came(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    prompts = [await reg.ask(Ask(agent_id="a1", question=f"q{i}")) for i in range(3)]
    order: list[str] = []

    async def answer(prompt: Prompt, by: str) -> None:
        await reg.respond(prompt.id, answer="yes", by=by)
        order.append(by)

    async with trio.open_nursery() as nursery:
        await reg._write_lock.acquire()  # a write in progress (a slow store)
        for i, by in enumerate(["first", "second", "third"]):
            nursery.start_soon(answer, prompts[i], by)
            await trio.testing.wait_all_tasks_blocked()
        assert order == []
        reg._write_lock.release()
    assert order == ["first", "second", "third"]
    assert [(await reg.poll(p.id)).by for p in prompts] == ["first", "second", "third"]


async def test_a_writer_cancelled_while_waiting_leaves_its_turn_to_the_next(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    """A writer cancelled in the lock's queue is out of it, and the lock ends free."""
    first, second = [await reg.ask(Ask(agent_id="a1", question=f"q{i}")) for i in range(2)]
    async with trio.open_nursery() as nursery:
        await reg._write_lock.acquire()
        gone = trio.CancelScope()

        async def cancelled_writer() -> None:
            with gone:
                await reg.respond(first.id, answer="no", by="gone")

        nursery.start_soon(cancelled_writer)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(lambda: reg.respond(second.id, answer="yes", by="next"))
        await trio.testing.wait_all_tasks_blocked()
        assert reg._write_lock.statistics().tasks_waiting == 2
        gone.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert reg._write_lock.statistics().tasks_waiting == 1
        reg._write_lock.release()
    assert (await reg.poll(first.id)).is_pending
    assert (await reg.poll(second.id)).by == "next"
    await reg.respond(first.id, answer="yes", by="free")  # the lock ended free
