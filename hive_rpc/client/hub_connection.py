"""A multiplexed connection to the hub: many calls in flight at once, one reader task.

``HubClient`` (client.py) is sequential, which suits the CLI.  The MCP server of an
agent session needs more: a blocking ``hivemind_await`` must not hold up a
``hivemind_poll`` sent meanwhile, and hub notifications must flow while calls wait.
Here one reader task routes each response to the call waiting on its id and each
notification to the listeners; when the hub goes away every waiting call fails with
``HubUnreachable`` at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from hive_rpc.client.async_client import connect_or_start, hub_closed
from hive_rpc.client.sync_client import REPLY_MAX_BYTES
from hive_rpc.core.errors import HubUnreachable
from hive_rpc.protocol.jsonrpc import Notification
from hive_rpc.rpc.connection import RpcConnection

NOTIFICATION_BUFFER = 1024


class HubConnection:
    """Use ``open_hub_connection``; ``call`` may be awaited from many tasks at once.

    The shared connection layer (rpc_connection.py) does the work; this adds the
    listeners that notifications fan out to."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self._conn = RpcConnection(
            stream, max_body=REPLY_MAX_BYTES, on_notification=self._fan_out, closed=hub_closed
        )
        self._listeners: set[trio.MemorySendChannel[Notification]] = set()

    @property
    def lost(self) -> bool:
        return self._conn.ended is not None

    async def wait_lost(self) -> None:
        """Return once the connection to the hub is gone."""
        await self._conn.wait_ended()

    def statistics(self) -> dict[str, Any]:
        return self._conn.statistics()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The hub's result; its refusal as the ``HiveError`` it raised; HubUnreachable
        when the connection is or becomes lost."""
        return await self._conn.request(method, params)

    @asynccontextmanager
    async def notifications(self) -> AsyncIterator[trio.MemoryReceiveChannel[Notification]]:
        """Notifications from the hub while the block runs (subscribe with hive/subscribe).
        A listener that falls NOTIFICATION_BUFFER behind is closed."""
        send, receive = trio.open_memory_channel[Notification](NOTIFICATION_BUFFER)
        self._listeners.add(send)
        try:
            yield receive
        finally:
            self._listeners.discard(send)
            send.close()

    async def _read(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The reader: runs until the hub goes away, then closes every listener."""
        try:
            await self._conn.run(task_status=task_status)
        finally:
            for send in self._listeners:
                send.close()
            self._listeners.clear()

    def _fan_out(self, msg: Notification) -> None:
        for send in list(self._listeners):
            try:
                send.send_nowait(msg)
            except (trio.WouldBlock, trio.BrokenResourceError):
                self._listeners.discard(send)
                send.close()


@asynccontextmanager
async def open_hub_connection(
    socket: Path, data_dir: Path, *, start: bool = True
) -> AsyncIterator[HubConnection]:
    """Connect (starting a hub unless ``start`` is false) and run the reader meanwhile."""
    client = await connect_or_start(socket, data_dir, start=start)
    conn = HubConnection(client.stream)
    async with client, trio.open_nursery() as nursery:
        await nursery.start(conn._read)
        try:
            yield conn
        finally:
            nursery.cancel_scope.cancel()


__all__ = ["HubConnection", "HubUnreachable", "open_hub_connection"]
