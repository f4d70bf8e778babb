"""Accepting connections without flooding the log or running out of descriptors.

``trio.serve_listeners`` logs a traceback and retries every 0.1 s when accept fails
for want of descriptors (EMFILE): at the fd limit a hub's log grew 8 KB/s.
``serve_bounded``, used by the editor socket and the EPC face, says so once, waits
for one of its own connections to close (or ``ACCEPT_RETRY_S``), and carries on;
and it serves at most ``cap`` connections at once, handing each one over the cap
to a ``refuse`` that tells that client why in its own protocol.

The HTTP face's server (hypercorn) runs ``trio.serve_listeners`` itself; for it,
``QuietAcceptErrors`` folds that logger's repeats into one line a minute.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from hive_rpc.core import limits

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


async def serve_bounded(
    listener: trio.abc.Listener[Any],
    handle: Callable[[Any], Awaitable[object]],
    *,
    cap: int,
    refuse: Callable[[Any, int], Awaitable[object]],
    name: str,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept from ``listener`` until cancelled; run ``handle(stream)`` for each
    connection, at most ``cap`` at once, and ``refuse(stream, cap)`` for the rest.
    ``handle`` owns its stream (it closes it); ``name`` says whose accept failed."""
    live = 0
    closed = trio.Event()

    async def run(stream: Any) -> None:
        nonlocal live, closed
        try:
            await handle(stream)
        finally:
            live -= 1
            closed.set()
            closed = trio.Event()

    async with trio.open_nursery() as nursery:
        task_status.started()
        starved = False
        while True:
            try:
                stream = await listener.accept()
            except OSError as e:
                if e.errno not in NO_FDS:
                    raise
                if not starved:
                    log.warning(
                        "%s: accept failed (%s) with %d connections open; accepting "
                        "again when one closes",
                        name,
                        os.strerror(e.errno or 0),
                        live,
                    )
                    starved = True
                with trio.move_on_after(ACCEPT_RETRY_S):
                    await closed.wait()
                continue
            if starved:
                log.warning("%s: accepting connections again (%d open)", name, live)
                starved = False
            if live >= cap:
                nursery.start_soon(refuse, stream, cap)
                continue
            live += 1
            nursery.start_soon(run, stream)


class QuietAcceptErrors(logging.Filter):
    """For ``trio.serve_listeners``'s logger: its "accept returned EMFILE" error, with a
    traceback, ten times a second while descriptors are short, becomes one warning
    line per ``every_s`` (saying how many were folded in); other records pass."""

    def __init__(self, every_s: float = 60.0) -> None:
        super().__init__()
        self.every_s = every_s
        self._last = -float("inf")
        self._folded = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("accept returned"):
            return True
        now = time.monotonic()
        if now - self._last < self.every_s:
            self._folded += 1
            return False
        record.msg = f"{record.getMessage()} ({self._folded} more like it since the last)"
        record.args = None
        record.exc_info = None
        record.exc_text = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        self._last, self._folded = now, 0
        return True


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
    "QuietAcceptErrors",
    "connection_cap",
    "quiet_trio_accept_errors",
    "serve_bounded",
]
