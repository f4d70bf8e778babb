"""Emacs delivery peers over the hub's real socket: slow or silent ones hold up no
other, a silent one is dropped, and a shell in the buffer gets nothing.

Issue 11, item 5: six connections that take ``hive/offerDelivery`` and never answer
made ``ling list --check`` over three Emacs lings take 90 s (5 s per peer, one peer
and one ling after the other).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.protocol.jsonrpc import Endpoint, ErrorResponse, Request, Response
from hive_rpc.relay.emacs import NO_EMACS, STRIKES
from hive_rpc.service import HubService

Answer = Callable[[str, dict[str, Any]], Any]


class Peer:
    """A client that offers delivery; answers the hub's requests with ``answer``, or
    never when it is None, and records every request it got."""

    def __init__(self, stream: trio.SocketStream, answer: Answer | None) -> None:
        self.stream = stream
        self.answer = answer
        self.endpoint = Endpoint()
        self.requests: list[Request] = []
        self.offered = trio.Event()
        self.responses: dict[object, Response | ErrorResponse] = {}
        self.arrived = trio.Event()

    async def call(self, method: str, params: dict[str, Any]) -> Response | ErrorResponse:
        msg_id, data = self.endpoint.request(method, params)
        await self.stream.send_all(data)
        while msg_id not in self.responses:
            await self.arrived.wait()
        return self.responses.pop(msg_id)

    async def run(self) -> None:
        _, data = self.endpoint.request("hive/offerDelivery", None)
        await self.stream.send_all(data)
        while data := await self.stream.receive_some(65536):
            for msg in self.endpoint.receive_data(data):
                if isinstance(msg, Response | ErrorResponse):
                    self.offered.set()
                    self.responses[msg.id] = msg
                    self.arrived.set()
                    self.arrived = trio.Event()
                elif isinstance(msg, Request):
                    self.requests.append(msg)
                    if self.answer is not None:
                        result = self.answer(msg.method, msg.params)
                        await self.stream.send_all(self.endpoint.result(msg.id, result))


@asynccontextmanager
async def peers(config: HubConfig, *answers: Answer | None) -> AsyncIterator[list[Peer]]:
    out: list[Peer] = []
    try:
        async with trio.open_nursery() as nursery:
            for answer in answers:
                peer = Peer(await trio.open_unix_socket(os.fspath(config.socket)), answer)
                out.append(peer)
                nursery.start_soon(peer.run)
                await peer.offered.wait()
            yield out
            nursery.cancel_scope.cancel()
    finally:
        for peer in out:
            await peer.stream.aclose()


def emacs_with(buffers: dict[str, int | None]) -> Answer:
    """An Emacs whose terminal buffers' processes have these pids."""

    def answer(method: str, params: dict[str, Any]) -> Any:
        assert method == "hive/bufferState"
        name = params["buffer"]
        if name not in buffers:
            return {"exists": False, "alive": False, "mode": None, "tail": "", "pid": None}
        return {"exists": True, "alive": True, "mode": "comint", "tail": "$ ", "pid": buffers[name]}

    return answer


async def register(hub: HubService, *names: str) -> None:
    assert hub.agora is not None
    for name in names:
        await hub.agora.register(name, "emacs-buffer", f"*{name}*", owner=True)


async def test_silent_peers_are_asked_at_once_and_dropped(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    await register(hub, "a", "b", "c")
    async with peers(hub_config, *[None] * 6) as silent:
        assert len(hub.delivery_peers) == 6
        listed = await client.call("ling/list", {"check": True})
        # Each silent peer was asked about all three lings, at once: one after the
        # other, it would have been dropped (at STRIKES timeouts) before the third.
        assert STRIKES < 3
        for peer in silent:
            asked = sorted(r.params["buffer"] for r in peer.requests)
            assert asked == ["*a*", "*b*", "*c*"]
        assert len(hub.delivery_peers) == 0  # all dropped from delivery
        for ling in listed:
            assert ling["alive"] is False
            assert "6 of 6 did not answer" in ling["reason"]
        again = await client.call("ling/list", {"check": True})
        assert {ling["reason"] for ling in again} == {NO_EMACS}
        assert all(len(peer.requests) == 3 for peer in silent)  # not asked again


async def test_a_silent_peer_does_not_hide_the_emacs_that_has_the_buffer(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    await register(hub, "a", "b", "c")
    real = emacs_with({"*a*": None, "*b*": None, "*c*": None})
    async with peers(hub_config, None, None, real, None) as (s1, s2, emacs, s3):
        listed = await client.call("ling/list", {"check": True})
        assert [(x["name"], x["alive"]) for x in listed] == [("a", True), ("b", True), ("c", True)]
        assert len(hub.delivery_peers) == 1  # the silent ones were dropped
        assert (len(s1.requests), len(s2.requests), len(s3.requests)) == (3, 3, 3)
        # The Emacs that had the buffer is asked first, alone, next time.
        again = await client.call("ling/list", {"check": True})
        assert all(x["alive"] for x in again)
        assert len(emacs.requests) == 6


async def test_a_shell_in_an_emacs_buffer_gets_nothing(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    """The buffer's process is a shell (M-x shell): the relay types nothing into it."""
    assert hub.agora is not None
    # A session of its own, as Emacs starts a buffer's process: no controlling tty.
    bash = await trio.lowlevel.open_process(
        ["bash", "--norc", "-c", "read"], stdin=subprocess.PIPE, start_new_session=True
    )
    typed: list[str] = []
    shell = emacs_with({"*sh*": bash.pid})

    def answer(method: str, params: dict[str, Any]) -> Any:
        if method == "hive/deliver":
            typed.append(params["text"])
            return {"delivered": True}
        return shell(method, params)

    try:
        async with peers(hub_config, answer):
            # Registered while bash runs there: bash is what it approves.
            await hub.agora.register("sh", "emacs-buffer", "*sh*", owner=True)
            sent = await client.call("agent/answer", {"agent": "sh", "message": "ls"})
            assert sent["delivery"]["state"] == "failed"
            reason = sent["delivery"]["reason"]
            assert "a shell, not an agent, runs in this terminal (bash)" in reason
            assert typed == []
    finally:
        bash.kill()
        await bash.wait()
        if bash.stdin is not None:
            await bash.stdin.aclose()


async def test_emacs_registers_its_own_buffer_and_nothing_else_without_consent(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    """``M-x hive-rpc-register-ling`` comes from the Emacs that has the buffer: the
    human's.  The same request for a buffer that Emacs does not have, or from a
    connection that never offered delivery, waits for the human."""
    agent = await trio.lowlevel.open_process(
        ["cat"], stdin=subprocess.PIPE, start_new_session=True
    )  # the buffer's program, as Emacs starts it: a session of its own
    emacs = emacs_with({"*agent*": agent.pid})
    async with peers(hub_config, emacs) as (peer,):
        own = await peer.call(
            "ling/register", {"name": "own", "kind": "emacs-buffer", "address": "*agent*"}
        )
        assert isinstance(own, Response)
        assert own.result["state"] == "registered"
        other = await peer.call(
            "ling/register", {"name": "other", "kind": "emacs-buffer", "address": "*shell*"}
        )
        assert isinstance(other, Response)
        assert other.result["state"] == "pending"
        from_cli = await client.call(
            "ling/register", {"name": "cli", "kind": "emacs-buffer", "address": "*agent*"}
        )
        assert from_cli["state"] == "pending"
        states = {x["name"]: x["state"] for x in await client.call("ling/list", {})}
        assert states == {"own": "registered", "other": "pending", "cli": "pending"}
        (recorded,) = [x for x in await client.call("ling/list", {}) if x["name"] == "own"]
        assert (recorded["agent"]["pid"], recorded["agent"]["comm"]) == (agent.pid, "cat")
    agent.kill()
    await agent.wait()
    if agent.stdin is not None:
        await agent.stdin.aclose()
