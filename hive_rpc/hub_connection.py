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

from hive_rpc.client import REPLY_MAX_BYTES, HubUnreachable, connect_or_start
from hive_rpc.core.errors import HiveError
from hive_rpc.protocol.jsonrpc import (
    Endpoint,
    ErrorResponse,
    FramingError,
    Notification,
    Response,
    RpcError,
)
from hive_rpc.reply_waiter import ReplyWaiter

NOTIFICATION_BUFFER = 1024
SEND_TIMEOUT_S = 30.0
"""A request the hub does not take within this long gives the connection up."""


class HubConnection:
    """Use ``open_hub_connection``; ``call`` may be awaited from many tasks at once."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self._stream = stream
        self._endpoint = Endpoint(max_body=REPLY_MAX_BYTES)
        self._send_lock = trio.StrictFIFOLock()
        self._pending: dict[int | str, ReplyWaiter] = {}
        self._listeners: set[trio.MemorySendChannel[Notification]] = set()
        self._lost: HubUnreachable | None = None
        self._lost_event = trio.Event()

    @property
    def lost(self) -> bool:
        return self._lost is not None

    async def wait_lost(self) -> None:
        """Return once the connection to the hub is gone."""
        await self._lost_event.wait()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if self._lost is not None:
            raise self._lost
        msg_id, data = self._endpoint.request(method, params)
        slot = self._pending[msg_id] = ReplyWaiter()
        try:
            async with self._send_lock:
                await self._send_whole(data)
            await slot.done.wait()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise HubUnreachable("the hub closed the connection") from None
        finally:
            self._pending.pop(msg_id, None)
        return slot.outcome()

    async def _send_whole(self, data: bytes) -> None:
        """Write one whole frame: shielded, so that a call cancelled mid-send (a tool
        call the agent gave up on) never leaves half a frame on the connection every
        other call shares; bounded, so that a hub that stopped reading does not hold
        the caller forever (the connection is then given up: it may hold half a frame)."""
        with trio.move_on_after(SEND_TIMEOUT_S, shield=True) as sending:
            await self._stream.send_all(data)
        if sending.cancelled_caught:
            error = HubUnreachable(f"the hub did not read a request for {SEND_TIMEOUT_S:g} s")
            self._lose(error)
            with trio.move_on_after(1, shield=True):
                await self._stream.aclose()
            raise error

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

    async def _read(self) -> None:
        try:
            while data := await self._stream.receive_some(65536):
                for msg in self._endpoint.receive_data(data):
                    self._route(msg)
                    if isinstance(msg, FramingError):
                        return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._lose(HubUnreachable("the hub closed the connection"))

    def _route(self, msg: object) -> None:
        if isinstance(msg, Notification):
            for send in list(self._listeners):
                try:
                    send.send_nowait(msg)
                except (trio.WouldBlock, trio.BrokenResourceError):
                    self._listeners.discard(send)
                    send.close()
        elif isinstance(msg, Response | ErrorResponse) and msg.id in self._pending:
            slot = self._pending[msg.id]
            if isinstance(msg, Response):
                slot.settle(msg.result)
            else:
                slot.settle(error=HiveError.from_wire(msg.code, msg.message, msg.data))
        elif isinstance(msg, FramingError | RpcError):
            self._lose(HubUnreachable(f"the hub's reply could not be read: {msg}"))

    def _lose(self, error: HubUnreachable) -> None:
        if self._lost is None:
            self._lost = error
        self._lost_event.set()
        for slot in self._pending.values():
            slot.settle(error=error)
        for send in self._listeners:
            send.close()
        self._listeners.clear()


@asynccontextmanager
async def open_hub_connection(
    socket: Path, data_dir: Path, *, start: bool = True
) -> AsyncIterator[HubConnection]:
    """Connect (starting a hub unless ``start`` is false) and run the reader meanwhile."""
    client = await connect_or_start(socket, data_dir, start=start)
    conn = HubConnection(client.stream)
    async with client, trio.open_nursery() as nursery:
        nursery.start_soon(conn._read)
        try:
            yield conn
        finally:
            nursery.cancel_scope.cancel()


__all__ = ["HubConnection", "HubUnreachable", "open_hub_connection"]
