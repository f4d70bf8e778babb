"""Calling an asyncio-only library from trio: one asyncio loop in one daemon thread.

Some libraries the hub needs (nats-py) run only on asyncio.  Rather than run trio
on top of asyncio (trio-asyncio, which leans on loop-policy internals Python 3.14
deprecates), the hub starts a plain asyncio event loop in a thread of its own and
crosses over in two ways:

- ``await bridge.run(fn, *args)``: ``fn(*args)`` runs as a task on the loop; the
  trio caller sleeps on a ``trio.Event`` that the task's done-callback sets through
  the trio token, so no trio worker thread is held while it waits.  The result, or
  the very exception object, comes back.  If the trio caller is cancelled, the
  asyncio task is cancelled too, and the caller waits (shielded, at most
  ``SETTLE_S``) for it to finish, so nothing runs on after its caller has gone.
- ``async with bridge.stream(agen_fn, *args) as items``: an async iterator runs on
  the loop and its items reach trio in order through a memory channel.  At most
  ``buffer`` items are in flight: the asyncio side waits on a semaphore that the
  trio side releases as it takes each item (back-pressure).  Leaving the block
  cancels the asyncio side and waits for it.

``open_asyncio_thread()`` owns the thread: on exit it stops the loop, cancels every
task still on it, and joins the thread (woken through the trio token, so no trio
worker thread is used either).  Rules for callers: objects of the asyncio library
belong to the loop thread, so touch them only inside functions given to ``run`` or
``stream``; and never block the loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Generic, TypeVar

import trio

T = TypeVar("T")

SETTLE_S = 2.0
"""How long a cancelled trio caller waits for its asyncio task to finish."""
SHUTDOWN_S = 5.0
"""How long closing the bridge waits for cancelled asyncio tasks to finish."""
DEFAULT_BUFFER = 16
"""Items a stream may hold in flight between the two sides."""


class AsyncioCancelled(RuntimeError):
    """The asyncio side cancelled a call that trio did not cancel (the bridge closed)."""


class _Call(Generic[T]):
    """One ``run``: the asyncio task, its outcome, and the trio event that reports it."""

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self.token = token
        self.done = trio.Event()
        self.task: asyncio.Task[T] | None = None
        self.on_done: Callable[[], None] | None = None
        """Run on the trio thread when the task ends, before ``done`` is set."""

    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        fn: Callable[..., Awaitable[T]],
        args: tuple[Any, ...],
    ) -> None:
        """On the loop thread.  ``fn`` is called inside the task, so even a synchronous
        failure (a plain function by mistake) comes back as the call's exception."""

        async def wrapper() -> T:
            return await fn(*args)

        self.task = loop.create_task(wrapper())
        self.task.add_done_callback(self._finished)

    def cancel(self) -> None:
        """On the loop thread; ``start`` always ran before (call_soon is FIFO)."""
        if self.task is not None:
            self.task.cancel()

    def _finished(self, _task: asyncio.Task[T]) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            self.token.run_sync_soon(self._report)

    def _report(self) -> None:  # on the trio thread: must not raise
        if self.on_done is not None:
            self.on_done()
        self.done.set()

    def outcome(self) -> T:
        assert self.task is not None
        if self.task.cancelled():
            raise AsyncioCancelled("the asyncio side cancelled the call (is the bridge closing?)")
        return self.task.result()


class AsyncioThread:
    """The handle ``open_asyncio_thread`` yields: ``run`` and ``stream`` cross to asyncio."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self.loop = loop
        self.thread = thread
        self._closed = False
        self.calls_started = 0
        self.calls_running = 0

    def statistics(self) -> dict[str, Any]:
        return {
            "alive": self.thread.is_alive(),
            "calls_started": self.calls_started,
            "calls_running": self.calls_running,
        }

    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._closed:
            raise AsyncioCancelled("the asyncio thread is closed")
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop has already closed
            raise AsyncioCancelled("the asyncio thread is closed") from None

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``fn(*args)`` on the asyncio loop and return its result to trio.

        Exceptions propagate unchanged.  Cancelling the trio caller cancels the
        asyncio task and waits briefly for it to end.
        """
        call: _Call[T] = _Call(trio.lowlevel.current_trio_token())
        self._submit(call.start, self.loop, fn, args)
        self.calls_started += 1
        self.calls_running += 1
        try:
            await call.done.wait()
        except BaseException:
            with contextlib.suppress(AsyncioCancelled):
                self._submit(call.cancel)
            with trio.move_on_after(SETTLE_S) as settle:
                settle.shield = True
                await call.done.wait()
            raise
        finally:
            self.calls_running -= 1
        return call.outcome()

    def stream(
        self,
        agen_fn: Callable[..., AsyncIterator[T]],
        *args: Any,
        buffer: int = DEFAULT_BUFFER,
    ) -> AbstractAsyncContextManager[AsyncIterator[T]]:
        """Iterate ``agen_fn(*args)`` on the asyncio loop; deliver its items to trio.

        Use as ``async with bridge.stream(gen) as items: async for item in items``.
        An exception raised by the asyncio iterator is raised by the trio iterator
        after the items that came before it.
        """
        if buffer < 1:
            raise ValueError("buffer must be at least 1")
        return self._stream(agen_fn, args, buffer)

    @asynccontextmanager
    async def _stream(
        self, agen_fn: Callable[..., AsyncIterator[T]], args: tuple[Any, ...], buffer: int
    ) -> AsyncIterator[AsyncIterator[T]]:
        token = trio.lowlevel.current_trio_token()
        send, receive = trio.open_memory_channel[T](buffer)
        room: asyncio.Semaphore | None = None
        failure: list[BaseException] = []

        def deliver(item: T) -> None:  # on the trio thread, via the token
            # Never raises: an exception here would crash the trio run.  The channel
            # has room (the semaphore sees to it) unless one side has gone.
            with contextlib.suppress(
                trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError
            ):
                send.send_nowait(item)

        async def pump() -> None:  # on the loop
            nonlocal room
            room = asyncio.Semaphore(buffer)
            iterator = agen_fn(*args)
            try:
                async for item in iterator:
                    await room.acquire()
                    token.run_sync_soon(deliver, item)
            finally:
                aclose = getattr(iterator, "aclose", None)
                if aclose is not None:
                    await aclose()

        def release() -> None:  # on the loop
            if room is not None:
                room.release()

        call: _Call[None] = _Call(token)

        def finish() -> None:  # on the trio thread, when the asyncio side has ended
            try:
                call.outcome()
            except BaseException as exc:
                failure.append(exc)
            send.close()

        call.on_done = finish
        self._submit(call.start, self.loop, pump, ())
        try:
            yield _Items(receive, failure, lambda: self._submit(release))
        finally:
            receive.close()
            if not call.done.is_set():
                with contextlib.suppress(AsyncioCancelled):
                    self._submit(call.cancel)
                with trio.move_on_after(SETTLE_S) as settle:
                    settle.shield = True
                    await call.done.wait()


class _Items(Generic[T]):
    """The trio side of a stream: items in order, then the asyncio side's error if any."""

    def __init__(
        self,
        receive: trio.MemoryReceiveChannel[T],
        failure: list[BaseException],
        taken: Callable[[], None],
    ) -> None:
        self._receive = receive
        self._failure = failure
        self._taken = taken

    def __aiter__(self) -> _Items[T]:
        return self

    async def __anext__(self) -> T:
        try:
            item = await self._receive.receive()
        except trio.EndOfChannel:
            if self._failure:
                raise self._failure[0] from None
            raise StopAsyncIteration from None
        with contextlib.suppress(AsyncioCancelled):
            self._taken()  # make room for one more on the asyncio side
        return item


def _thread_main(loop: asyncio.AbstractEventLoop, finished: Callable[[], None]) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.wait(tasks, timeout=SHUTDOWN_S))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
        finished()


@asynccontextmanager
async def open_asyncio_thread(name: str = "hive-asyncio") -> AsyncIterator[AsyncioThread]:
    """Start an asyncio loop in a daemon thread for the block; stop and join it after.

    Work still running on the loop when the block ends is cancelled.
    """
    token = trio.lowlevel.current_trio_token()
    stopped = trio.Event()

    def finished() -> None:  # the thread's last act
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(stopped.set)

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=_thread_main, args=(loop, finished), name=name, daemon=True)
    thread.start()
    bridge = AsyncioThread(loop, thread)
    try:
        yield bridge
    finally:
        bridge._closed = True
        loop.call_soon_threadsafe(loop.stop)
        with trio.CancelScope(shield=True):
            await stopped.wait()
        thread.join()
