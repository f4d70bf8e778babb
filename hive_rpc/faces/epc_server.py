"""``hive-rpc epc``: the hub's methods over EPC, for Emacs users of epc.el.

``epc:start-epc`` runs this command and reads the TCP port from the first line of its
stdout, so the port is printed alone there and nothing else ever goes to stdout.  The
server is a client of the hub (backends.RemoteBackend, reconnecting), like
``hive-rpc mcp``.

Security: it listens on 127.0.0.1 only, and a connection must first call ``auth``
with the token kept in ``DATA_DIR/epc-token`` (random, 0600, made on first use); any
other call before that gets ``return-error``.  Three wrong tokens close the connection,
and so does a frame over ``UNAUTHENTICATED_MAX_PAYLOAD`` before ``auth``, unread.

Methods take one plist of named parameters, the hub's own (service.METHODS): either as
the argument list itself, ``(epc:call-deferred m 'ask '(:question "Deploy?" :choices
("yes" "no") :agent_id "emacs"))``, or as its single element (python-epc:
``call_sync("ask", [{"question": "Deploy?"}])``).  Keys may use ``-`` for ``_``
(``:agent-id``).  Results are the hub's prompt records as plists (``list``: a list
of them, ``nil`` when empty).  ``echo`` returns its arguments unchanged without the
hub: a connection check, and the workload of bench/epc_calls.py.

Errors carry the code, message and data every face sends (dispatch.py's tiers;
protocol/methods.py's ``ERRORS``), as the plist ``(:code CODE :message MESSAGE :data
DATA)`` (protocol/epc.py ``error_value``): a call's refusal (a hub error, a bug, bad
arguments, not authenticated, overloaded) is ``return-error``; an unknown method, a
malformed frame or s-expression, an oversized frame is ``epc-error``.  Each call to the hub
runs in its own task, so an ``await`` does not hold up a ``poll`` sent meanwhile on
the same connection; ``auth``, ``echo`` and ``methods`` are answered at once, and all
replies ready after one read go out in one write.
"""

from __future__ import annotations

import functools
import hmac
import logging
import sys
from pathlib import Path
from typing import Any

import trio

from hive_rpc.core.errors import (
    HiveError,
    InternalError,
    InvalidParams,
    MethodNotFound,
    NotAnApprover,
)
from hive_rpc.faces.accept_loop import Served, connection_cap, serve_bounded
from hive_rpc.faces.backends import Backend, open_remote_backend
from hive_rpc.host.paths import EPC_TOKEN_NAME, load_token, private_dir
from hive_rpc.protocol import epc
from hive_rpc.protocol.jsonrpc import OVERLOADED
from hive_rpc.rpc.connection import FrameWriter
from hive_rpc.rpc.dispatch import dispatch
from hive_rpc.service import METHODS

log = logging.getLogger(__name__)

TOKEN_NAME = EPC_TOKEN_NAME
HOST = "127.0.0.1"
MAX_IN_FLIGHT = 64
"""Calls one connection may have running at once; more get ``return-error``."""
MAX_AUTH_FAILURES = 3
REFUSE_WAIT_S = 2.0
"""How long a connection over the cap may take to send the call its refusal answers."""
NOT_AUTHENTICATED = "not authenticated: call auth with the token from DATA_DIR/epc-token"
UNAUTHENTICATED_MAX_PAYLOAD = 4096
"""The largest frame a connection may send before ``auth``: an ``auth`` call is some
80 bytes.  A larger one is refused on its header, unread, and the connection closed:
reading and parsing a 1 MiB frame from a client without the token took 0.23 s of CPU."""
LINGER_S = 1.0
LINGER_BYTES = 1 << 20
"""How long, and how much, a connection being closed is drained (``_linger``)."""
BEFORE_AUTH = (
    f"before auth is over the {UNAUTHENTICATED_MAX_PAYLOAD}-byte limit of a connection "
    f"that has not authenticated (at most {UNAUTHENTICATED_MAX_PAYLOAD} bytes): call auth "
    "with the token from DATA_DIR/epc-token first"
)

HUB_METHODS = {method.epc: name for name, method in METHODS.items() if method.epc is not None}
"""EPC method name -> the hub's method it calls with the same parameters (the method
table's ``epc`` column)."""


def method_list() -> list[tuple[str, str, str]]:
    """``(NAME ARGSPEC DOC)`` for the ``methods`` query."""
    out = [
        ("auth", "(TOKEN)", "Authenticate this connection; call first."),
        ("echo", "(&rest ARGS)", "Return ARGS unchanged: a check that the connection works."),
    ]
    for name, hub_name in HUB_METHODS.items():
        spec = METHODS[hub_name]
        keys = " ".join(
            f":{p}" if param.required else f"[:{p}]" for p, param in spec.params.items()
        )
        out.append((name, f"({keys})", f"{spec.doc} (the hub's {hub_name})"))
    return out


def _error(error: HiveError) -> dict[str, Any]:
    """``error`` as this face sends it: its code, message and data, as a plist."""
    return epc.error_value(error.code, error.message, error.data)


def _not_authenticated(message: str) -> dict[str, Any]:
    """-32013, as the socket refuses one who has not proved it may approve: an EPC
    client proves it read the private data dir's ``epc-token`` (security.md)."""
    return _error(NotAnApprover(message, lacks="epc_token", token_file=f"DATA_DIR/{TOKEN_NAME}"))


class BadArguments(Exception):
    """A call's arguments are not one plist of named parameters."""


def call_params(args: Any) -> dict[str, Any]:
    """The named parameters of a call, from its decoded argument list."""
    if args is None:
        return {}
    if isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict):
        args = args[0]
    if not isinstance(args, dict):
        raise BadArguments(
            'arguments must be one plist of named parameters, e.g. (:id "ID" :agent_id "me")'
        )
    return {k.replace("-", "_"): v for k, v in args.items()}


class Connection:
    """One EPC peer: decodes its frames, runs its calls, writes the replies."""

    def __init__(self, stream: trio.abc.Stream, backend: Backend, token: str) -> None:
        self._stream = stream
        self._backend = backend
        self._token = token
        self._decoder = epc.Decoder()
        self._decoder.unread = (UNAUTHENTICATED_MAX_PAYLOAD, BEFORE_AUTH)
        self._writer = FrameWriter(stream)
        self._authenticated = False
        self._auth_failures = 0
        self._in_flight = 0
        self._closing = False

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            try:
                while not self._closing and (data := await self._stream.receive_some(65536)):
                    # Everything answerable at once is answered in one write: a client
                    # that sends many calls gets its replies without a write per call.
                    replies = bytearray()
                    self._decoder.feed(data)
                    # One at a time: the frames after a good auth are read as an
                    # authenticated connection's.
                    while not self._closing and (event := self._decoder.next_event()) is not None:
                        replies += self._dispatch(event, nursery)
                    if replies:
                        await self._send(replies)
                if self._closing:
                    await self._linger()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            nursery.cancel_scope.cancel()

    async def _linger(self) -> None:
        """Closing on the peer (a fatal error, three wrong tokens): end our side, then
        throw away, unread, what it still sends for a moment.  Closed with its bytes
        still unread, the socket would be reset, and the peer could lose the error
        that says why before it read it."""
        if not isinstance(self._stream, trio.abc.HalfCloseableStream):
            return
        with trio.move_on_after(LINGER_S):
            await self._stream.send_eof()
            thrown = 0
            while thrown < LINGER_BYTES and (data := await self._stream.receive_some(65536)):
                thrown += len(data)

    async def _send(self, data: bytes | bytearray) -> None:
        try:
            await self._writer.send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._closing = True

    def _dispatch(self, event: epc.Message | epc.EpcProtocolError, nursery: trio.Nursery) -> bytes:
        """The reply to send now, or b"" when a task will send it (a hub call)."""
        if isinstance(event, epc.EpcProtocolError):
            if event.fatal:
                self._closing = True
            return epc.encode_epc_error(event.uid, epc.error_value(event.code, event.message))
        if isinstance(event, epc.Methods):
            if not self._authenticated:
                return epc.encode_return_error(event.uid, _not_authenticated(NOT_AUTHENTICATED))
            return epc.encode_method_list(event.uid, method_list())
        if not isinstance(event, epc.Call):
            # We never call the peer, so a return or error from it answers nothing.
            log.debug("ignoring unsolicited %r", event)
            return b""
        if event.method == "auth":
            return self._auth(event)
        if not self._authenticated:
            return epc.encode_return_error(event.uid, _not_authenticated(NOT_AUTHENTICATED))
        if event.method == "echo":
            return self._echo(event)
        if event.method not in HUB_METHODS:
            names = ", ".join(["auth", "echo", *HUB_METHODS])
            unknown = MethodNotFound(
                f"unknown method {event.method[:80]!r}; this server offers {names}",
                method=event.method[:80],
            )
            return epc.encode_epc_error(event.uid, _error(unknown))
        if self._in_flight >= MAX_IN_FLIGHT:
            return epc.encode_return_error(
                event.uid,
                epc.error_value(
                    OVERLOADED,
                    f"overloaded: {MAX_IN_FLIGHT} calls already running here",
                    {"max": MAX_IN_FLIGHT},
                ),
            )
        self._in_flight += 1
        nursery.start_soon(self._call, event)
        return b""

    def _auth(self, event: epc.Call) -> bytes:
        args = event.args
        given = args[0] if isinstance(args, list) and len(args) == 1 else None
        if isinstance(given, str) and hmac.compare_digest(
            given.encode("utf-8"), self._token.encode("utf-8")
        ):
            self._authenticated = True
            self._decoder.unread = None
            return epc.encode_return(event.uid, True)
        self._auth_failures += 1
        if self._auth_failures >= MAX_AUTH_FAILURES:
            self._closing = True  # after this reply, the connection is closed
        return epc.encode_return_error(
            event.uid, _not_authenticated("auth: wrong token; give the one in DATA_DIR/epc-token")
        )

    @staticmethod
    def _echo(event: epc.Call) -> bytes:
        try:
            return epc.encode_return(event.uid, event.args)
        except epc.EncodeError as e:  # readable but unprintable, e.g. the key in (:. 1)
            return _return_error(event.uid, InvalidParams(f"echo: {e}"))

    async def _call(self, event: epc.Call) -> None:
        hub_name = HUB_METHODS[event.method]
        try:
            try:
                params = call_params(event.args)
                result = await dispatch(self._backend.call, hub_name, params)
                reply = epc.encode_return(event.uid, result)
            except BadArguments as e:
                bad = InvalidParams(f"{event.method}: {e}", method=hub_name)
                reply = _return_error(event.uid, bad)
            except epc.EncodeError as e:  # a result with no EPC form: ours to fix
                failed = InternalError(f"{event.method}: the result has no EPC form: {e}")
                reply = _return_error(event.uid, failed)
            except HiveError as e:  # dispatch's tiers: a refusal, or a bug (logged)
                reply = _return_error(event.uid, e)
            await self._send(reply)
        finally:
            self._in_flight -= 1


def _return_error(uid: int, error: HiveError) -> bytes:
    """``return-error`` with ``error``'s code, message and data; without the data if
    some fact in it has no EPC form (a NaN), so the refusal still arrives."""
    try:
        return epc.encode_return_error(uid, _error(error))
    except epc.EncodeError:
        return epc.encode_return_error(
            uid, epc.error_value(error.code, error.message, {"kind": error.kind})
        )


async def serve_epc(
    backend: Backend,
    token: str,
    *,
    port: int = 0,
    max_connections: int | None = None,
    served: Served | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve EPC on 127.0.0.1 until cancelled, at most ``max_connections`` (default
    ``connection_cap()``) at once; ``started`` with the port.  ``served`` counts the
    connections open, accepted and refused, and wakes whoever waits for one to end
    (``Served.wait_open``)."""
    (listener,) = await trio.open_tcp_listeners(port, host=HOST)
    bound: int = listener.socket.getsockname()[1]

    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            try:
                await Connection(stream, backend, token).run()
            except* Exception:
                # One peer's trouble must never reach another's connection; except*
                # so that trouble grouped with a cancellation is caught as well.
                log.exception("EPC connection failed")

    async with listener, trio.open_nursery() as nursery:
        await nursery.start(
            functools.partial(
                serve_bounded,
                listener,
                handle,
                cap=max_connections or connection_cap(),
                refuse=_refuse,
                name="EPC",
                served=served,
            )
        )
        task_status.started(bound)


async def _refuse(stream: trio.SocketStream, cap: int) -> None:
    """A connection over the cap: answer its first call (EPC has no message without
    one) with an ``epc-error`` saying why, then close; bounded in time and size."""
    async with stream:
        with trio.move_on_after(REFUSE_WAIT_S):
            decoder = epc.Decoder()
            while data := await stream.receive_some(65536):
                events = decoder.receive_data(data)
                if events:
                    uid = events[0].uid
                    full = epc.error_value(
                        OVERLOADED,
                        f"the EPC server serves {cap} connections at once, its limit "
                        "(connections); close one and connect again",
                        {"kind": "limit_reached", "limit": "connections", "max": cap},
                    )
                    await stream.send_all(epc.encode_epc_error(uid, full))
                    return


async def run_epc(socket: Path, data_dir: Path, *, start: bool = True, port: int = 0) -> None:
    """``hive-rpc epc``: connect to the hub, then serve, printing the port on stdout."""
    # An approver when it can read the hub's approver token: every EPC client proved
    # it read this face's own token, a file of the same private data dir (security.md).
    async with open_remote_backend(socket, data_dir, start=start, approver=True) as backend:
        token, token_file = load_token(private_dir(data_dir), TOKEN_NAME)
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(functools.partial(serve_epc, backend, token, port=port))
            print(bound, flush=True)
            print(
                f"hive-rpc epc on {HOST}:{bound} (token in {token_file})",
                file=sys.stderr,
                flush=True,
            )
