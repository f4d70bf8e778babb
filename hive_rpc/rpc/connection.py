"""One JSON-RPC connection over a trio stream, for both ends of the editor socket.

The hub's side of each editor connection (faces/editor_socket.py), the link a face
keeps to the hub (hub_connection.py) and the CLI's client (client.py) are thin users
of ``RpcConnection``; what they share is written once, here:

* **one reader**, feeding the sans-IO ``Endpoint`` and routing what it decodes:
  replies to the requests this side sent (each waits on a ``ReplyWaiter`` under its
  id), the peer's requests (run as tasks, at most ``max_in_flight`` at once, through
  ``dispatch`` so every failure gets its tier's error), the peer's notifications (to
  ``on_notification``, in order) and unreadable messages (answered, never dropped in
  silence);
* **one send**: whole frames under a FIFO lock, shielded so that a cancelled sender
  (a tool call given up, an unsubscribe) never leaves half a frame on a stream other
  calls share, and bounded per ``SEND_CHUNK`` so that a peer that stops reading is
  disconnected instead of holding this side for ever;
* **the end**: when the peer closes its side, requests it already sent may finish
  (``eof_grace_s``; ``printf ... | nc -U`` gets its answers), every request of ours
  fails at once with the ``closed`` error, and the stream is closed, bounded.

A sequential user (the CLI) need not run the reader as a task: ``request`` then
reads inline until its reply comes (``pump``), with the same routing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

from hive_rpc.core import limits
from hive_rpc.core.errors import HiveError
from hive_rpc.protocol.framing import MAX_BODY_BYTES
from hive_rpc.protocol.jsonrpc import (
    METHOD_NOT_FOUND,
    OVERLOADED,
    PARSE_ERROR,
    Endpoint,
    ErrorResponse,
    FramingError,
    Notification,
    Request,
    Response,
    RpcError,
)
from hive_rpc.rpc.dispatch import dispatch
from hive_rpc.rpc.reply_waiter import ReplyWaiter

log = logging.getLogger(__name__)

SEND_TIMEOUT_S = 30.0
SEND_CHUNK = 65536
"""A peer must take this much of a frame every SEND_TIMEOUT_S to stay connected."""
RECEIVE_CHUNK = 65536
EOF_GRACE_S = 30.0
"""After the peer closes its side, how long requests it already sent may still run."""
CLOSE_TIMEOUT_S = 1.0

Params = dict[str, Any]
Handler = Callable[[str, Params], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ThenStart:
    """A handler's result with a task to start once that result is on the wire: a
    subscription's notifications must come after the answer that announces them."""

    result: Any
    task: Callable[[], Awaitable[None]]


class PeerStoppedReading(trio.BrokenResourceError):
    """The peer took no part of a frame for the writer's timeout: disconnected."""


class FrameWriter:
    """Whole frames onto one stream, for every connection of the hub that writes
    from several tasks (JSON-RPC here, EPC): under a FIFO lock, so frames never
    interleave; shielded, so that a cancelled sender (a tool call given up, an
    unsubscribe) never leaves half a frame on a stream others share; bounded per
    ``SEND_CHUNK``, so that a peer that stops reading is disconnected (the stream is
    closed and ``PeerStoppedReading`` raised) while one that keeps reading is never
    cut off, however large the frame."""

    def __init__(self, stream: trio.abc.SendStream, timeout_s: float | None = None) -> None:
        self.stream = stream
        self.timeout_s = SEND_TIMEOUT_S if timeout_s is None else timeout_s
        self._lock = trio.StrictFIFOLock()

    async def send(self, frame: bytes | bytearray) -> None:
        async with self._lock:
            view = memoryview(frame)
            with trio.CancelScope(shield=True) as scope:
                for start in range(0, len(view), SEND_CHUNK):
                    scope.deadline = trio.current_time() + self.timeout_s
                    await self.stream.send_all(view[start : start + SEND_CHUNK])
            if scope.cancelled_caught:
                log.warning("peer stopped reading for %ss; disconnecting", self.timeout_s)
                with trio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
                    await self.stream.aclose()
                raise PeerStoppedReading(f"the peer did not read for {self.timeout_s:g} s")


def only_disconnects(error: BaseException) -> bool:
    """True if ``error`` (or every leaf of an exception group) is the peer going away."""
    if isinstance(error, BaseExceptionGroup):
        _, rest = error.split((trio.BrokenResourceError, trio.ClosedResourceError))
        return rest is None
    return isinstance(error, trio.BrokenResourceError | trio.ClosedResourceError)


def _refused(msg: ErrorResponse | RpcError) -> Exception:
    return HiveError.from_wire(msg.code, msg.message, msg.data)


class RpcConnection:
    """Both directions of one JSON-RPC stream; see the module's docstring.

    ``handler`` runs the peer's requests (None: this side serves none, and says so
    with -32601); ``on_notification`` takes the peer's notifications in order;
    ``on_unmatched`` takes replies no request of ours waits for (the CLI's raw test
    frames).  ``refused`` turns the peer's error reply into the exception ``request``
    raises; ``closed`` builds the one raised when no reply can come any more.
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        *,
        closed: Callable[[str], Exception],
        max_body: int = MAX_BODY_BYTES,
        handler: Handler | None = None,
        on_notification: Callable[[Notification], None] | None = None,
        on_unmatched: Callable[[Response | ErrorResponse | RpcError], None] | None = None,
        refused: Callable[[ErrorResponse | RpcError], Exception] = _refused,
        id_prefix: str | None = None,
        max_in_flight: int = limits.MAX_IN_FLIGHT,
        send_timeout_s: float | None = None,
        eof_grace_s: float | None = None,
    ) -> None:
        self.stream = stream
        self.endpoint = Endpoint(max_body, id_prefix=id_prefix)
        self._closed_error = closed
        self._handler = handler
        self._on_notification = on_notification
        self._on_unmatched = on_unmatched
        self._refused = refused
        self._max_in_flight = max_in_flight
        # Read when the connection is made, so that a test may lower the default
        # (the send timeout likewise, in FrameWriter).
        self._eof_grace_s = EOF_GRACE_S if eof_grace_s is None else eof_grace_s
        self._writer = FrameWriter(stream, send_timeout_s)
        self._waiters: dict[int | str, ReplyWaiter] = {}
        self._in_flight = 0
        self._idle = trio.Event()
        self._idle.set()
        self._ended: Exception | None = None
        self._ended_event = trio.Event()
        self._reading = False
        self._stop_reading = False
        self._nursery: trio.Nursery | None = None
        self.on_eof: Callable[[], None] | None = None
        """Called when the peer closes its side, before the grace for its requests
        (the editor socket stops a subscription's notifications there)."""
        self.messages_in = 0
        self.frames_out = 0

    # --- state -------------------------------------------------------------------------

    @property
    def ended(self) -> Exception | None:
        """Why no reply can come any more, once that is so; else None."""
        return self._ended

    async def wait_ended(self) -> None:
        await self._ended_event.wait()

    @property
    def nursery(self) -> trio.Nursery:
        """The nursery of ``run``: tasks that live as long as the connection."""
        if self._nursery is None:
            raise RuntimeError("the connection is not running")
        return self._nursery

    def statistics(self) -> dict[str, Any]:
        return {
            "in_flight": self._in_flight,
            "awaiting_replies": len(self._waiters),
            "messages_in": self.messages_in,
            "frames_out": self.frames_out,
            "ended": None if self._ended is None else str(self._ended),
        }

    def end(self, why: str | Exception) -> None:
        """No reply can come any more: fail every request of ours waiting, once."""
        if self._ended is None:
            self._ended = why if isinstance(why, Exception) else self._closed_error(why)
        self._ended_event.set()
        for waiter in self._waiters.values():
            waiter.settle(error=self._ended)

    async def aclose(self) -> None:
        """Close the stream, bounded and shielded (a cancelled caller still closes it)."""
        with trio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
            await self.stream.aclose()

    # --- running -----------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read and route until the peer hangs up or breaks framing.  Never raises for
        the peer going away; a bug is logged.  The stream is closed on return.
        Start it with ``nursery.start``: once started, ``request`` leaves the reading
        to it (two readers of one stream would be an error)."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._reading = True
                task_status.started()
                drain = await self._read_loop()
                self.end("the connection closed")
                if drain:
                    if self.on_eof is not None:
                        self.on_eof()
                    with trio.move_on_after(self._eof_grace_s):
                        await self._idle.wait()
                nursery.cancel_scope.cancel()
        except* Exception as group:
            # except*, not except: when the owner is being cancelled the nursery raises
            # a BaseExceptionGroup of Cancelled and the peer's reset, which a plain
            # ``except Exception`` lets through.
            if not only_disconnects(group):
                log.exception("JSON-RPC connection failed")
        finally:
            self._reading = False
            self.end("the connection closed")
            await self.aclose()

    async def _read_loop(self) -> bool:
        """True: the peer closed its side (drain); False: stop at once."""
        while not self._stop_reading:
            if not await self.pump():
                return not self._stop_reading
        return False

    async def pump(self) -> bool:
        """Read once and route what came; False once nothing more can be read."""
        try:
            data = await self.stream.receive_some(RECEIVE_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if not data:
            self.end("the connection closed")
            return False
        for msg in self.endpoint.receive_data(data):
            self.messages_in += 1
            if isinstance(msg, FramingError):
                await self._broken_framing(msg)
                return False
            await self._route(msg)
        return True

    async def _broken_framing(self, error: FramingError) -> None:
        self._stop_reading = True
        if self._handler is not None:  # a server says why before it hangs up
            await self._send_quietly(self.endpoint.error(None, PARSE_ERROR, str(error)))
        self.end(f"unreadable frame: {error}")

    async def _route(
        self, msg: Request | Notification | Response | ErrorResponse | RpcError
    ) -> None:
        if isinstance(msg, Response | ErrorResponse):
            self._settle(msg)
        elif isinstance(msg, RpcError):
            await self._unreadable(msg)
        elif isinstance(msg, Request):
            await self._start_request(msg)
        elif self._on_notification is not None:
            self._on_notification(msg)

    def _settle(self, msg: Response | ErrorResponse) -> None:
        waiter = self._waiters.get(msg.id) if msg.id is not None else None
        if waiter is None:
            self._unmatched(msg)
        elif isinstance(msg, Response):
            waiter.settle(result=msg.result)
        else:
            waiter.settle(error=self._refused(msg))

    def _unmatched(self, msg: Response | ErrorResponse | RpcError) -> None:
        """A reply no request of ours waits for.  An error with no id is about a
        message the peer (or this side) could not read: ours, but which one is
        unknowable, so every request waiting fails rather than waits for ever."""
        if isinstance(msg, ErrorResponse | RpcError) and msg.id is None and self._waiters:
            for waiter in self._waiters.values():
                waiter.settle(error=self._refused(msg))
        elif self._on_unmatched is not None:
            self._on_unmatched(msg)
        else:
            log.debug("dropped a reply with id %r that no request waits for", msg.id)

    async def _unreadable(self, msg: RpcError) -> None:
        """A message that could not be used.  A reply to one of our requests fails that
        request, and on a side that serves no requests it is a reply (the CLI's
        oversized one): neither is ever answered.  A server tells the peer."""
        if msg.id is not None and msg.id in self._waiters:
            self._waiters[msg.id].settle(error=self._refused(msg))
        elif self._handler is None:
            self._unmatched(msg)
        else:
            await self._send_quietly(self.endpoint.error(msg.id, msg.code, msg.message, msg.data))

    async def _start_request(self, req: Request) -> None:
        if self._handler is None:
            await self._send_quietly(
                self.endpoint.error(
                    req.id, METHOD_NOT_FOUND, f"this side serves no requests ({req.method})"
                )
            )
            return
        if self._in_flight >= self._max_in_flight:
            await self._send_quietly(
                self.endpoint.error(
                    req.id,
                    OVERLOADED,
                    f"more than {self._max_in_flight} requests in flight on this "
                    "connection; wait for some to finish",
                )
            )
            return
        self._in_flight += 1
        self._idle = trio.Event()
        self.nursery.start_soon(self._serve, req, self._handler)

    async def _serve(self, req: Request, handler: Handler) -> None:
        then: Callable[[], Awaitable[None]] | None = None
        try:
            try:
                result = await dispatch(handler, req.method, req.params)
            except HiveError as e:
                frame = self.endpoint.error(req.id, e.code, e.message, e.data)
            else:
                if isinstance(result, ThenStart):
                    result, then = result.result, result.task
                frame = self.endpoint.result(req.id, result)
            await self.send(frame)
            if then is not None:
                self.nursery.start_soon(then)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    # --- sending -----------------------------------------------------------------------

    async def send(self, frame: bytes) -> None:
        """Write one whole frame (``FrameWriter``); a peer that stops reading ends the
        connection: BrokenResourceError."""
        try:
            await self._writer.send(frame)
        except PeerStoppedReading:
            self.end(f"the peer did not read for {self._writer.timeout_s:g} s")
            raise
        self.frames_out += 1

    async def _send_quietly(self, frame: bytes) -> None:
        """Send a frame nobody waits on; a peer already gone is no error here."""
        try:
            await self.send(frame)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._stop_reading = True

    async def notify(self, method: str, params: Params | None = None) -> None:
        await self.send(self.endpoint.notify(method, params))

    async def request(self, method: str, params: Params | None = None) -> Any:
        """Send a request and return the peer's result; raises what ``refused`` builds
        for an error reply, and the ``closed`` error if the connection ends first.
        Without a running reader (the CLI), reads inline until the reply comes."""
        if self._ended is not None:
            raise self._ended
        msg_id, frame = self.endpoint.request(method, params)
        waiter = self._waiters[msg_id] = ReplyWaiter()
        try:
            try:
                await self.send(frame)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                # Perhaps half a frame went out: the stream cannot be used again.
                self.end("the connection closed before the request was sent")
                await self.aclose()
            if self._reading:
                await waiter.done.wait()
            else:
                while not waiter.done.is_set() and await self.pump():
                    pass
            if not waiter.done.is_set():
                waiter.settle(error=self._ended or self._closed_error("the connection closed"))
            return waiter.outcome()
        finally:
            del self._waiters[msg_id]


__all__ = [
    "SEND_TIMEOUT_S",
    "FrameWriter",
    "PeerStoppedReading",
    "RpcConnection",
    "ThenStart",
    "only_disconnects",
]
