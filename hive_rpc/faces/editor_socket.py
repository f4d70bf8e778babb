"""The editor socket: JSON-RPC 2.0 with Content-Length frames over a Unix socket.

This is what Emacs's jsonrpc.el, vscode-jsonrpc and hive_rpc's own CLI connect to.
Each connection is an ``RpcConnection`` (rpc_connection.py: one reader, whole-frame
shielded sends, requests in flight as tasks, the three error tiers of dispatch.py);
this module adds what is about one connection: the subscription forwarder (prompts,
and beside them the store's health), ``hive/offerDelivery``, who the caller is, and
whether it proved to be an approver (``hive/proveApprover``, service/approver.py).

The hub may also send requests to a client (``Session.request``): an Emacs that
called ``hive/offerDelivery`` is asked ``hive/bufferState``, ``hive/deliver``,
``hive/watchBuffer`` and ``hive/unwatchBuffer`` by the relay, and its
``hive/bufferChanged`` notifications go to whoever watches that buffer
(``DeliveryPeers.changed``).  The hub's ids are strings ``"hub-N"``, unique per
connection; responses are matched to their waiter by id, a response nobody waits for
is dropped, and when the connection ends every waiter fails with ``PeerClosed``.

Bad input stays with the connection that sent it: a bad message gets its JSON-RPC
error and the connection carries on; a broken frame gets one error and the
connection closes; an exception in a handler becomes an internal error for that
request only.  A client that stops reading for ``SEND_TIMEOUT_S`` is disconnected
rather than allowed to hold the hub's memory.

A connection whose first message is ``hive/openMcp`` is no editor's: it is the
``hive-rpc mcp`` relay of an agent's session (mcp_relay.py), and from the reply on it
carries MCP messages, one per line, to an MCP session served here
(faces/mcp/stdio.py).  So every connection's first frame is read before the
connection is given to its ``Session``, which then reads those bytes again.

Who gets a connection when they are short (faces/accept_loop.py's ``Admission``;
without it, one process's 1,000 idle connections locked every client out): each peer,
its uid and session as the kernel says (``SO_PEERCRED``, /proc), holds at most
``connections_per_peer``; a full hub (``split_descriptors``: core/limits.py's
``connections``, lower when the fd limit is) closes the oldest connection that never
sent a request, and with none idle admits a new one into a reserve
(``connections_reserved``) where it may only call ``hive/status`` until it proves to
be an approver (editors, the hook, the human's CLI).  A connection closed to make
room, or refused, gets one -32011 error naming the limit (a refused one: answering
its first request, by id) and is closed, never just reset.  If accept still fails
for want of descriptors (EMFILE: fds held elsewhere), the hub says so once and
accepts again when a connection closes.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import logging
import os
import shutil
import socket as stdlib_socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from hive_rpc.core import limits
from hive_rpc.core.errors import HiveError, InvalidParams
from hive_rpc.faces.accept_loop import (
    PROOF_WAIT_S,
    REFUSE_READ_S,
    RESERVE_METHODS,
    Admission,
    Ticket,
    serve_admitted,
    session_of,
    split_descriptors,
)
from hive_rpc.faces.connection_scope import connection_handlers
from hive_rpc.protocol.framing import (
    MAX_BODY_BYTES,
    Frame,
    FrameDecoder,
    FramingError,
    encode_frame,
)
from hive_rpc.protocol.jsonrpc import (
    OVERLOADED,
    Endpoint,
    ErrorResponse,
    Notification,
    Request,
    RpcError,
    parse_message,
)
from hive_rpc.relay.consent import CALLER, Caller, peer_pid
from hive_rpc.relay.emacs import PeerClosed, PeerRefused, PeerTimeout
from hive_rpc.rpc.connection import (
    RECEIVE_CHUNK,
    FrameWriter,
    RpcConnection,
    ThenStart,
    only_disconnects,
)
from hive_rpc.rpc.dispatch import dispatch
from hive_rpc.runtime.registry import Watch
from hive_rpc.service import METHODS, HubService, check_params
from hive_rpc.service.approver import APPROVER, check_token
from hive_rpc.store.records import encode_prompt

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = limits.MAX_IN_FLIGHT
"""Requests one connection may have running at once (long polls included)."""
HEALTH = "hive/health"
"""Notification to subscribers: ``{"degraded": str | None}`` when the store's state
changes (the registry's ``health``)."""
SESSION = "hive/session"
"""Notification to subscribers that asked for sessions: a session's record."""
SESSION_REMOVED = "hive/sessionRemoved"
"""Notification to subscribers that asked for sessions: a session left the list."""
SNAPSHOT_WRITE = 1 << 16
"""Bytes of a new subscriber's snapshot written at once (``Session._send_snapshot``)."""
SNAPSHOT_NOTE = b'{"jsonrpc":"2.0","method":"hive/prompt","params":%s}'
"""A snapshot's ``hive/prompt`` notification around a record's JSON."""
AGORA = "hive/agora"
"""Notification to subscribers: what a ling's buffer should show and what becomes of
a dialogue (a turn held and why, typed, failed; consensus ...): agora.py ``follow``."""


def _refused(msg: ErrorResponse | RpcError) -> Exception:
    """An editor's error reply to the hub's request (an unreadable one says so)."""
    if isinstance(msg, RpcError):
        return PeerRefused(msg.code, f"unreadable response: {msg.message}")
    return PeerRefused(msg.code, msg.message, msg.data)


class Session:
    """One client connection: the shared connection layer (rpc_connection.py) with
    this face's connection-scoped methods (subscribe, unsubscribe, offerDelivery) and
    its identity of the caller (relay/consent.py)."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        service: HubService,
        *,
        max_body: int = MAX_BODY_BYTES,
        ticket: Ticket | None = None,
    ) -> None:
        self._service = service
        self._ticket = ticket
        """Its admission (faces/accept_loop.py): one admitted into the reserve may
        only call ``RESERVE_METHODS`` until it proves to be an approver."""
        self._who: Caller | None = None
        """Its peer as ``CALLER`` gives it to the service (``_caller``)."""
        self._subscription: trio.CancelScope | None = None
        self._sessions = False
        """The subscription includes agent sessions (``hive/subscribe`` with sessions)."""
        self._approver = False
        """Proved with ``hive/proveApprover``: may answer permission prompts and change
        answer rules (service/approver.py), for the rest of the connection."""
        self._conn = RpcConnection(
            stream,
            max_body=max_body,
            handler=self._call,
            on_notification=self._on_notification,
            refused=_refused,
            closed=PeerClosed,
            id_prefix="hub",
            max_in_flight=MAX_IN_FLIGHT,
        )
        self._conn.on_eof = self._stop_subscription

    def statistics(self) -> dict[str, Any]:
        return self._conn.statistics()

    async def run(self) -> None:
        """Serve until the client hangs up or breaks framing.  Never raises."""
        try:
            await self._conn.run()
        finally:
            self._service.delivery_peers.remove(self)

    def _stop_subscription(self) -> None:
        """The client closed its side: no more notifications (requests already
        received still finish: ``printf ... | nc -U`` gets its answers)."""
        if self._subscription is not None:
            self._subscription.cancel()

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        """Send request ``method`` to the client and return its result.

        PeerRefused carries the client's error; PeerTimeout after ``timeout_s`` seconds
        (a late response is dropped); PeerClosed if the connection is or becomes closed.
        """
        with trio.move_on_after(timeout_s):
            return await self._conn.request(method, params)
        raise PeerTimeout(f"no answer to {method} within {timeout_s:g}s")

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        ticket = self._ticket
        if ticket is not None and ticket.on_probation and method not in RESERVE_METHODS:
            with trio.move_on_after(PROOF_WAIT_S):  # its proof may be on its way
                await ticket.proved.wait()
            if ticket.on_probation:
                text, data = _full(ticket.admission, ticket)
                raise _HubFull(text, **data)
        own = _CONNECTION_METHODS.get(method)
        if own is not None:
            check_params(method, params)
            return own(self, params)
        # Who sent it, from the kernel (relay/consent.py), and whether this connection
        # proved it is an approver: this request's task only.
        CALLER.set(self._caller())
        APPROVER.set(self._approver)
        return await self._service.call(method, params)

    def _prove_approver(self, params: dict[str, Any]) -> dict[str, Any]:
        check_token(self._service, params["token"])
        self._approver = True
        if self._ticket is not None:
            self._ticket.prove()
        return {"approver": True}

    def _mcp_open_later(self, _params: dict[str, Any]) -> dict[str, Any]:
        raise InvalidParams(
            f"{MCP_OPEN} must be the first message of a connection (it turns the whole "
            "connection into an MCP session); open a new connection for it",
            method=MCP_OPEN,
        )

    def _offer_delivery(self, _params: dict[str, Any]) -> dict[str, Any]:
        if self._conn.ended is None:
            self._service.delivery_peers.add(self)
        return {"offered": True}

    def _buffer_changed(self, params: dict[str, Any]) -> dict[str, Any]:
        """A buffer of this Emacs that the relay watches changed: the held turn is
        checked again (relay/emacs.py ``watch``)."""
        self._service.delivery_peers.changed(self, params["buffer"])
        return {"noted": True}

    def _unsubscribe(self, _params: dict[str, Any]) -> dict[str, Any]:
        was = self._subscription is not None
        if self._subscription is not None:
            self._subscription.cancel()
            self._subscription = None
        return {"subscribed": False, "was_subscribed": was}

    def _caller(self) -> Caller:
        """Who sends this connection's requests, as the kernel said at ``connect``;
        made once (a Unix socket's peer does not change), with its session."""
        if self._who is None:
            pid = self._peer_pid()
            session = None
            if self._ticket is not None and isinstance(self._ticket.peer, tuple):
                found = self._ticket.peer[-1]
                session = found if isinstance(found, int) else None
            elif pid is not None:
                found = session_of(pid)
                session = found if isinstance(found, int) else None
            self._who = Caller(pid=pid, peer=self, session=session)
        return self._who

    def _peer_pid(self) -> int | None:
        sock = getattr(self._conn.stream, "socket", None)
        if sock is None or sock.family != stdlib_socket.AF_UNIX:
            return None
        return peer_pid(sock)

    def _on_notification(self, note: Notification) -> None:
        spec = METHODS.get(note.method)
        if spec is None or not spec.notification_ok:
            return  # JSON-RPC: a notification is never answered, even when wrong
        own = _CONNECTION_METHODS.get(note.method)
        if own is not None:  # about this connection (hive/bufferChanged): run here, at once
            try:
                own(self, check_params(note.method, note.params))
            except HiveError as e:
                log.debug("notification %s refused: %s", note.method, e.message)
            return
        self._conn.nursery.start_soon(self._run_notification, note)

    async def _run_notification(self, note: Notification) -> None:
        try:
            await dispatch(self._service.call, note.method, note.params)
        except HiveError as e:
            # Nobody to answer, and the session goes on (the store failing a typing
            # write must not end an editor's connection); a bug was logged already.
            log.debug("notification %s refused: %s", note.method, e.message)

    def _subscribe(self, params: dict[str, Any]) -> dict[str, Any] | ThenStart:
        self._sessions = self._sessions or bool(params.get("sessions"))
        if self._subscription is not None:
            return {"subscribed": True, "pending": None}
        # Claimed before the first checkpoint, so a second subscribe in flight sees it.
        scope = self._subscription = trio.CancelScope()
        # The watch starts now, so the answer can say how many prompts will follow and
        # nothing that changes while it is being sent is missed; the forwarder starts
        # once the answer is on the wire, and an unsubscribe that overtakes it cancels
        # the forwarder, never the answer.
        resources = contextlib.ExitStack()
        if params.get("prompts") is False:  # sessions only (hive-rpc sessions --watch)
            return ThenStart(
                {"subscribed": True, "pending": None},
                lambda: self._forward(None, resources, scope),
            )
        watch = resources.enter_context(self._service.registry.watch())
        try:
            answer = {"subscribed": True, "pending": len(watch.pending)}
            return ThenStart(answer, lambda: self._forward(watch, resources, scope))
        except BaseException:
            resources.close()
            raise

    async def _forward(
        self, watch: Watch | None, resources: contextlib.ExitStack, scope: trio.CancelScope
    ) -> None:
        with resources, scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._forward_health)
                if self._service.agora is not None:
                    nursery.start_soon(self._forward_agora)
                if self._sessions:
                    nursery.start_soon(self._forward_sessions)
                if watch is None:  # no prompts: the other forwarders run until unsubscribed
                    await trio.sleep_forever()
                await self._send_snapshot(watch)
                async with contextlib.aclosing(self._service.changes(watch)) as notes:
                    async for method, params in notes:
                        await self._conn.notify(method, params)
                nursery.cancel_scope.cancel()
            # The registry ended the subscription: this client fell too far behind.
            log.warning("subscriber fell behind; closing its connection so it resubscribes")
            await self._conn.aclose()

    async def _send_snapshot(self, watch: Watch) -> None:
        """The pending prompts (``HubService.snapshot``'s notifications), their frames
        joined into writes of about ``SNAPSHOT_WRITE`` bytes.  A write per frame cost
        a system call and a pass of the run loop each, and grew worse than linearly
        with the snapshot (11 s for 99,000 pending; bench/subscribe_snapshot.py); the
        first prompts still leave within milliseconds, and the editor reads them as
        they come (the same ``hive/prompt`` notifications, nothing new to learn).
        Each record is written by the store's ``encode_prompt`` (the JSON of
        ``to_record()``, non-ASCII escaped): 4.4 µs a prompt against 12.6 µs for the
        dict and ``json.dumps``, most of the hub's work in a snapshot."""
        batch = bytearray()
        for prompt in watch.pending:
            batch += encode_frame(SNAPSHOT_NOTE % encode_prompt(prompt).encode())
            if len(batch) >= SNAPSHOT_WRITE:
                await self._conn.send(bytes(batch))
                batch.clear()
        if batch:
            await self._conn.send(bytes(batch))

    async def _forward_health(self) -> None:
        """``hive/health`` each time the store's state changes (and at once if it is
        degraded when the subscription starts): beside the prompts, not among them,
        since it is no prompt's change.  Ends with the subscription."""
        told: str | None = None
        while True:
            told = await self._service.registry.health(told)
            await self._conn.notify(HEALTH, {"degraded": told})

    async def _forward_agora(self) -> None:
        """``hive/agora`` for each event of the Agora's that editors follow (agora.py
        ``follow``), from the subscription on.  Ends with the subscription."""
        assert self._service.agora is not None
        async with contextlib.aclosing(self._service.agora.follow()) as events:
            async for params in events:
                await self._conn.notify(AGORA, params)

    async def _forward_sessions(self) -> None:
        """``hive/session`` for every agent session, then for each change of one, and
        ``hive/sessionRemoved`` when one leaves the list (runtime/sessions.py): a burst
        of changes to one session is sent once, as its latest record."""
        table = self._service.sessions
        async with table.follow() as follower:
            for session in table.list():
                await self._conn.notify(SESSION, session.record())
            while True:
                for agent_id in await follower.next_batch():
                    found = table.get(agent_id)
                    if found is None:
                        await self._conn.notify(SESSION_REMOVED, {"agent_id": agent_id})
                    else:
                        await self._conn.notify(SESSION, found.record())


_CONNECTION_METHODS = connection_handlers(
    "socket",
    {
        "hive/offerDelivery": Session._offer_delivery,
        "hive/bufferChanged": Session._buffer_changed,
        "hive/proveApprover": Session._prove_approver,
        "hive/subscribe": Session._subscribe,
        "hive/unsubscribe": Session._unsubscribe,
        "hive/openMcp": Session._mcp_open_later,
    },
)
"""The connection-scoped methods of the method table this face runs itself."""

MCP_OPEN = "hive/openMcp"
_MCP_SESSION_MODULE = "hive_rpc.faces.mcp.stdio"


class _Replayed(trio.abc.Stream):
    """A stream that yields ``first`` (bytes already read from it) before the rest;
    closed to make room for another connection (``ticket.closed_for``), it tells its
    client why before it closes (after the Session's last whole frame)."""

    def __init__(
        self, stream: trio.SocketStream, first: bytes, ticket: Ticket | None = None
    ) -> None:
        self.stream = stream
        self.socket = stream.socket
        self._first = first
        self._ticket = ticket

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._first:
            take = len(self._first) if max_bytes is None else max_bytes
            data, self._first = self._first[:take], self._first[take:]
            await trio.lowlevel.checkpoint()
            return data
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        if self._ticket is not None and self._ticket.closed_for is not None:
            await _closed_to_make_room(self.stream, self._ticket)
        await self.stream.aclose()


async def _first_frame(stream: trio.SocketStream) -> tuple[bytes, Request | None, int]:
    """Read until the connection's first frame is whole, or it breaks or ends: the
    bytes read, and the request when it is ``hive/openMcp``, with the end of its frame.
    Anything else is left for the Session to read again and judge."""
    decoder, data = FrameDecoder(), bytearray()
    while True:
        try:
            chunk = await stream.receive_some(RECEIVE_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            chunk = b""
        if not chunk:
            return bytes(data), None, 0
        data += chunk
        try:
            decoder.receive_data(chunk)
            event = decoder.next_event()
        except FramingError:
            return bytes(data), None, 0
        if event is None:
            continue
        if not isinstance(event, Frame):
            return bytes(data), None, 0
        try:
            msg = parse_message(event.body)
        except RpcError:
            return bytes(data), None, 0
        if isinstance(msg, Request) and msg.method == MCP_OPEN:
            return bytes(data), msg, data.find(b"\r\n\r\n") + 4 + len(event.body)
        return bytes(data), None, 0


async def _load_mcp_sessions() -> None:
    """Import faces/mcp/stdio.py in a worker thread the first time: the MCP SDK takes
    most of a second to import, which must not stall the hub's other clients."""
    if _MCP_SESSION_MODULE not in sys.modules:
        await trio.to_thread.run_sync(importlib.import_module, _MCP_SESSION_MODULE)


async def serve_mcp_session(
    service: HubService, stream: trio.SocketStream, request: Request, rest: bytes
) -> None:
    """Answer ``hive/openMcp``, then serve the MCP session on the connection until it
    ends.  The session's requests act as the relay's process (``CALLER``: a ling it
    registers asks the human unless that process runs in the pane) and never as an
    approver."""
    endpoint, writer = Endpoint(), FrameWriter(stream)
    try:
        try:
            params = check_params(MCP_OPEN, request.params)
            await _load_mcp_sessions()
            from hive_rpc.faces.mcp import stdio  # loaded above, off the trio thread
            from hive_rpc.faces.mcp.prompt_tools import RESUMABLE

            # Off the trio thread: the first session builds the hub's one MCP server
            # (tens of ms of pydantic models), which would stall every other client.
            hive = await trio.to_thread.run_sync(stdio.session_hive, service, params)
        except HiveError as e:
            await writer.send(endpoint.error(request.id, e.code, e.message, e.data))
            return
        opened = {
            "opened": True,
            "resend": sorted(stdio.RESENDABLE),
            "resume": sorted(RESUMABLE),
        }
        await writer.send(endpoint.result(request.id, opened))
        sock = getattr(stream, "socket", None)  # a trio socket: what peer_pid reads
        CALLER.set(Caller(pid=peer_pid(sock) if sock is not None else None))
        APPROVER.set(False)
        await stdio.serve_session(hive, stream, rest)
    except* Exception as group:
        if not only_disconnects(group):
            log.exception("MCP session failed")
    finally:
        with trio.move_on_after(1, shield=True):
            await stream.aclose()


def _probe(path: Path) -> bool:
    """True if something accepts connections on the socket at ``path``."""
    probe = stdlib_socket.socket(stdlib_socket.AF_UNIX, stdlib_socket.SOCK_STREAM)
    try:
        probe.connect(os.fspath(path))
    except OSError as e:
        if e.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
            return False
        raise
    finally:
        probe.close()
    return True


class SocketInUse(RuntimeError):
    """A live hub already answers on the socket."""


def _claim(path: Path) -> None:
    """Remove a stale socket file at ``path``; refuse if a live hub answers there."""
    if path.exists() or path.is_symlink():
        if _probe(path):
            raise SocketInUse(f"a hub is already answering on {path}")
        path.unlink()


async def bind_socket(path: Path) -> trio.SocketListener:
    """Listen on ``path`` with mode 0600, taking over a stale socket file.

    Refuses (SocketInUse) when a live process answers there.  The caller holds the
    hub lock, so no other hub can be binding at the same moment.  The bind runs in a
    worker thread (a filesystem walk, as trio's own ``bind`` does for Unix sockets).
    """
    _claim(path)
    sock = stdlib_socket.socket(stdlib_socket.AF_UNIX, stdlib_socket.SOCK_STREAM)
    try:
        await trio.to_thread.run_sync(_bind_private, sock, path)
        sock.listen(limits.LISTEN_BACKLOG)
    except BaseException:
        sock.close()
        raise
    return trio.SocketListener(trio.socket.from_stdlib_socket(sock))


SUN_PATH_MAX = 107
"""Bytes of a Unix socket's path (sun_path less its NUL); 103 on the BSDs, which
only makes the staging directory's fallback more likely there."""


def _bind_private(sock: stdlib_socket.socket, path: Path) -> None:
    """Bind ``sock`` at ``path`` so that nobody else can connect before it is 0600.

    Never by changing the umask: it is one per process, and the hub's worker threads
    spawn children (notify-send, tmux) and create files at any moment, which would
    inherit it.  Instead the socket is bound in a fresh 0700 directory beside
    ``path``, made 0600 there, and renamed into place.  When that staging path would
    be too long for a socket address, it binds in place; on Linux the mode set on
    the unbound socket (``fchmod``) is the file's mode from its first moment.
    """
    with contextlib.suppress(OSError):  # Linux honours it; others may refuse
        os.fchmod(sock.fileno(), 0o600)
    staging = Path(tempfile.mkdtemp(prefix=".h", dir=path.parent))
    try:
        temp = staging / "s"
        if len(os.fsencode(temp)) > SUN_PATH_MAX:
            sock.bind(os.fspath(path))
            os.chmod(path, 0o600)
            return
        sock.bind(os.fspath(temp))
        os.chmod(temp, 0o600)
        os.rename(temp, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class _HubFull(HiveError):
    """-32011: the hub has no connection to spare for this request (the reserve's
    rule, or a connection refused at the door)."""

    code = OVERLOADED
    kind = "limit_reached"


def _full(
    admission: Admission, closed: Ticket | None = None, *, limit: str = "connections"
) -> tuple[str, dict[str, Any]]:
    """The -32011 message and data for a connection refused by ``limit``, or for
    ``closed``, closed to make room (or admitted for an approver only)."""
    if closed is not None:
        limit = closed.closed_for or closed.reserve or limit
    if limit == "connections_per_peer":
        most = admission.per_peer
        held = f"your session holds {most} connections to the hub, its limit ({limit})"
    else:
        most = admission.cap
        held = f"the hub serves {most} connections at once, its limit ({limit})"
    data = {"kind": "limit_reached", "limit": limit, "max": most}
    if closed is None:
        text = f"refused: {held}, and all of them are in use; close one and connect again"
    elif closed.closed_for is None:  # admitted for an approver; not one
        text = f"refused: {held}; only an approver (hive/proveApprover) is admitted now"
        data["admit"] = "hive/proveApprover"
    elif closed.spoken:
        text = f"closed to make room: {held}, and this connection never proved to be an approver"
    else:
        text = f"closed to make room: this connection sent no request while {held}"
    return text, data


async def _closed_to_make_room(stream: trio.abc.Stream, ticket: Ticket) -> None:
    """If ``ticket`` was closed to make room, tell its client why (once) and close."""
    if ticket.closed_for is None or ticket.told:
        return
    ticket.told = True
    with trio.CancelScope(shield=True):
        await _tell_and_close(stream, None, *_full(ticket.admission, ticket))


async def _request_id(stream: trio.abc.Stream) -> Any:
    """The id of the first request on ``stream``, else None (not one, unreadable)."""
    decoder = FrameDecoder(max_body=REFUSED_FRAME_MAX)
    while True:
        try:
            chunk = await stream.receive_some(RECEIVE_CHUNK)
            if not chunk:
                return None
            decoder.receive_data(chunk)
            event = decoder.next_event()
        except (trio.BrokenResourceError, trio.ClosedResourceError, FramingError):
            return None
        if isinstance(event, Frame):
            try:
                msg = parse_message(event.body)
            except RpcError:
                return None
            return msg.id if isinstance(msg, Request) else None


REFUSED_FRAME_MAX = 64 << 10
"""The largest first request a refusal reads for its id (larger: answered with null)."""


async def _tell_and_close(stream: trio.abc.Stream, msg_id: Any, text: str, data: Any) -> None:
    """Send one -32011 frame and close the stream, bounded, whatever happens."""
    with trio.move_on_after(1):
        frame = Endpoint().error(msg_id, OVERLOADED, text, data)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.send_all(frame)
    with trio.move_on_after(1) as cleanup:
        cleanup.shield = True
        await stream.aclose()


async def serve_editor_socket(
    service: HubService,
    listener: trio.SocketListener,
    *,
    max_connections: int | None = None,
    max_per_peer: int = limits.MAX_CONNECTIONS_PER_PEER,
    reserve: int = limits.RESERVED_CONNECTIONS,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve connections from ``listener`` (see ``bind_socket``) until cancelled,
    at most ``max_connections`` at once and ``reserve`` more for approvers (default:
    ``split_descriptors()``), ``max_per_peer`` from one peer."""
    cap, fd_reserve = split_descriptors()
    admission = Admission(max_connections or cap, max_per_peer, min(reserve, fd_reserve))

    async def handle(stream: trio.SocketStream, ticket: Ticket) -> None:
        try:
            with ticket.scope:
                first, mcp_open, end = await _first_frame(stream)
                ticket.spoke()
                if mcp_open is not None and ticket.on_probation:
                    await _tell_and_close(stream, mcp_open.id, *_full(admission, ticket))
                elif mcp_open is not None:
                    await serve_mcp_session(service, stream, mcp_open, first[end:])
                else:
                    replayed = _Replayed(stream, first, ticket)
                    await Session(replayed, service, ticket=ticket).run()
        except BaseException:  # cancelled (the hub stops) before anyone owned it
            await trio.aclose_forcefully(stream)
            raise
        await _closed_to_make_room(stream, ticket)

    async def refuse(stream: trio.SocketStream, limit: str) -> None:
        """Answer the client's first request (read briefly: its id) with why, so it
        reads an error, not a reset or a broken pipe."""
        msg_id = None
        with trio.move_on_after(REFUSE_READ_S):
            msg_id = await _request_id(stream)
        await _tell_and_close(stream, msg_id, *_full(admission, limit=limit))

    await serve_admitted(
        listener,
        handle,
        admission=admission,
        refuse=refuse,
        name="editor socket",
        task_status=task_status,
    )


def remove_socket(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


__all__ = [
    "Session",
    "SocketInUse",
    "bind_socket",
    "remove_socket",
    "serve_editor_socket",
    "serve_mcp_session",
]
