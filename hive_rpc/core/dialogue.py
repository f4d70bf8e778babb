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
* **Absent** participants do not count (a dead ling must not stall the
  others).  One is marked absent when a turn cannot reach it (``PRESENCE``: its
  deliveries failed ``ABSENT_AFTER_FAILURES`` times in a row, or it has no
  terminal), or when the hub finds its terminal gone while it is the only thing
  between the dialogue and consensus (``holdouts``).  It rejoins by dispatching.
  Consensus still takes two: with fewer than ``MIN_PRESENT`` present, none.
* A receiver whose terminal is **gone** (a killed pane, a closed buffer, its agent
  exited: the delivery failed with cause ``gone``, ``FAILED_BECAUSE``) is absent at
  once, not after a second try.  What the dialogue is then is ``AFTER_ABSENCE``: the
  present ones may all agree already (``consensus``), enough may be left to go on
  (``active``: the sender turns to another), or one alone is left, who cannot agree
  with anybody: ``paused`` until a turn comes (the gone one registered again).
* After ``max_turns`` turns without consensus the dialogue ends as ``timeout``.
* ``aborted``: ended by hand (``agora/abort``).  Only an ``active`` or ``paused``
  dialogue takes turns; a turn taken in a ``paused`` one makes it ``active`` again.

What the people in a dialogue are told, in words (``closing_text``,
``undelivered_text``, ``state_in_words``), is here too: the hub types it into
their terminals and sends it to editors and coordinators.
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
    PAUSED = "paused"
    """Fewer than ``MIN_PRESENT`` participants are present (a receiver's terminal is
    gone): nobody can take the turn the others wait for.  It still takes turns."""
    CONSENSUS = "consensus"
    TIMEOUT = "timeout"
    ABORTED = "aborted"


@dataclass(frozen=True, slots=True)
class SignalRule:
    resets: bool
    """Stances taken before this turn stop counting."""
    stance: Stance
    """The sender's stance after this turn."""


SIGNALS: dict[Signal, SignalRule] = {
    Signal.PROPOSE: SignalRule(resets=True, stance=Stance.AGREE),
    Signal.COUNTER: SignalRule(resets=True, stance=Stance.AGREE),
    Signal.APPROVE: SignalRule(resets=False, stance=Stance.AGREE),
    Signal.NO_CHANGE: SignalRule(resets=False, stance=Stance.AGREE),
    Signal.DEFER: SignalRule(resets=False, stance=Stance.YIELD),
}


class Outcome(StrEnum):
    """What a dispatch leads to; each names the event the hub emits for it."""

    RELAY = "relay"
    CONSENSUS = "consensus"
    MAX_TURNS = "max-turns-reached"
    PAUSED = "paused"


OUTCOMES: dict[Outcome, tuple[Status, str | None]] = {
    Outcome.RELAY: (Status.ACTIVE, None),
    Outcome.CONSENSUS: (Status.CONSENSUS, "agora/consensus"),
    Outcome.MAX_TURNS: (Status.TIMEOUT, "agora/max-turns-reached"),
    Outcome.PAUSED: (Status.PAUSED, "agora/paused"),
}
"""Outcome -> the dialogue's status after the turn (or after an absence), and the
event emitted (if any)."""

TAKES_TURNS = frozenset({Status.ACTIVE, Status.PAUSED})
"""The statuses in which a dialogue takes turns (the others have ended)."""

AFTER_ABSENCE: dict[tuple[bool, bool], Outcome] = {
    # (at least MIN_PRESENT present, the present ones are in consensus) -> outcome
    (True, True): Outcome.CONSENSUS,
    (True, False): Outcome.RELAY,
    (False, False): Outcome.PAUSED,
}
"""What a dialogue is once a receiver is found gone: it ends in consensus when the
present ones all agree already; it goes on (``active``) when enough are present to
reach one, the sender turning to another of them; with one alone present it is
``paused``.  (Consensus needs ``MIN_PRESENT`` present, so there is no fourth row.)"""


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
"""A delivery's ``state`` -> what it says about the receiver's presence; a failed
one is judged by its ``cause`` first (``FAILED_BECAUSE``)."""

FAILED_BECAUSE: dict[str, Presence] = {
    "gone": Presence.GONE,
    "held": Presence.STRIKE,
    "refused": Presence.STRIKE,
    "error": Presence.STRIKE,
    "stopped": Presence.UNKNOWN,
}
"""A failed delivery's ``cause`` (relay/delivery.py) -> what it says of the receiver:
its terminal is gone (killed, closed) or its agent exited: nobody is there to take a
turn, absent at once; held until the relay gave up, or the text refused (too long for
the terminal), or an error while typing: one strike; the hub stopping says nothing of
the receiver.  A failure without a cause (kept from before) is a strike."""


def presence(delivery: dict[str, Any]) -> Presence:
    """What ``delivery`` says of its receiver (``PRESENCE``, ``FAILED_BECAUSE``)."""
    state = str(delivery.get("state"))
    if state == "failed":
        cause = FAILED_BECAUSE.get(str(delivery.get("cause")))
        if cause is not None:
            return cause
    return PRESENCE.get(state, Presence.UNKNOWN)


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
    said = presence(delivery)
    if turn is None or said is Presence.UNKNOWN or d.status not in TAKES_TURNS:
        return d, False
    to = turn.to
    counts = dict(d.failures)
    if said is Presence.THERE:
        counts.pop(to, None)
    else:
        counts[to] = counts.get(to, 0) + 1
    d = dataclasses.replace(d, failures=tuple(counts.items()))
    gone = said is Presence.GONE or counts.get(to, 0) >= ABSENT_AFTER_FAILURES
    if gone and to not in d.absent:
        return mark_absent(d, [to]), True
    return d, False


def take_turn(
    d: Dialogue, *, sender: str, to: str, signal: str, message: str, now: float
) -> tuple[Dialogue, Turn, bool]:
    """Record one turn (without judging its outcome: see ``conclude``); True when
    its sender was absent and rejoins by speaking."""
    if d.status not in TAKES_TURNS:
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
                param=role,
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
        status=Status.ACTIVE,  # a paused dialogue goes on with this turn
        turns=(*d.turns, turn),
        absent=tuple(p for p in d.absent if p != sender),
        failures=tuple((p, n) for p, n in d.failures if p != sender),
    )
    return new, turn, rejoined


def conclude(d: Dialogue, *, now: float) -> tuple[Dialogue, Outcome]:
    """What the dialogue's turns (and absences) lead to, ending it if they do."""
    if d.status not in TAKES_TURNS:
        raise DialogueClosed(f"dialogue {d.id} is already {d.status}", dialogue_id=d.id)
    if is_consensus(d):
        outcome = Outcome.CONSENSUS
    elif len(d.turns) >= d.max_turns:
        outcome = Outcome.MAX_TURNS
    else:
        outcome = Outcome.RELAY
    return _to(d, outcome, now=now), outcome


def _to(d: Dialogue, outcome: Outcome, *, now: float) -> Dialogue:
    """The dialogue in the status ``outcome`` leads to; ended, with why, when it ends."""
    status, _event = OUTCOMES[outcome]
    if status in TAKES_TURNS:
        return dataclasses.replace(d, status=status)
    if status is Status.CONSENSUS:
        reason = "every participant approves"
        if d.absent:
            reason = f"every present participant approves ({', '.join(d.absent)} absent)"
    else:
        reason = f"{d.max_turns} turns without consensus"
    return dataclasses.replace(d, status=status, ended_at=now, end_reason=reason)


def after_absence(d: Dialogue, *, now: float) -> tuple[Dialogue, Outcome]:
    """What the dialogue is once a receiver was found gone (``AFTER_ABSENCE``).  An
    ended dialogue stays as it is (outcome ``RELAY``: nothing to announce)."""
    if d.status not in TAKES_TURNS:
        return d, Outcome.RELAY
    outcome = AFTER_ABSENCE[(len(d.present) >= MIN_PRESENT, is_consensus(d))]
    return _to(d, outcome, now=now), outcome


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
    if d.status not in TAKES_TURNS:
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


# --- what the people in a dialogue are told, in words ----------------------------------


def _names(names: list[str] | tuple[str, ...]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def consensus_summary(d: Dialogue) -> str:
    """What the participants agreed to, and who: the proposal on the table (the last
    ``propose`` or ``counter``), or, when nothing was proposed, the last turn's word."""
    s = stances(d)
    proposal = next((t for t in reversed(d.turns) if SIGNALS[t.signal].resets), None)
    if proposal is not None:
        what = f"{proposal.sender}'s {proposal.signal} of turn {proposal.number}"
        backers = [p for p in d.present if s[p] is Stance.AGREE and p != proposal.sender]
    else:
        last = d.turns[-1] if d.turns else None
        what = f"no change ({last.sender}, turn {last.number})" if last else "no change"
        proposal = last
        backers = [p for p in d.present if s[p] is Stance.AGREE]
    said = f' "{_one_line(proposal.message)}"' if proposal is not None else ""
    out = f"{what}{said}"
    if backers:
        out += f", approved by {_names(backers)}"
    yielded = [p for p in d.present if s[p] is Stance.YIELD]
    if yielded:
        out += f", {_names(yielded)} deferring"
    if d.absent:
        out += f" ({_names(d.absent)} absent)"
    return out


def state_in_words(d: Dialogue) -> str:
    """The dialogue's status, and what it means for whoever reads it."""
    absent = f"{_names(d.absent)} {'is' if len(d.absent) == 1 else 'are'} absent"
    if d.status is Status.ACTIVE and len(d.present) < MIN_PRESENT:
        return f"active: {absent}, and it waits for them to take a turn"
    if d.status is Status.ACTIVE:
        out = f"active: it goes on between {_names(d.present)}"
        return out + (f" ({absent}, not counted until they take a turn again)" if d.absent else "")
    if d.status is Status.PAUSED:
        alone = _names(d.present) or "nobody"
        return (
            f"paused: {absent} and {alone} alone cannot reach consensus; it goes on "
            "when a turn is dispatched to a participant that is back (its terminal "
            "registered again)"
        )
    if d.status is Status.CONSENSUS:
        return f"ended in consensus: {consensus_summary(d)}"
    if d.status is Status.TIMEOUT:
        return f"ended without consensus: {d.end_reason}"
    return f"aborted: {d.end_reason}"


def consensus_line(d: Dialogue) -> str:
    """One line: ``the dialogue D ended in consensus: SUMMARY``."""
    return f"the dialogue {d.id} ({d.topic}) ended in consensus: {consensus_summary(d)}"


def closing_text(d: Dialogue) -> str:
    """What each participant's terminal is typed when the dialogue ended in consensus."""
    return (
        "---\n"
        "AGORA DIALOGUE ENDED\n"
        f"Dialogue ID: {d.id}\n"
        f"Topic: {d.topic}\n"
        f"Participants: {', '.join(d.participants)}\n"
        "---\n\n"
        f"The dialogue {d.id} ended in consensus: {consensus_summary(d)}.\n"
        "It takes no more turns: there is nothing to answer."
    )


def undelivered_line(d: Dialogue, turn: Turn, delivery: dict[str, Any]) -> str:
    """One line for whoever watches: which turn, to whom, why not, and the state now."""
    why = str(delivery.get("reason") or "no reason given")
    out = f"turn {turn.number} of {d.id} ({d.topic}) to {turn.to} was not delivered: {why}"
    if turn.to in d.absent:
        out += f"; {turn.to} is absent"
    return f"{out}; the dialogue is {state_in_words(d)}"


def undelivered_text(d: Dialogue, turn: Turn, delivery: dict[str, Any]) -> str:
    """What the sender of a turn that could not be delivered is typed: why, what the
    dialogue is now, and what it can do."""
    why = str(delivery.get("reason") or "no reason given")
    lines = [
        "---",
        "AGORA DIALOGUE NOTICE",
        f"Dialogue ID: {d.id}",
        f"Topic: {d.topic}",
        "---",
        "",
        f"Your turn {turn.number} to {turn.to} ({turn.signal}) was not delivered: {why}.",
    ]
    if turn.to in d.absent:
        lines.append(
            f"{turn.to} is absent: not counted toward consensus until it takes a turn again."
        )
    lines.append(f"The dialogue is {state_in_words(d)}.")
    others = [p for p in d.present if p not in (turn.sender, turn.to)]
    if d.status is Status.PAUSED:
        lines.append(
            f"Nothing to do until {turn.to} is back: once its terminal is registered "
            f'again, send your turn to it again with agora_dispatch (dialogue_id "{d.id}").'
        )
    elif d.status is Status.ACTIVE:
        to = f"to another participant ({_names(others)})" if others else f"to {turn.to} later"
        if turn.to not in d.absent and others:
            to = f"to {turn.to} once it can take it, or to another participant ({_names(others)})"
        lines.append(f'Send your turn again with agora_dispatch (dialogue_id "{d.id}"), {to}.')
    return "\n".join(lines)
