"""Where the registry's writes yield (issue 18, the write path).

An answer, a cancel, typing and a defer take the write lock without trio's schedule
point when it is free: each is one request from a face, which has already passed
schedule points reading it, so the lock's was one more pass of the run loop per
write (about 4 us of a 30 us ask + respond cycle).  They stay cancellation points,
and wait their turn, first come first served, when the lock is held.  An ask and the
deadline task's expiries keep a schedule point (Registry's docstring says why), but
before they take the lock, not holding it: concurrent askers then never queue on it
(with the local stores nothing inside a write yields), where each used to be handed
the lock by the one before, one write per pass of the run loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import trio
import trio.testing

from hive_rpc.core.prompt import Ask, Prompt
from hive_rpc.registry import ASKS_PER_SCHEDULE_POINT, Registry, Watch, open_registry
from hive_rpc.store import MemoryStore


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
async def test_a_write_on_a_free_lock_is_no_schedule_point(
    reg: Registry, name: str, autojump_clock: trio.testing.MockClock
) -> None:
    prompt = await reg.ask(Ask(agent_id="a1", question="Ship it?", timeout_s=60))
    if name == "defer":
        prompt = await reg.typing(prompt.id)
    before = schedule_points()
    await WRITES[name](reg, prompt)
    assert schedule_points() == before


async def test_an_ask_is_a_schedule_point_while_someone_subscribes(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    with reg.watch():
        before = schedule_points()
        for i in range(2 * ASKS_PER_SCHEDULE_POINT):
            await reg.ask(Ask(agent_id="a1", question=f"q{i}"))
        assert schedule_points() == before + 2 * ASKS_PER_SCHEDULE_POINT


async def test_with_no_subscriber_one_ask_in_so_many_is_a_schedule_point(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    before = schedule_points()
    for i in range(2 * ASKS_PER_SCHEDULE_POINT):
        await reg.ask(Ask(agent_id="a1", question=f"q{i}"))
    assert schedule_points() == before + 2


async def test_an_ask_after_another_tasks_is_a_schedule_point(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    """Concurrent askers keep one ask each per pass of the run loop."""
    await reg.ask(Ask(agent_id="a1", question="mine"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(reg.ask, Ask(agent_id="a2", question="theirs"))
        await trio.testing.wait_all_tasks_blocked()
    before = schedule_points()
    await reg.ask(Ask(agent_id="a1", question="mine again"))
    assert schedule_points() == before + 1


async def test_an_ask_loop_lets_the_deadline_task_expire_a_due_prompt(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    due = await reg.ask(Ask(agent_id="a1", question="due", timeout_s=1))
    autojump_clock.jump(2)  # past its deadline, with no schedule point
    for i in range(3 * ASKS_PER_SCHEDULE_POINT):  # its expiry passes a schedule point too
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
            for i in range(10 * ASKS_PER_SCHEDULE_POINT):
                await reg.ask(Ask(agent_id="a1", question=f"q{i}"))
            await trio.testing.wait_all_tasks_blocked()
            assert reg.statistics()["watchers"] == 1
            assert received == [f"q{i}" for i in range(10 * ASKS_PER_SCHEDULE_POINT)]
            nursery.cancel_scope.cancel()


async def test_a_cancelled_asker_asks_nothing(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    for _ in range(2):  # the ask that would pass a schedule point, and one that would not
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


async def test_concurrent_askers_never_wait_for_the_lock(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    waiting: list[int] = []
    done: list[str] = []

    async def asker(i: int) -> None:
        await reg.ask(Ask(agent_id="a1", question=f"q{i}"))
        await reg.ask(Ask(agent_id="a1", question=f"r{i}"))
        done.append("asked")

    async with trio.open_nursery() as nursery:
        for i in range(20):
            nursery.start_soon(asker, i)
        while len(done) < 20:
            waiting.append(reg._write_lock.statistics().tasks_waiting)
            await trio.lowlevel.checkpoint()
    assert len(reg.list_pending()) == 40
    assert max(waiting) == 0


async def test_a_writer_cancelled_while_waiting_leaves_its_turn_to_the_next(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    """The registry's own lock (``_WriteLock``) hands itself over on release: a writer
    cancelled in the queue is out of it, and the lock ends free."""
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
