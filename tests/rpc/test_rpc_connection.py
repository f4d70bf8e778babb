"""The connection layer every JSON-RPC user shares (rpc_connection.py), driven over
trio's in-memory stream pair with the sans-IO Endpoint as the other side: the three
error tiers, the in-flight cap, the order of a result and what it starts, requests
failing at once when the peer goes, and the inline reading the CLI uses."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from hive_rpc.core.errors import HiveError, InternalError, PromptNotFound
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import (
    INTERNAL_ERROR,
    OVERLOADED,
    Endpoint,
    ErrorResponse,
    Message,
    Notification,
    Request,
    Response,
    RpcError,
    dumps,
)
from hive_rpc.rpc.connection import RpcConnection, ThenStart


class Peer:
    """The other end, written by hand: sends frames, collects what comes back."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.endpoint = Endpoint()
        self.got: list[Message | RpcError] = []

    async def next(self) -> Message | RpcError:
        while not self.got:
            data = await self.stream.receive_some(65536)
            assert data, "the connection closed"
            for msg in self.endpoint.receive_data(data):
                assert not isinstance(msg, Exception) or isinstance(msg, RpcError), msg
                self.got.append(msg)  # type: ignore[arg-type]
        return self.got.pop(0)

    async def request(self, msg_id: int, method: str, params: dict[str, Any] | None = None) -> None:
        body = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}
        await self.stream.send_all(encode_frame(dumps(body)))


def closed(why: str) -> Exception:
    return ConnectionError(why)


async def test_each_tier_is_answered_and_the_connection_goes_on() -> None:
    async def handler(method: str, params: dict[str, Any]) -> Any:
        if method == "boom":
            raise RuntimeError("injected")
        if method == "refuse":
            raise PromptNotFound("no prompt x", id="x")
        return {"ok": method}

    ours, theirs = trio.testing.memory_stream_pair()
    conn = RpcConnection(ours, handler=handler, closed=closed)
    peer = Peer(theirs)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            await peer.request(1, "boom")
            failed = await peer.next()
            assert isinstance(failed, ErrorResponse)
            assert failed.id == 1
            assert failed.code == INTERNAL_ERROR
            assert failed.message == "internal error in boom: RuntimeError: injected"
            assert "RuntimeError: injected" in failed.data["traceback"]
            await peer.request(2, "refuse")
            refused = await peer.next()
            assert isinstance(refused, ErrorResponse)
            assert (refused.code, refused.data["kind"]) == (-32001, "not_found")
            await peer.request(3, "fine")
            assert await peer.next() == Response(3, {"ok": "fine"})
            nursery.cancel_scope.cancel()


async def test_requests_over_the_cap_are_refused_not_queued() -> None:
    release = trio.Event()

    async def handler(method: str, params: dict[str, Any]) -> Any:
        await release.wait()
        return method

    ours, theirs = trio.testing.memory_stream_pair()
    conn = RpcConnection(ours, handler=handler, closed=closed, max_in_flight=2)
    peer = Peer(theirs)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            for n in (1, 2, 3):
                await peer.request(n, f"m{n}")
            over = await peer.next()
            assert isinstance(over, ErrorResponse)
            assert (over.id, over.code) == (3, OVERLOADED)
            assert conn.statistics()["in_flight"] == 2
            release.set()
            assert {(await peer.next()).id for _ in range(2)} == {1, 2}  # type: ignore[union-attr]
            nursery.cancel_scope.cancel()


async def test_a_result_goes_out_before_the_task_it_starts() -> None:
    ours, theirs = trio.testing.memory_stream_pair()

    async def handler(method: str, params: dict[str, Any]) -> Any:
        return ThenStart({"subscribed": True}, lambda: conn.notify("after", {}))

    conn = RpcConnection(ours, handler=handler, closed=closed)
    peer = Peer(theirs)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            await peer.request(1, "subscribe")
            assert await peer.next() == Response(1, {"subscribed": True})
            assert await peer.next() == Notification("after", {})
            nursery.cancel_scope.cancel()


async def test_our_requests_fail_at_once_when_the_peer_goes() -> None:
    ours, theirs = trio.testing.memory_stream_pair()
    conn = RpcConnection(ours, closed=closed)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)

            async def hang_up_after_the_request() -> None:
                peer = Peer(theirs)
                assert isinstance(await peer.next(), Request)
                await theirs.aclose()

            nursery.start_soon(hang_up_after_the_request)
            with pytest.raises(ConnectionError, match="closed"):
                await conn.request("hive/status")
            assert conn.ended is not None
            with pytest.raises(ConnectionError):  # and every later one, without sending
                await conn.request("hive/status")


async def test_without_a_reader_task_a_request_reads_inline() -> None:
    """The CLI's way: no nursery, one call at a time; a reply's error is the HiveError
    the peer sent, notifications meanwhile are kept in order."""
    ours, theirs = trio.testing.memory_stream_pair()
    notes: list[Notification] = []
    conn = RpcConnection(ours, closed=closed, on_notification=notes.append)
    hub = Endpoint()

    async def hub_side() -> None:
        data = await theirs.receive_some(65536)
        (req,) = hub.receive_data(data)
        assert isinstance(req, Request)
        await theirs.send_all(hub.notify("hive/prompt", {"id": "p1"}))
        await theirs.send_all(hub.error(req.id, -32001, "no prompt x", {"kind": "not_found"}))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hub_side)
            with pytest.raises(HiveError) as raised:
                await conn.request("hive/poll", {"id": "x"})
    assert isinstance(raised.value, PromptNotFound)
    assert notes == [Notification("hive/prompt", {"id": "p1"})]


async def test_an_unreadable_reply_fails_the_waiting_request_instead_of_hanging() -> None:
    """A reply over the size limit is discarded unread (no id): the request waiting
    for it fails with the size error rather than waits for ever."""
    ours, theirs = trio.testing.memory_stream_pair()
    conn = RpcConnection(ours, closed=closed, max_body=64)
    hub = Endpoint()

    async def hub_side() -> None:
        (req,) = hub.receive_data(await theirs.receive_some(65536))
        assert isinstance(req, Request)
        await theirs.send_all(hub.result(req.id, "x" * 1000))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hub_side)
            with pytest.raises(HiveError, match="over the 64-byte limit"):
                await conn.request("hive/list")


def test_internal_error_names_the_method_and_keeps_the_trace() -> None:
    def fail() -> None:
        raise KeyError("k")

    try:
        fail()
    except KeyError as e:
        error = InternalError.of("hive/ask", e)
    assert error.code == -32603
    assert error.data["kind"] == "internal"
    assert error.message == "internal error in hive/ask: KeyError: 'k'"
    assert "KeyError" in error.data["traceback"]
