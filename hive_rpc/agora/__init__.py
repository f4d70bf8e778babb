"""The hub's Agora: dialogues between agents, the lings (terminals) they run in, and
events from children to parents, all delivered by typing into terminals.

One object, ``Agora``, built in layers, one module each, lowest first:

- state.py: what it keeps (dialogues, lings, registration requests), in memory and
  in the hub's store, and the store writes it makes on its own;
- events.py: every event logged and kept; a coordinator's news; what subscribed
  editors are sent (``follow``, ``hive/agora``);
- lings.py: registering a terminal, with the human's consent, and the agent it runs;
- delivery.py: typing into a ling's terminal through the relay, and what becomes of
  it; a child's events to its parent;
- dialogues.py: dialogues, and the turns dispatched in them.

This module builds it (``open_agora``) and resolves a ling to its terminal
(``default_target``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from hive_rpc.agora.dialogues import Agora
from hive_rpc.agora.events import EDITOR_EVENTS, MAX_NEWS_WAIT_S, NEWS_EVENTS, WARN_EVENTS
from hive_rpc.agora.lings import APPROVE, CONSENT_LINE_CHARS, CONSENT_TAIL_LINES, DENY
from hive_rpc.agora.state import (
    CONSENT_TIMEOUT_S,
    DIALOGUE,
    DISPATCH_WAIT_S,
    EVENT_LOG,
    LING,
    LING_REQUEST,
    STORE_RETRY_MAX_S,
    STORE_RETRY_MIN_S,
    TargetFactory,
)
from hive_rpc.core.limits import MAX_LING_REQUESTS
from hive_rpc.core.ling import Ling
from hive_rpc.relay.delivery import Relay
from hive_rpc.relay.emacs import DeliveryPeers, EmacsBufferTarget
from hive_rpc.relay.target import Target
from hive_rpc.relay.tmux import TmuxTarget
from hive_rpc.relay.zellij import ZellijTarget
from hive_rpc.store.base import PromptStore

if TYPE_CHECKING:
    from hive_rpc.runtime.registry import Registry


def default_target(peers: DeliveryPeers) -> TargetFactory:
    """A ling's terminal.  A tmux address may carry its server's socket after an
    ``@`` (``%3@/tmp/tmux-1000/default``), which ``hive-rpc ling register --tmux``
    records from ``$TMUX`` so a hub started outside tmux reaches the right server."""

    def target(ling: Ling) -> Target:
        if ling.kind == "tmux":
            pane, _, socket = ling.address.partition("@")
            return TmuxTarget(pane, socket=socket or None)
        if ling.kind == "zellij":
            return ZellijTarget(ling.address)
        return EmacsBufferTarget(peers, ling.address)

    return target


async def open_agora(
    store: PromptStore,
    now: Callable[[], float],
    peers: DeliveryPeers,
    nursery: trio.Nursery,
    *,
    target: TargetFactory | None = None,
    relay: Relay | None = None,
    dispatch_wait_s: float = DISPATCH_WAIT_S,
    registry: Registry | None = None,
    consent_timeout_s: float = CONSENT_TIMEOUT_S,
) -> Agora:
    """An Agora whose relay tasks live in ``nursery``, with what the store kept.
    Without ``registry`` it cannot ask the human, so only registrations from inside
    a terminal (or ``owner=True``) succeed."""
    agora = Agora(
        store,
        now,
        relay or Relay(nursery),
        target or default_target(peers),
        nursery,
        dispatch_wait_s=dispatch_wait_s,
        registry=registry,
        peers=peers,
        consent_timeout_s=consent_timeout_s,
    )
    await agora.load()
    return agora


__all__ = [
    "APPROVE",
    "CONSENT_LINE_CHARS",
    "CONSENT_TAIL_LINES",
    "CONSENT_TIMEOUT_S",
    "DENY",
    "DIALOGUE",
    "DISPATCH_WAIT_S",
    "EDITOR_EVENTS",
    "EVENT_LOG",
    "LING",
    "LING_REQUEST",
    "MAX_LING_REQUESTS",
    "MAX_NEWS_WAIT_S",
    "NEWS_EVENTS",
    "STORE_RETRY_MAX_S",
    "STORE_RETRY_MIN_S",
    "WARN_EVENTS",
    "Agora",
    "TargetFactory",
    "default_target",
    "open_agora",
]
