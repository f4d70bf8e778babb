"""Delivery: the Agora's text, typed into a ling's terminal through the relay.

A ling is resolved to its terminal (relay.tmux / relay.zellij / relay.emacs) and the
text handed to the relay's per-terminal queue (relay.delivery), which checks the
terminal, holds while it shows a dialog, keeps order, and confirms or reports every
delivery.

A dispatch waits up to ``dispatch_wait_s`` for its delivery so the sender's tool
result can say "delivered" or why not; a delivery still held after that (a dialog
on screen) is reported as ``queued`` and its final state lands in the turn's
``delivery`` (``agora/status``) and in the event log.  If it then fails, the people
in the dialogue are told, in words: the sender in its terminal
(``dlg.undelivered_text``), the coordinator in its news, editors by ``hive/agora``;
a receiver whose terminal is gone is absent at once, and the dialogue goes on,
pauses or ends as ``dlg.AFTER_ABSENCE`` says.  A dialogue that ends in consensus is
typed into every participant's terminal (``dlg.closing_text``), through the relay
and its consent rules like any turn.

Parents and children: a child's events (``post_event``) are typed to its parent,
and a parent's answer (``answer``) to the child."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import trio

from hive_rpc.agora.lings import AgoraLings
from hive_rpc.core import dialogue as dlg
from hive_rpc.core import messages
from hive_rpc.core.errors import (
    InvalidParams,
)
from hive_rpc.core.ling import (
    Ling,
    check_ling_name,
    parent_of,
)
from hive_rpc.core.refind import NEW
from hive_rpc.relay.delivery import Ticket
from hive_rpc.relay.target import Target, TargetState


@dataclass(frozen=True, slots=True)
class Seen:
    """A ling's terminal as a dispatch checked it, handed on to the turn's delivery."""

    ling: Ling
    target: Target
    """The target that checked, which keeps what it resolved (a tmux pane's id)."""
    state: TargetState


class AgoraDelivery(AgoraLings):
    """Typing into lings' terminals, and what becomes of it (see the module doc)."""

    async def _deliver(
        self,
        name: str,
        text: str,
        *,
        dialogue_id: str | None = None,
        turn: int | None = None,
        seen: Seen | None = None,
    ) -> dict[str, Any]:
        """Queue ``text`` for ling ``name``; its state once known or after the wait.
        ``seen``: its terminal as the caller has just checked it, which the relay
        starts from instead of checking again (``Relay.submit``)."""
        ling = self._lings.get(name)
        if ling is None:
            delivery = {
                "state": "not-relayed",
                "ling": name,
                "reason": f"no ling named {name!r} is registered",
            }
            await self._record_delivery(dialogue_id, turn, delivery)
            return delivery
        state = None
        if seen is not None and seen.ling is ling:  # still the ling it checked
            target, state = seen.target, seen.state
        else:
            try:
                target = self._target(ling)
            except ValueError as e:  # kept from before addresses were checked
                delivery = {"state": "failed", "ling": name, "reason": str(e)}
                await self._record_delivery(dialogue_id, turn, delivery)
                return delivery
        ticket = self._relay.submit(
            ling.name, target, text, agent=ling.agent, allow_shell=ling.allow_shell, seen=state
        )
        queued = trio.Event()
        self._nursery.start_soon(self._report_holds, ticket, dialogue_id, turn, queued)
        with trio.move_on_after(self._wait_s):
            await ticket.done.wait()
        if ticket.result is not None:
            return await self._settle(ling, ticket, dialogue_id, turn)
        why = f"held: {ticket.held}" if ticket.held is not None else "held: the terminal is busy"
        delivery = {"state": "queued", "ling": name, "reason": why}
        await self._record_delivery(dialogue_id, turn, delivery)
        queued.set()

        async def follow() -> None:
            await ticket.done.wait()
            settled = await self._on_its_own(lambda: self._settle(ling, ticket, dialogue_id, turn))
            if settled["state"] == "failed" and dialogue_id is not None and turn is not None:
                await self._tell_undelivered(dialogue_id, turn, settled)

        self._nursery.start_soon(follow)
        return delivery

    async def _tell_undelivered(
        self, dialogue_id: str, number: int, delivery: dict[str, Any]
    ) -> None:
        """A turn reported ``queued`` has failed since: whoever watches is told
        (``agora/ling-unavailable``: the coordinator's and the sender's news, editors),
        and the sender, whose result said ``queued``, in its terminal, with what the
        dialogue is now and what it can do.  A dialogue that ended in consensus meanwhile
        was typed to it already (``_tell_consensus``)."""
        d = self._dialogues.get(dialogue_id)
        turn = next((t for t in d.turns if t.number == number), None) if d else None
        if d is None or turn is None:
            return
        self._unavailable(d, turn, delivery)
        if d.status is not dlg.Status.CONSENSUS:
            await self._deliver(
                turn.sender, dlg.undelivered_text(d, turn, delivery), dialogue_id=d.id
            )

    async def _report_holds(
        self, ticket: Ticket, dialogue_id: str | None, turn: int | None, queued: trio.Event
    ) -> None:
        """Each new reason ``ticket`` is held for, until it is typed or fails: an
        event (``relay/held``, on the activity stream), and once the dispatch has
        reported the turn ``queued``, the reason in the turn's delivery
        (``agora/status``), so a hold that changes (the dialog answered, and now the
        human is typing) says what holds it now.  A hold that lasts is told again
        (``relay/still-held``) each time the checks that found it have doubled since
        it was last told (2, 4, 8 ... checks for a hold found by the first): enough
        for a watcher to see the relay still looking (a 10-minute hold makes 8 such
        events, not its 300 checks), few enough not to flood the stream."""
        reported: str | None = None
        told_at = 0  # ``ticket.attempts`` when the hold was last told
        while not ticket.done.is_set():
            checked = ticket.checked
            facts = {"ling": ticket.key, "dialogue_id": dialogue_id, "turn": turn}
            if ticket.held is not None and ticket.held != reported:
                reported, told_at = ticket.held, ticket.attempts
                self._emit(
                    "relay/held", **facts, reason=f"held: {reported}", hold=ticket.hold_cause,
                    attempts=told_at, message=f"not yet typed into {ticket.key}: {reported}",
                )  # fmt: skip
                if queued.is_set():
                    await self._on_its_own(lambda: self._note_hold(ticket, dialogue_id, turn))
            elif ticket.held is not None and ticket.attempts >= 2 * max(told_at, 1):
                told_at = ticket.attempts
                self._emit(
                    "relay/still-held", **facts, reason=f"held: {reported}",
                    hold=ticket.hold_cause, attempts=told_at,
                    message=f"still not typed into {ticket.key} after {told_at} checks: "
                    f"{reported}",
                )  # fmt: skip
            await checked.wait()

    async def _note_hold(self, ticket: Ticket, dialogue_id: str | None, turn: int | None) -> None:
        """The turn's delivery, while still ``queued``, says what holds it now."""
        if dialogue_id is None or turn is None or ticket.held is None:
            return
        async with self._lock:
            d = self._dialogues.get(dialogue_id)
            found = next((t for t in d.turns if t.number == turn), None) if d else None
            if d is None or found is None or found.delivery.get("state") != "queued":
                return  # settled meanwhile: its final state stays
            delivery = {**found.delivery, "reason": f"held: {ticket.held}"}
            await self._save(dlg.with_delivery(d, turn, delivery))

    async def _settle(
        self, ling: Ling, ticket: Ticket, dialogue_id: str | None, turn: int | None
    ) -> dict[str, Any]:
        result = ticket.result
        assert result is not None
        delivery = {
            "state": "delivered" if result.delivered else "failed",
            "ling": ling.name,
            "reason": result.reason,
            "attempts": result.attempts,
            "at": result.finished_at,
        }
        if not result.delivered:
            delivery["cause"] = result.cause
        # The approved agent found in another pane (core/refind.py), and where the
        # pane typed into is now (moved to another window, or renamed): kept.
        ling = await self._keep_where(
            ling, result.address, result.place if result.delivered else None
        )
        if result.refound is not None and result.refound.outcome == NEW:
            # Another process in the gone pane's place: the human is asked.
            found = await self.found_again(ling, result.refound, result.reason)
            delivery["reason"] = found
            result = dataclasses.replace(result, reason=found)
        elif result.restarted is not None:
            # The agent was restarted in its terminal: the human is asked likewise.
            found = await self.restarted_in_place(ling, result.restarted, result.reason)
            delivery["reason"] = found
            result = dataclasses.replace(result, reason=found)
        if result.agent is not None and result.agent != ling.agent:
            # The process registered has exec'd the agent: keep what it runs now.
            current = self._lings.get(ling.name)
            if current is not None and current.agent == ling.agent:
                await self._put(dataclasses.replace(current, agent=result.agent), "ling/bound")
        if result.delivered:
            said = f"typed into {ling.name}" + (" once no longer held" if ticket.was_held else "")
        else:
            said = f"not typed into {ling.name}: {result.reason}"
        self._emit(
            "relay/delivered" if result.delivered else "relay/failed",
            ling=ling.name, dialogue_id=dialogue_id, turn=turn, reason=result.reason,
            cause=result.cause or None, was_held=ticket.was_held, message=said,
        )  # fmt: skip
        await self._record_delivery(dialogue_id, turn, delivery)
        return delivery

    # --- parents and children: a child's events, typed to its parent -----------------

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

    async def _tell_consensus(self, d: dlg.Dialogue, *, skip: str | None) -> dict[str, Any]:
        """Type the end of ``d`` (consensus) into every participant's terminal but
        ``skip``'s (who learns it from its own result), at once, through the relay and
        its consent rules; each one's delivery, as known within the dispatch's wait."""
        text = dlg.closing_text(d)
        told: dict[str, Any] = {}

        async def tell(name: str) -> None:
            told[name] = await self._deliver(name, text, dialogue_id=d.id)

        async with trio.open_nursery() as nursery:
            for name in d.participants:
                if name != skip:
                    nursery.start_soon(tell, name)
        return {name: told[name] for name in d.participants if name in told}

    async def _record_delivery(
        self, dialogue_id: str | None, turn: int | None, delivery: dict[str, Any]
    ) -> None:
        """Turn ``turn``'s delivery into its dialogue, and what it says of the
        receiver: a second failure in a row (or no terminal at all) makes it absent,
        which may be all that consensus waited for."""
        if dialogue_id is None or turn is None:
            return
        outcome = dlg.Outcome.RELAY
        async with self._lock:
            d = self._dialogues.get(dialogue_id)
            if d is None:
                return
            before = d.status
            d, became_absent = dlg.note_delivery(d, turn, delivery)
            if became_absent or dlg.presence(delivery) is dlg.Presence.GONE:
                d, outcome = dlg.after_absence(d, now=self._now())
            await self._save(d)
        sender = next((t.sender for t in d.turns if t.number == turn), None)
        ling = delivery.get("ling")
        if became_absent:
            self._absent(d, turn, ling, delivery.get("reason"), sender=sender)
        if outcome is dlg.Outcome.CONSENSUS:
            self._consensus(d, turn)
            self._nursery.start_soon(self._told_on_its_own, d, ling)
        elif outcome is dlg.Outcome.PAUSED and before is not dlg.Status.PAUSED:
            self._emit(
                "agora/paused", dialogue_id=d.id, turn=turn, ling=ling, sender=sender,
                reason=delivery.get("reason"),
                message=f"the dialogue {d.id} ({d.topic}) is {dlg.state_in_words(d)}",
            )  # fmt: skip

    async def _told_on_its_own(self, d: dlg.Dialogue, gone: str | None) -> None:
        """The consensus an absence made, typed into the participants' terminals but
        the one found gone; nobody waits for it."""
        await self._tell_consensus(d, skip=gone)
