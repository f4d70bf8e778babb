"""A handler's failure never ends the session (issue 13's tier rule, three faces that
lacked it): an unexpected exception inside a method becomes that request's error
(-32603 naming the method and the exception; EPC: return-error), a failing
notification is logged, and the same connection answers the next request.

The exception is injected (a service or backend that raises ``RuntimeError``), since
no input of a well-behaved client makes our own code fail: a stand-in for logic,
not for a peer; the peers are the real socket, EPC and LSP codecs."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
import trio
import trio.testing

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.faces.backends import LocalBackend
from hive_rpc.faces.epc_server import serve_epc
from hive_rpc.faces.lsp_server import LspSession, build_server
from hive_rpc.protocol import epc
from hive_rpc.protocol.framing import FrameDecoder, encode_frame
from hive_rpc.service import HubService

BOOM = "boom: a bug of ours"


def failing(method: str, real: Any) -> Any:
    """``real`` (a ``call(method, params)``) that raises RuntimeError for ``method``."""

    async def call(name: str, params: dict[str, Any]) -> Any:
        if name == method:
            raise RuntimeError(BOOM)
        return await real(name, params)

    return call


async def test_the_editor_socket_survives_a_failing_request_and_notification(
    hub: HubService, client: HubClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub, "call", failing("hive/status", hub.call))
    with pytest.raises(HiveError) as caught:
        await client.call("hive/status")
    assert caught.value.code == -32603
    assert f"internal error in hive/status: RuntimeError: {BOOM}" in caught.value.message
    assert f"RuntimeError: {BOOM}" in caught.value.data["traceback"]  # where, for a report
    asked = await client.call("hive/ask", {"question": "Still there?"})
    monkeypatch.setattr(hub, "call", failing("hive/typing", hub.call))
    await client.notify("hive/typing", {"id": asked["id"]})
    # The same connection still answers.
    assert (await client.call("hive/poll", {"id": asked["id"]}))["status"] == "pending"


async def test_an_epc_connection_survives_a_failing_call(
    hub: HubService, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = LocalBackend(hub)
    monkeypatch.setattr(backend, "call", failing("hive/list", backend.call))

    async def exchange(stream: trio.SocketStream, frame: bytes) -> Any:
        await stream.send_all(frame)
        decoder = epc.Decoder()
        while not (got := decoder.receive_data(await stream.receive_some(65536))):
            pass
        (reply,) = got
        return reply

    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(serve_epc, backend, "tok"))
        with trio.fail_after(30):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            async with stream:
                assert type(await exchange(stream, epc.encode_call(1, "auth", ["tok"]))) is (
                    epc.Return
                )
                failed = await exchange(stream, epc.encode_call(2, "list", []))
                assert isinstance(failed, epc.ReturnError)
                assert failed.error["code"] == -32603
                assert (
                    failed.error["message"] == f"internal error in hive/list: RuntimeError: {BOOM}"
                )
                assert failed.error["data"]["kind"] == "internal"
                assert failed.error["data"]["traceback"].rstrip().endswith(BOOM)
                echoed = await exchange(stream, epc.encode_call(3, "echo", ["still here"]))
                assert (type(echoed), echoed.value) == (epc.Return, ["still here"])
        nursery.cancel_scope.cancel()


class FailingBackend:
    """The LSP session's link to the hub, failing ``hive/poll`` with a bug of ours."""

    def __init__(self) -> None:
        self.notified: list[str] = []

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        await trio.lowlevel.checkpoint()
        if method in ("hive/poll", "hive/typing"):
            self.notified.append(method)
            raise RuntimeError(BOOM)
        return {"method": method}


def frame(message: dict[str, Any]) -> bytes:
    return encode_frame(json.dumps({"jsonrpc": "2.0", **message}).encode())


async def test_an_lsp_window_survives_a_failing_request_and_notification() -> None:
    backend = FailingBackend()
    send, receive = trio.open_memory_channel[bytes](100)
    session = LspSession(build_server(), backend, send)  # type: ignore[arg-type]
    to_server, from_editor = trio.testing.memory_stream_one_way_pair()
    replies: list[dict[str, Any]] = []
    both = trio.Event()

    async def read_replies() -> None:
        decoder = FrameDecoder()
        async for chunk in receive:
            decoder.receive_data(chunk)
            while (event := decoder.next_event()) is not None:
                replies.append(json.loads(event.body))  # type: ignore[union-attr]
                if len(replies) == 2:
                    both.set()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_replies)
            nursery.start_soon(session.serve, from_editor)
            await to_server.send_all(frame({"id": 1, "method": "hive/poll", "params": {}}))
            await to_server.send_all(frame({"method": "hive/typing", "params": {"id": "x"}}))
            await to_server.send_all(frame({"id": 2, "method": "hive/status", "params": {}}))
            await both.wait()
            await to_server.aclose()
            nursery.cancel_scope.cancel()
    by_id = {r["id"]: r for r in replies}
    assert by_id[1]["error"]["code"] == -32603
    assert by_id[1]["error"]["message"] == f"internal error in hive/poll: RuntimeError: {BOOM}"
    assert by_id[2]["result"] == {"method": "hive/status"}  # the window goes on
    assert sorted(backend.notified) == ["hive/poll", "hive/typing"]
