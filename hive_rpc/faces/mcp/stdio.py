"""The MCP session of one ``hive-rpc mcp``, served inside the hub.

``hive-rpc mcp`` (one per agent session) is a thin relay (mcp_relay.py): it loads
neither the SDK nor trio, connects to the hub's socket and sends ``hive/openMcp`` with the
session's options; from the reply on, that connection carries the agent's MCP
messages, one JSON-RPC message per line both ways, as MCP's stdio transport frames
them.  This module serves them: the SDK's stdio transport over the socket stream
instead of a process's stdin and stdout, and the hub's one ``HiveMcp`` (server.py),
which also serves the Streamable HTTP endpoint, with this session's own
``AgentSession`` as the state its requests read.  So the SDK's import and the tools'
schemas are paid once, by the long-running hub, not by every agent session.

What the stdio process read from its environment the relay sends as parameters:
Claude Code's session id (the agent's name), its project dir (``approve``'s "this
project" rules) and ``MCP_TOOL_TIMEOUT`` (blocking tools return 2 s before it).

When the relay's connection ends, the session ends as a stdio server ends at its
input's end: calls still running are cancelled, so a blocking ask of a killed agent
is withdrawn.  The session never proves it is an approver: a lasting answer to
``approve`` saves its rule by a direct service call that the hub checks against the
permission prompt the human answered (``from_prompt``, approve_tool.hub_rules).
"""

from __future__ import annotations

import collections
import json
import logging
from collections.abc import Mapping
from typing import Any

import trio
from mcp.server.runner import serve_dual_era_loop
from mcp.server.stdio import stdio_server

from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.tool_groups import DEFAULT_GROUPS, parse_groups
from hive_rpc.faces.mcp.approve_tool import hub_rules
from hive_rpc.faces.mcp.groups import ToolGroups
from hive_rpc.faces.mcp.identity import Identity
from hive_rpc.faces.mcp.resources import lowlevel
from hive_rpc.faces.mcp.server import TABLES, HiveMcp
from hive_rpc.faces.mcp.session import AgentSession
from hive_rpc.protocol.framing import MAX_BODY_BYTES
from hive_rpc.protocol.jsonrpc import INVALID_REQUEST, PARSE_ERROR, PEEK_BYTES, peek_id
from hive_rpc.rpc.connection import FrameWriter
from hive_rpc.service import HubService

log = logging.getLogger(__name__)

TOOL_TIMEOUT_ENV = "MCP_TOOL_TIMEOUT"
RESENDABLE = frozenset(
    spec.name for table in TABLES for spec in table.specs if spec.hints.idempotent_hint
)
"""The tools a relay may call again on a new hub when the one it called went away
before answering (``hive/openMcp``'s reply names them): doing them twice changes nothing
more (hints.py), as the method table's ``retryable`` rows for the socket."""
MAX_LINE_BYTES = 4 * MAX_BODY_BYTES
"""The longest MCP message a session reads (the relay refuses longer lines itself,
with an error the agent sees; here one is refused too, with the same error, and
skipped, so a peer cannot grow the hub)."""
TOO_LONG = f"message over {MAX_LINE_BYTES} bytes; it was discarded"


def client_timeout_s(environ: Mapping[str, str]) -> float | None:
    """The client's limit on one tool call, when it says: Claude Code's
    ``MCP_TOOL_TIMEOUT`` (milliseconds, at least 1000; its servers inherit it).
    Measured on 2.1.328: a call still running then is cancelled and the model reads
    an error, whatever progress was sent (docs/mcp.md, "Blocking tools")."""
    try:
        ms = int(environ.get(TOOL_TIMEOUT_ENV, ""))
    except ValueError:
        return None
    return max(ms, 1000) / 1000 if ms > 0 else None


class _LineReader:
    """The connection as the async iterator of str lines the SDK's stdio transport
    expects; ``first``: bytes already read past ``hive/openMcp``.  A line over
    ``MAX_LINE_BYTES`` is not handed on: ``writer`` answers it with an error that
    carries the id read from its start (a call answered with no id waits for ever),
    and the rest of it is skipped unread."""

    def __init__(
        self, stream: trio.abc.ReceiveStream, first: bytes = b"", writer: _Writer | None = None
    ) -> None:
        self._stream = stream
        self._buf = bytearray(first)
        self._skipping = False
        self._writer = writer
        self.given: collections.deque[str] = collections.deque()
        """The lines handed to the SDK and not yet matched to what it made of them
        (``_Answering``): it makes one item of each line, in order."""

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                if self._skipping:  # the end of a line too long to read
                    del self._buf[: end + 1]
                    self._skipping = False
                    continue
                if end > MAX_LINE_BYTES:
                    await self._refuse()
                    del self._buf[: end + 1]
                    continue
                line = bytes(self._buf[: end + 1])
                del self._buf[: end + 1]
                return self._give(line)
            if len(self._buf) > MAX_LINE_BYTES:
                await self._refuse()
                self._buf.clear()
                self._skipping = True
            try:
                chunk = await self._stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                chunk = b""
            if not chunk:
                if not self._buf or self._skipping:
                    raise StopAsyncIteration
                line = bytes(self._buf)
                self._buf.clear()
                return self._give(line)
            self._buf += chunk

    async def _refuse(self) -> None:
        """Answer the line too long to read that the buffer starts with."""
        log.warning("dropped an MCP message over %d bytes", MAX_LINE_BYTES)
        msg_id = peek_id(bytes(self._buf[:PEEK_BYTES]))
        if msg_id is not None and self._writer is not None:
            error = {"code": INVALID_REQUEST, "message": TOO_LONG}
            await self._writer.write(
                json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": error}) + "\n"
            )

    def _give(self, line: bytes) -> str:
        text = line.decode("utf-8", "replace")
        self.given.append(text)
        return text


class _Answering:
    """The SDK's stream of what it read, answering each line it could not read (too
    deep for its parser: over ~200 levels, or not JSON-RPC) whose id can be read:
    the SDK only logs it, and the agent's call waited for ever.  Duck-typed
    as the SDK's read stream: iteration and ``async with`` here, the rest (``aclose``,
    ``last_context`` ...) the stream's own."""

    def __init__(self, inner: Any, reader: _LineReader, writer: _Writer) -> None:
        self._inner, self._reader, self._writer = inner, reader, writer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> _Answering:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> Any:
        item = await self._inner.__anext__()
        line = self._reader.given.popleft() if self._reader.given else ""
        if isinstance(item, Exception):
            msg_id = peek_id(line)
            if msg_id is not None:
                code, why = _unread(item)
                error = {"code": code, "message": why}
                reply = {"jsonrpc": "2.0", "id": msg_id, "error": error}
                await self._writer.write(json.dumps(reply) + "\n")
        return item


def _unread(error: Exception) -> tuple[int, str]:
    """The JSON-RPC error for a line the SDK could not read, by what it said."""
    said = str(error)
    if "recursion limit" in said:
        return PARSE_ERROR, "JSON nested too deeply"
    if "Invalid JSON" in said:
        return PARSE_ERROR, "invalid JSON"
    return INVALID_REQUEST, "not a JSON-RPC message the session can read"


class _Writer:
    """The connection as the async text file the SDK's stdio transport expects: whole
    lines, never interleaved, and a relay that stops reading is disconnected
    (rpc_connection.FrameWriter)."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self._writer = FrameWriter(stream)

    async def write(self, text: str) -> None:
        await self._writer.send(text.encode("utf-8"))

    async def flush(self) -> None:
        """Writes go straight to the socket."""


def session_hive(service: HubService, params: Mapping[str, Any]) -> AgentSession:
    """The session of one relayed agent, from ``hive/openMcp``'s checked params, on the
    hub's one server (built by the hub's first session: the caller runs this in a
    worker thread); InvalidParams for a tool group or agent name the hub does not
    know."""
    tools = params.get("tools")
    try:
        groups = parse_groups(",".join(map(str, tools))) if tools else DEFAULT_GROUPS
    except ValueError as e:
        raise InvalidParams(f"hive/openMcp: tools: {e}", param="tools") from None
    tuning = {
        name: float(params[name])
        for name in ("human_input_timeout_s", "progress_every_s")
        if params.get(name) is not None
    }
    for name, seconds in tuning.items():
        if seconds <= 0:
            raise InvalidParams(f"hive/openMcp: {name} must be positive", param=name)
    timeout = params.get("tool_timeout_ms")
    identity = Identity(
        params.get("agent"),
        claude_session=params.get("claude_session"),
        suffix=params.get("suffix"),
    )
    return HiveMcp.for_hub(service).session(
        identity,
        groups=ToolGroups(groups),
        client_timeout_s=client_timeout_s({TOOL_TIMEOUT_ENV: timeout}) if timeout else None,
        save_rule=hub_rules(service),
        project_dir=params.get("project_dir"),
        **tuning,
    )


async def serve_session(session: AgentSession, stream: trio.abc.Stream, first: bytes = b"") -> None:
    """Serve MCP on ``stream`` until the relay closes it (or the hub stops): the SDK's
    serving loop, as ``Server.run`` runs it, but with ``session`` as the state every
    request of this connection reads, in place of the server's own (session.py)."""
    hive = session.hive
    low = lowlevel(hive.server)
    async with trio.open_nursery() as nursery:
        await nursery.start(hive.run_updates)
        # Duck-typed: the transport uses only iteration, write() and flush().
        writer = _Writer(stream)
        reader = _LineReader(stream, first, writer)
        async with stdio_server(stdin=reader, stdout=writer) as (read, write):  # type: ignore[arg-type]
            answering = _Answering(read, reader, writer)
            await serve_dual_era_loop(
                low,
                answering,
                write,
                lifespan_state=session,
                init_options=low.create_initialization_options(),
            )
        nursery.cancel_scope.cancel()
