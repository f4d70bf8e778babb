"""The trio -> asyncio bridge: results, errors, cancellation, streams, clean shutdown."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
import trio
from waiting import until

from hive_rpc.store.aio_bridge import AsyncioCancelled, AsyncioThread, open_asyncio_thread


class Boom(Exception):
    pass


@pytest.fixture
async def bridge() -> AsyncIterator[AsyncioThread]:
    async with open_asyncio_thread() as b:
        yield b


def _on_loop_thread() -> bool:
    return threading.current_thread().name == "hive-asyncio"


async def test_result_crosses_and_runs_on_the_loop_thread(bridge: AsyncioThread) -> None:
    async def add(a: int, b: int) -> tuple[int, bool]:
        await asyncio.sleep(0)
        return a + b, _on_loop_thread()

    with trio.fail_after(5):
        assert await bridge.run(add, 2, 3) == (5, True)


async def test_exception_crosses_unchanged(bridge: AsyncioThread) -> None:
    error = Boom("nope")

    async def fail() -> None:
        await asyncio.sleep(0)
        raise error

    with trio.fail_after(5), pytest.raises(Boom) as caught:
        await bridge.run(fail)
    assert caught.value is error


async def test_a_plain_function_by_mistake_fails_the_call(bridge: AsyncioThread) -> None:
    def not_async() -> int:
        return 1

    with trio.fail_after(5), pytest.raises(TypeError):
        await bridge.run(not_async)  # type: ignore[arg-type]


async def started_on_the_loop(started: threading.Event) -> None:
    """Until ``started`` is set on the loop thread (a worker thread waits on it: no
    trio event crosses from there; 10 s, as a worker thread is not cancelled)."""
    assert await trio.to_thread.run_sync(started.wait, 10), "never started"


async def cancel_once(scope: trio.CancelScope, started: threading.Event) -> None:
    await started_on_the_loop(started)
    scope.cancel()


async def test_trio_cancellation_cancels_the_asyncio_task(bridge: AsyncioThread) -> None:
    started = threading.Event()
    state: dict[str, bool] = {"cancelled": False, "finished": False}

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
            state["finished"] = True
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise

    with trio.fail_after(5):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel_once, scope, started)
                await bridge.run(slow)
        assert scope.cancelled_caught
    # run() waited for the task to settle before re-raising the cancellation.
    assert started.is_set()
    assert state == {"cancelled": True, "finished": False}
    assert bridge.calls_running == 0


async def test_many_concurrent_runs(bridge: AsyncioThread) -> None:
    async def echo(i: int) -> int:
        await asyncio.sleep(0.001 * (i % 7))
        return i

    results: dict[int, int] = {}

    async def one(i: int) -> None:
        results[i] = await bridge.run(echo, i)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for i in range(500):
                nursery.start_soon(one, i)
    assert results == {i: i for i in range(500)}
    assert bridge.statistics()["calls_started"] == 500


async def test_stream_delivers_in_order_with_back_pressure(bridge: AsyncioThread) -> None:
    produced: list[int] = []

    async def numbers(n: int) -> AsyncIterator[int]:
        for i in range(n):
            produced.append(i)
            yield i

    with trio.fail_after(5):
        async with bridge.stream(numbers, 100, buffer=4) as items:
            first = await items.__anext__()
            assert first == 0
            # The producer (on the loop thread: polled) runs ahead as far as the buffer
            # lets it: one taken, four buffered, one waiting for room.  A call on the
            # loop after that is a turn of the loop: it is still there.
            most = 1 + 4 + 1
            await until(lambda: len(produced) >= most, "the producer to fill up", within_s=5)
            assert await bridge.run(asyncio.sleep, 0, "a turn") == "a turn"
            assert len(produced) == most
            rest = [i async for i in items]
    assert [first, *rest] == list(range(100))


async def test_stream_error_arrives_after_the_items(bridge: AsyncioThread) -> None:
    async def two_then_fail() -> AsyncIterator[int]:
        yield 1
        yield 2
        raise Boom("end")

    got: list[int] = []

    async def consume() -> None:
        async with bridge.stream(two_then_fail) as items:
            async for i in items:
                got.append(i)

    with trio.fail_after(5), pytest.raises(Boom):
        await consume()
    assert got == [1, 2]


async def test_leaving_a_stream_early_stops_the_asyncio_side(bridge: AsyncioThread) -> None:
    closed = threading.Event()

    async def forever() -> AsyncIterator[int]:
        i = 0
        try:
            while True:
                yield i
                i += 1
                await asyncio.sleep(0.001)
        finally:
            closed.set()

    with trio.fail_after(5):
        async with bridge.stream(forever, buffer=2) as items:
            async for i in items:
                if i == 10:
                    break
    assert closed.is_set()


async def test_closing_the_bridge_cancels_outstanding_work() -> None:
    cancelled = threading.Event()
    errors: list[BaseException] = []

    started = threading.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def caller(b: AsyncioThread) -> None:
        try:
            await b.run(slow)
        except AsyncioCancelled as exc:
            errors.append(exc)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery, open_asyncio_thread() as b:
            nursery.start_soon(caller, b)
            await started_on_the_loop(started)
            # leaving: the bridge is closed and joined first, with the caller still waiting
    assert cancelled.is_set()
    assert len(errors) == 1
    assert not b.thread.is_alive()
    with pytest.raises(AsyncioCancelled):
        await b.run(slow)


async def test_no_thread_outlives_the_bridge() -> None:
    before = threading.active_count()

    async def ping() -> str:
        return "pong"

    with trio.fail_after(10):
        for _ in range(3):
            async with open_asyncio_thread() as b:
                assert threading.active_count() == before + 1
                assert await b.run(ping) == "pong"
                async with b.stream(_count, 3) as items:
                    assert [i async for i in items] == [0, 1, 2]
    assert threading.active_count() == before


async def _count(n: int) -> AsyncIterator[int]:
    for i in range(n):
        yield i
