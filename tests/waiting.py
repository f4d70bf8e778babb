"""Waiting for something to happen, never for a while (issue 28, section 7).

A test that sleeps and then asserts fails on a loaded machine (it happened, later)
or passes for nothing (it would have happened, later).  So a test waits on the
event itself, with a deadline it names:

- ``logged``: an entry on a hub's activity stream, which wakes its followers;
- ``Collected``: notifications a test's own callback receives;
- ``until`` (``until_sync`` in a test with no trio loop): only for what gives no
  event to follow (another process's file, a tmux screen, a hub reached over a
  socket by a process of its own), polled.

That something did *not* happen is shown by waiting for a later event that proves
the system went past the point where it would have (a second request's answer),
then looking: these helpers wait for that later event too."""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar, cast

import trio

from hive_rpc.runtime.activity import ActivityLog, Entry

T = TypeVar("T")

POLL_EVERY_S = 0.05
"""How often ``until`` looks again: the cost of one look (a tmux capture, a file
read) against a wait that ends within a few of them."""


async def logged(
    activity: ActivityLog, wanted: Callable[[Entry], bool], *, within_s: float, after: int = 0
) -> Entry:
    """The first entry after id ``after`` (0: this run's first) that ``wanted``
    accepts, as soon as the hub publishes it; ``trio.TooSlowError`` past
    ``within_s``."""
    with trio.fail_after(within_s):
        async with contextlib.aclosing(activity.follow(after)) as batches:
            async for batch in batches:
                assert batch is not None, "the activity stream dropped entries unread"
                for entry in batch:
                    if wanted(entry):
                        return entry
    raise AssertionError("the activity stream ended")  # follow() never ends


class Collected(Generic[T]):
    """What a callback was given, in order, and a wait for the one a test wants."""

    def __init__(self) -> None:
        self.items: list[T] = []
        self._more = trio.Event()

    def append(self, item: T) -> None:
        self.items.append(item)
        self._more.set()
        self._more = trio.Event()

    async def at_least(self, n: int, *, within_s: float) -> list[T]:
        """The items once there are ``n`` of them (or more)."""
        with trio.fail_after(within_s):
            while len(self.items) < n:
                await self._more.wait()
        return self.items

    async def first(self, wanted: Callable[[T], bool], *, within_s: float) -> T:
        """The first item ``wanted`` accepts, already given or still to come."""
        with trio.fail_after(within_s):
            seen = 0
            while True:
                for item in self.items[seen:]:
                    if wanted(item):
                        return item
                seen = len(self.items)
                await self._more.wait()


async def until(
    probe: Callable[[], T | Awaitable[T | None] | None], what: str, *, within_s: float
) -> T:
    """``probe()``'s first true value (awaited, if a coroutine), looked for every
    ``POLL_EVERY_S``: only for something outside this process with no event to
    follow (say which at the call).  Fails naming ``what`` past ``within_s``."""
    try:
        with trio.fail_after(within_s):
            while True:
                found = probe()
                if inspect.isawaitable(found):
                    found = await found
                if found:
                    return cast(T, found)
                await trio.sleep(POLL_EVERY_S)
    except trio.TooSlowError:
        raise AssertionError(f"gave up after {within_s:g} s waiting for {what}") from None


def until_sync(probe: Callable[[], T | None], what: str, *, within_s: float) -> T:
    """``until`` for a test that runs no trio loop (it drives other processes)."""
    deadline = time.monotonic() + within_s
    while not (found := probe()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {within_s:g} s waiting for {what}")
        time.sleep(POLL_EVERY_S)
    return found
