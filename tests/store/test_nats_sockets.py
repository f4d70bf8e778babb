"""No socket is left open behind a NATS reconnection.  While nats-py reconnects it
connects to each server in turn on one transport object; a connection attempt that
failed after its TCP connect (a server that accepted and closed without its INFO: one
starting or shutting down) was left open when the next attempt replaced it, and the
collector later reported it ("unclosed transport", "loop is closed"), after the
asyncio loop had closed.  With pytest's warnings as errors, that failed whatever test
the collector happened to run in (a clean-clone CI run: test_limits.py, for sockets a
NATS test had left)."""

from __future__ import annotations

import gc
import warnings

import trio
from nats_support import NatsServer

from hive_rpc.store.nats import open_nats_store

ATTEMPTS = 4
"""Reconnection attempts the stand-in server takes before the store is closed."""


async def test_a_reconnection_that_fails_after_connecting_leaves_no_socket_open(
    nats_server: NatsServer,
) -> None:
    accepted = trio.Semaphore(0)

    async def accept_and_close(stream: trio.SocketStream) -> None:
        """A server that takes the connection and closes it, sending no INFO."""
        accepted.release()
        await stream.aclose()

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ResourceWarning)
        with trio.fail_after(60):
            async with open_nats_store(nats_server.url) as store:
                assert await store.pending() == []
                nats_server.kill()
                async with trio.open_nursery() as nursery:
                    listeners = await trio.open_tcp_listeners(nats_server.port, host="127.0.0.1")
                    nursery.start_soon(trio.serve_listeners, accept_and_close, listeners)
                    for _ in range(ATTEMPTS):
                        await accepted.acquire()
                    nursery.cancel_scope.cancel()
        gc.collect()
    unclosed = [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)]
    assert unclosed == []
