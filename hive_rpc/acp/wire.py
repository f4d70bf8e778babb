"""ACP's wire as the proxy sees it, pure: lines in, what to pass on out.

ACP is JSON-RPC 2.0, one JSON object per line over the agent's stdin and stdout
(agentclientprotocol.com, "Transports").  The proxy passes every line on as it came,
byte for byte, except the few it must touch; so a line is parsed only to decide, and
one that does not parse is passed on unchanged (the peer reports it in its own terms)
and named on stderr.  A line longer than ``MAX_LINE_BYTES`` is passed on in pieces as
it arrives, never parsed, so no peer can make the proxy hold more than that.

The proxy never sends a request of its own to either side, so it needs no ids of its
own: it answers the agent's permission requests with the agent's ids, and a request
it leaves to the client goes there unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line the proxy parses: one message, a file's whole text at most."""

REQUEST_PERMISSION = "session/request_permission"
SESSION_NEW = "session/new"
SESSION_LOAD = "session/load"
SESSION_CANCEL = "session/cancel"
MCP_SERVER_NAME = "hive-rpc"
"""The name of the MCP server the proxy adds; one the client named so already wins."""


@dataclass
class Lines:
    """A byte stream cut into lines (each with its ``\\n``).  Past ``MAX_LINE_BYTES``
    without a newline, what came is given out as a piece marked not whole, and so is
    the rest of that line as it comes."""

    max_bytes: int = MAX_LINE_BYTES
    _buffer: bytearray = field(default_factory=bytearray)
    _in_long_line: bool = False

    def feed(self, data: bytes | bytearray) -> list[tuple[bytes, bool]]:
        """The pieces ``data`` completes: ``(bytes, whole)``, whole when the piece is
        one entire line that may be parsed."""
        self._buffer += data
        out: list[tuple[bytes, bool]] = []
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[: end + 1])
            del self._buffer[: end + 1]
            out.append((line, not self._in_long_line))
            self._in_long_line = False
        if len(self._buffer) > self.max_bytes or (self._in_long_line and self._buffer):
            out.append((bytes(self._buffer), False))
            self._buffer.clear()
            self._in_long_line = True
        return out

    def end(self) -> bytes:
        """What is left at the end of the stream: a last line without its newline."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        return rest


class Malformed(ValueError):
    """A line that is no JSON-RPC message; the message says what it is instead."""


def parse(line: bytes) -> dict[str, Any]:
    """The JSON object on ``line``, or Malformed saying why it is none."""
    try:
        message = json.loads(line)
    except (UnicodeDecodeError, ValueError) as e:
        raise Malformed(f"not JSON ({e})") from None
    except RecursionError:  # the decoder recurses: deep nesting ends it
        raise Malformed("not JSON (nested too deeply)") from None
    if not isinstance(message, dict):
        raise Malformed(f"a JSON {type(message).__name__}, not a JSON-RPC object")
    return message


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as one line (``ensure_ascii`` keeps a line one line whatever the
    text holds: U+2028 stays escaped)."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def is_request(message: Mapping[str, Any], method: str) -> bool:
    return message.get("method") == method and "id" in message


def is_notification(message: Mapping[str, Any], method: str) -> bool:
    return message.get("method") == method and "id" not in message


def is_response(message: Mapping[str, Any]) -> bool:
    return "method" not in message and "id" in message


def selected(request_id: object, option_id: str) -> bytes:
    """The response picking ``option_id`` for the permission request ``request_id``."""
    outcome = {"outcome": "selected", "optionId": option_id}
    return encode({"jsonrpc": "2.0", "id": request_id, "result": {"outcome": outcome}})


def cancelled(request_id: object) -> bytes:
    """The response ACP asks for a permission request whose turn was cancelled."""
    result = {"outcome": {"outcome": "cancelled"}}
    return encode({"jsonrpc": "2.0", "id": request_id, "result": result})


def error_reply(request_id: object, code: int, message: str) -> bytes:
    """A JSON-RPC error for a request the proxy cannot pass on or answer."""
    error = {"code": code, "message": message}
    return encode({"jsonrpc": "2.0", "id": request_id, "error": error})


def mcp_server(command: str, args: list[str]) -> dict[str, Any]:
    """ACP's stdio MCP server entry (``McpServerStdio``: name, absolute command, args,
    env as name/value pairs) for ``hive-rpc mcp``."""
    return {"name": MCP_SERVER_NAME, "command": command, "args": list(args), "env": []}


def with_mcp_server(params: Mapping[str, Any], entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """``session/new`` or ``session/load`` params with ``entry`` added to
    ``mcpServers``, or None to pass them on unchanged: the client lists a server of
    that name already (its own wins), or ``mcpServers`` is not a list (the agent
    then says what is wrong, not the proxy)."""
    servers = params.get("mcpServers", [])
    if not isinstance(servers, list):
        return None
    if any(isinstance(s, Mapping) and s.get("name") == entry["name"] for s in servers):
        return None
    return {**params, "mcpServers": [*servers, dict(entry)]}


@dataclass
class Sessions:
    """Each session's working directory, the project a ``project`` rule covers: from
    ``session/load``'s params, or from ``session/new``'s once the agent's response
    names the session."""

    cwd: dict[str, str] = field(default_factory=dict)
    _asked: dict[str, str] = field(default_factory=dict)
    """``session/new`` requests awaiting their response: id (as JSON) -> cwd."""

    def from_client(self, message: Mapping[str, Any]) -> None:
        params = message.get("params")
        if not isinstance(params, Mapping) or not isinstance(params.get("cwd"), str):
            return
        if is_request(message, SESSION_NEW):
            self._asked[json.dumps(message["id"])] = params["cwd"]
        elif is_request(message, SESSION_LOAD) and isinstance(params.get("sessionId"), str):
            self.cwd[params["sessionId"]] = params["cwd"]

    def from_agent(self, message: Mapping[str, Any]) -> None:
        if not is_response(message):
            return
        cwd = self._asked.pop(json.dumps(message["id"]), None)
        result = message.get("result")
        if cwd is not None and isinstance(result, Mapping):
            session = result.get("sessionId")
            if isinstance(session, str):
                self.cwd[session] = cwd
