"""The editor socket: JSON-RPC 2.0 with Content-Length frames over a Unix socket.

This is what Emacs's jsonrpc.el, vscode-jsonrpc and hive_rpc's own CLI connect to.
Per connection: one reader task, one send lock, a nursery for the requests in flight
(long polls must not hold up the reader), and at most one subscription forwarder
(prompts, and beside them the store's health).

The hub may also send requests to a client (``Session.request``): an Emacs that
called ``hive/offerDelivery`` is asked ``hive/bufferState`` and ``hive/deliver`` by
the relay.  The hub's ids are strings ``"hub-N"``, unique per connection; responses
are matched to their waiter by id, a response nobody waits for is dropped, and when
the connection ends every waiter fails with ``PeerClosed``.

Bad input stays with the connection that sent it: a bad message gets its JSON-RPC
error and the connection carries on; a broken frame gets one error and the
connection closes; an exception in a handler becomes an internal error for that
request only.  A client that stops reading for ``SEND_TIMEOUT_S`` is disconnected
rather than allowed to hold the hub's memory.

Connections are capped (``connection_cap``: core/limits.py's ``connections``, lower
when the fd limit is): one over the cap gets a single -32011 error and is closed.
If accept still fails for want of descriptors (EMFILE: fds held elsewhere), the hub
says so once and accepts again when a connection closes (faces/accept_loop.py).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import os
import shutil
import socket as stdlib_socket
import tempfile
from pathlib import Path
from typing import Any

import trio

from hive_rpc.core import limits
from hive_rpc.core.errors import HiveError, InvalidParams
from hive_rpc.faces.accept_loop import connection_cap, serve_bounded
from hive_rpc.protocol.framing import MAX_BODY_BYTES, encode_frame
from hive_rpc.protocol.jsonrpc import (
    OVERLOADED,
    PARSE_ERROR,
    Endpoint,
    ErrorResponse,
    FramingError,
    Notification,
    Request,
    Response,
    RpcError,
    dumps,
)
from hive_rpc.registry import Watch
from hive_rpc.relay.consent import CALLER, Caller, peer_pid
from hive_rpc.relay.emacs import PeerClosed, PeerRefused, PeerTimeout
from hive_rpc.reply_waiter import ReplyWaiter
from hive_rpc.service import METHODS, HubService, check_params

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = limits.MAX_IN_FLIGHT
"""Requests one connection may have running at once (long polls included)."""
SEND_TIMEOUT_S = 30.0
SEND_CHUNK = 65536
"""A client must take this much of a frame every SEND_TIMEOUT_S to stay connected."""
EOF_GRACE_S = 30.0
"""After the client closes its side, how long requests it already sent may still run."""
RECEIVE_CHUNK = 65536
OFFER_DELIVERY = "hive/offerDelivery"
"""Handled here, not in ``service.METHODS``: it is about this connection."""
HEALTH = "hive/health"
"""Notification to subscribers: ``{"degraded": str | None}`` when the store's state
changes (the registry's ``health``)."""


def _only_disconnects(error: BaseException) -> bool:
    """True if ``error`` (or every leaf of an exception group) is the peer going away."""
    if isinstance(error, BaseExceptionGroup):
        _, rest = error.split((trio.BrokenResourceError, trio.ClosedResourceError))
        return rest is None
    return isinstance(error, trio.BrokenResourceError | trio.ClosedResourceError)


class Session:
    """One client connection."""

    def __init__(
        self, stream: trio.abc.Stream, service: HubService, *, max_body: int = MAX_BODY_BYTES
    ) -> None:
        self._stream = stream
        self._service = service
        self._endpoint = Endpoint(max_body)
        self._send_lock = trio.StrictFIFOLock()
        self._in_flight = 0
        self._idle = trio.Event()
        self._idle.set()
        self._subscription: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        self._ids = itertools.count(1)
        self._waiters: dict[str | int, ReplyWaiter] = {}
        self._closed = False

    async def run(self) -> None:
        """Serve until the client hangs up or breaks framing.  Never raises."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                drain = await self._read_loop(nursery)
                # Nothing more can come from the client: no response will arrive.
                self._close_requests()
                if drain:
                    await self._drain()
                nursery.cancel_scope.cancel()
        except* Exception as group:
            # except*, not except: when the hub is being cancelled the nursery raises
            # a BaseExceptionGroup of Cancelled and the peer's reset, which a plain
            # ``except Exception`` lets through; the reset then crashed the hub.
            if not _only_disconnects(group):
                log.exception("editor socket connection failed")
        finally:
            self._close_requests()
            with trio.move_on_after(1) as cleanup:
                cleanup.shield = True
                await self._stream.aclose()

    async def _drain(self) -> None:
        """The client closed its side: stop notifications, but let requests already
        received finish (``printf ... | nc -U`` gets its answers), within a grace time."""
        if self._subscription is not None:
            self._subscription.cancel()
        with trio.move_on_after(EOF_GRACE_S):
            await self._idle.wait()

    async def _read_loop(self, nursery: trio.Nursery) -> bool:
        """Read and dispatch until the client closes its side (True: drain what is in
        flight) or breaks framing (False: answer that, then close at once)."""
        while True:
            data = await self._stream.receive_some(RECEIVE_CHUNK)
            if not data:
                return True
            for msg in self._endpoint.receive_data(data):
                if isinstance(msg, FramingError):
                    await self._send(self._endpoint.error(None, PARSE_ERROR, str(msg)))
                    return False
                if isinstance(msg, Response | ErrorResponse):
                    self._settle(msg)
                elif isinstance(msg, RpcError) and msg.id is not None and msg.id in self._waiters:
                    # A malformed response to the hub's request: never answer a response.
                    self._waiters[msg.id].settle(
                        error=PeerRefused(msg.code, f"unreadable response: {msg.message}")
                    )
                elif isinstance(msg, RpcError):
                    await self._send(self._endpoint.error(msg.id, msg.code, msg.message, msg.data))
                elif isinstance(msg, Request):
                    if self._in_flight >= MAX_IN_FLIGHT:
                        await self._send(
                            self._endpoint.error(
                                msg.id,
                                OVERLOADED,
                                f"more than {MAX_IN_FLIGHT} requests in flight on this "
                                "connection; wait for some to finish",
                            )
                        )
                        continue
                    self._in_flight += 1
                    self._idle = trio.Event()
                    nursery.start_soon(self._handle_request, msg)
                elif isinstance(msg, Notification):
                    nursery.start_soon(self._handle_notification, msg)

    def _settle(self, msg: Response | ErrorResponse) -> None:
        """Hand a response to the request of the hub it answers; drop it if none waits
        (it timed out, or the id is not one of the hub's)."""
        waiter = self._waiters.get(msg.id) if msg.id is not None else None
        if waiter is None:
            log.debug("dropped a response with id %r that no request waits for", msg.id)
        elif isinstance(msg, Response):
            waiter.settle(result=msg.result)
        else:
            waiter.settle(error=PeerRefused(msg.code, msg.message, msg.data))

    def _close_requests(self) -> None:
        """No response can come any more: fail every waiter, leave the delivery peers."""
        self._closed = True
        self._service.delivery_peers.remove(self)
        for waiter in self._waiters.values():
            waiter.settle(error=PeerClosed("the connection closed before Emacs answered"))

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        """Send request ``method`` to the client and return its result.

        PeerRefused carries the client's error; PeerTimeout after ``timeout_s`` seconds
        (a late response is dropped); PeerClosed if the connection is or becomes closed.
        """
        if self._closed:
            raise PeerClosed("the connection is closed")
        msg_id = f"hub-{next(self._ids)}"
        waiter = self._waiters[msg_id] = ReplyWaiter()
        try:
            frame = encode_frame(
                dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            )
            try:
                await self._send(frame)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                # Perhaps half a frame went out: the stream cannot be used again.
                self._close_requests()
                with trio.move_on_after(1) as cleanup:
                    cleanup.shield = True
                    await self._stream.aclose()
                raise PeerClosed("the connection closed before the request was sent") from None
            with trio.move_on_after(timeout_s):
                await waiter.done.wait()
            if not waiter.done.is_set():
                raise PeerTimeout(f"no answer to {method} within {timeout_s:g}s")
            return waiter.outcome()
        finally:
            del self._waiters[msg_id]

    async def _send(self, data: bytes) -> None:
        """Write one whole frame.  Shielded so that a cancelled sender (unsubscribe, a
        finished request) never leaves half a frame on the wire; bounded so that a
        client that stops reading is disconnected: the deadline is per SEND_CHUNK, so
        a client that keeps reading is never cut off, however large the reply."""
        async with self._send_lock:
            view = memoryview(data)
            with trio.CancelScope(shield=True) as scope:
                for start in range(0, len(view), SEND_CHUNK):
                    scope.deadline = trio.current_time() + SEND_TIMEOUT_S
                    await self._stream.send_all(view[start : start + SEND_CHUNK])
            if scope.cancelled_caught:
                log.warning("client stopped reading for %ss; disconnecting", SEND_TIMEOUT_S)
                raise trio.BrokenResourceError("client stopped reading")

    async def _handle_request(self, req: Request) -> None:
        try:
            if req.method == "hive/subscribe":
                await self._subscribe(req)
                return
            try:
                result = await self._call(req.method, req.params)
            except HiveError as e:
                await self._send(self._endpoint.error(req.id, e.code, e.message, e.data))
            except Exception as e:
                log.exception("internal error in %s", req.method)
                await self._send(self._endpoint.internal_error(req.id, req.method, e))
            else:
                await self._send(self._endpoint.result(req.id, result))
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        if method == OFFER_DELIVERY:
            if params:
                raise InvalidParams(
                    f"{method}: unknown parameter {', '.join(map(repr, sorted(params)))}; "
                    "accepted: none",
                    method=method,
                )
            if not self._closed:
                self._service.delivery_peers.add(self)
            return {"offered": True}
        if method == "hive/unsubscribe":
            check_params(method, params)
            was = self._subscription is not None
            if self._subscription is not None:
                self._subscription.cancel()
                self._subscription = None
            return {"subscribed": False, "was_subscribed": was}
        # Who sent it, from the kernel (relay/consent.py): this request's task only.
        CALLER.set(Caller(pid=self._peer_pid(), peer=self))
        return await self._service.call(method, params)

    def _peer_pid(self) -> int | None:
        sock = getattr(self._stream, "socket", None)
        if sock is None or sock.family != stdlib_socket.AF_UNIX:
            return None
        return peer_pid(sock)

    async def _handle_notification(self, note: Notification) -> None:
        spec = METHODS.get(note.method)
        if spec is None or not spec.notification_ok:
            return  # JSON-RPC: a notification is never answered, even when wrong
        try:
            await self._service.call(note.method, note.params)
        except HiveError as e:
            log.debug("notification %s refused: %s", note.method, e.message)
        except Exception:
            # Nobody to answer, and the session must go on (the store failing a
            # typing write must not end an editor's connection).
            log.exception("internal error in notification %s", note.method)

    async def _subscribe(self, req: Request) -> None:
        try:
            check_params(req.method, req.params)
        except HiveError as e:
            await self._send(self._endpoint.error(req.id, e.code, e.message, e.data))
            return
        if self._subscription is not None:
            await self._send(self._endpoint.result(req.id, {"subscribed": True, "pending": None}))
            return
        # Claimed before the first checkpoint, so a second subscribe in flight sees it.
        scope = self._subscription = trio.CancelScope()
        # The watch starts now, so the answer can say how many prompts will follow and
        # nothing that changes while it is being sent is missed; an unsubscribe that
        # overtakes it cancels the forwarder, never the answer.
        resources = contextlib.ExitStack()
        watch = resources.enter_context(self._service.registry.watch())
        try:
            await self._send(
                self._endpoint.result(req.id, {"subscribed": True, "pending": len(watch.pending)})
            )
        except BaseException:
            resources.close()
            raise
        assert self._nursery is not None
        self._nursery.start_soon(self._forward, watch, resources, scope)

    async def _forward(
        self, watch: Watch, resources: contextlib.ExitStack, scope: trio.CancelScope
    ) -> None:
        with resources, scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._forward_health)
                async with contextlib.aclosing(self._service.notifications(watch)) as notes:
                    async for method, params in notes:
                        await self._send(self._endpoint.notify(method, params))
                nursery.cancel_scope.cancel()
            # The registry ended the subscription: this client fell too far behind.
            log.warning("subscriber fell behind; closing its connection so it resubscribes")
            await self._stream.aclose()

    async def _forward_health(self) -> None:
        """``hive/health`` each time the store's state changes (and at once if it is
        degraded when the subscription starts): beside the prompts, not among them,
        since it is no prompt's change.  Ends with the subscription."""
        told: str | None = None
        while True:
            told = await self._service.registry.health(told)
            await self._send(self._endpoint.notify(HEALTH, {"degraded": told}))


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


async def _refuse(stream: trio.abc.Stream, cap: int) -> None:
    """Tell a client over the cap why, in one frame, and close: no reading, bounded."""
    with trio.move_on_after(1):
        frame = Endpoint().error(
            None,
            OVERLOADED,
            f"the hub serves {cap} connections at once, its limit (connections); "
            "close one and connect again",
            {"kind": "limit_reached", "limit": "connections", "max": cap},
        )
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
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve connections from ``listener`` (see ``bind_socket``) until cancelled,
    at most ``max_connections`` (default ``connection_cap()``) at once."""
    cap = max_connections or connection_cap()

    async def handle(stream: trio.SocketStream) -> None:
        await Session(stream, service).run()

    await serve_bounded(
        listener, handle, cap=cap, refuse=_refuse, name="editor socket", task_status=task_status
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
]
