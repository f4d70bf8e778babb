"""``hive-rpc mcp`` as a relay (mcp_relay.py) to an MCP session served in the hub
(faces/mcp/stdio.py), driven line by line as an agent's client drives it, and the
hub's side of it, ``hive/openMcp`` on the editor socket, driven by hand.

What the stdio server did in its own process must hold of the relayed session: a
malformed line is dropped and the session goes on, a call the agent gives up
withdraws its question, and so does an agent that goes away; the relay adds a
clear refusal of an over-long line, and that a killed relay withdraws too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from mcp_support import INITIALIZED, initialize_request, open_mcp, receive_line

from hive_rpc.cli.mcp_relay import MAX_LINE_BYTES
from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService
from hive_rpc.service.askers import GONE

INITIALIZE = initialize_request("relayed")


def tool_call(msg_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params}


class Relay:
    """``hive-rpc mcp`` with its stdin and stdout as an agent's client holds them."""

    def __init__(self, proc: trio.Process) -> None:
        self.proc = proc
        self._buf = bytearray()

    async def send(self, msg: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        line = msg if isinstance(msg, bytes) else json.dumps(msg).encode() + b"\n"
        await self.proc.stdin.send_all(line)

    async def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        return await receive_line(self.proc.stdout, self._buf, "the relay closed its stdout")

    async def start_session(self) -> dict[str, Any]:
        await self.send(INITIALIZE)
        answer = await self.receive()
        await self.send(INITIALIZED)
        return answer


async def open_relay(config: HubConfig, *extra: str) -> Relay:
    argv = [sys.executable, "-m", "hive_rpc", "mcp", "--socket", str(config.socket)]
    argv += ["--data-dir", str(config.data_dir), "--no-start", *extra]
    proc = await trio.lowlevel.open_process(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(os.environ)
    )
    return Relay(proc)


async def close(relay: Relay) -> None:
    if relay.proc.returncode is None:
        relay.proc.kill()
    await relay.proc.wait()
    for stream in (relay.proc.stdin, relay.proc.stdout):
        if stream is not None:
            await stream.aclose()


async def test_a_relayed_session_answers_and_names_its_agent(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        relay = await open_relay(hub_config, "--agent", "relayed-agent")
        try:
            answer = await relay.start_session()
            assert answer["id"] == 1
            assert answer["result"]["serverInfo"]["name"] == "hive-rpc"
            await relay.send(tool_call(2, "hivemind_ask_async", question="Via the relay?"))
            asked = await relay.receive()
            assert asked["id"] == 2
            ask_id = asked["result"]["structuredContent"]["ask_id"]
            assert (await hub.registry.poll(ask_id)).agent_id == "relayed-agent"
        finally:
            await close(relay)


async def test_a_malformed_line_is_dropped_and_the_session_goes_on(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        relay = await open_relay(hub_config, "--agent", "sloppy")
        try:
            await relay.start_session()
            await relay.send(b"not json at all\n")
            await relay.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            listed = await relay.receive()
            assert listed["id"] == 2
            assert "hivemind_ask_async" in {t["name"] for t in listed["result"]["tools"]}
        finally:
            await close(relay)


async def test_an_over_long_line_is_refused_and_the_session_goes_on(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(60):
        relay = await open_relay(hub_config, "--agent", "verbose")
        try:
            await relay.start_session()
            huge = tool_call(2, "hivemind_ask_async", question="x" * MAX_LINE_BYTES)
            await relay.send(huge)
            refused = await relay.receive()
            assert refused["id"] == 2  # was null: the agent's call hung (issue 26)
            assert refused["error"]["code"] == -32600
            assert f"over {MAX_LINE_BYTES} bytes" in refused["error"]["message"]
            await relay.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
            assert (await relay.receive())["id"] == 3
            assert hub.registry.list_pending() == []
        finally:
            await close(relay)


async def test_a_value_too_deep_to_decode_is_refused_with_the_requests_id(
    hub: HubService, hub_config: HubConfig
) -> None:
    """A tool call nested 100,000 deep: the relay did not stop (RecursionError) and the
    agent gets an error it can match to its call, and the session goes on."""
    with trio.fail_after(60):
        relay = await open_relay(hub_config, "--agent", "deep")
        try:
            await relay.start_session()
            line = json.dumps(tool_call(2, "hivemind_ask_async", question="q"))
            # 50: the hub's limit (json_depth) refuses it; 300 and 990: the SDK's parser
            # in the hub could not read it, and dropped it unanswered; 100,000: the
            # relay's own parser stopped the relay (RecursionError).
            for msg_id, depth in enumerate((50, 300, 990, 100_000), start=10):
                deep = "[" * depth + "]" * depth
                sent = line.replace('"q"', deep).replace('"id": 2', f'"id": {msg_id}')
                await relay.send(sent.encode() + b"\n")
                refused = await relay.receive()
                assert refused["id"] == msg_id, refused
                assert "error" in refused or refused["result"]["isError"], refused
            await relay.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
            assert (await relay.receive())["id"] == 3
            assert hub.registry.list_pending() == []
        finally:
            await close(relay)


@pytest.mark.parametrize("how", ["agent closes stdin", "relay killed"])
async def test_an_agent_that_goes_away_withdraws_its_blocking_ask(
    hub: HubService, hub_config: HubConfig, how: str
) -> None:
    """The stdio server withdrew a blocking ask when its client went away (its input
    ended); the relayed session does too, and also when the relay itself dies (the
    hub sees the connection end)."""
    with trio.fail_after(30):
        async with await HubClient.connect(hub_config.socket) as editor:
            await editor.call("hive/subscribe", {})
            relay = await open_relay(hub_config, "--agent", "leaver")
            try:
                await relay.start_session()
                await relay.send(tool_call(2, "hivemind_ask", question="Still want this?"))
                shown = await editor.next_notification()
                assert shown.method == "hive/prompt"
                if how == "relay killed":
                    relay.proc.send_signal(signal.SIGKILL)
                else:
                    assert relay.proc.stdin is not None
                    await relay.proc.stdin.aclose()
                    assert await relay.proc.wait() == 0
                gone = await editor.next_notification()
            finally:
                await close(relay)
    assert gone.method == "hive/dismiss"
    assert (gone.params["id"], gone.params["status"]) == (shown.params["id"], "cancelled")
    if how == "relay killed":
        # The session's end (the connection) and the relay process's end (the pidfd
        # the hub watches: service/askers.py) race to withdraw it; both say so.
        assert gone.params["by"] in {"leaver", GONE}
    else:
        assert gone.params["by"] == "leaver"


async def test_open_mcp_turns_the_connection_into_mcp_lines(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        stream, reply = await open_mcp(hub_config, {"agent": "raw", "tools": ["ask"]})
        async with stream:
            assert reply["result"]["opened"] is True
            assert "hivemind_poll" in reply["result"]["resend"]  # reads may be sent again
            assert "hivemind_ask_async" not in reply["result"]["resend"]
            await stream.send_all(json.dumps(INITIALIZE).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                data += await stream.receive_some(1 << 16)
            assert json.loads(data)["result"]["serverInfo"]["name"] == "hive-rpc"


async def test_the_session_answers_a_line_too_long_to_read_with_its_id(
    hub: HubService, hub_config: HubConfig
) -> None:
    """Over the session's own 4 MiB (a client of hive/openMcp other than the relay,
    which refuses such lines itself): it was dropped with a log line, and the call
    waited for ever.  Now the error carries the id read from the line's start."""
    with trio.fail_after(60):
        stream, reply = await open_mcp(hub_config, {"agent": "raw", "tools": ["ask"]})
        async with stream:
            assert reply["result"]["opened"] is True
            await stream.send_all(json.dumps(INITIALIZE).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                data += await stream.receive_some(1 << 16)
            huge = tool_call(7, "hivemind_ask_async", question="x" * MAX_LINE_BYTES)
            # Its end only after all of it: the session holds over 4 MiB without one.
            await stream.send_all(json.dumps(huge).encode())
            await stream.send_all(b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = await stream.receive_some(1 << 16)
                assert chunk, "the session closed the connection"
                data += chunk
            refused = json.loads(data)
            assert refused["id"] == 7, refused
            assert refused["error"]["code"] == -32600, refused
            assert "over 4194304 bytes" in refused["error"]["message"], refused
            assert hub.registry.list_pending() == []


async def test_open_mcp_refuses_what_it_cannot_serve(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        stream, reply = await open_mcp(hub_config, {"tools": ["ask", "nonsense"]})
        async with stream:
            assert reply["error"]["code"] == -32602
            assert "unknown tool group 'nonsense'" in reply["error"]["message"]
            assert await stream.receive_some(1 << 16) == b""  # and closes


async def test_open_mcp_is_only_a_connections_first_message(
    hub: HubService, client: HubClient
) -> None:
    await client.call("hive/status", {})
    with pytest.raises(Exception, match="must be the first message of a connection"):
        await client.call("hive/openMcp", {})
    assert "version" in await client.call("hive/status", {})  # the connection goes on


def test_the_relay_module_is_plain_python() -> None:
    """No trio, no SDK, no face in the relay's own imports (the import test checks the
    process; this, the source)."""
    source = (Path(__file__).parents[2] / "hive_rpc" / "cli" / "mcp_relay.py").read_text()
    for heavy in ("import trio", "from mcp", "import mcp", "hive_rpc.faces"):
        assert heavy not in source


async def test_the_first_frame_is_read_again_within_max_bytes() -> None:
    """A connection's first bytes, read to tell an MCP relay from an editor, are given
    back to the editor's Session as the stream would give them (``max_bytes`` kept)."""
    from hive_rpc.faces.editor_socket import _Replayed

    left, right = trio.socket.socketpair()
    with left, right:
        replayed = _Replayed(trio.SocketStream(left), b"abcdef")
        assert await replayed.receive_some(4) == b"abcd"
        await trio.SocketStream(right).send_all(b"gh")
        assert await replayed.receive_some(4) == b"ef"
        assert await replayed.receive_some(4) == b"gh"


async def test_a_connection_that_sent_nothing_is_closed_when_the_hub_stops(
    hub_config: HubConfig,
) -> None:
    """The hub reads a connection's first frame before it knows who owns the stream (an
    editor's Session or a relayed MCP session); stopped meanwhile, it closes the
    stream itself: the peer sees the end, and no socket is left to the garbage
    collector (a ResourceWarning that made later tests fail)."""
    import gc
    import warnings

    from hive_rpc.hub import run_hub

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ResourceWarning)
        async with trio.open_nursery() as nursery:
            await nursery.start(run_hub, hub_config)
            peer = await trio.open_unix_socket(str(hub_config.socket))
            await peer.send_all(b"Content-Length: 40\r\n\r\n{")  # half a first frame
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        with trio.fail_after(10):
            assert await peer.receive_some(1 << 16) == b""
        await peer.aclose()
        gc.collect()
    leaked = [w for w in seen if issubclass(w.category, ResourceWarning)]
    assert leaked == [], [str(w.message) for w in leaked]
