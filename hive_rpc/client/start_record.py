"""How the hub on a socket was started, so that a hub started again on it is the same.

A client that finds no hub starts one (autostart: the CLI, ``hive-rpc lsp``, ``mcp``,
``epc``), and it knows only its own defaults.  A hub the human started with another
data dir or store (``serve --data-dir D --store nats://...``) that then died would
come back on the defaults: its pending prompts are still in D, but nobody sees them,
and every editor would wait on an empty hub.  So each hub, once it listens, writes
its data dir and ``serve`` options next to its socket (``hub.sock.start.json``, in
the socket's private directory); an autostart that has no options of its own starts
the hub again with those.

The same record is also kept in the data dir (``DATA_DIR/hub.start.json``), because
the one beside the socket is not always there to read: the runtime dir is a tmpfs,
emptied at logout and reboot, and a client may have been given the data dir by hand
(``--data-dir D``, which the socket's record then must match).  A NATS hub that
died and came back as a SQLite hub on the same socket would silently leave the
shared store; with the data dir's record it comes back on NATS, or, when NATS is
down, fails to start and says why (``client.start_and_connect`` quotes its log).

The record also names the socket the hub listens on (``socket``).  The data dir is
found from HOME alone, the runtime dir is not: a client whose host stripped
``XDG_RUNTIME_DIR`` reads the data dir's record to find the user's hub rather than
start a second one (``paths.recorded_socket``, which checks that the socket is ours).

A hub stopped on purpose (SIGINT, SIGTERM, ``hive-rpc stop``) is marked stopped in
the record beside its socket (``stopped_at``, ``stopped_by``): an autostart does not
start it again (hub_start.HubStopped), until an explicit start (``serve``,
``restart``, Emacs's ``hive-rpc-start-hub``) writes a new record without the mark.
A crash (SIGKILL, the OOM killer) leaves no mark, so it is started again as it was.
The mark is kept beside the socket only, not in the data dir: the runtime dir is
emptied at logout and reboot, when every process gets SIGTERM, and the hub the
system stopped then must start again at the next login.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive_rpc.host.paths import (
    DATA_DIR_CHOICE,
    SOCKET_CHOICE,
    START_RECORD_NAME,
    cannot_write,
    default_data_dir,
)

SUFFIX = ".start.json"
DATA_DIR_NAME = START_RECORD_NAME
"""The copy of the record in the data dir, read when the socket's is missing, and by
a client that cannot see the runtime dir (``paths.recorded_socket``)."""
MAX_BYTES = 64 << 10
"""A record is a few hundred bytes; anything larger is not ours."""


@dataclass(frozen=True)
class StartRecord:
    data_dir: Path
    serve_args: list[str]
    """``serve`` options other than ``--socket`` and ``--data-dir``."""


@dataclass(frozen=True)
class Stopped:
    """The mark of a hub stopped on purpose: when, and how (``SIGTERM``, ``SIGINT``,
    ``hive-rpc stop``)."""

    at: float
    by: str

    def __str__(self) -> str:
        how = {"SIGINT": "SIGINT, Ctrl-C", "SIGTERM": "SIGTERM, kill PID"}.get(self.by, self.by)
        return f"{how}, at {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(self.at))}"


def record_path(socket: Path) -> Path:
    return socket.with_name(socket.name + SUFFIX)


def stopped(socket: Path) -> Stopped | None:
    """The stop mark beside ``socket``: set when its hub was stopped on purpose and
    no hub was started on it since; None otherwise (a crash leaves none)."""
    return _mark(_body(record_path(socket)))


def _mark(body: dict[str, Any]) -> Stopped | None:
    at, by = body.get("stopped_at"), body.get("stopped_by")
    if isinstance(at, int | float) and isinstance(by, str):
        return Stopped(float(at), by)
    return None


def mark_stopped(socket: Path, by: str) -> Stopped | None:
    """Mark the hub of ``socket`` stopped on purpose (keeping its record), unless it
    is marked already (``hive-rpc stop`` marks it before the hub gets its SIGTERM):
    the mark in place.  None when it could not be written (a full disk, the socket's
    directory gone): the hub is then started again as after a crash."""
    path = record_path(socket)
    body = _body(path)
    mark = _mark(body)
    if mark is not None:
        return mark
    mark = Stopped(time.time(), by)
    try:
        _write_body(path, {**body, "stopped_at": mark.at, "stopped_by": mark.by})
    except OSError:
        return None
    return mark


def write(socket: Path, record: StartRecord) -> list[str]:
    """Replace the record of ``socket``, beside it and in the record's data dir
    (0600, atomically: a reader sees the old one or the new one).

    What could not be written, one sentence each (none when both were): a hub that
    is up must not stop for its record.  After a crash on a full disk the write fails
    (ENOSPC) while everything else the hub needs is already there; the hub then runs
    degraded, saying which directory is full (``hive/status``), and the old record,
    if any, stays as it was (no temp file is left)."""
    problems = []
    beside_socket = (record_path(socket), "the socket's directory", SOCKET_CHOICE)
    in_data_dir = (record.data_dir / DATA_DIR_NAME, "the data dir", DATA_DIR_CHOICE)
    for path, what, choice in (beside_socket, in_data_dir):
        try:
            _write(path, record, socket)
        except OSError as e:
            why = cannot_write(path.parent, e, what, choice)
            problems.append(f"cannot write {path.name}: {why}")
    return problems


def _write(path: Path, record: StartRecord, socket: Path) -> None:
    _write_body(
        path,
        {
            "data_dir": os.fspath(record.data_dir),
            "serve_args": record.serve_args,
            "socket": os.fspath(socket.absolute()),
        },
    )


def _write_body(path: Path, body: dict[str, Any]) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(body, f)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def read(socket: Path) -> StartRecord | None:
    """The record of ``socket``, or None when there is none, it does not parse, or
    its data dir is gone (then the defaults are as good as anything)."""
    return _read(record_path(socket))


def _body(path: Path) -> dict[str, Any]:
    """The record at ``path`` as JSON, or {} when there is none or it is not ours."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
        body = json.loads(raw) if len(raw) <= MAX_BYTES else None
    except (OSError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _read(path: Path) -> StartRecord | None:
    body = _body(path)
    data_dir, args = body.get("data_dir"), body.get("serve_args")
    if not isinstance(data_dir, str) or not os.path.isabs(data_dir):
        return None
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return None
    if not Path(data_dir).is_dir():
        return None
    return StartRecord(Path(data_dir), args)


def for_autostart(socket: Path, data_dir: Path) -> StartRecord | None:
    """What an autostart with ``data_dir`` should start instead: the last record of
    ``socket``, when ``data_dir`` is only the default or is the record's own (one
    given on purpose wins); else the last record kept in ``data_dir`` itself (its
    store and options), when it has one."""
    data_dir = data_dir.absolute()
    last = read(socket)
    if last is not None and data_dir in (default_data_dir().absolute(), last.data_dir):
        return last
    kept = _read(data_dir / DATA_DIR_NAME)
    if kept is not None and kept.data_dir == data_dir:
        return kept
    return None


__all__ = [
    "DATA_DIR_NAME",
    "StartRecord",
    "Stopped",
    "for_autostart",
    "mark_stopped",
    "read",
    "record_path",
    "stopped",
    "write",
]
