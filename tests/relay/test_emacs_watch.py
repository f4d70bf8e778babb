"""An Emacs buffer followed while a message is held there (issue 28, section 5):
``EmacsBufferTarget.watch`` asks the Emacs that has the buffer for
``hive/watchBuffer``, the Emacs's ``hive/bufferChanged`` wakes it through the editor
socket, and ``hive/unwatchBuffer`` ends it.  Over the hub's real socket, with a
fake Emacs that answers the hub's requests (the real one: tests/emacs/
test_emacs_held_turn_follows.py)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from hive_rpc.hub import HubConfig
from hive_rpc.protocol.jsonrpc import Endpoint, ErrorResponse, Request, Response
from hive_rpc.relay.emacs import BufferChanges, DeliveryPeers, EmacsBufferTarget
from hive_rpc.relay.target import Watchable
from hive_rpc.service import HubService

BUFFER = "*claude*"
STATE = {"exists": True, "alive": True, "mode": "comint", "tail": "> ", "pid": None}


class Refused(Exception):
    """What a fake Emacs answers a request with: a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class FakeEmacs:
    """A delivery peer on the hub's socket: answers each request with ``answer``
    (raising ``Refused`` for an error) and records it."""

    def __init__(self, stream: trio.SocketStream, answer: Callable[[str], Any]) -> None:
        self.stream = stream
        self.answer = answer
        self.endpoint = Endpoint()
        self.methods: list[str] = []
        self.offered = trio.Event()
        self._arrived = trio.Event()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.stream.send_all(self.endpoint.notify(method, params))

    async def asked(self, method: str) -> None:
        """Return once the hub has sent ``method``."""
        while method not in self.methods:
            await self._arrived.wait()

    async def run(self) -> None:
        """Offer delivery, then answer until the hub or the test closes the stream."""
        try:
            await self._run()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return

    async def _run(self) -> None:
        _, data = self.endpoint.request("hive/offerDelivery", None)
        await self.stream.send_all(data)
        while data := await self.stream.receive_some(65536):
            for msg in self.endpoint.receive_data(data):
                if isinstance(msg, Response | ErrorResponse):
                    self.offered.set()
                elif isinstance(msg, Request):
                    self.methods.append(msg.method)
                    try:
                        reply = self.endpoint.result(msg.id, self.answer(msg.method))
                    except Refused as e:
                        reply = self.endpoint.error(msg.id, e.code, e.message)
                    await self.stream.send_all(reply)
                    self._arrived.set()
                    self._arrived = trio.Event()


@asynccontextmanager
async def fake_emacs(config: HubConfig, answer: Callable[[str], Any]) -> AsyncIterator[FakeEmacs]:
    stream = await trio.open_unix_socket(os.fspath(config.socket))
    emacs = FakeEmacs(stream, answer)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(emacs.run)
        await emacs.offered.wait()
        yield emacs
        nursery.cancel_scope.cancel()
    await stream.aclose()


def answering(method: str) -> Any:
    """An Emacs of this package: the buffer, and its watch."""
    if method == "hive/bufferState":
        return STATE
    if method == "hive/watchBuffer":
        return {"watching": True}
    if method == "hive/unwatchBuffer":
        return {"watching": False}
    raise Refused(-32601, f"{method} is not handled")


def older(method: str) -> Any:
    """An Emacs whose package predates hive/watchBuffer."""
    if method == "hive/bufferState":
        return STATE
    raise Refused(-32601, f"{method} is not handled")


async def test_a_buffer_change_wakes_the_watch_and_the_watch_ends_with_an_unwatch(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(10):
        async with fake_emacs(hub_config, answering) as emacs:
            target = EmacsBufferTarget(hub.delivery_peers, BUFFER)
            assert isinstance(target, Watchable)
            assert (await target.check()).alive
            async with target.watch() as changes:
                assert emacs.methods[-1] == "hive/watchBuffer"  # answered before the block
                await emacs.notify("hive/bufferChanged", {"buffer": "*another*"})
                await emacs.notify("hive/bufferChanged", {"buffer": BUFFER})
                await changes.changed()
                assert changes.noted == 1  # the other buffer's note woke nothing
            await emacs.asked("hive/unwatchBuffer")
            assert emacs.methods == ["hive/bufferState", "hive/watchBuffer", "hive/unwatchBuffer"]


async def test_an_emacs_without_the_watch_leaves_the_schedule_to_check(
    hub: HubService, hub_config: HubConfig
) -> None:
    """The watch refused (-32601): ``changed`` does not return (that Emacs tells no
    change), and no unwatch is sent."""
    async with fake_emacs(hub_config, older) as emacs:
        target = EmacsBufferTarget(hub.delivery_peers, BUFFER)
        with trio.fail_after(10):
            assert (await target.check()).alive
            async with target.watch() as changes:
                with trio.move_on_after(0.1) as waited:
                    await changes.changed()
        assert waited.cancelled_caught
        assert emacs.methods == ["hive/bufferState", "hive/watchBuffer"]


async def test_an_emacs_that_goes_away_wakes_its_watches(
    hub: HubService, hub_config: HubConfig
) -> None:
    """Its buffers went with it: the held message is checked again at once, and
    finds no Emacs."""
    with trio.fail_after(10):
        async with fake_emacs(hub_config, answering) as emacs:
            target = EmacsBufferTarget(hub.delivery_peers, BUFFER)
            assert (await target.check()).alive
            async with target.watch() as changes:
                await emacs.stream.aclose()
                await changes.changed()
                assert not (await target.check()).alive


def test_only_the_peer_that_has_the_buffer_wakes_its_watch() -> None:
    peers = DeliveryPeers()
    mine, other = object(), object()
    changes = BufferChanges(BUFFER)
    with peers.following(mine, BUFFER, changes):  # type: ignore[arg-type]
        peers.changed(other, BUFFER)  # type: ignore[arg-type]
        peers.changed(mine, "*another*")  # type: ignore[arg-type]
        assert changes.noted == 0
        peers.changed(mine, BUFFER)  # type: ignore[arg-type]
        assert changes.noted == 1
    peers.changed(mine, BUFFER)  # type: ignore[arg-type]
    assert changes.noted == 1  # followed no more
