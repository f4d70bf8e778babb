"""Accepting connections without flooding the log or running out of descriptors.

``trio.serve_listeners`` logs a traceback and retries every 0.1 s when accept fails
for want of descriptors (EMFILE): at the fd limit a hub's log grew 8 KB/s.
``serve_bounded``, used by the EPC face, says so once, waits for one of its own
connections to close (or ``ACCEPT_RETRY_S``), and carries on; and it serves at most
``cap`` connections at once, handing each one over the cap to a ``refuse`` that
tells that client why in its own protocol.

``serve_admitted``, used by the editor socket, does the same with ``Admission``'s
rules, so that one process cannot lock everyone out: per-peer caps keyed
by what the kernel says of the peer (``peer_key``), connections that never sent a
request closed first to make room, and a reserve beyond the cap for approvers.

The HTTP face's server (hypercorn) runs ``trio.serve_listeners`` itself; for it,
``QuietAcceptErrors`` folds that logger's repeats into one line a minute.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import socket
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import trio

from hive_rpc.core import limits
from hive_rpc.host.peercred import peer_credentials
from hive_rpc.relay.proc import stat

log = logging.getLogger(__name__)

FD_RESERVE = 64
"""Descriptors kept back from the connection cap for the store, logs, the HTTP face
and the relay's subprocesses."""
ACCEPT_RETRY_S = 1.0
"""Out of descriptors with no connection of ours to wait for (someone else holds
them): try accept again after this long."""
NO_FDS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
"""What accept(2) fails with when the process or the system is out of resources."""


def connection_cap() -> int:
    """The most connections to serve at once: the ``connections`` limit, or fewer
    when the process's fd limit would run out first."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limits.MAX_CONNECTIONS
    return max(1, min(limits.MAX_CONNECTIONS, soft - FD_RESERVE))


def split_descriptors(soft: int | None = None) -> tuple[int, int]:
    """The editor socket's cap and reserve (``Admission``) for an fd limit of
    ``soft`` (default: this process's): the ``connections`` and
    ``connections_reserved`` limits, or, when descriptors are fewer, a quarter of
    what ``FD_RESERVE`` leaves for the reserve and the rest for the cap."""
    if soft is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limits.MAX_CONNECTIONS, limits.RESERVED_CONNECTIONS
    free = max(2, soft - FD_RESERVE)
    reserve = max(1, min(limits.RESERVED_CONNECTIONS, free // 4))
    return min(limits.MAX_CONNECTIONS, free - reserve), reserve


class _Acceptor:
    """``listener.accept()`` that, out of descriptors, logs once, waits for one of its
    own connections to close (``closed_one``) or ``ACCEPT_RETRY_S``, and says when it
    accepts again; ``open_now`` counts the connections open, for those lines."""

    def __init__(
        self, listener: trio.abc.Listener[Any], name: str, open_now: Callable[[], int]
    ) -> None:
        self._listener = listener
        self._name = name
        self._open_now = open_now
        self._closed = trio.Event()
        self._starved = False

    def closed_one(self) -> None:
        self._closed.set()
        self._closed = trio.Event()

    async def accept(self) -> Any:
        while True:
            try:
                stream = await self._listener.accept()
            except OSError as e:
                if e.errno not in NO_FDS:
                    raise
                if not self._starved:
                    log.warning(
                        "%s: accept failed (%s) with %d connections open; accepting "
                        "again when one closes",
                        self._name,
                        os.strerror(e.errno or 0),
                        self._open_now(),
                    )
                    self._starved = True
                with trio.move_on_after(ACCEPT_RETRY_S):
                    await self._closed.wait()
                continue
            if self._starved:
                log.warning(
                    "%s: accepting connections again (%d open)", self._name, self._open_now()
                )
                self._starved = False
            return stream


@dataclass(frozen=True, slots=True)
class ServeStatistics:
    open: int
    """Connections being served now."""
    accepted: int
    """Connections served since the server started (the refused aside)."""
    refused: int
    """Connections over the cap, told why and closed."""


class Served:
    """What a server on ``serve_bounded`` serves: ``statistics()``, and
    ``wait_open(at_most)``, the moment the server has seen enough connections end.

    Why an event: a client of a server at its cap that closes a connection to make
    room may connect again only once the server has seen the close (the close
    travels through the kernel and the handler's task), and without one it could
    only try, be refused, and try again."""

    def __init__(self) -> None:
        self._open = self._accepted = self._refused = 0
        self._changed = trio.Event()

    def statistics(self) -> ServeStatistics:
        return ServeStatistics(open=self._open, accepted=self._accepted, refused=self._refused)

    async def wait_open(self, at_most: int) -> None:
        """Return once at most ``at_most`` connections are open."""
        while self._open > at_most:
            await self._changed.wait()

    def _count(self, *, opened: int = 0, refused: int = 0) -> None:
        self._open += opened
        self._accepted += max(opened, 0)
        self._refused += refused
        self._changed.set()
        self._changed = trio.Event()


async def serve_bounded(
    listener: trio.abc.Listener[Any],
    handle: Callable[[Any], Awaitable[object]],
    *,
    cap: int,
    refuse: Callable[[Any, int], Awaitable[object]],
    name: str,
    served: Served | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept from ``listener`` until cancelled; run ``handle(stream)`` for each
    connection, at most ``cap`` at once, and ``refuse(stream, cap)`` for the rest.
    ``handle`` owns its stream (it closes it); ``name`` says whose accept failed;
    ``served`` counts what is served, for whoever watches (``Served``)."""
    counts = served if served is not None else Served()
    acceptor = _Acceptor(listener, name, lambda: counts.statistics().open)

    async def run(stream: Any) -> None:
        try:
            await handle(stream)
        finally:
            counts._count(opened=-1)
            acceptor.closed_one()

    async with trio.open_nursery() as nursery:
        task_status.started()
        while True:
            stream = await acceptor.accept()
            if counts.statistics().open >= cap:
                counts._count(refused=1)
                nursery.start_soon(refuse, stream, cap)
                continue
            counts._count(opened=1)
            nursery.start_soon(run, stream)


def peer_key(stream: Any) -> Hashable:
    """Who is at the other end of ``stream``, as the kernel says, for per-peer caps:
    its uid and session (``SO_PEERCRED``'s pid, then its session id from
    ``/proc/PID/stat``), never a name the client gives itself.  A session is a
    terminal's (a tmux pane, an Emacs, an agent's shell), so one flooding process
    and every process it starts share one key unless they call ``setsid``; the
    process id stands in where the session cannot be read."""
    sock = getattr(stream, "socket", None)
    if sock is None or sock.family != socket.AF_UNIX:
        return ("unknown",)
    creds = peer_credentials(sock)
    if creds is None:
        return ("unknown",)
    return (creds.uid, session_of(creds.pid))


def session_of(pid: int) -> int | str:
    """The session id of process ``pid`` (``/proc/PID/stat``, field 6), else
    ``"pid N"`` when it cannot be read (it exited, no /proc)."""
    found = stat(pid)
    return found.session if found is not None else f"pid {pid}"


@dataclass(eq=False)
class Ticket:
    """One admitted connection as ``Admission`` sees it."""

    peer: Hashable
    admission: Admission
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    spoken: bool = False
    """Its first frame is whole: it said who it is (a request), so it is not idle."""
    reserve: str | None = None
    """Admitted beyond this limit (``connections`` or ``connections_per_peer``), for
    an approver: until ``proven`` it may only ask ``RESERVE_METHODS``."""
    proven: bool = False
    """It proved to be an approver: never closed to make room."""
    proved: trio.Event = field(default_factory=trio.Event)
    """Set when it proves (``PROOF_WAIT_S``)."""
    closed_for: str | None = None
    """The limit it was closed to make room for (the face tells the client)."""
    told: bool = False
    """The face told the client why it was closed (once)."""

    @property
    def on_probation(self) -> bool:
        return self.reserve is not None and not self.proven

    def spoke(self) -> None:
        self.spoken = True

    def prove(self) -> None:
        self.proven = self.spoken = True
        self.proved.set()


RESERVE_METHODS = frozenset({"hive/status", "hive/proveApprover"})
"""What a connection admitted into the reserve may call before it proves itself:
how an editor, the hook or the CLI finds the token file and proves it.
Notifications (``hive/typing``, ``hive/defer``) pass: they hold nothing, and an
editor sends the ones kept while the hub was away before its proof settles."""
PROOF_WAIT_S = 2.0
"""How long another request from a connection in the reserve waits for its proof
before it is refused: an editor may send it after its next request (Emacs
subscribes once its second ``hive/status`` returns, which may be before the first,
whose answer it proves with), and a proof and a request read together run as two
tasks in either order."""


class Admission:
    """Who gets in when connections are short (without these rules, one process's
    1,000 idle connections locked every client out).  For each new connection, in order:

    1. its peer (``peer_key``) holds ``per_peer`` already: the peer's own oldest
       connection that never sent a request is closed;
    2. the hub holds ``cap``: the oldest connection of anyone's that never sent a
       request is closed;
    3. none is idle (in 1 or 2): it is admitted into the reserve (``reserve``
       more), where it may only ask ``hive/status`` until it proves to be an
       approver; a full reserve closes its oldest unproven connection, else the
       new one is refused (by the limit of 1 or 2).

    So an approver (an editor, the hook, the human's CLI) gets in even from the
    session of an agent that holds its share (the hook runs in Claude Code's).
    Proven approvers are never closed to make room.  Connections closed or refused
    are told why (-32011 naming the limit) by the face."""

    def __init__(self, cap: int, per_peer: int, reserve: int) -> None:
        self.cap, self.per_peer, self.reserve = cap, per_peer, reserve
        self._live: dict[Ticket, None] = {}
        """Every admitted connection, oldest first."""
        self._by_peer: dict[Hashable, dict[Ticket, None]] = {}
        self._pool = 0
        self._reserved = 0

    def __len__(self) -> int:
        return len(self._live)

    def admit(self, peer: Hashable) -> Ticket | str:
        """A ticket for a new connection from ``peer``, or the limit that refuses it."""
        ticket = Ticket(peer, self)
        own = self._by_peer.get(peer, {})
        if len(own) >= self.per_peer:
            victim = _oldest(own, lambda t: not t.spoken)
            if victim is None:
                return self._into_reserve(ticket, "connections_per_peer")
            self._close(victim, "connections_per_peer")
        if self._pool >= self.cap:
            victim = _oldest(self._live, lambda t: not t.spoken and t.reserve is None)
            if victim is None:
                return self._into_reserve(ticket, "connections")
            self._close(victim, "connections")
        self._add(ticket)
        return ticket

    def _into_reserve(self, ticket: Ticket, limit: str) -> Ticket | str:
        if self._reserved >= self.reserve:
            victim = _oldest(self._live, lambda t: t.on_probation)
            if victim is None:
                return limit
            self._close(victim, victim.reserve or limit)
        ticket.reserve = limit
        self._add(ticket)
        return ticket

    def release(self, ticket: Ticket) -> None:
        """The connection ended (or was closed to make room): its slot is free."""
        if ticket not in self._live:
            return  # closed to make room, then ended
        del self._live[ticket]
        own = self._by_peer[ticket.peer]
        del own[ticket]
        if not own:
            del self._by_peer[ticket.peer]
        if ticket.reserve is not None:
            self._reserved -= 1
        else:
            self._pool -= 1

    def _add(self, ticket: Ticket) -> None:
        self._live[ticket] = None
        self._by_peer.setdefault(ticket.peer, {})[ticket] = None
        if ticket.reserve is not None:
            self._reserved += 1
        else:
            self._pool += 1

    def _close(self, ticket: Ticket, limit: str) -> None:
        ticket.closed_for = limit
        ticket.scope.cancel()
        self.release(ticket)


def _oldest(tickets: dict[Ticket, None], fits: Callable[[Ticket], bool]) -> Ticket | None:
    return next((t for t in tickets if fits(t)), None)


REFUSING_MAX = 64
"""Refusals in progress at once (each reads the client's first request, briefly, to
answer it with its id); past it a refused connection is closed without a word."""
REFUSE_READ_S = 1.0
"""How long a refusal waits for the client's first request before it answers."""


async def serve_admitted(
    listener: trio.abc.Listener[Any],
    handle: Callable[[Any, Ticket], Awaitable[object]],
    *,
    admission: Admission,
    refuse: Callable[[Any, str], Awaitable[object]],
    name: str,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """``serve_bounded`` with ``Admission``'s rules: ``handle(stream, ticket)`` runs
    in ``ticket.scope`` (cancelled when the connection is closed to make room: the
    handler tells its client, ``ticket.closed_for``), and ``refuse(stream, limit)``
    for a connection refused."""
    refusing = 0
    acceptor = _Acceptor(listener, name, lambda: len(admission))

    async def run(stream: Any, ticket: Ticket) -> None:
        try:
            await handle(stream, ticket)
        finally:
            admission.release(ticket)
            acceptor.closed_one()

    async def turn_away(stream: Any, limit: str) -> None:
        nonlocal refusing
        try:
            await refuse(stream, limit)
        finally:
            refusing -= 1

    async with trio.open_nursery() as nursery:
        task_status.started()
        while True:
            stream = await acceptor.accept()
            ticket = admission.admit(peer_key(stream))
            if isinstance(ticket, Ticket):
                nursery.start_soon(run, stream, ticket)
            elif refusing < REFUSING_MAX:
                refusing += 1
                nursery.start_soon(turn_away, stream, ticket)
            else:
                await trio.aclose_forcefully(stream)


class QuietAcceptErrors(logging.Filter):
    """For ``trio.serve_listeners``'s logger: its "accept returned EMFILE" error, with a
    traceback, ten times a second while descriptors are short, becomes one warning
    line per ``every_s`` (saying how many were folded in); other records pass.

    At debug level each folded retry is still one short line (``RETRY_LINE``: the
    count since the warning, no traceback), so that whoever debugs a hub short of
    descriptors sees it retry, and a test sees the retries the warning stands for."""

    RETRY_LINE = "accept failed again ({}), folded into the warning above: {} since it"

    def __init__(self, every_s: float = 60.0) -> None:
        super().__init__()
        self.every_s = every_s
        self._last = -float("inf")
        self._folded = 0

    def filter(self, record: logging.LogRecord) -> bool:
        said = record.getMessage()
        if not said.startswith("accept returned"):
            return True
        now = time.monotonic()
        if now - self._last < self.every_s:
            self._folded += 1
            if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
                return False
            why = said.removeprefix("accept returned ").split(" ", 1)[0]
            _plain(record, self.RETRY_LINE.format(why, self._folded), logging.DEBUG)
            return True
        _plain(record, f"{said} ({self._folded} more like it since the last)", logging.WARNING)
        self._last, self._folded = now, 0
        return True


def _plain(record: logging.LogRecord, message: str, level: int) -> None:
    """``record`` says ``message`` at ``level``, without its traceback."""
    record.msg, record.args = message, None
    record.exc_info = record.exc_text = None
    record.levelno, record.levelname = level, logging.getLevelName(level)


TRIO_ACCEPT_LOGGER = "trio.serve_listeners"


def quiet_trio_accept_errors() -> None:
    """Install ``QuietAcceptErrors`` on trio's accept logger, once per process."""
    logger = logging.getLogger(TRIO_ACCEPT_LOGGER)
    if not any(isinstance(f, QuietAcceptErrors) for f in logger.filters):
        logger.addFilter(QuietAcceptErrors())


__all__ = [
    "ACCEPT_RETRY_S",
    "FD_RESERVE",
    "NO_FDS",
    "PROOF_WAIT_S",
    "RESERVE_METHODS",
    "Admission",
    "QuietAcceptErrors",
    "ServeStatistics",
    "Served",
    "Ticket",
    "connection_cap",
    "peer_key",
    "quiet_trio_accept_errors",
    "serve_admitted",
    "serve_bounded",
    "session_of",
    "split_descriptors",
]
