"""The editor socket's own limits: the connection cap and running out of descriptors.

trio.serve_listeners logs a traceback and retries every 0.1 s when accept fails
with EMFILE: at the fd limit the hub's log grew 8 KB/s.  Here the socket says so
once, waits for a connection to close, and carries on.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.errors import HiveError
from hive_rpc.faces import accept_loop
from hive_rpc.faces.editor_socket import bind_socket, serve_editor_socket
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import Endpoint
from hive_rpc.rpc import connection as rpc_connection
from hive_rpc.service import HubService


class StarvedListener(trio.abc.Listener[trio.SocketStream]):
    """A real listener whose accept fails with EMFILE while ``starved`` is set and a
    connection waits (held back, as the kernel would keep it in the backlog)."""

    def __init__(self, real: trio.SocketListener) -> None:
        self.real = real
        self.starved = False
        self.failures = 0
        self.failed = trio.Event()
        self._held: trio.SocketStream | None = None

    async def accept(self) -> trio.SocketStream:
        while True:
            if self._held is not None:
                if self.starved:
                    self.failures += 1
                    self.failed.set()
                    raise OSError(errno.EMFILE, "Too many open files")
                held, self._held = self._held, None
                return held
            stream = await self.real.accept()
            if not self.starved:
                return stream
            self._held = stream

    async def aclose(self) -> None:
        await self.real.aclose()


@asynccontextmanager
async def serving(service: HubService, listener: Any, **kw: Any) -> AsyncIterator[None]:
    """Serve ``listener`` for the block, then stop and close it."""
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve_editor_socket(
                service, listener, task_status=task_status, **kw
            )
        )
        try:
            with trio.fail_after(30):
                yield
        finally:
            nursery.cancel_scope.cancel()
    await listener.aclose()


async def test_out_of_descriptors_is_logged_once_and_accepting_resumes(
    hub: HubService,
    short_tmp: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(accept_loop, "ACCEPT_RETRY_S", 0.05)  # many retries, quickly
    path = short_tmp / "starved.sock"
    listener = StarvedListener(await bind_socket(path))
    caplog.set_level(logging.INFO, logger="hive_rpc.faces.accept_loop")
    async with serving(hub, listener):
        first = await HubClient.connect(path)
        assert (await first.call("hive/status"))["pid"]
        listener.starved = True
        second = await HubClient.connect(path)  # accepted by the kernel, refused by "EMFILE"
        await listener.failed.wait()
        listener.starved = False
        await first.aclose()  # a connection closes: accept again at once
        assert (await second.call("hive/status"))["pid"]
        await second.aclose()
    said = [r for r in caplog.records if r.name == "hive_rpc.faces.accept_loop"]
    starved = [r for r in said if "accept failed" in r.getMessage()]
    assert len(starved) == 1, [r.getMessage() for r in said]
    assert starved[0].exc_info is None
    assert "editor socket: accept failed (Too many open files)" in starved[0].getMessage()
    assert any("accepting connections again" in r.getMessage() for r in said)


async def test_a_connection_over_the_cap_may_only_prove_itself(
    hub: HubService, short_tmp: Path
) -> None:
    """Full of connections that spoke, the socket admits one more for an approver
    only (the reserve, faces/accept_loop.py): it may ask hive/status, anything else
    gets -32011 naming the limit, and once proved it is served."""
    path = short_tmp / "capped.sock"
    async with serving(hub, await bind_socket(path), max_connections=2):
        a, b = await HubClient.connect(path), await HubClient.connect(path)
        assert (await a.call("hive/status"))["pid"]
        assert (await b.call("hive/status"))["pid"]
        c = await HubClient.connect(path)
        assert (await c.call("hive/status"))["pid"]
        with pytest.raises(HiveError) as refused:
            await c.call("hive/list", {})
        assert refused.value.code == -32011
        assert refused.value.data["limit"] == "connections"
        assert refused.value.data["admit"] == "hive/proveApprover"
        assert "2 connections at once" in refused.value.message
        assert await prove_approver(c.call) is None
        assert await c.call("hive/list", {}) == []
        for client in (a, b, c):
            await client.aclose()


async def test_a_proof_and_a_request_in_one_write_are_served_in_the_reserve(
    hub: HubService, short_tmp: Path
) -> None:
    """Emacs sends hive/proveApprover and hive/subscribe back to back: in the reserve
    the request must see the proof read before it, whichever task trio runs first
    (it reverses a batch's order at random, so twenty connections try both)."""
    path = short_tmp / "pipelined.sock"
    async with serving(hub, await bind_socket(path), max_connections=1):
        first = await HubClient.connect(path)
        assert (await first.call("hive/status"))["pid"]
        assert hub.approver_token is not None
        prove = {"token": hub.approver_token}
        for _ in range(20):
            stream = await trio.open_unix_socket(os.fspath(path))
            endpoint = Endpoint()
            await stream.send_all(
                endpoint.request("hive/proveApprover", prove)[1]
                + endpoint.request("hive/list", {})[1]
            )
            replies: list[Any] = []
            while len(replies) < 2:
                replies += endpoint.receive_data(await stream.receive_some())
            assert [r.result for r in replies] == [{"approver": True}, []], replies
            await stream.aclose()
        await first.aclose()


def test_admission_closes_the_oldest_idle_connection_first() -> None:
    admission = accept_loop.Admission(cap=2, per_peer=2, reserve=1)
    first, second = admission.admit("p"), admission.admit("q")
    assert isinstance(first, accept_loop.Ticket)
    assert isinstance(second, accept_loop.Ticket)
    second.spoke()
    third = admission.admit("r")  # full: the oldest that never spoke makes room
    assert isinstance(third, accept_loop.Ticket)
    assert (first.closed_for, first.scope.cancel_called) == ("connections", True)
    assert not third.reserve
    third.spoke()
    fourth = admission.admit("s")  # none idle: the reserve, for an approver
    assert isinstance(fourth, accept_loop.Ticket)
    assert fourth.on_probation
    fifth = admission.admit("s")  # the reserve full: its unproven one makes room
    assert isinstance(fifth, accept_loop.Ticket)
    assert fourth.closed_for == "connections"
    fifth.prove()
    assert admission.admit("t") == "connections"  # nobody left to close
    assert len(admission) == 3


def test_admission_keeps_each_peer_to_its_share() -> None:
    admission = accept_loop.Admission(cap=10, per_peer=2, reserve=1)
    a1, a2 = admission.admit("a"), admission.admit("a")
    assert isinstance(a1, accept_loop.Ticket)
    assert isinstance(a2, accept_loop.Ticket)
    a3 = admission.admit("a")  # its own oldest idle one goes
    assert isinstance(a3, accept_loop.Ticket)
    assert a1.closed_for == "connections_per_peer"
    a2.spoke()
    a3.spoke()
    a4 = admission.admit("a")  # none idle: the reserve, where only an approver stays
    assert isinstance(a4, accept_loop.Ticket)
    assert (a4.reserve, a4.on_probation) == ("connections_per_peer", True)
    a4.spoke()
    a5 = admission.admit("a")  # the reserve full: its unproven one makes room
    assert isinstance(a5, accept_loop.Ticket)
    assert a4.closed_for == "connections_per_peer"
    a5.prove()
    assert admission.admit("a") == "connections_per_peer"
    assert isinstance(admission.admit("b"), accept_loop.Ticket)  # others are not held back
    admission.release(a2)  # its approver counts towards its share too
    assert admission.admit("a") == "connections_per_peer"
    admission.release(a3)
    assert isinstance(admission.admit("a"), accept_loop.Ticket)


def test_a_peer_is_its_uid_and_session() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert accept_loop.peer_key(SimpleNamespace(socket=left)) == (
            os.getuid(),
            os.getsid(0),
        )
    assert accept_loop.session_of(os.getpid()) == os.getsid(0)
    assert accept_loop.session_of(2**22 + 1) == f"pid {2**22 + 1}"


async def test_a_slow_reader_of_a_large_reply_is_not_cut_off(
    hub: HubService, hub_config: Any, client: HubClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that keeps reading gets the whole reply however long it takes; only
    one that stops for SEND_TIMEOUT_S is dropped (a 263 MB hive/list reply to a slow
    reader was cut off as "stopped reading")."""
    monkeypatch.setattr(rpc_connection, "SEND_TIMEOUT_S", 2.0)
    for _ in range(60):
        await client.call("hive/ask", {"question": "x" * 50_000})
    with trio.fail_after(120):
        stream = await trio.open_unix_socket(str(hub_config.socket))
        async with stream:
            await stream.send_all(encode_frame(b'{"jsonrpc":"2.0","id":1,"method":"hive/list"}'))
            received = bytearray()
            header, sep, body = b"", b"", b""
            while True:
                chunk = await stream.receive_some(32768)
                assert chunk, f"cut off after {len(received):,} bytes"
                received += chunk
                header, sep, body = bytes(received).partition(b"\r\n\r\n")
                if sep and len(body) >= int(header.split(b":")[1]):
                    break
                await trio.sleep(0.05)  # slow, but reading: about 650 KB/s
    assert len(body) > 3_000_000
