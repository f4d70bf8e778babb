"""The hub's Agora: dialogues between agents, the lings (terminals) they run in, and
events from children to parents, all delivered by typing into terminals.

The rules live in the pure core (core/dialogue.py: signals, consensus, max turns;
core/messages.py: the text typed); this module is the trio side: it keeps dialogues
and lings durable in the hub's store, resolves a ling to its terminal
(relay.tmux / relay.zellij / relay.emacs), and hands the text to the relay's
per-terminal queue (relay.delivery), which checks the terminal, holds while it
shows a dialog, keeps order, and confirms or reports every delivery.

A dispatch waits up to ``dispatch_wait_s`` for its delivery so the sender's tool
result can say "delivered" or why not; a delivery still held after that (a dialog
on screen) is reported as ``queued`` and its final state lands in the turn's
``delivery`` (``agora/status``) and in the event log.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from typing import Any

import trio

from hive_rpc.core import dialogue as dlg
from hive_rpc.core import messages
from hive_rpc.core.errors import InvalidParams, LingNotFound, NotAParticipant
from hive_rpc.core.ling import Ling, check_ling_name, new_ling, parent_of
from hive_rpc.relay.delivery import DeliveryResult, Relay
from hive_rpc.relay.emacs import DeliveryPeers, EmacsBufferTarget
from hive_rpc.relay.target import Target
from hive_rpc.relay.tmux import TmuxTarget
from hive_rpc.relay.zellij import ZellijTarget
from hive_rpc.store.base import PromptStore

log = logging.getLogger(__name__)

DIALOGUE = "dialogue"
LING = "ling"
DISPATCH_WAIT_S = 5.0
EVENT_LOG = 500
"""Recent Agora events kept in memory (``agora/events``)."""

TargetFactory = Callable[[Ling], Target]


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


class Agora:
    """Use ``open_agora``: it loads what the store kept and owns the relay's tasks."""

    def __init__(
        self,
        store: PromptStore,
        now: Callable[[], float],
        relay: Relay,
        target: TargetFactory,
        nursery: trio.Nursery,
        *,
        dispatch_wait_s: float = DISPATCH_WAIT_S,
    ) -> None:
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
        self.on_event: Callable[[dict[str, Any], dlg.Dialogue | None], None] | None = None
        """Called with each event (and its dialogue, if any): the activity stream."""

    async def load(self) -> None:
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

    # --- events ----------------------------------------------------------------------

    def _emit(self, event: str, **facts: Any) -> dict[str, Any]:
        entry = {"event": event, "at": self._now(), **facts}
        self.events.append(entry)
        log.info("%s %s", event, facts)
        if self.on_event is not None:
            d = self._dialogues.get(facts.get("dialogue_id") or "")
            self.on_event(entry, d)
        return entry

    def recent_events(self, dialogue_id: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if dialogue_id in (None, e.get("dialogue_id"))]

    # --- dialogues -------------------------------------------------------------------

    def _get(self, dialogue_id: object) -> dlg.Dialogue:
        d = self._dialogues.get(dialogue_id) if isinstance(dialogue_id, str) else None
        if d is None:
            raise dlg.DialogueNotFound(f"no dialogue {str(dialogue_id)[:40]!r}", id=dialogue_id)
        return d

    async def _save(self, d: dlg.Dialogue) -> None:
        await self._store.put_document(DIALOGUE, d.id, d.record())
        self._dialogues[d.id] = d

    async def create(
        self, topic: str, participants: list[str], *, max_turns: int = dlg.DEFAULT_MAX_TURNS
    ) -> dict[str, Any]:
        d = dlg.new_dialogue(topic, participants, now=self._now(), max_turns=max_turns)
        async with self._lock:
            await self._save(d)
        self._emit("agora/created", dialogue_id=d.id, participants=list(d.participants))
        return d.record()

    def status(self, dialogue_id: str) -> dict[str, Any]:
        out = self._get(dialogue_id).record()
        out["events"] = self.recent_events(dialogue_id)
        return out

    def dialogues(self, status: str | None = None) -> list[dict[str, Any]]:
        if status is not None and status not in {s.value for s in dlg.Status}:
            raise InvalidParams(
                f"status must be one of {', '.join(s.value for s in dlg.Status)}",
                param="status",
            )
        found = sorted(self._dialogues.values(), key=lambda d: d.created_at)
        return [d.summary() for d in found if status in (None, d.status.value)]

    async def abort(self, dialogue_id: str, reason: str = "") -> dict[str, Any]:
        async with self._lock:
            d = dlg.abort(self._get(dialogue_id), reason=reason, now=self._now())
            await self._save(d)
        self._emit("agora/aborted", dialogue_id=d.id, reason=d.end_reason)
        return d.record()

    async def dispatch(
        self, dialogue_id: str, *, sender: str, to: str, signal: str, message: str
    ) -> dict[str, Any]:
        """Record a turn; relay it to ``to`` unless the dialogue just ended."""
        async with self._lock:
            try:
                d, turn, outcome = dlg.dispatch(
                    self._get(dialogue_id),
                    sender=sender,
                    to=to,
                    signal=signal,
                    message=message,
                    now=self._now(),
                )
            except NotAParticipant as e:
                self._emit("agora/not-a-participant", dialogue_id=dialogue_id, name=e.data["name"])
                raise
            if outcome is not dlg.Outcome.RELAY:
                d = dlg.with_delivery(
                    d, turn.number, {"state": "not-relayed", "reason": f"dialogue {outcome}"}
                )
            await self._save(d)
        result: dict[str, Any] = {
            "dialogue_id": d.id,
            "turn": turn.number,
            "status": d.status.value,
            "outcome": outcome.value,
        }
        _status, event = dlg.OUTCOMES[outcome]
        if event is not None:
            result["event"] = self._emit(event, dialogue_id=d.id, turn=turn.number)
            result["delivery"] = d.turns[-1].delivery
            return result
        self._emit("agora/turn-dispatched", dialogue_id=d.id, turn=turn.number, to=to)
        text = messages.agora_turn(d, turn)
        delivery = await self._deliver(to, text, dialogue_id=d.id, turn=turn.number)
        result["delivery"] = delivery
        if delivery["state"] == "failed" or delivery["state"] == "not-relayed":
            result["event"] = self._emit(
                "agora/ling-unavailable",
                dialogue_id=d.id,
                turn=turn.number,
                ling=to,
                reason=delivery["reason"],
            )
        return result

    async def _record_delivery(
        self, dialogue_id: str | None, turn: int | None, delivery: dict[str, Any]
    ) -> None:
        if dialogue_id is None or turn is None:
            return
        async with self._lock:
            d = self._dialogues.get(dialogue_id)
            if d is not None:
                await self._save(dlg.with_delivery(d, turn, delivery))

    # --- lings -----------------------------------------------------------------------

    async def register(
        self, name: str, kind: str, address: str, *, label: str | None = None
    ) -> dict[str, Any]:
        ling = new_ling(name, kind, address, now=self._now(), label=label)
        async with self._lock:
            await self._store.put_document(LING, ling.name, ling.record())
            self._lings[ling.name] = ling
        self._emit("ling/registered", ling=ling.name, kind=ling.kind, address=ling.address)
        return ling.record()

    async def remove(self, name: str) -> dict[str, Any]:
        check_ling_name(name)
        async with self._lock:
            removed = await self._store.delete_document(LING, name)
            self._lings.pop(name, None)
        return {"name": name, "removed": removed}

    def _ling(self, name: str) -> Ling:
        ling = self._lings.get(name)
        if ling is None:
            raise LingNotFound(
                f"no ling named {name!r} is registered; register its terminal with "
                "`hive-rpc ling register NAME --tmux PANE` (or --zellij / --emacs-buffer)",
                name=name,
            )
        return ling

    async def lings(self, *, check: bool = False) -> list[dict[str, Any]]:
        out = []
        for ling in sorted(self._lings.values(), key=lambda x: x.name):
            record = ling.record()
            if check:
                state = await self._target(ling).check()
                record["alive"], record["reason"] = state.alive, state.reason
            out.append(record)
        return out

    # --- delivery --------------------------------------------------------------------

    async def _deliver(
        self, name: str, text: str, *, dialogue_id: str | None = None, turn: int | None = None
    ) -> dict[str, Any]:
        """Queue ``text`` for ling ``name``; its state once known or after the wait."""
        ling = self._lings.get(name)
        if ling is None:
            delivery = {
                "state": "not-relayed",
                "ling": name,
                "reason": f"no ling named {name!r} is registered",
            }
            await self._record_delivery(dialogue_id, turn, delivery)
            return delivery
        ticket = self._relay.submit(ling.name, self._target(ling), text)
        with trio.move_on_after(self._wait_s):
            await ticket.done.wait()
        if ticket.result is not None:
            return await self._settle(ling, ticket.result, dialogue_id, turn)
        delivery = {"state": "queued", "ling": name, "reason": "held: the terminal is busy"}
        await self._record_delivery(dialogue_id, turn, delivery)

        async def follow() -> None:
            await ticket.done.wait()
            if ticket.result is not None:
                settled = await self._settle(ling, ticket.result, dialogue_id, turn)
                if settled["state"] == "failed" and dialogue_id is not None:
                    self._emit(
                        "agora/ling-unavailable",
                        dialogue_id=dialogue_id,
                        turn=turn,
                        ling=name,
                        reason=settled["reason"],
                    )

        self._nursery.start_soon(follow)
        return delivery

    async def _settle(
        self, ling: Ling, result: DeliveryResult, dialogue_id: str | None, turn: int | None
    ) -> dict[str, Any]:
        delivery = {
            "state": "delivered" if result.delivered else "failed",
            "ling": ling.name,
            "reason": result.reason,
            "attempts": result.attempts,
            "at": result.finished_at,
        }
        if result.address and result.address != ling.address.partition("@")[0]:
            # The pane was re-resolved (e.g. ``work:1.0`` -> ``%7``): keep the new one.
            _, at, socket = ling.address.partition("@")
            await self.register(
                ling.name, ling.kind, result.address + (at + socket), label=ling.label
            )
        await self._record_delivery(dialogue_id, turn, delivery)
        self._emit(
            "relay/delivered" if result.delivered else "relay/failed",
            ling=ling.name,
            dialogue_id=dialogue_id,
            reason=result.reason,
        )
        return delivery

    # --- parents and children (seed 004) ---------------------------------------------

    async def post_event(self, kind: str, sender: str, fields: dict[str, Any]) -> dict[str, Any]:
        """A child's event, rendered and typed into its parent's terminal."""
        if kind not in messages.EVENT_KINDS:
            raise InvalidParams(
                f"kind must be one of {', '.join(messages.EVENT_KINDS)}", param="kind"
            )
        check_ling_name(sender, param="from")
        if kind == "child-question" and not str(fields.get("message") or "").strip():
            raise InvalidParams("a child-question needs its message", param="message")
        parent = parent_of(sender)
        if parent is None:
            raise InvalidParams(
                f"{sender!r} has no parent: a child's name is its parent's plus one part "
                "(main.feature.auth reports to main.feature)",
                param="from",
            )
        child = self._lings.get(sender)
        label = child.display if child is not None else sender.rsplit(".", 1)[-1]
        text = messages.child_event(kind, label, sender, fields)
        delivery = await self._deliver(parent, text)
        self._emit(f"child/{kind}", child=sender, parent=parent, state=delivery["state"])
        return {"kind": kind, "from": sender, "to": parent, "text": text, "delivery": delivery}

    async def answer(self, agent: str, message: str, sender: str | None) -> dict[str, Any]:
        """A parent's answer to a child's question, typed into the child's terminal."""
        check_ling_name(agent, param="agent")
        self._ling(agent)
        if not message.strip():
            raise InvalidParams("message must not be empty", param="message")
        parent = sender or parent_of(agent) or "your parent"
        text = messages.answer(parent, message)
        delivery = await self._deliver(agent, text)
        self._emit("child/answered", child=agent, by=parent, state=delivery["state"])
        return {"to": agent, "text": text, "delivery": delivery}


async def open_agora(
    store: PromptStore,
    now: Callable[[], float],
    peers: DeliveryPeers,
    nursery: trio.Nursery,
    *,
    target: TargetFactory | None = None,
    relay: Relay | None = None,
    dispatch_wait_s: float = DISPATCH_WAIT_S,
) -> Agora:
    """An Agora whose relay tasks live in ``nursery``, with what the store kept."""
    agora = Agora(
        store,
        now,
        relay or Relay(nursery),
        target or default_target(peers),
        nursery,
        dispatch_wait_s=dispatch_wait_s,
    )
    await agora.load()
    return agora
