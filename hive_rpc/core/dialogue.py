"""Agora dialogues: agents reach consensus turn by turn.  Pure: no I/O, no clock.

A dialogue has a topic, two or more participants (ling names), and turns.  Each turn
goes from one participant to another with a signal and a message; the hub relays it
into the receiver's terminal so the receiver knows it is its move.

The rules, as tables (``SIGNALS``, ``OUTCOMES``):

* ``propose`` and ``counter`` **reset** the equilibrium: stances taken before them no
  longer count.  The one who proposes (or counters) stands by that proposal.
* ``approve`` and ``no-change`` **agree** with the proposal on the table (or, when
  nothing was ever proposed, with the state of things).
* ``defer`` **yields**: "I go along with the others".  It counts toward consensus
  but cannot make one alone: if every stance is a yield, nobody agreed to anything.
* **Consensus** is reached when every participant has taken at least one turn (one
  full round), every participant's stance since the last reset is agree or yield,
  and at least one is agree.  A participant who has not spoken since the last reset
  is undecided (the proposer counts as agreeing with its own proposal).
* After ``max_turns`` turns without consensus the dialogue ends as ``timeout``.
* ``aborted``: ended by hand (``agora/abort``).  Only an ``active`` dialogue takes turns.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hive_rpc.core.errors import InvalidParams, NotAParticipant, PromptClosed, PromptNotFound
from hive_rpc.core.ling import check_ling_name

DEFAULT_MAX_TURNS = 50
MAX_MAX_TURNS = 1000
MAX_PARTICIPANTS = 16
MAX_TOPIC_CHARS = 500
MAX_MESSAGE_CHARS = 32_000


class Signal(StrEnum):
    PROPOSE = "propose"
    COUNTER = "counter"
    APPROVE = "approve"
    NO_CHANGE = "no-change"
    DEFER = "defer"


class Stance(StrEnum):
    AGREE = "agree"
    YIELD = "yield"
    UNDECIDED = "undecided"


class Status(StrEnum):
    ACTIVE = "active"
    CONSENSUS = "consensus"
    TIMEOUT = "timeout"
    ABORTED = "aborted"


@dataclass(frozen=True, slots=True)
class SignalRule:
    resets: bool
    """Stances taken before this turn stop counting."""
    stance: Stance
    """The sender's stance after this turn."""
    meaning: str
    """The one-line guide shown to lings in the relayed message."""


SIGNALS: dict[Signal, SignalRule] = {
    Signal.PROPOSE: SignalRule(True, Stance.AGREE, "You're suggesting a change/new idea"),
    Signal.COUNTER: SignalRule(True, Stance.AGREE, "You disagree and have an alternative"),
    Signal.APPROVE: SignalRule(False, Stance.AGREE, "You accept the current state"),
    Signal.NO_CHANGE: SignalRule(False, Stance.AGREE, "No changes needed from your perspective"),
    Signal.DEFER: SignalRule(False, Stance.YIELD, "You yield to others' judgment"),
}


class Outcome(StrEnum):
    """What a dispatch leads to; each names the event the hub emits for it."""

    RELAY = "relay"
    CONSENSUS = "consensus"
    MAX_TURNS = "max-turns-reached"


OUTCOMES: dict[Outcome, tuple[Status, str | None]] = {
    Outcome.RELAY: (Status.ACTIVE, None),
    Outcome.CONSENSUS: (Status.CONSENSUS, "agora/consensus"),
    Outcome.MAX_TURNS: (Status.TIMEOUT, "agora/max-turns-reached"),
}
"""Outcome -> the dialogue's status after the turn, and the event emitted (if any)."""


@dataclass(frozen=True, slots=True)
class Turn:
    number: int
    sender: str
    to: str
    signal: Signal
    message: str
    at: float
    delivery: dict[str, Any] = field(default_factory=dict)
    """How the relay went: ``{"state": "queued" | "delivered" | "failed" |
    "not-relayed", "reason": ...}``; filled in by the hub."""

    def record(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "from": self.sender,
            "to": self.to,
            "signal": str(self.signal),
            "message": self.message,
            "at": self.at,
            "delivery": dict(self.delivery),
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Turn:
        return cls(
            number=int(r["number"]),
            sender=str(r["from"]),
            to=str(r["to"]),
            signal=Signal(r["signal"]),
            message=str(r["message"]),
            at=float(r["at"]),
            delivery=dict(r.get("delivery") or {}),
        )


@dataclass(frozen=True, slots=True)
class Dialogue:
    id: str
    topic: str
    participants: tuple[str, ...]
    created_at: float
    max_turns: int = DEFAULT_MAX_TURNS
    status: Status = Status.ACTIVE
    turns: tuple[Turn, ...] = ()
    ended_at: float | None = None
    end_reason: str | None = None

    def record(self) -> dict[str, Any]:
        """The dialogue as JSON-ready data (what every face returns)."""
        return {
            "id": self.id,
            "topic": self.topic,
            "participants": list(self.participants),
            "status": str(self.status),
            "max_turns": self.max_turns,
            "created_at": self.created_at,
            "ended_at": self.ended_at,
            "end_reason": self.end_reason,
            "turn_count": len(self.turns),
            "stances": {p: str(s) for p, s in stances(self).items()},
            "turns": [t.record() for t in self.turns],
        }

    def summary(self) -> dict[str, Any]:
        """The record without its turns, for lists."""
        out = self.record()
        del out["turns"]
        return out

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Dialogue:
        return cls(
            id=str(r["id"]),
            topic=str(r["topic"]),
            participants=tuple(r["participants"]),
            created_at=float(r["created_at"]),
            max_turns=int(r["max_turns"]),
            status=Status(r["status"]),
            turns=tuple(Turn.from_record(t) for t in r.get("turns", [])),
            ended_at=r.get("ended_at"),
            end_reason=r.get("end_reason"),
        )


class DialogueNotFound(PromptNotFound):
    """No dialogue has this id (same code as a missing prompt: -32001)."""


class DialogueClosed(PromptClosed):
    """The dialogue ended (consensus, timeout, aborted): it takes no more turns."""

    kind = "dialogue_closed"


def new_dialogue_id() -> str:
    return "d-" + secrets.token_hex(6)


def new_dialogue(
    topic: str,
    participants: list[str],
    *,
    now: float,
    max_turns: int = DEFAULT_MAX_TURNS,
    dialogue_id: str | None = None,
) -> Dialogue:
    """A new active dialogue, or InvalidParams saying what is wrong."""
    topic = topic.strip()
    if not topic:
        raise InvalidParams("topic must not be empty", param="topic")
    if len(topic) > MAX_TOPIC_CHARS:
        raise InvalidParams(f"topic is over {MAX_TOPIC_CHARS} characters", param="topic")
    if not isinstance(participants, list) or not 2 <= len(participants) <= MAX_PARTICIPANTS:
        raise InvalidParams(
            f"participants must be a list of 2 to {MAX_PARTICIPANTS} ling names",
            param="participants",
        )
    for name in participants:
        check_ling_name(name, param="participants")
    if len(set(participants)) != len(participants):
        raise InvalidParams("participants must be distinct", param="participants")
    if not 1 <= max_turns <= MAX_MAX_TURNS:
        raise InvalidParams(f"max_turns must be 1 to {MAX_MAX_TURNS}", param="max_turns")
    return Dialogue(
        id=dialogue_id or new_dialogue_id(),
        topic=topic,
        participants=tuple(participants),
        created_at=now,
        max_turns=max_turns,
    )


def stances(d: Dialogue) -> dict[str, Stance]:
    """Each participant's stance since the last reset (see the module's rules)."""
    out = dict.fromkeys(d.participants, Stance.UNDECIDED)
    for turn in d.turns:
        rule = SIGNALS[turn.signal]
        if rule.resets:
            out = dict.fromkeys(d.participants, Stance.UNDECIDED)
        out[turn.sender] = rule.stance
    return out


def is_consensus(d: Dialogue) -> bool:
    """Every participant has spoken, none is undecided, and someone agrees."""
    spoken = {t.sender for t in d.turns}
    if not spoken.issuperset(d.participants):
        return False
    s = stances(d).values()
    return Stance.UNDECIDED not in s and Stance.AGREE in s


def dispatch(
    d: Dialogue, *, sender: str, to: str, signal: str, message: str, now: float
) -> tuple[Dialogue, Turn, Outcome]:
    """Record one turn; the new dialogue, the turn, and what follows from it."""
    if d.status is not Status.ACTIVE:
        raise DialogueClosed(
            f"dialogue {d.id} is {d.status} ({d.end_reason or 'ended'}); it takes no more turns",
            dialogue_id=d.id,
            status=str(d.status),
        )
    for role, name in (("from", sender), ("to", to)):
        if name not in d.participants:
            raise NotAParticipant(
                f"{role} {name!r} is not a participant of dialogue {d.id} "
                f"({', '.join(d.participants)})",
                dialogue_id=d.id,
                name=name,
                event="agora/not-a-participant",
            )
    if sender == to:
        raise InvalidParams("a turn goes to another participant, not to its sender", param="to")
    try:
        sig = Signal(signal)
    except ValueError:
        raise InvalidParams(
            f"signal {signal!r} is not one of {', '.join(s.value for s in Signal)}",
            param="signal",
        ) from None
    if not message.strip():
        raise InvalidParams("message must not be empty", param="message")
    if len(message) > MAX_MESSAGE_CHARS:
        raise InvalidParams(f"message is over {MAX_MESSAGE_CHARS} characters", param="message")
    turn = Turn(len(d.turns) + 1, sender, to, sig, message, now)
    new = dataclasses.replace(d, turns=(*d.turns, turn))
    if is_consensus(new):
        outcome = Outcome.CONSENSUS
    elif len(new.turns) >= new.max_turns:
        outcome = Outcome.MAX_TURNS
    else:
        outcome = Outcome.RELAY
    status, _event = OUTCOMES[outcome]
    if status is not Status.ACTIVE:
        reason = (
            "every participant approves"
            if status is Status.CONSENSUS
            else f"{new.max_turns} turns without consensus"
        )
        new = dataclasses.replace(new, status=status, ended_at=now, end_reason=reason)
    return new, turn, outcome


def abort(d: Dialogue, *, reason: str, now: float) -> Dialogue:
    if d.status is not Status.ACTIVE:
        raise DialogueClosed(f"dialogue {d.id} is already {d.status}", dialogue_id=d.id)
    return dataclasses.replace(
        d, status=Status.ABORTED, ended_at=now, end_reason=reason.strip() or "aborted"
    )


def with_delivery(d: Dialogue, number: int, delivery: dict[str, Any]) -> Dialogue:
    """The dialogue with turn ``number``'s delivery state replaced."""
    turns = tuple(
        dataclasses.replace(t, delivery=dict(delivery)) if t.number == number else t
        for t in d.turns
    )
    return dataclasses.replace(d, turns=turns)
