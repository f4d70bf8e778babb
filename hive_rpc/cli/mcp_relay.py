"""``hive-rpc mcp``: a thin stdio relay between an agent's MCP client and an MCP session
served inside the hub, so that the process every agent session starts is quick
to start and small.

Every agent session starts one of these and waits for its answer to ``initialize``.
It used to run the MCP SDK itself, on trio: most of a second of imports and ~70 MiB per
session (docs/benchmarks.md).  Now it imports neither: it connects to the hub's socket
(starting a hub when none answers, as every client command does), sends ``hive/openMcp``
with the session's options, and from the reply on pumps lines: the agent's MCP
messages (newline-delimited JSON on stdin) to the hub, the hub's to stdout.  The hub
serves the session on its one MCP server (faces/mcp/stdio.py); it answers every line
the relay passes, including those the relay cannot read (invalid JSON, nested too
deep).

Two threads and blocking sockets (``Relay``): the main thread reads stdin and writes to
the hub; one reader thread per hub connection writes the hub's lines to stdout.  Lines
pass unchanged.  The only MCP the relay knows is in one place, ``KeptSession``: what
it must keep and do so that the agent's session outlives a restart of the hub, which
only the relay can, being the one party that lives as long as the agent's session
(see there).  What it may send again is the hub's word (``hive/openMcp``'s reply).

A line longer than ``MAX_LINE_BYTES`` is not sent: the agent gets a JSON-RPC error
saying so (the relay reads lines within that bound to bound its own memory).  Nothing
but the MCP stream is written to stdout; errors go to stderr.
"""

from __future__ import annotations

import _socket
import argparse
import contextlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

from hive_rpc.core.errors import HiveError, HubLost, HubTimeout, HubUnreachable
from hive_rpc.protocol.tool_errors import error_result

MCP_OPEN = "hive/openMcp"
SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
PROJECT_ENV = "CLAUDE_PROJECT_DIR"
TOOL_TIMEOUT_ENV = "MCP_TOOL_TIMEOUT"
"""What Claude Code passes its MCP servers in the environment (core/claude_code.py
names the first two; not imported, to keep this process's imports few)."""
MAX_LINE_BYTES = 4 << 20
"""The longest message the relay passes on (faces/mcp/stdio.py reads no longer)."""
OPEN_TIMEOUT_S = 30.0
"""How long the hub may take to answer ``hive/openMcp`` and a replayed ``initialize``."""
SEND_ATTEMPTS = 3
"""Connections one message is tried on before it fails."""
CLOSE_GRACE_S = 5.0
"""After the agent closes stdin, how long the hub may take to end the session."""
REPLAY_ID = "hive-rpc-relay-replay"
"""The id of a replayed ``initialize`` (and the prefix of replayed subscriptions'),
whose replies the agent must not see."""
HUB_LOST = HubLost.code
"""What a face answers when its hub could not be reached (core/errors.py HubLost):
not -32603, which says the hub has a bug."""
TOO_LARGE = -32600
RESUMED_META = "hive-rpc/resumed"
"""The mark of a blocking ask sent again (faces/mcp/prompt_tools.py reads it)."""
PROTOCOL_META = "io.modelcontextprotocol/protocolVersion"
"""Where a request of MCP's per-request protocol (2026-07-28, no ``initialize``) names
its version."""


def _key(msg_id: Any) -> str:
    """A request id as a dict key that tells ``1`` from ``"1"``."""
    return json.dumps(msg_id)


class KeptSession:
    """What the relay keeps of the agent's MCP session so that it outlives a restart of
    the hub, and what it answers when no hub will: all the MCP this process knows.

    Why here and not in the hub: a hub that stops takes its sessions with it, and the
    new one knows nothing of them; the agent's client does not know a hub exists (to
    it the relay is the server, and it will not say ``initialize`` twice).  So:

    * the handshake (``initialize``, ``notifications/initialized``) and the legacy
      protocol's ``resources/subscribe`` live in the session the hub lost: remembered
      here, they are sent first on every new connection (``replay``), their replies
      not passed on (``is_replay_reply``); the agent's name stays, its suffix being
      this process's (``open_options``);
    * the requests in flight when the hub went away are held only here: sent again to
      the new hub when that changes nothing (any but a tool call, and the tools the hub
      names in ``hive/openMcp``'s reply: reads and withdrawals), a blocking ask the hub
      names (``resume``) marked ``RESUMED_META`` so that the new hub waits for the
      question the lost call saved instead of asking it twice (``retry``);
    * the rest, and any request no hub could be reached for, are answered here
      (``lost_answer``), so the agent is never left waiting.

    Not thread-safe: the Relay calls it under its lock."""

    def __init__(self) -> None:
        self._resend: frozenset[str] = frozenset()
        """The tools the hub says may be called again on a new hub (``hive/openMcp``)."""
        self._resume: frozenset[str] = frozenset()
        """The blocking asks the hub says may be sent again marked ``RESUMED_META``:
        the new hub waits for the question the lost call saved (prompt_tools.py)."""
        self._initialize: dict[str, Any] | None = None
        self._initialized: bytes | None = None
        self._subscriptions: dict[str, dict[str, Any]] = {}
        """The client's ``resources/subscribe`` requests by URI, replayed with
        ``initialize`` (a legacy session's subscriptions live in its session)."""

    def opened(self, reply: object) -> None:
        """``hive/openMcp``'s reply: what the hub says may be sent again."""
        if isinstance(reply, dict) and isinstance(reply.get("resend"), list):
            self._resend = frozenset(map(str, reply["resend"]))
        if isinstance(reply, dict) and isinstance(reply.get("resume"), list):
            self._resume = frozenset(map(str, reply["resume"]))

    def sent(self, msg: dict[str, Any], line: bytes) -> None:
        """The agent's ``msg`` reached a hub: keep what a new hub must be told again."""
        method = msg.get("method")
        if method == "initialize":
            self._initialize = msg
        elif method == "notifications/initialized":
            self._initialized = line
        elif method in ("resources/subscribe", "resources/unsubscribe"):
            params = msg.get("params")
            uri = params.get("uri") if isinstance(params, dict) else None
            if isinstance(uri, str) and method == "resources/subscribe":
                self._subscriptions[uri] = msg
            elif isinstance(uri, str):
                self._subscriptions.pop(uri, None)

    def replay(self) -> tuple[bytes, list[bytes]] | None:
        """What a new connection is told first: the client's ``initialize`` (whose
        reply is waited for), then the rest; None before the client's own."""
        if self._initialize is None:
            return None
        first = _line({**self._initialize, "id": REPLAY_ID})
        rest = [self._initialized] if self._initialized is not None else []
        for n, subscribe in enumerate(self._subscriptions.values()):
            rest.append(_line({**subscribe, "id": f"{REPLAY_ID}-{n}"}))
        return first, rest

    @staticmethod
    def is_replay_reply(msg: dict[str, Any]) -> bool:
        """A reply to a replayed message: the agent never asked it."""
        msg_id = msg.get("id")
        return isinstance(msg_id, str) and msg_id.startswith(REPLAY_ID)

    def retry(self, request: dict[str, Any], line: bytes) -> bytes | None:
        """The line to send a new hub for a request the lost one never answered, or
        None when it must not be sent again (``lost_answer`` then)."""
        call = _tool_call(request)
        if call is not None and call.get("name") in self._resume:
            return _resumed(request)
        if call is None:
            return None if request.get("method") == "initialize" else line
        return line if call.get("name") in self._resend else None

    @staticmethod
    def lost_answer(request: dict[str, Any], text: str) -> dict[str, Any]:
        """The answer to a request no hub will answer: a tool error for a tool call, as
        a tool whose hub is lost says it (``approve``: its deny, since it fails
        closed), else the JSON-RPC error of a lost hub."""
        msg_id = request["id"]
        call = _tool_call(request)
        if call is None:
            error = {"code": HUB_LOST, "message": text, "data": {"kind": "hub_unreachable"}}
            return {"jsonrpc": "2.0", "id": msg_id, "error": error}
        result: dict[str, Any]
        if call.get("name") == "approve":
            result = {"content": [{"type": "text", "text": _deny(call, text)}]}
        else:
            data = {"kind": "hub_unreachable", "tool": str(call.get("name"))}
            result = error_result(HUB_LOST, text, data)
        meta = call.get("_meta")
        if isinstance(meta, dict) and PROTOCOL_META in meta:
            result["resultType"] = "complete"  # the per-request protocol (2026-07-28) wants it
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}


class Relay:
    """One agent session's relay; ``run`` until the agent closes stdin."""

    def __init__(
        self,
        socket: Path,
        data_dir: Path,
        options: dict[str, Any],
        *,
        start: bool = True,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
    ) -> None:
        self._socket, self._data_dir, self._start = socket, data_dir, start
        self._options = options
        self._stdin = stdin or sys.stdin.buffer
        self._stdout = stdout or sys.stdout.buffer
        self._lock = threading.Lock()
        """Guards the connection, its generation and the requests in flight."""
        self._out_lock = threading.Lock()
        self._conn: _socket.socket | None = None
        self._generation = 0
        self._in_flight: dict[str, tuple[dict[str, Any], bytes, int | None]] = {}
        """Requests sent to the hub and not answered: key -> (the request, its line,
        the generation of the connection that took it; None while being sent)."""
        self._kept = KeptSession()
        """What a new hub must be told again; guarded by the lock too."""
        self._replayed = threading.Event()
        self._closing = False
        self._readers: list[threading.Thread] = []

    # --- the agent's side ------------------------------------------------------------

    def run(self) -> None:
        """Connect (failing early, as the stdio server did, when no hub can be had),
        then relay until stdin ends."""
        self._connection(replay=False)
        while True:
            line = self._stdin.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                self._skip_line()
                # The id from the line's start, so the agent's call gets its answer
                # (with a null id it waited for ever).
                from hive_rpc.protocol.jsonrpc import peek_id  # rare: loaded then

                self._write_error(
                    peek_id(line), TOO_LARGE,
                    f"message over {MAX_LINE_BYTES} bytes; it was discarded",
                )  # fmt: skip
                continue
            try:
                msg = _parse(line)
            except RecursionError:  # passed on unread: the hub's session answers it
                msg = None
            self._forward(line, msg or {})
        self._close()

    def _skip_line(self) -> None:
        while (rest := self._stdin.readline(1 << 16)) and not rest.endswith(b"\n"):
            pass

    def _forward(self, line: bytes, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        request = isinstance(method, str) and "id" in msg
        if method == "notifications/cancelled":
            params = msg.get("params")
            if isinstance(params, dict):
                with self._lock:
                    self._in_flight.pop(_key(params.get("requestId")), None)
        if request:  # before it is sent: the reply may come before the send returns
            with self._lock:
                self._in_flight[_key(msg["id"])] = (msg, line, None)
        sent = self._send(line, replay=method != "initialize")
        if request:
            self._track(msg, line, sent)
        if method != "initialize" or isinstance(sent, tuple):
            with self._lock:
                self._kept.sent(msg, line)

    def _send(self, line: bytes, *, replay: bool) -> tuple[_socket.socket, int] | Exception | None:
        """Send ``line`` to the hub, connecting again (once more if a send fails: the
        hub did not read a line it did not get whole, so a new one may have it).  The
        connection it went to, or why none took it."""
        for _attempt in range(SEND_ATTEMPTS):
            try:
                conn, generation = self._connection(replay=replay)
            except (HubUnreachable, HiveError, OSError) as e:
                # No hub now (--no-start, or it would not start): this message fails,
                # the session goes on and the next message tries again.
                print(f"hive-rpc mcp: {e}", file=sys.stderr)
                return e
            try:
                conn.sendall(line)
            except OSError:
                with self._lock:
                    if self._conn is conn:
                        self._conn = None
                continue
            return conn, generation
        return None

    def _track(
        self,
        request: dict[str, Any],
        line: bytes,
        sent: tuple[_socket.socket, int] | Exception | None,
    ) -> None:
        """A request is sent: it waits for the hub's reply on that connection, and is
        answered here when no hub took it, or when the one that did is already gone
        (the reader answers only the requests sent on its connection)."""
        key = _key(request["id"])
        with self._lock:
            if key not in self._in_flight:
                return  # answered already
            if isinstance(sent, tuple) and self._conn is sent[0]:
                self._in_flight[key] = (request, line, sent[1])
                return
            del self._in_flight[key]
        if isinstance(sent, Exception):
            # HubStopped, looked up among the modules loaded: only the slow path,
            # which starts hubs, loads it (and so raises it).
            hub_start = sys.modules.get("hive_rpc.client.hub_start")
            stopped = hub_start is not None and isinstance(sent, hub_start.HubStopped)
            self._answer_lost(request, f"no hub could be reached ({sent})", stopped=stopped)
        else:
            self._answer_lost(request, "the hub went away during this call")

    def _close(self) -> None:
        """stdin ended: tell the hub (end of the session, its calls cancelled) and
        wait a little for it to close its side."""
        self._closing = True
        with self._lock:
            conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.shutdown(_socket.SHUT_WR)
        for reader in self._readers:
            reader.join(CLOSE_GRACE_S)

    # --- the hub's side --------------------------------------------------------------

    def _connection(self, *, replay: bool) -> tuple[_socket.socket, int]:
        """The hub connection, opened now if there is none (and the client's
        ``initialize`` replayed on it, when ``replay``)."""
        with self._lock:
            if self._conn is not None:
                return self._conn, self._generation
            conn, rest = self._open()
            self._generation += 1
            generation = self._generation
            self._conn = conn
            reader = threading.Thread(
                target=self._read, args=(conn, generation, rest), name="hub-reader", daemon=True
            )
            self._readers = [r for r in self._readers if r.is_alive()] + [reader]
            self._replayed.clear()
            reader.start()
            if replay:
                self._replay(conn)
            return conn, generation

    def _open(self) -> tuple[_socket.socket, bytes]:
        """A connection turned into an MCP session (``hive/openMcp``), and any bytes
        read past the reply.  The common case, a hub of this user answering, is
        spoken here with the standard library's C socket (``_session``); anything
        else (no hub: start one or say why not; another user's process; the hub's
        refusal, a full hub's approver admission) takes the blocking client's path,
        which this process loads only then."""
        try:
            found = _session(self._socket, self._options)
        except HubTimeout:
            raise
        except OSError:  # lost while opening: the client tries (and says why) again
            found = None
        if found is not None:
            reply, sock, rest = found
            self._kept.opened(reply)
            return sock, rest
        return self._open_by_client(), b""

    def _open_by_client(self) -> _socket.socket:
        from hive_rpc.client.sync_client import connect_or_start

        client = connect_or_start(
            self._socket, self._data_dir, start=self._start, timeout_s=OPEN_TIMEOUT_S
        )
        try:
            opened = client.call(MCP_OPEN, self._options)
        except HiveError as e:
            client.close()
            if e.kind == "method_not_found":
                raise HubUnreachable(
                    f"the hub on {self._socket} is older than this hive-rpc mcp ({e.message}); "
                    "restart it"
                ) from None
            raise
        except BaseException:
            client.close()
            raise
        self._kept.opened(opened)
        # From the reply on, the connection carries MCP lines (nothing came after it:
        # the hub speaks only when spoken to).
        return client.detach()

    def _replay(self, conn: _socket.socket) -> None:
        """Tell a new connection what the lost one knew (``KeptSession.replay``)."""
        replay = self._kept.replay()
        if replay is None:
            return
        first, rest = replay
        try:
            conn.sendall(first)
            if not self._replayed.wait(OPEN_TIMEOUT_S):
                print("hive-rpc mcp: the hub did not answer initialize again", file=sys.stderr)
            for line in rest:
                conn.sendall(line)
        except OSError:
            pass  # the sender finds the connection lost and tries again

    def _read(self, conn: _socket.socket, generation: int, first: bytes = b"") -> None:
        """The hub's lines to stdout until the connection ends (``first``: what came
        with ``hive/openMcp``'s reply)."""
        buf = bytearray(first)
        while True:
            try:
                chunk = conn.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while (end := buf.find(b"\n")) >= 0:
                line = bytes(buf[: end + 1])
                del buf[: end + 1]
                self._from_hub(line)
        self._lost(conn, generation)

    def _from_hub(self, line: bytes) -> None:
        try:
            msg = _parse(line)
        except RecursionError:  # passed on unread, as any line the relay need not read
            msg = None
        if msg is not None and "method" not in msg and "id" in msg:
            if KeptSession.is_replay_reply(msg):
                if "error" in msg:
                    print(f"hive-rpc mcp: replayed: {msg['error']}", file=sys.stderr)
                if msg["id"] == REPLAY_ID:
                    self._replayed.set()
                return
            with self._lock:
                self._in_flight.pop(_key(msg["id"]), None)
        self._write(line)

    def _lost(self, conn: _socket.socket, generation: int) -> None:
        """The hub went away (or closed the session): answer what it never will."""
        self._replayed.set()  # first: a replay waiting on it holds the lock
        with self._lock:
            if self._conn is conn:
                self._conn = None
            lost = [k for k, (_, _, gen) in self._in_flight.items() if gen == generation]
            requests = [self._in_flight.pop(k) for k in lost]
        conn.close()
        if self._closing:
            return
        for request, line, _ in requests:
            with self._lock:
                again = self._kept.retry(request, line)
                if again is not None:
                    self._in_flight[_key(request["id"])] = (request, again, None)
            if again is not None:
                # As the hub's own clients retry a read: on a new hub (started if
                # allowed), in a new session that first replays initialize.
                self._track(request, again, self._send(again, replay=True))
            else:
                self._answer_lost(request, "the hub went away during this call")

    def _answer_lost(self, request: dict[str, Any], why: str, *, stopped: bool = False) -> None:
        """Answer a request no hub will (``KeptSession.lost_answer``), saying what to
        do.  A hub the human ``stopped`` on purpose is not started again by the next
        call (hub_start.HubStopped): the advice says so."""
        if stopped:
            advice = "no call starts it again until the human does (nothing asked is lost)"
        elif self._start:
            advice = "a new hub starts with the next call: try again (nothing asked is lost)"
        else:
            advice = f"start one with `hive-rpc serve --socket {self._socket}` and try again"
        self._write_message(self._kept.lost_answer(request, f"{why}; {advice}"))

    # --- stdout ----------------------------------------------------------------------

    def _write_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._write_message({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def _write_message(self, msg: dict[str, Any]) -> None:
        self._write(json.dumps(msg, ensure_ascii=False).encode() + b"\n")

    def _write(self, line: bytes) -> None:
        try:
            with self._out_lock:
                self._stdout.write(line)
                self._stdout.flush()
        except (OSError, ValueError):
            # The agent went away: so does this session (the hub sees the connection
            # close and withdraws what its calls still wait for).
            os._exit(0)


def _tool_call(request: dict[str, Any]) -> dict[str, Any] | None:
    """The params of a ``tools/call`` request (empty when they are no object, so
    that they name no tool), or None for any other request."""
    if request.get("method") != "tools/call":
        return None
    params = request.get("params")
    return params if isinstance(params, dict) else {}


def _line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def _resumed(request: dict[str, Any]) -> bytes:
    """``request``'s line again, with ``RESUMED_META`` set in its params' ``_meta``."""
    params = dict(request["params"])
    meta = params.get("_meta")
    params["_meta"] = {**(meta if isinstance(meta, dict) else {}), RESUMED_META: True}
    return json.dumps({**request, "params": params}, ensure_ascii=False).encode() + b"\n"


def _deny(call: dict[str, Any], why: str) -> str:
    """``approve``'s answer when no hub can ask the human: a deny saying why, in the
    one text block Claude Code reads (approve_tool.py; nothing is allowed by
    default)."""
    from hive_rpc.core.claude_code import approve_reply, no_decision  # rare: loaded then

    args = call.get("arguments")
    args = args if isinstance(args, dict) else {}
    tool = str(args.get("tool_name") or "tool")
    reason = f"the human could not be asked (approve: the hub could not be reached: {why})"
    return approve_reply(no_decision(None, tool, reason), args.get("input"))


def _parse(line: bytes) -> dict[str, Any] | None:
    """The message on ``line`` when it is a JSON object (the hub judges the rest).
    RecursionError when it is nested deeper than the decoder's stack."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


def _name_suffix() -> str:
    """core/agents.py ``name_suffix``, the same rule (6 hex digits, never all decimal),
    not imported: that module loads ``dataclasses`` and ``inspect``, over a MiB of
    this process's memory (bench/mcp_cold_start.py; tests/faces/test_mcp_relay_imports.py
    holds the two to the same rule)."""
    suffix = os.urandom(3).hex()
    return "x" + suffix[1:] if suffix.isdigit() else suffix


def _frame(msg: dict[str, Any]) -> bytes:
    body = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _session(path: Path, options: dict[str, Any]) -> tuple[Any, _socket.socket, bytes] | None:
    """``hive/openMcp`` sent on a new connection to the hub at ``path``: its result,
    the connection and any bytes read past the reply; None (the connection closed)
    whenever the blocking client must take over: nothing answers there, another
    user's process does (the client refuses it, saying so), or the hub answered
    anything but a result.  OSError from the socket; HubTimeout after
    ``OPEN_TIMEOUT_S``, as the client says it.

    The one request this process makes, spoken with ``_socket`` and ``json``: the
    blocking client (client/sync_client.py) and the ``socket`` module cost this
    process about 2 MiB of its 15 (bench/mcp_cold_start.py)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            sock.connect(os.fspath(path))
        except OSError:
            sock.close()
            return None
        option = getattr(_socket, "SO_PEERCRED", None)
        if option is not None:
            raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred: 3 ints
            if int.from_bytes(raw[4:8], sys.byteorder) != os.getuid():
                sock.close()
                return None
        sock.settimeout(OPEN_TIMEOUT_S)
        sock.sendall(_frame({"jsonrpc": "2.0", "id": 1, "method": MCP_OPEN, "params": options}))
        buf = b""
        while (end := buf.find(b"\r\n\r\n")) < 0 or len(buf) < end + 4 + _length(buf[:end]):
            chunk = sock.recv(1 << 16)
            if not chunk:
                sock.close()
                return None
            buf += chunk
        body_end = end + 4 + _length(buf[:end])
        reply = json.loads(buf[end + 4 : body_end])
        if not (isinstance(reply, dict) and reply.get("id") == 1 and "result" in reply):
            sock.close()
            return None
        sock.settimeout(None)
        return reply["result"], sock, buf[body_end:]
    except TimeoutError:
        sock.close()
        raise HubTimeout(f"the hub at {path} did not answer in {OPEN_TIMEOUT_S:g} s") from None
    except (ValueError, RecursionError):  # not the hub's framing or JSON: the client judges
        sock.close()
        return None
    except BaseException:
        sock.close()
        raise


def _length(header: bytes) -> int:
    """The Content-Length of a frame's header block (ValueError if none)."""
    for field in header.split(b"\r\n"):
        name, _, value = field.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise ValueError("no Content-Length")


def open_options(args: argparse.Namespace, environ: dict[str, str]) -> dict[str, Any]:
    """``hive/openMcp``'s params: the command's options and what the agent's client put in
    the environment (Claude Code's session id, project dir and tool timeout)."""
    options: dict[str, Any] = {
        "agent": args.agent,
        "tools": sorted(args.tools),
        "human_input_timeout_s": args.human_timeout,
        "progress_every_s": args.progress_every,
        "claude_session": environ.get(SESSION_ENV) or None,
        "project_dir": environ.get(PROJECT_ENV) or os.getcwd(),
        "tool_timeout_ms": environ.get(TOOL_TIMEOUT_ENV) or None,
        "suffix": _name_suffix(),
    }
    return {k: v for k, v in options.items() if v is not None}


def cmd_mcp(args: argparse.Namespace) -> int:
    """``hive-rpc mcp``: relay this process's stdio to an MCP session in the hub."""
    Relay(
        args.socket, args.data_dir, open_options(args, dict(os.environ)), start=not args.no_start
    ).run()
    return 0


__all__ = ["MAX_LINE_BYTES", "Relay", "cmd_mcp", "open_options"]
