"""The hub's one registry watcher and one coordinators' news poll, for all its MCP
sessions.

What sessions are told without asking: a closed prompt, to the subscribers of its
``hive://asks/ID`` (resources.py ``tell_closed``), and a dialogue's news, to its
coordinator (coordinator_news.py).  Each session used to watch the registry and poll
the news itself, N sessions N watchers; now the hub's one server watches once and
tells each session what is its own.

Who runs the watcher: the MCP faces load when the first agent session comes (the SDK
takes most of a second to import), so the hub has no task of its own for them.  Every
face that serves takes part for as long as it serves (``take_part``: each relayed
session, the HTTP endpoint), and:

* the first one in opens the registry watch and the last one out closes it;
* one of them at a time, the host, drains the watch and polls the news; when the host
  leaves, another takes over the same watch, whose buffer keeps what comes
  meanwhile, so no change falls between two hosts, and the news goes on from the
  last one seen.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import trio

from hive_rpc.faces.mcp.coordinator_news import CoordinatorNews
from hive_rpc.runtime.registry import Watch

log = logging.getLogger(__name__)

OpenWatch = Callable[[], AbstractContextManager[Watch]]
"""``Registry.watch``: every change of the hub's prompts."""


class HubUpdates:
    """The watcher and the news poll of one hub's MCP server, and who runs them."""

    def __init__(
        self,
        open_watch: OpenWatch | None,
        tell_closed: Callable[[str], Awaitable[None]],
        news: CoordinatorNews,
    ) -> None:
        self._open_watch = open_watch
        """None: no registry here (a test's backend); only the news is polled."""
        self._tell_closed = tell_closed
        self._news = news
        self._watching: AbstractContextManager[Watch] | None = None
        self._watch: Watch | None = None
        self.participants = 0
        self._hosted = False
        self._host_left = trio.Event()

    async def take_part(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Take part until cancelled: started once the watch is open, so a prompt
        closed after that is told."""
        with self._joined():
            task_status.started()
            while True:
                if self._hosted:
                    await self._host_left.wait()
                    continue
                self._hosted = True
                try:
                    await self._host()
                finally:
                    self._hosted = False
                    self._host_left.set()
                    self._host_left = trio.Event()

    @contextmanager
    def _joined(self) -> Iterator[None]:
        """One participant for the block: the first opens the watch, the last closes it."""
        if self.participants == 0:
            self._open()
        self.participants += 1
        try:
            yield
        finally:
            self.participants -= 1
            if self.participants == 0:
                self._close()

    def _open(self) -> None:
        if self._open_watch is not None:
            self._watching = self._open_watch()
            self._watch = self._watching.__enter__()

    def _close(self) -> None:
        watching, self._watching, self._watch = self._watching, None, None
        if watching is not None:
            watching.__exit__(None, None, None)

    async def _host(self) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._news.run)
            while self._watch is not None:
                try:
                    change = await self._watch.receive()
                except trio.EndOfChannel:
                    # The registry dropped a watcher that fell behind: watch again (the
                    # subscribers of what closed meanwhile are not told).
                    log.warning("MCP updates fell behind the registry; watching again")
                    self._close()
                    self._open()
                    continue
                if not change.prompt.is_pending:
                    await self._tell_closed(change.prompt.id)
            await trio.sleep_forever()
