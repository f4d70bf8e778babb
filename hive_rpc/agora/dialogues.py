"""Dialogues between agents: created, turns dispatched, ended.

The rules live in the pure core (core/dialogue.py: signals, consensus, max turns;
core/messages.py: the text typed); this is the trio side: a turn is taken, the
terminals that alone stand between the dialogue and consensus are checked (one
gone is absent, so a dead ling cannot stall the others), and the turn is relayed to
its receiver (delivery.py)."""

from __future__ import annotations

from typing import Any

import trio

from hive_rpc.agora.delivery import AgoraDelivery, Seen
from hive_rpc.core import dialogue as dlg
from hive_rpc.core import messages
from hive_rpc.core.errors import (
    InvalidParams,
    NotAParticipant,
)
from hive_rpc.core.ling import (
    REFUSE,
)

HOLDOUT_CHECK_S = 3.0
"""How long the check of the terminals that alone stand between a dialogue and
consensus may take (``dlg.holdouts``); one that does not answer in time is not
marked absent."""


class Agora(AgoraDelivery):
    """The hub's Agora; use ``open_agora``: it loads what the store kept and owns the
    relay's tasks."""

    async def create(
        self,
        topic: str,
        participants: list[str],
        *,
        max_turns: int = dlg.DEFAULT_MAX_TURNS,
        coordinator: str | None = None,
    ) -> dict[str, Any]:
        """A new dialogue; ``coordinator`` is who asked for it (an agent id)."""
        d = dlg.new_dialogue(
            topic, participants, now=self._now(), max_turns=max_turns, coordinator=coordinator
        )
        async with self._lock:
            await self._save(d)
        self._emit("agora/created", dialogue_id=d.id, participants=list(d.participants))
        return d.record()

    def status(self, dialogue_id: str) -> dict[str, Any]:
        d = self._get(dialogue_id)
        out = d.record()
        out["situation"] = dlg.state_in_words(d)
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
        """Record a turn; relay it to ``to`` unless the dialogue just ended.

        Before judging the turn, the terminals of the participants that alone keep
        the dialogue from consensus (``dlg.holdouts``) are checked: one that is gone
        is marked absent, so a dead ling cannot stall the others.  The
        result's ``absent`` lists who is absent after the turn."""

        def take() -> tuple[dlg.Dialogue, dlg.Turn, bool]:
            try:
                return dlg.take_turn(
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

        # One pass: the turn is taken once, and the terminals are checked outside the
        # lock (a check may wait HOLDOUT_CHECK_S on a silent Emacs, and the lock is
        # every dialogue's): those that alone stand between the dialogue and
        # consensus, and the receiver, whose state its delivery then starts from
        # rather than checking its terminal again.  Should another turn have come
        # meanwhile, the turn is taken again on the dialogue as it is now.
        async with self._lock:
            base = self._get(dialogue_id)
            d, turn, rejoined = take()
        found, seen = await self._gone(dlg.holdouts(d), receiver=to)
        async with self._lock:
            if self._dialogues.get(dialogue_id) is not base:
                d, turn, rejoined = take()
            gone = {name: why for name, why in found.items() if name in dlg.holdouts(d)}
            d, outcome = dlg.conclude(dlg.mark_absent(d, list(gone)), now=self._now())
            if outcome is not dlg.Outcome.RELAY:
                d = dlg.with_delivery(
                    d, turn.number, {"state": "not-relayed", "reason": f"dialogue {outcome}"}
                )
                await self._save(d)
            else:
                # Written once, with its delivery (``_record_delivery``), as soon as
                # that is known or the dispatch's wait is over; until then the turn is
                # the dialogue's in memory, so the next turn follows it.
                self._dialogues[d.id] = d
        if rejoined:
            self._emit(
                "agora/participant-rejoined", dialogue_id=d.id, turn=turn.number, ling=sender
            )
        for name, reason in gone.items():
            self._absent(d, turn.number, name, reason)
        result: dict[str, Any] = {
            "dialogue_id": d.id,
            "turn": turn.number,
            "from": turn.sender,
            "status": d.status.value,
            "outcome": outcome.value,
        }
        if outcome is dlg.Outcome.CONSENSUS:
            result["event"] = self._consensus(d, turn.number)
            result["delivery"] = d.turns[-1].delivery
            result["absent"] = list(d.absent)
            result["told"] = await self._tell_consensus(d, skip=sender)
            result["report"] = _consensus_report(d, result["told"])
            return result
        if outcome is dlg.Outcome.MAX_TURNS:
            result["event"] = self._emit(
                "agora/max-turns-reached", dialogue_id=d.id, turn=turn.number,
                message=f"the dialogue {d.id} ({d.topic}) {dlg.state_in_words(d)}",
            )  # fmt: skip
            result["delivery"] = d.turns[-1].delivery
            result["absent"] = list(d.absent)
            result["report"] = f"turn {turn.number}: the dialogue {d.id} {dlg.state_in_words(d)}"
            return result
        # The seed's facts of a turn, so a follower of the activity stream sees the
        # dialogue itself, not only that it moved: who said what to whom, and how.
        facts = {"from": turn.sender, "signal": turn.signal.value, "message": turn.message}
        self._emit(
            "agora/turn-dispatched", dialogue_id=d.id, turn=turn.number, to=to, topic=d.topic,
            **facts,
        )  # fmt: skip
        text = messages.agora_turn(d, turn)
        delivery = await self._deliver(to, text, dialogue_id=d.id, turn=turn.number, seen=seen)
        result["delivery"] = delivery
        now = self._dialogues.get(d.id, d)
        if delivery["state"] == "failed" or delivery["state"] == "not-relayed":
            result["event"] = self._unavailable(now, turn, delivery)
        result["status"] = now.status.value  # an absence may have made consensus
        result["absent"] = list(now.absent)
        result["report"] = _dispatch_report(now, turn, delivery)
        return result

    async def _gone(
        self, names: tuple[str, ...], *, receiver: str
    ) -> tuple[dict[str, str], Seen | None]:
        """Which of the lings ``names`` cannot be reached now, and why: not
        registered, its terminal gone, or its approved agent gone (exited, another
        program now, or a shell typed into without --allow-shell); and what the
        terminal of ``receiver`` (checked too, whether among ``names`` or not)
        showed, for its delivery.  Checked at once, each within ``HOLDOUT_CHECK_S``."""
        gone: dict[str, str] = {}
        seen: list[Seen] = []

        async def check(name: str) -> None:
            ling = self._lings.get(name)
            if ling is None:
                gone[name] = f"no ling named {name!r} is registered"
                return
            try:
                target = self._target(ling)
            except ValueError as e:
                gone[name] = str(e)
                return
            with trio.move_on_after(HOLDOUT_CHECK_S):
                state = await target.check()
                if name == receiver:
                    seen.append(Seen(ling, target, state))
                if not state.alive:
                    gone[name] = state.reason or "its terminal is gone"
                else:
                    judged = self._verdict(ling, target, state)
                    if judged.action == REFUSE:
                        gone[name] = judged.reason

        async with trio.open_nursery() as nursery:
            for name in dict.fromkeys((*names, receiver)):
                nursery.start_soon(check, name)
        found = {name: gone[name] for name in names if name in gone}
        return found, seen[0] if seen else None


def _dispatch_report(d: dlg.Dialogue, turn: dlg.Turn, delivery: dict[str, Any]) -> str:
    """A relayed turn's dispatch, in words for its sender."""
    state = delivery.get("state")
    head = f"turn {turn.number} of {d.id} to {turn.to}"
    if state == "delivered":
        return f"{head}: delivered; the dialogue is {dlg.state_in_words(d)}"
    if state == "queued":
        return (
            f"{head}: queued, {delivery.get('reason')}; should it fail, you are told "
            "in your terminal, and agora_status says so"
        )
    return dlg.undelivered_line(d, turn, delivery)


def _consensus_report(d: dlg.Dialogue, told: dict[str, Any]) -> str:
    """A dispatch that made consensus, in words: what was agreed, and how each other
    participant's terminal was told."""
    tells = [f"{name} {delivery.get('state')}" for name, delivery in told.items()]
    said = f"; the end typed to the others: {', '.join(tells)}" if tells else ""
    return dlg.consensus_line(d) + said
