"""Who is at the other end of a Unix socket, as the kernel says (``SO_PEERCRED``).

Two sides read it: a client refuses a hub run by another user (``sync_client``,
``client``), and the hub ties a request to the process that sent it, for the relay's
consent check (``relay/consent.py``).  Plain ``socket``/``struct``, so the one-shot
commands that import it stay light."""

from __future__ import annotations

import socket
import struct
from typing import NamedTuple

_UCRED = struct.Struct("3i")
"""``struct ucred``: pid, uid, gid."""


class PeerCredentials(NamedTuple):
    pid: int
    uid: int
    gid: int


def peer_credentials(sock: socket.socket) -> PeerCredentials | None:
    """The peer's pid, uid and gid, set by the kernel at ``connect``; None where the
    platform does not say (no ``SO_PEERCRED``) or the socket cannot be asked."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, option, _UCRED.size)
    except OSError:
        return None
    return PeerCredentials(*_UCRED.unpack(raw))


def peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process at the other end of a Unix socket, from the kernel: a
    hub's for its client (``hive-rpc stop``), a client's for the hub (the relay's
    consent check); None where the platform does not say."""
    found = peer_credentials(sock)
    return found.pid if found is not None and found.pid > 0 else None
