"""Who is registering a ling: the facts the hub trusts to tell the human's own
registration from an agent's request (docs/security.md, "Typing into terminals").

A terminal is typed into only with its owner's consent.  A registration made from
*inside* the terminal it names is that consent: the human ran ``hive-rpc ling
register NAME --tmux`` in the pane, or ``M-x hive-rpc-register-ling`` in the
buffer.  Nothing a client *says* can prove that, since an agent writes whatever
params it likes; what proves it is what the kernel says about the connection:

- tmux: the socket's ``SO_PEERCRED`` pid (set by the kernel at ``connect``) has, as
  its controlling terminal (``/proc/PID/stat`` ``tty_nr``), the device of the
  pane's ``#{pane_tty}`` as that pane's tmux server reports it.  ``$TMUX_PANE`` is
  only where the CLI looks first; a process elsewhere that names the pane fails
  the check.
- Emacs: the connection itself offered delivery (``hive/offerDelivery``: an Emacs
  running ``hive-rpc-mode``) and, asked on that same connection, has the buffer
  alive.
- Zellij: its CLI does not say which terminal device a pane has, so a Zellij
  registration always asks the human.

The editor socket records these facts per request in ``CALLER``; faces without
them (MCP over HTTP, the dashboard) leave it unset, so their registrations ask.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from hive_rpc.host.peercred import peer_pid
from hive_rpc.relay.emacs import DeliveryPeer, DeliveryPeers, PeerError
from hive_rpc.relay.proc import runs_in_tty, stat
from hive_rpc.relay.target import Target
from hive_rpc.relay.tmux import TmuxTarget


@dataclass(frozen=True, slots=True)
class Caller:
    """What the kernel and the connection say about who sent a request."""

    pid: int | None = None
    """The peer process of the Unix socket (``SO_PEERCRED``), None when unknown."""
    peer: DeliveryPeer | None = None
    """The connection itself, so an Emacs that offered delivery can be asked."""
    session: int | None = None
    """The peer process's session id as /proc gave it when the connection was made
    (a connection's peer is fixed at ``connect``), so ``peer_of`` reads no file per
    request; None: read it when asked."""

    def describe(self) -> str:
        """``pid 4242 (node)``, for the human's prompt."""
        if self.pid is None:
            return "a client the hub cannot identify"
        found = stat(self.pid)
        return f"pid {self.pid}" + (f" ({found.comm})" if found is not None else "")


def peer_of(caller: Caller | None) -> str:
    """Who sends a request, as the hub can verify it, never a name the client chose: a
    socket client's session (its ``SO_PEERCRED`` pid's session id in /proc), so one
    process cannot spread what it asks for over made-up names; every client served
    inside the hub (MCP over HTTP, which all hold the one MCP token) is one peer."""
    if caller is None or caller.pid is None:
        return "MCP over HTTP"
    if caller.session is not None:
        return f"session {caller.session}"
    found = stat(caller.pid)
    return f"session {found.session}" if found is not None else f"pid {caller.pid}"


CALLER: ContextVar[Caller | None] = ContextVar("hive_rpc_caller", default=None)
"""The current request's caller; set by the editor socket for each request."""


async def from_inside(
    kind: str, address: str, target: Target, caller: Caller | None, peers: DeliveryPeers
) -> bool:
    """Whether ``caller`` runs inside the terminal ``target`` (see the module doc)."""
    if caller is None:
        return False
    if kind == "tmux" and isinstance(target, TmuxTarget) and caller.pid is not None:
        state = await target.check()
        return state.alive and target.tty is not None and runs_in_tty(caller.pid, target.tty)
    if kind == "emacs-buffer" and caller.peer is not None and caller.peer in peers:
        try:
            reply = await caller.peer.request("hive/bufferState", {"buffer": address}, 5.0)
        except PeerError:
            return False
        return (
            isinstance(reply, dict) and reply.get("exists") is True and reply.get("alive") is True
        )
    return False


__all__ = ["CALLER", "Caller", "from_inside", "peer_of", "peer_pid"]
