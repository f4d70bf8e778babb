"""How the hub on a socket was started, so that a hub started again on it is the same.

A client that finds no hub starts one (autostart: the CLI, ``hive-rpc lsp``, ``mcp``,
``epc``), and it knows only its own defaults.  A hub the human started with another
data dir or store (``serve --data-dir D --store nats://...``) that then died would
come back on the defaults: its pending prompts are still in D, but nobody sees them,
and every editor would wait on an empty hub.  So each hub, once it listens, writes
its data dir and ``serve`` options next to its socket (``hub.sock.start.json``, in
the socket's private directory); an autostart that has no options of its own starts
the hub again with those.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from hive_rpc.paths import default_data_dir

SUFFIX = ".start.json"
MAX_BYTES = 64 << 10
"""A record is a few hundred bytes; anything larger is not ours."""


@dataclass(frozen=True)
class StartRecord:
    data_dir: Path
    serve_args: list[str]
    """``serve`` options other than ``--socket`` and ``--data-dir``."""


def record_path(socket: Path) -> Path:
    return socket.with_name(socket.name + SUFFIX)


def write(socket: Path, record: StartRecord) -> None:
    """Replace the record of ``socket`` (0600, atomically: a reader sees the old one
    or the new one)."""
    path = record_path(socket)
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    body = {"data_dir": os.fspath(record.data_dir), "serve_args": record.serve_args}
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(body, f)
    os.replace(temp, path)


def read(socket: Path) -> StartRecord | None:
    """The record of ``socket``, or None when there is none, it does not parse, or
    its data dir is gone (then the defaults are as good as anything)."""
    try:
        with record_path(socket).open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
        body = json.loads(raw) if len(raw) <= MAX_BYTES else None
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
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
    ``socket``, when ``data_dir`` is only the default (one given on purpose wins)."""
    if data_dir.absolute() != default_data_dir().absolute():
        return None
    return read(socket)


__all__ = ["StartRecord", "for_autostart", "read", "record_path", "write"]
