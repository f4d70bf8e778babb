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
* **Absent** participants do not count (seed 001: a dead ling must not stall the
  others).  One is marked absent when a turn cannot reach it (``PRESENCE``: its
  deliveries failed ``ABSENT_AFTER_FAILURES`` times in a row, or it has no
  terminal), or when the hub finds its terminal gone while it is the only thing
  between the dialogue and consensus (``holdouts``).  It rejoins by dispatching.
  Consensus still takes two: with fewer than ``MIN_PRESENT`` present, none.
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
ABSENT_AFTER_FAILURES = 2
"""Failed deliveries in a row after which a participant is absent: one may be a
hiccup (a dialog held too long), two say nobody is there."""
MIN_PRESENT = 2
"""Consensus needs at least this many present participants: one alone agrees with
nobody."""


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


class Presence(StrEnum):
    """What one delivery to a participant says about it."""

    THERE = "there"
    """It was reached: its failures in a row start again from zero."""
    STRIKE = "strike"
    """It could not be reached: one more failure in a row."""
    GONE = "gone"
    """It has no terminal to reach (no ling registered): absent at once."""
    UNKNOWN = "unknown"
    """Not known yet (the delivery is held behind a dialog)."""


PRESENCE: dict[str, Presence] = {
    "delivered": Presence.THERE,
    "failed": Presence.STRIKE,
    "not-relayed": Presence.GONE,
    "queued": Presence.UNKNOWN,
}
"""A delivery's ``state`` -> what it says about the receiver's presence."""


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
    coordinator: str | None = None
    """Who created the dialogue (an agent id): told of its end and of absences."""
    absent: tuple[str, ...] = ()
    """Participants not counted toward consensus until they dispatch again."""
    failures: tuple[tuple[str, int], ...] = ()
    """Failed deliveries in a row, per participant that has any."""

    def record(self) -> dict[str, Any]:
        """The dialogue as JSON-ready data (what every face returns)."""
        return {
            "id": self.id,
            "topic": self.topic,
            "participants": list(self.participants),
            "coordinator": self.coordinator,
            "absent": list(self.absent),
            "failed_deliveries": dict(self.failures),
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
            coordinator=r.get("coordinator"),
            absent=tuple(r.get("absent") or ()),
            failures=tuple((str(k), int(v)) for k, v in (r.get("failed_deliveries") or {}).items()),
        )

    @property
    def present(self) -> tuple[str, ...]:
        """The participants that count toward consensus."""
        return tuple(p for p in self.participants if p not in self.absent)


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
    coordinator: str | None = None,
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
        coordinator=coordinator,
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
    """Every present participant has spoken, none is undecided, someone agrees, and
    at least ``MIN_PRESENT`` are present."""
    present = d.present
    if len(present) < MIN_PRESENT:
        return False
    spoken = {t.sender for t in d.turns}
    if not spoken.issuperset(present):
        return False
    s = [stance for p, stance in stances(d).items() if p in present]
    return Stance.UNDECIDED not in s and Stance.AGREE in s


def holdouts(d: Dialogue) -> tuple[str, ...]:
    """The present participants that alone keep an active dialogue from consensus:
    every other present one has agreed or yielded (someone agreed) and they have
    not, or never spoke.  Empty when there is no such near-consensus.  The hub checks
    their terminals: one found gone is absent, and the others may then agree."""
    if d.status is not Status.ACTIVE:
        return ()
    spoken = {t.sender for t in d.turns}
    s = stances(d)
    missing = tuple(p for p in d.present if p not in spoken or s[p] is Stance.UNDECIDED)
    rest = [s[p] for p in d.present if p not in missing]
    if not missing or Stance.AGREE not in rest:
        return ()
    return missing


def mark_absent(d: Dialogue, names: list[str] | tuple[str, ...]) -> Dialogue:
    """The dialogue with ``names`` absent (participants only; order kept)."""
    absent = set(d.absent) | set(names)
    return dataclasses.replace(d, absent=tuple(p for p in d.participants if p in absent))


def note_delivery(d: Dialogue, number: int, delivery: dict[str, Any]) -> tuple[Dialogue, bool]:
    """Turn ``number``'s delivery recorded, and what it says of its receiver
    (``PRESENCE``); True when the receiver has just become absent."""
    d = with_delivery(d, number, delivery)
    turn = next((t for t in d.turns if t.number == number), None)
    presence = PRESENCE.get(str(delivery.get("state")), Presence.UNKNOWN)
    if turn is None or presence is Presence.UNKNOWN or d.status is not Status.ACTIVE:
        return d, False
    to = turn.to
    counts = dict(d.failures)
    if presence is Presence.THERE:
        counts.pop(to, None)
    else:
        counts[to] = counts.get(to, 0) + 1
    d = dataclasses.replace(d, failures=tuple(counts.items()))
    gone = presence is Presence.GONE or counts.get(to, 0) >= ABSENT_AFTER_FAILURES
    if gone and to not in d.absent:
        return mark_absent(d, [to]), True
    return d, False


def take_turn(
    d: Dialogue, *, sender: str, to: str, signal: str, message: str, now: float
) -> tuple[Dialogue, Turn, bool]:
    """Record one turn (without judging its outcome: see ``conclude``); True when
    its sender was absent and rejoins by speaking."""
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
    rejoined = sender in d.absent
    new = dataclasses.replace(
        d,
        turns=(*d.turns, turn),
        absent=tuple(p for p in d.absent if p != sender),
        failures=tuple((p, n) for p, n in d.failures if p != sender),
    )
    return new, turn, rejoined


def conclude(d: Dialogue, *, now: float) -> tuple[Dialogue, Outcome]:
    """What the dialogue's turns (and absences) lead to, ending it if they do."""
    if d.status is not Status.ACTIVE:
        raise DialogueClosed(f"dialogue {d.id} is already {d.status}", dialogue_id=d.id)
    if is_consensus(d):
        outcome = Outcome.CONSENSUS
    elif len(d.turns) >= d.max_turns:
        outcome = Outcome.MAX_TURNS
    else:
        outcome = Outcome.RELAY
    status, _event = OUTCOMES[outcome]
    if status is not Status.ACTIVE:
        if status is Status.CONSENSUS:
            reason = "every participant approves"
            if d.absent:
                reason = f"every present participant approves ({', '.join(d.absent)} absent)"
        else:
            reason = f"{d.max_turns} turns without consensus"
        d = dataclasses.replace(d, status=status, ended_at=now, end_reason=reason)
    return d, outcome


def dispatch(
    d: Dialogue, *, sender: str, to: str, signal: str, message: str, now: float
) -> tuple[Dialogue, Turn, Outcome]:
    """Record one turn; the new dialogue, the turn, and what follows from it."""
    new, turn, _rejoined = take_turn(
        d, sender=sender, to=to, signal=signal, message=message, now=now
    )
    new, outcome = conclude(new, now=now)
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
