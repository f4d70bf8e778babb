"""Requests from the hub to a client on the editor socket, and Emacs-buffer delivery.

A fake Emacs connects over the real socket, calls ``hive/offerDelivery`` and answers
the hub's ``hive/bufferState`` / ``hive/deliver`` requests; the test drives
``EmacsBufferTarget`` over the hub's ``delivery_peers`` as the relay would.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.faces.editor_socket import Session
from hive_rpc.hub import HubConfig
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import (
    Endpoint,
    ErrorResponse,
    Notification,
    Request,
    Response,
    dumps,
)
from hive_rpc.relay.emacs import (
    NO_EMACS,
    DeliveryPeers,
    EmacsBufferTarget,
    PeerClosed,
    PeerRefused,
    PeerTimeout,
)
from hive_rpc.relay.target import DeliveryError, Target
from hive_rpc.service import HubService

Handler = Callable[[str, dict[str, Any]], Awaitable[Any]]


class Refuse(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class FakeEmacs:
    """A client on the socket that answers the hub's requests with ``handler``."""

    def __init__(self, stream: trio.SocketStream, handler: Handler) -> None:
        self.stream = stream
        self.handler = handler
        self.endpoint = Endpoint()
        self.requests: list[Request] = []
        self.responses: dict[str | int, Response | ErrorResponse] = {}
        self.arrived = trio.Event()
        self.lock = trio.Lock()

    async def send(self, data: bytes) -> None:
        async with self.lock:
            await self.stream.send_all(data)

    async def read(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the test closed the stream: Emacs went away
            if not data:
                return
            for msg in self.endpoint.receive_data(data):
                if isinstance(msg, Request):
                    self.requests.append(msg)
                    nursery.start_soon(self.answer, msg)
                elif isinstance(msg, Response | ErrorResponse) and msg.id is not None:
                    self.responses[msg.id] = msg
                    self.arrived.set()
                    self.arrived = trio.Event()
                else:
                    assert isinstance(msg, Notification), msg

    async def answer(self, req: Request) -> None:
        try:
            result = await self.handler(req.method, req.params)
        except Refuse as e:
            await self.send(self.endpoint.error(req.id, e.code, e.message))
        else:
            await self.send(self.endpoint.result(req.id, result))

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        msg_id, data = self.endpoint.request(method, params)
        await self.send(data)
        while msg_id not in self.responses:
            await self.arrived.wait()
        msg = self.responses.pop(msg_id)
        if isinstance(msg, ErrorResponse):
            raise HiveError.from_wire(msg.code, msg.message, msg.data)
        return msg.result


@asynccontextmanager
async def fake_emacs(hub_config: HubConfig, handler: Handler) -> AsyncIterator[FakeEmacs]:
    stream = await trio.open_unix_socket(os.fspath(hub_config.socket))
    emacs = FakeEmacs(stream, handler)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(emacs.read, nursery)
        try:
            yield emacs
        finally:
            nursery.cancel_scope.cancel()
            await stream.aclose()


def buffers(table: dict[str, dict[str, Any]], typed: list[str]) -> Handler:
    """An Emacs holding the buffers in ``table``; delivered text goes to ``typed``."""

    async def handle(method: str, params: dict[str, Any]) -> Any:
        name = params["buffer"]
        if method == "hive/bufferState":
            if name not in table:
                return {"exists": False, "alive": False, "mode": None, "tail": ""}
            return {"exists": True, **table[name]}
        if method == "hive/deliver":
            if table.get(name, {}).get("mode") != "comint":
                raise Refuse(
                    -32020, f"buffer {name} is not a terminal (vterm, eat, term or comint)"
                )
            typed.append(params["text"])
            return {"delivered": True}
        raise Refuse(-32601, f"{method} is not handled")

    return handle


async def test_offer_then_check_and_type(hub: HubService, hub_config: HubConfig) -> None:
    typed: list[str] = []
    table = {"x": {"alive": True, "mode": "comint", "tail": "$ ready\n"}}
    with trio.fail_after(10):
        async with fake_emacs(hub_config, buffers(table, typed)) as emacs:
            assert len(hub.delivery_peers) == 0
            assert await emacs.call("hive/offerDelivery", {}) == {"offered": True}
            assert len(hub.delivery_peers) == 1
            target: Target = EmacsBufferTarget(hub.delivery_peers, "x")
            assert (target.kind, target.address) == ("emacs-buffer", "x")
            state = await target.check()
            assert state.alive
            assert state.tail == "$ ready\n"
            assert state.reason == ""
            await target.type_text("hello\nworld")
            assert typed == ["hello\nworld"]
            methods = [(r.method, r.params) for r in emacs.requests]
            assert methods == [
                ("hive/bufferState", {"buffer": "x"}),
                ("hive/deliver", {"buffer": "x", "text": "hello\nworld"}),
            ]
            # The hub's ids are its own strings, distinct per request.
            ids = [r.id for r in emacs.requests]
            assert all(isinstance(i, str) and i.startswith("hub-") for i in ids)
            assert len(set(ids)) == len(ids)


async def test_offer_twice_is_one_peer_and_params_are_checked(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(10):
        async with fake_emacs(hub_config, buffers({}, [])) as emacs:
            await emacs.call("hive/offerDelivery")
            await emacs.call("hive/offerDelivery", {})
            assert len(hub.delivery_peers) == 1
            with pytest.raises(HiveError) as refused:
                await emacs.call("hive/offerDelivery", {"buffer": "x"})
            assert refused.value.code == -32602
            assert "unknown parameter 'buffer'" in refused.value.message


async def test_no_peer_is_not_alive_with_the_reason(hub: HubService) -> None:
    state = await EmacsBufferTarget(hub.delivery_peers, "x").check()
    assert not state.alive
    assert state.reason == NO_EMACS == "no Emacs with hive-rpc-mode is connected to the hub"
    with pytest.raises(DeliveryError) as failed:
        await EmacsBufferTarget(hub.delivery_peers, "x").type_text("hi")
    assert failed.value.message == NO_EMACS


async def test_connection_without_offer_is_not_a_peer(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(10):
        async with await HubClient.connect(hub_config.socket) as c:
            await c.call("hive/subscribe")
            assert len(hub.delivery_peers) == 0
    assert not (await EmacsBufferTarget(hub.delivery_peers, "x").check()).alive


async def test_no_emacs_has_the_buffer(hub: HubService, hub_config: HubConfig) -> None:
    with trio.fail_after(10):
        async with fake_emacs(
            hub_config, buffers({"y": {"alive": True, "mode": "vterm"}}, [])
        ) as e:
            await e.call("hive/offerDelivery")
            state = await EmacsBufferTarget(hub.delivery_peers, "x").check()
            assert not state.alive
            assert state.reason == "no connected Emacs has a buffer named x"


async def test_dead_process_and_non_terminal_buffer(hub: HubService, hub_config: HubConfig) -> None:
    table = {
        "dead": {"alive": False, "mode": "vterm", "tail": "Process exited\n"},
        "notes": {"alive": False, "mode": "org-mode", "tail": "* notes"},
    }
    with trio.fail_after(10):
        async with fake_emacs(hub_config, buffers(table, [])) as e:
            await e.call("hive/offerDelivery")
            dead = await EmacsBufferTarget(hub.delivery_peers, "dead").check()
            assert (dead.alive, dead.tail) == (False, "Process exited\n")
            assert dead.reason == "the process in Emacs buffer dead (vterm) has exited"
            notes = await EmacsBufferTarget(hub.delivery_peers, "notes").check()
            assert not notes.alive
            assert "is not a terminal" in notes.reason
            assert "org-mode" in notes.reason


async def test_second_emacs_has_the_buffer_and_is_remembered(
    hub: HubService, hub_config: HubConfig
) -> None:
    typed: list[str] = []
    with trio.fail_after(10):
        async with (
            fake_emacs(hub_config, buffers({}, [])) as first,
            fake_emacs(hub_config, buffers({"x": {"alive": True, "mode": "comint"}}, typed)) as sec,
        ):
            await first.call("hive/offerDelivery")
            await sec.call("hive/offerDelivery")
            target = EmacsBufferTarget(hub.delivery_peers, "x")
            assert (await target.check()).alive
            assert (len(first.requests), len(sec.requests)) == (1, 1)
            assert (await target.check()).alive  # the remembered peer is asked first
            assert (len(first.requests), len(sec.requests)) == (1, 2)
            await target.type_text("go")
            assert typed == ["go"]
            assert [r.method for r in first.requests] == ["hive/bufferState"]


async def test_error_response_becomes_delivery_error(
    hub: HubService, hub_config: HubConfig
) -> None:
    table = {"notes": {"alive": True, "mode": "org-mode"}}
    with trio.fail_after(10):
        async with fake_emacs(hub_config, buffers(table, [])) as e:
            await e.call("hive/offerDelivery")
            target = EmacsBufferTarget(hub.delivery_peers, "notes")
            assert (await target.check()).alive
            with pytest.raises(DeliveryError) as failed:
                await target.type_text("hi")
            assert (
                failed.value.message
                == "buffer notes is not a terminal (vterm, eat, term or comint)"
            )


async def test_disconnect_removes_the_peer_and_fails_waiters(
    hub: HubService, hub_config: HubConfig
) -> None:
    entered = trio.Event()
    never = trio.Event()

    async def stuck(method: str, params: dict[str, Any]) -> Any:
        entered.set()
        await never.wait()

    with trio.fail_after(10):
        async with fake_emacs(hub_config, stuck) as e:
            await e.call("hive/offerDelivery")
            (peer,) = list(hub.delivery_peers)
            target = EmacsBufferTarget(hub.delivery_peers, "x", check_timeout=60)
            outcome: list[Any] = []

            async def check() -> None:
                outcome.append(await target.check())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(check)
                await entered.wait()
                await e.stream.aclose()  # Emacs goes away mid-request
            (state,) = outcome
            assert not state.alive
            assert state.reason.startswith("no connected Emacs has a buffer named x")
            assert "did not answer" in state.reason
            # every task blocked: the hub has read the end of Emacs's connection
            await trio.testing.wait_all_tasks_blocked()
            assert len(hub.delivery_peers) == 0
            with pytest.raises(PeerClosed):
                await peer.request("hive/bufferState", {"buffer": "x"}, 1)
    assert (await target.check()).reason == NO_EMACS


async def test_direct_request_errors(hub: HubService, hub_config: HubConfig) -> None:
    release = trio.Event()

    async def handle(method: str, params: dict[str, Any]) -> Any:
        if method == "slow":
            await release.wait()
            return "late"
        if method == "refuse":
            raise Refuse(-32601, "refuse is not handled")
        return {"echo": params}

    with trio.fail_after(10):
        async with fake_emacs(hub_config, handle) as e:
            await e.call("hive/offerDelivery")
            (peer,) = list(hub.delivery_peers)
            assert isinstance(peer, Session)
            assert await peer.request("echo", {"a": [1, "é"]}, 5) == {"echo": {"a": [1, "é"]}}
            with pytest.raises(PeerRefused) as refused:
                await peer.request("refuse", {}, 5)
            assert (refused.value.code, refused.value.message) == (-32601, "refuse is not handled")
            with pytest.raises(PeerTimeout):
                await peer.request("slow", {}, 0.2)
            release.set()  # the late answer is dropped, and the connection carries on
            assert await peer.request("echo", {}, 5) == {"echo": {}}
            # Concurrent requests are matched by id, whatever order the answers come in.
            results: dict[int, Any] = {}

            async def one(i: int) -> None:
                results[i] = await peer.request("echo", {"i": i}, 5)

            async with trio.open_nursery() as nursery:
                for i in range(20):
                    nursery.start_soon(one, i)
            assert results == {i: {"echo": {"i": i}} for i in range(20)}


async def test_stray_and_malformed_responses(hub: HubService, hub_config: HubConfig) -> None:
    """A response nobody waits for is dropped silently; a malformed one (no
    ``jsonrpc``) to a waiting request fails that request, with no error sent back."""
    got: list[Request] = []
    answered = trio.Event()

    async def handle(method: str, params: dict[str, Any]) -> Any:
        raise AssertionError("not used")

    with trio.fail_after(10):
        async with fake_emacs(hub_config, handle) as e:
            await e.call("hive/offerDelivery")
            (peer,) = list(hub.delivery_peers)
            await e.send(encode_frame(dumps({"jsonrpc": "2.0", "id": "hub-999", "result": 1})))
            await e.send(encode_frame(dumps({"jsonrpc": "2.0", "id": 77, "result": 1})))
            e.answer = lambda req: _malformed(e, req, got, answered)  # type: ignore[method-assign]
            with pytest.raises(PeerRefused) as refused:
                await peer.request("x", {}, 5)
            assert "unreadable response" in refused.value.message
            await answered.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert e.responses == {}  # the hub answered none of those
            assert await e.call("hive/status") is not None  # and still serves


async def _malformed(e: FakeEmacs, req: Request, got: list[Request], done: trio.Event) -> None:
    got.append(req)
    await e.send(encode_frame(dumps({"id": req.id, "result": {"delivered": True}})))
    done.set()


async def test_closed_client_side_fails_waiters_at_once(
    hub: HubService, hub_config: HubConfig
) -> None:
    """A client that closes its write side cannot answer: waiters fail without
    waiting for the timeout, and it stops being a peer."""
    entered = trio.Event()

    async def stuck(method: str, params: dict[str, Any]) -> Any:
        entered.set()
        await trio.sleep_forever()

    with trio.fail_after(10):
        async with fake_emacs(hub_config, stuck) as e:
            await e.call("hive/offerDelivery")
            (peer,) = list(hub.delivery_peers)
            errors: list[Exception] = []

            async def ask() -> None:
                try:
                    await peer.request("hive/bufferState", {"buffer": "x"}, 60)
                except PeerClosed as err:
                    errors.append(err)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                await entered.wait()
                await e.stream.send_eof()
            assert len(errors) == 1
            assert len(hub.delivery_peers) == 0


def test_delivery_peers_set() -> None:
    peers = DeliveryPeers()
    a, b = object(), object()
    peers.add(a)  # type: ignore[arg-type]
    peers.add(b)  # type: ignore[arg-type]
    peers.add(a)  # type: ignore[arg-type]
    assert list(peers) == [a, b]
    assert len(peers) == 2
    assert a in peers
    snapshot = iter(peers)
    peers.remove(a)  # type: ignore[arg-type]
    peers.remove(a)  # type: ignore[arg-type]
    assert list(snapshot) == [a, b]  # iteration is over a snapshot
    assert list(peers) == [b]
    assert peers.statistics() == {"peers": 1, "offers": 2}
