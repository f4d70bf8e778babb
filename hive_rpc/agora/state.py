"""What the Agora keeps: its dialogues, its lings and the registrations waiting for
the human, in memory and in the hub's store (documents of kind ``dialogue``,
``ling``, ``ling-request``), and the store writes it makes on its own.

The Agora is one object built in layers, one module each, lowest first: this
state, its events (events.py), its lings (lings.py), delivery into their terminals
(delivery.py), and the dialogues (dialogues.py), whose class is ``Agora``.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from hive_rpc.core import dialogue as dlg
from hive_rpc.core.ling import (
    Ling,
)
from hive_rpc.relay.delivery import Relay
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.relay.target import Target
from hive_rpc.store.base import PromptStore

if TYPE_CHECKING:
    from hive_rpc.runtime.registry import Registry

log = logging.getLogger("hive_rpc.agora")

DIALOGUE = "dialogue"
LING = "ling"
LING_REQUEST = "ling-request"
"""A registration waiting for the human's approval: the ling and its prompt's id."""
FOUND_ASKED = "ling-found-asked"
"""Per ling: the pane, and its process's pid, found in its gone pane's place that the
human was asked about (``found_again``), so a restarted hub does not ask again."""
CONSENT_TIMEOUT_S = 600.0
"""How long a registration request waits for the human before it is denied."""
DISPATCH_WAIT_S = 5.0
EVENT_LOG = 500
"""Recent Agora events kept in memory (``agora/events``)."""

STORE_RETRY_MIN_S, STORE_RETRY_MAX_S = 1.0, 60.0
"""A store write the Agora makes on its own is tried again after these many seconds,
doubling (as the registry's own writes are)."""

TargetFactory = Callable[[Ling], Target]
T = TypeVar("T")


class AgoraState:
    """What every layer of the Agora shares; use ``open_agora``."""

    def __init__(
        self,
        store: PromptStore,
        now: Callable[[], float],
        relay: Relay,
        target: TargetFactory,
        nursery: trio.Nursery,
        *,
        dispatch_wait_s: float = DISPATCH_WAIT_S,
        registry: Registry | None = None,
        peers: DeliveryPeers | None = None,
        consent_timeout_s: float = CONSENT_TIMEOUT_S,
    ) -> None:
        self._registry = registry
        self._peers = peers if peers is not None else DeliveryPeers()
        self.consent_timeout_s = consent_timeout_s
        """How long a registration request waits for the human before it is denied."""
        self._requests: dict[str, tuple[Ling, str]] = {}
        self._request_peers: dict[str, str] = {}
        """Who asked for each request in ``_requests`` (``consent.peer_of``), for the
        per-peer limit; requests restored at a start have none."""
        """Registrations waiting for the human: ling name -> (ling, prompt id)."""
        self._store = store
        self._now = now
        self._relay = relay
        self._target = target
        self._nursery = nursery
        self._wait_s = dispatch_wait_s
        self._dialogues: dict[str, dlg.Dialogue] = {}
        self._lings: dict[str, Ling] = {}
        self._lock = trio.Lock()
        self.events: collections.deque[dict[str, Any]] = collections.deque(maxlen=EVENT_LOG)
        self._news: collections.deque[dict[str, Any]] = collections.deque(maxlen=EVENT_LOG)
        """``NEWS_EVENTS`` of dialogues that have a coordinator, each with its ``seq``."""
        self._news_seq = 0
        self._news_came = trio.Event()
        self._told: collections.deque[tuple[int, dict[str, Any]]] = collections.deque(
            maxlen=EVENT_LOG
        )
        """``EDITOR_EVENTS`` as editors are sent them, each with its number."""
        self._told_seq = 0
        self._told_came = trio.Event()
        self.on_event: Callable[[dict[str, Any], dlg.Dialogue | None], None] | None = None
        """Called with each event (and its dialogue, if any): the activity stream."""

    async def load(self) -> None:
        """What the store kept: dialogues and lings (lings.py adds the requests)."""
        for body in await self._store.documents(DIALOGUE):
            d = dlg.Dialogue.from_record(body)
            self._dialogues[d.id] = d
        for body in await self._store.documents(LING):
            ling = Ling.from_record(body)
            self._lings[ling.name] = ling

    def ingest(self, kind: str | None, key: str, value: dict[str, Any] | None) -> None:
        """A dialogue or ling saved (or removed) by another hub sharing the store."""
        if kind == DIALOGUE:
            if value is None:
                self._dialogues.pop(key, None)
                return
            d = dlg.Dialogue.from_record(value)
            if self._dialogues.get(key) == d:
                return  # our own write, echoed
            self._dialogues[key] = d
            if self.on_event is not None:
                self.on_event({"event": "agora/synced", "at": self._now(), "dialogue_id": key}, d)
        elif kind == LING:
            if value is None:
                self._lings.pop(key, None)
            else:
                self._lings[key] = Ling.from_record(value)

    def _get(self, dialogue_id: object) -> dlg.Dialogue:
        d = self._dialogues.get(dialogue_id) if isinstance(dialogue_id, str) else None
        if d is None:
            raise dlg.DialogueNotFound(f"no dialogue {str(dialogue_id)[:40]!r}", id=dialogue_id)
        return d

    async def _on_its_own(self, write: Callable[[], Awaitable[T]]) -> T:
        """Run a store write nobody is waiting on (a held message's outcome, the
        human's answer to a registration request) until it works.

        There is no request to fail, and its task must not end the hub: the hub
        shows ``degraded: store: ...`` (``Registry.store_trouble``, kind ``agora``,
        logged once) and tries again after a doubling wait; the writes put or delete
        whole documents, so doing one twice is harmless."""
        wait = STORE_RETRY_MIN_S
        failed = False
        while True:
            try:
                result = await write()
            except Exception as e:
                failed = True
                if self._registry is not None:
                    self._registry.store_trouble("agora", e)
                else:
                    log.warning("store: agora write failed (%s); trying again in %g s", e, wait)
                await trio.sleep(wait)
                wait = min(2 * wait, STORE_RETRY_MAX_S)
                continue
            if failed and self._registry is not None:
                self._registry.store_trouble("agora", None)
            return result

    async def _save(self, d: dlg.Dialogue) -> None:
        await self._store.put_document(DIALOGUE, d.id, d.record())
        self._dialogues[d.id] = d
