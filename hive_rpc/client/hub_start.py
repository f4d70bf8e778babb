"""Starting a hub in the background for a client that found none (emacsclient's way).

Both clients autostart: the trio one (client.py) and the blocking one of the one-shot
commands (sync_client.py).  What they share lives here, without trio, so a one-shot
command that starts a hub still loads no event loop: start the process,
and read what went wrong from its log when it does not come up.  Each client waits
on the ready pipe its own way.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from hive_rpc.core.errors import HubUnreachable
from hive_rpc.host.paths import (
    LOG_NAME,
    DataDirUnusable,
    cannot_write,
    default_socket,
    prepare_socket_dir,
    usable_data_dir,
)

START_TIMEOUT_S = 15.0
"""How long a started hub may take to listen before the client gives up on it."""


def spawn_hub(socket: Path, data_dir: Path, extra_args: list[str] | None = None) -> tuple[int, int]:
    """Start ``hive-rpc serve`` in its own session, logging to the data dir.

    Returns the read end of a pipe the child closes once it listens (or dies), and
    the log's size before the child started: what follows is this start's own output.
    posix_spawn rather than Popen: the hub outlives us, so there is no child object
    to wait on or to warn about at exit.  ``setsid`` puts it in a session of its own,
    so the starter's terminal hanging up, or its process group being killed (Emacs
    exiting, a shell closing), does not reach it, as with ``emacs --daemon``.
    """
    # The hub leaves our working directory (it goes to /, so it holds no directory
    # busy and a relative path cannot mean another place later): absolute paths.
    socket, data_dir = socket.absolute(), data_dir.absolute()
    prepare_socket_dir(socket)
    usable_data_dir(data_dir)
    try:
        log_fd = os.open(data_dir / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as e:  # a read-only data dir: say which and what to do
        raise DataDirUnusable(cannot_write(data_dir, e)) from None
    read_fd, write_fd = os.pipe()
    try:
        log_offset = os.fstat(log_fd).st_size
        os.set_inheritable(write_fd, True)
        argv = [
            sys.executable,
            # -P: no working directory on sys.path, or a client run inside some other
            # checkout (any folder holding a hive_rpc/) would start that code's hub.
            "-P",
            "-m",
            "hive_rpc",
            "serve",
            "--socket",
            os.fspath(socket),
            "--data-dir",
            os.fspath(data_dir),
            "--ready-fd",
            str(write_fd),
            *(extra_args or []),
        ]
        os.posix_spawn(
            sys.executable,
            argv,
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, log_fd, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(write_fd)
        os.close(log_fd)
    return read_fd, log_offset


_ERROR_LINE = re.compile(
    r"^hive-rpc: |\b(ERROR|CRITICAL)\b|^[A-Za-z_][\w.]*(Error|Exception|Exit)\b"
)


_TRACE_MARGIN = re.compile(r"^[\s|]+")
_WORDS = re.compile(r"[A-Za-z]")
"""A line worth quoting says something: not only box drawing and numbers."""


def start_failure_cause(log: Path, offset: int) -> str | None:
    """The last error line the hub wrote to ``log`` after ``offset`` (this start's
    own output, not an older hub's), else its last line, else None."""
    try:
        with log.open("rb") as f:
            f.seek(offset)
            text = f.read(1 << 20).decode(errors="replace")
    except OSError:
        return None
    # An exception group's traceback draws boxes: "  | OSError: ...", "+-+---- 1 ----".
    lines = [_TRACE_MARGIN.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if _WORDS.search(line)]
    errors = [line for line in lines if _ERROR_LINE.search(line)]
    if not (errors or lines):
        return None
    return (errors or lines)[-1].removeprefix("hive-rpc: ")


def why_not_started(log: Path, offset: int, *, gave_up_after: float | None) -> str:
    """Why the hub started on this log did not answer, for HubUnreachable: it did not
    come up within ``gave_up_after`` seconds (None: it exited first), in its own last
    words when the log has them."""
    cause = start_failure_cause(log, offset)
    if gave_up_after is not None:
        why = f"it did not come up within {gave_up_after:g} s"
        return why + (f" (its last words: {cause})" if cause else "")
    return cause or "it exited without saying why"


class HubStopped(HubUnreachable):
    """No hub answers because the human stopped it on purpose: an autostart does not
    start it again (start_record.py); the message says how to."""


def stopped_on_purpose(socket: Path) -> HubStopped | None:
    """HubStopped, saying when and how the hub of ``socket`` was stopped and how to
    start it again, if it was stopped on purpose; else None."""
    from hive_rpc.client import start_record

    mark = start_record.stopped(socket)
    if mark is None:
        return None
    where = "" if socket.absolute() == default_socket().absolute() else f" --socket {socket}"
    return HubStopped(
        f"the hub on {socket} was stopped on purpose ({mark}) and is not started again by "
        f"itself: start it with `hive-rpc restart{where}` (as it last ran) or "
        f"`hive-rpc serve{where}`, or in Emacs with M-x hive-rpc-start-hub"
    )


def as_last_started(
    socket: Path, data_dir: Path, extra_args: list[str] | None, *, autostart: bool = True
) -> tuple[Path, list[str] | None]:
    """The data dir and ``serve`` arguments to start a hub with: the caller's, or
    with nothing of its own to say, those the hub was last started with on this socket
    or data dir (its store: a NATS hub must not come back as a SQLite one;
    start_record.py).  For an ``autostart`` (a client that found no hub), HubStopped
    when the hub was stopped on purpose."""
    if autostart and (stopped := stopped_on_purpose(socket)) is not None:
        raise stopped
    if extra_args is None:
        from hive_rpc.client import start_record

        last = start_record.for_autostart(socket, data_dir)
        if last is not None:
            return last.data_dir, last.serve_args
    return data_dir, extra_args
