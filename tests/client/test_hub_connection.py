"""The multiplexed hub connection (hub_connection.py) shares one stream among many
calls: a call cancelled while its frame is half sent must still send the whole frame,
or every later call on that connection reads as garbage to the hub.  Driven over
trio's lockstep stream, where a write completes only as the other side reads."""

from __future__ import annotations

import trio
import trio.testing

from hive_rpc.client.hub_connection import HubConnection
from hive_rpc.protocol.jsonrpc import Endpoint, Request


async def test_a_call_cancelled_mid_send_still_sends_its_whole_frame() -> None:
    ours, hubs = trio.testing.lockstep_stream_pair()
    conn = HubConnection(ours)
    hub = Endpoint()
    big = {"question": "x" * 200_000}
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn._read)
            gave_up = trio.CancelScope()

            async def doomed_call() -> None:
                with gave_up:
                    await conn.call("hive/ask", big)

            nursery.start_soon(doomed_call)
            first = await hubs.receive_some(1000)  # part of the frame is on the wire
            assert first.startswith(b"Content-Length: ")
            gave_up.cancel()  # the caller gives up mid-frame
            assert hub.receive_data(first) == []  # not a whole frame yet

            async def answer_second() -> None:
                while True:
                    for msg in hub.receive_data(await hubs.receive_some(65536)):
                        assert isinstance(msg, Request), msg  # never a framing error
                        if msg.method == "hive/status":
                            await hubs.send_all(hub.result(msg.id, {"ok": True}))
                            return

            nursery.start_soon(answer_second)
            assert await conn.call("hive/status") == {"ok": True}
            nursery.cancel_scope.cancel()
