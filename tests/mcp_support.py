"""MCP spoken by hand, for the tests that drive a session below the SDK's client: the
relay's stdin and stdout, or a hub connection turned into MCP lines by
``hive/openMcp``.  One copy of the handshake and of the line reading, so that the
tests which check the relay, the one shared server and the HTTP endpoint's defences
all send the same ``initialize`` and read lines the same way."""

from __future__ import annotations

import json
from typing import Any

import trio

from hive_rpc.hub import HubConfig
from hive_rpc.protocol.framing import Frame, FrameDecoder, encode_frame

HANDSHAKE_VERSION = "2025-11-25"
"""The protocol version that starts with ``initialize`` (the legacy handshake), which
every session these tests open uses."""

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def initialize_params(client: str, version: str = "0") -> dict[str, Any]:
    """``initialize``'s params for a client named ``client``."""
    return {
        "protocolVersion": HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": client, "version": version},
    }


def initialize_request(client: str, version: str = "0") -> dict[str, Any]:
    """The ``initialize`` request (id 1) a session's first line carries."""
    params = initialize_params(client, version)
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


async def open_mcp(config: HubConfig, params: dict[str, Any]) -> tuple[trio.SocketStream, Any]:
    """A hub connection whose first message is ``hive/openMcp`` (as the relay opens
    one), and the framed reply; what follows on the stream is MCP lines."""
    stream = await trio.open_unix_socket(str(config.socket))
    body = {"jsonrpc": "2.0", "id": 1, "method": "hive/openMcp", "params": params}
    await stream.send_all(encode_frame(json.dumps(body).encode()))
    decoder, frame = FrameDecoder(), None
    while frame is None:
        chunk = await stream.receive_some(1 << 16)
        assert chunk, "the hub closed the connection"
        decoder.receive_data(chunk)
        frame = decoder.next_event()
    assert isinstance(frame, Frame)
    return stream, json.loads(frame.body)


async def receive_line(
    stream: trio.abc.ReceiveStream, buf: bytearray, closed: str
) -> dict[str, Any]:
    """The next JSON line from ``stream``.  ``buf`` holds what was read past the
    line, for the next call (a chunk may carry several lines); ``closed`` is the
    failure's message when the stream ends first."""
    while (end := buf.find(b"\n")) < 0:
        chunk = await stream.receive_some(1 << 16)
        assert chunk, closed
        buf += chunk
    line = bytes(buf[: end + 1])
    del buf[: end + 1]
    msg: dict[str, Any] = json.loads(line)
    return msg
