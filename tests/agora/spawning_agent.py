"""A scripted parent "agent" for the spawn tests: a program in a tmux pane that is an
MCP client (the real SDK's, over stdio), as Claude Code is, and records what the relay
types into its terminal.

Run in a pane as ``python3 spawning_agent.py RECORD CONTROL -- MCP_SERVER_ARGV...``.
It starts the MCP server (``hive-rpc mcp ...``) as its own child, as an agent does, so
the hub finds this process from the relay's peer credentials.  It puts its terminal in
raw mode with bracketed paste (as tests/relay/scripted_ling.py does) and appends one
JSON line to RECORD per submission (``{"raw": HEX}``), after a first ``{"ready":
true}`` once the MCP session is up and CONTROL listens.  CONTROL is a Unix socket on
which the test asks for tool calls: one JSON line ``{"tool": NAME, "args": {...}}``
(or ``{"list": true}``) in, one JSON line out: ``{"is_error", "text",
"structured"}`` (or ``{"tools": [...]}``).
"""

from __future__ import annotations

import json
import os
import sys
import termios
import tty
from pathlib import Path
from typing import Any

import trio
from mcp import Client, StdioServerParameters

PROMPT = "agent> "


def show(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


async def record_input(record: Path) -> None:
    """Each submission typed into the terminal (up to a CR), as one JSON line."""
    pending = b""
    while True:
        chunk = await trio.to_thread.run_sync(os.read, 0, 65536, abandon_on_cancel=True)
        if not chunk:
            return
        pending += chunk
        while b"\r" in pending:
            line, _, pending = pending.partition(b"\r")
            with record.open("a") as f:
                f.write(json.dumps({"raw": line.hex()}) + "\n")
            show("\r\n" + PROMPT)


async def serve(client: Client, stream: trio.SocketStream) -> None:
    async with stream:
        data = b""
        while not data.endswith(b"\n"):
            more = await stream.receive_some()
            if not more:
                return
            data += more
        asked = json.loads(data)
        reply: dict[str, Any]
        if asked.get("list"):
            reply = {"tools": [t.name for t in (await client.list_tools()).tools]}
        else:
            result = await client.call_tool(asked["tool"], asked["args"])
            text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            reply = {
                "is_error": bool(result.is_error),
                "text": text,
                "structured": result.structured_content,
            }
        await stream.send_all(json.dumps(reply).encode() + b"\n")


async def main(record: Path, control: Path, server: list[str]) -> None:
    params = StdioServerParameters(command=server[0], args=server[1:], env=dict(os.environ))
    async with Client(params, mode="legacy") as client, trio.open_nursery() as nursery:
        sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        await sock.bind(str(control))
        sock.listen(8)
        listener = trio.SocketListener(sock)
        nursery.start_soon(record_input, record)
        with record.open("a") as f:
            f.write(json.dumps({"ready": True}) + "\n")
        while True:
            stream = await listener.accept()
            nursery.start_soon(serve, client, stream)


if __name__ == "__main__":
    record, control, dashes, *server = sys.argv[1:]
    assert dashes == "--", sys.argv
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    show("\x1b[?2004h" + PROMPT)
    try:
        trio.run(main, Path(record), Path(control), server)
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
