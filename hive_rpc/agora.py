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
``delivery`` (``agora/status``) and in the event log.  If it then fails, the people
in the dialogue are told, in words: the sender in its terminal
(``dlg.undelivered_text``), the coordinator in its news, editors by ``hive/agora``;
a receiver whose terminal is gone is absent at once, and the dialogue goes on,
pauses or ends as ``dlg.AFTER_ABSENCE`` says.  A dialogue that ends in consensus is
typed into every participant's terminal (``dlg.closing_text``), through the relay
and its consent rules like any turn.

Editors follow what concerns the lings they show (``follow``, sent to subscribed
editors as ``hive/agora``: a turn held and why, typed, failed; a participant
absent; a dialogue paused or ended), with the Emacs buffer of each ling concerned.

Consent (docs/security.md, "Typing into terminals"): a registration made from inside
the terminal it names (relay/consent.py) is the human's and takes effect at once;
any other (an agent's ``ling_register``, the CLI run elsewhere, the dashboard) is a
*request*: the hub asks the human with a prompt of its own (urgent, approve/deny,
who asked, what runs in the terminal and its last lines), which every editor shows
like any question, and registers the ling only once it is approved.  Requests live
in the store (``ling-request``) so that a restart keeps waiting for the answer.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from hive_rpc.core import dialogue as dlg
from hive_rpc.core import messages
from hive_rpc.core.conventions import HUB_AGENT
from hive_rpc.core.errors import (
    HiveError,
    InvalidParams,
    LimitReached,
    LingNotFound,
    NotAParticipant,
)
from hive_rpc.core.limits import MAX_LING_REQUESTS, MAX_LING_REQUESTS_PER_PEER
from hive_rpc.core.ling import (
    REFUSE,
    TYPE,
    Agent,
    Ling,
    Proc,
    Verdict,
    check_ling_name,
    is_shell,
    new_ling,
    parent_of,
    verdict,
    will_exec,
)
from hive_rpc.core.prompt import Action, Ask, Status
from hive_rpc.core.terminal_text import strip_controls
from hive_rpc.relay.consent import Caller, from_inside, peer_of
from hive_rpc.relay.delivery import Relay, Ticket
from hive_rpc.relay.emacs import DeliveryPeers, EmacsBufferTarget
from hive_rpc.relay.target import Target, TargetState
from hive_rpc.relay.tmux import TmuxTarget
from hive_rpc.relay.zellij import ZellijTarget
from hive_rpc.store.base import PromptStore

if TYPE_CHECKING:
    from hive_rpc.registry import Registry

log = logging.getLogger(__name__)

DIALOGUE = "dialogue"
LING = "ling"
LING_REQUEST = "ling-request"
"""A registration waiting for the human's approval: the ling and its prompt's id."""
APPROVE, DENY = "approve", "deny"
CONSENT_TIMEOUT_S = 600.0
"""How long a registration request waits for the human before it is denied."""
CONSENT_TAIL_LINES = 8
"""How many of the terminal's last lines the consent question shows."""
CONSENT_LINE_CHARS = 200
"""Each of those lines is cut to this many characters (tmux joins wrapped lines)."""
DISPATCH_WAIT_S = 5.0
HOLDOUT_CHECK_S = 3.0
"""How long the check of the terminals that alone stand between a dialogue and
consensus may take (``dlg.holdouts``); one that does not answer in time is not
marked absent."""
WARN_EVENTS = frozenset(
    {
        "agora/not-a-participant",
        "agora/ling-unavailable",
        "agora/participant-absent",
        "agora/max-turns-reached",
        "agora/paused",
    }
)
"""Events the coordinator should act on: logged, and on the activity stream, at
``level: warn`` (every other event is ``info``)."""
NEWS_EVENTS = WARN_EVENTS | {"agora/consensus", "agora/aborted"}
"""What a dialogue's coordinator is told (``news``): how it ended, and trouble; an
event that names the ``sender`` of a turn (its delivery failed) is that sender's
news too."""
EDITOR_EVENTS = frozenset(
    {
        "relay/held",
        "relay/delivered",
        "relay/failed",
        "agora/ling-unavailable",
        "agora/participant-absent",
        "agora/participant-rejoined",
        "agora/paused",
        "agora/consensus",
        "agora/max-turns-reached",
        "agora/aborted",
    }
)
"""What subscribed editors are sent (``follow``, ``hive/agora``): what a ling's
buffer should show (held, and why; typed; failed) and what becomes of a dialogue."""
MAX_NEWS_WAIT_S = 60.0
EVENT_LOG = 500
"""Recent Agora events kept in memory (``agora/events``)."""

STORE_RETRY_MIN_S, STORE_RETRY_MAX_S = 1.0, 60.0
"""A store write the Agora makes on its own is tried again after these many seconds,
doubling (as the registry's own writes are)."""

TargetFactory = Callable[[Ling], Target]
T = TypeVar("T")


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
        for body in await self._store.documents(DIALOGUE):
            d = dlg.Dialogue.from_record(body)
            self._dialogues[d.id] = d
        for body in await self._store.documents(LING):
            ling = Ling.from_record(body)
            self._lings[ling.name] = ling
        for body in await self._store.documents(LING_REQUEST):
            ling, prompt_id = Ling.from_record(body["ling"]), str(body["prompt_id"])
            self._requests[ling.name] = (ling, prompt_id)
            self._nursery.start_soon(self._await_consent, ling, prompt_id)

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
        """Record an event.  A dialogue's events name its coordinator, so whoever
        follows the activity stream for its own dialogues can pick them out."""
        level = "warn" if event in WARN_EVENTS else "info"
        d = self._dialogues.get(facts.get("dialogue_id") or "")
        if d is not None and d.coordinator is not None:
            facts.setdefault("coordinator", d.coordinator)
        entry = {"event": event, "at": self._now(), "level": level, **facts}
        self.events.append(entry)
        told = (facts.get("coordinator"), facts.get("sender"))
        if event in NEWS_EVENTS and told != (None, None):
            self._news_seq += 1
            self._news.append({**entry, "seq": self._news_seq})
            self._news_came.set()
            self._news_came = trio.Event()
        if event in EDITOR_EVENTS:
            self._told_seq += 1
            self._told.append((self._told_seq, self._for_editors(entry, d)))
            self._told_came.set()
            self._told_came = trio.Event()
        log.log(logging.WARNING if level == "warn" else logging.INFO, "%s %s", event, facts)
        if self.on_event is not None:
            self.on_event(entry, d)
        return entry

    def _for_editors(self, entry: dict[str, Any], d: dlg.Dialogue | None) -> dict[str, Any]:
        """``hive/agora``'s params: the event, with the Emacs buffer of each ling it
        concerns (``buffers``; ``buffer``: the one of its ``ling``), and, for a
        dialogue's event, the dialogue's ``topic``, ``status``, ``participants`` and
        ``absent``."""
        out = dict(entry)
        names = [str(entry["ling"])] if entry.get("ling") else []
        if d is not None:
            names += [p for p in d.participants if p not in names]
            out |= {"topic": d.topic, "status": d.status.value,
                    "participants": list(d.participants), "absent": list(d.absent)}  # fmt: skip
        buffers = {}
        for name in names:
            ling = self._lings.get(name)
            if ling is not None and ling.kind == "emacs-buffer":
                buffers[name] = ling.address
        out["buffers"] = buffers
        if entry.get("ling"):
            out["buffer"] = buffers.get(str(entry["ling"]))
        return out

    async def follow(self) -> AsyncGenerator[dict[str, Any]]:
        """What subscribed editors are sent (``EDITOR_EVENTS``, see ``_for_editors``),
        from now on, as it happens.  One that fell ``EVENT_LOG`` behind misses the
        oldest (each event says all it is about, so nothing else goes wrong)."""
        seen = self._told_seq
        while True:
            came = self._told_came
            fresh = [params for seq, params in self._told if seq > seen]
            if not fresh:
                await came.wait()
                continue
            seen = self._told_seq
            for params in fresh:
                yield params

    async def news(
        self, since: int, *, coordinators: list[str] | None = None, wait_s: float = 0.0
    ) -> dict[str, Any]:
        """What coordinators should hear (``NEWS_EVENTS``) after ``since``, waiting up to
        ``wait_s`` for some: ``{"events": [...], "last": N}``, each event with its
        ``seq``; ask again with ``since=last``.  A ``since`` this hub never reached
        (it restarted) starts again from the oldest kept.  ``coordinators`` picks the
        events of those coordinators' dialogues, and those naming one of them as the
        ``sender`` of a turn that could not be delivered."""
        if since > self._news_seq:
            since = 0
        wanted = None if coordinators is None else set(coordinators)
        with trio.move_on_after(min(max(wait_s, 0.0), MAX_NEWS_WAIT_S)):
            while True:
                found = [
                    e
                    for e in self._news
                    if e["seq"] > since
                    and (
                        wanted is None
                        or e.get("coordinator") in wanted
                        or e.get("sender") in wanted
                    )
                ]
                if found:
                    break
                since = self._news_seq
                await self._news_came.wait()
        return {"events": found, "last": max([since, *(e["seq"] for e in found)])}

    def recent_events(self, dialogue_id: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if dialogue_id in (None, e.get("dialogue_id"))]

    # --- dialogues -------------------------------------------------------------------

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

        # The terminals are checked outside the lock: a check may wait HOLDOUT_CHECK_S
        # on a silent Emacs, and the lock is every dialogue's.  Who to check is read
        # from the turn as it would be taken now; the turn is then taken for real on
        # the dialogue as it is after the check (another turn may have come meanwhile).
        async with self._lock:
            would_be, _, _ = take()
        found = await self._gone(dlg.holdouts(would_be))
        async with self._lock:
            d, turn, rejoined = take()
            gone = {name: why for name, why in found.items() if name in dlg.holdouts(d)}
            d, outcome = dlg.conclude(dlg.mark_absent(d, list(gone)), now=self._now())
            if outcome is not dlg.Outcome.RELAY:
                d = dlg.with_delivery(
                    d, turn.number, {"state": "not-relayed", "reason": f"dialogue {outcome}"}
                )
            await self._save(d)
        if rejoined:
            self._emit(
                "agora/participant-rejoined", dialogue_id=d.id, turn=turn.number, ling=sender
            )
        for name, reason in gone.items():
            self._absent(d, turn.number, name, reason)
        result: dict[str, Any] = {
            "dialogue_id": d.id,
            "turn": turn.number,
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
        self._emit("agora/turn-dispatched", dialogue_id=d.id, turn=turn.number, to=to)
        text = messages.agora_turn(d, turn)
        delivery = await self._deliver(to, text, dialogue_id=d.id, turn=turn.number)
        result["delivery"] = delivery
        now = self._dialogues.get(d.id, d)
        if delivery["state"] == "failed" or delivery["state"] == "not-relayed":
            result["event"] = self._unavailable(now, turn, delivery)
        result["status"] = now.status.value  # an absence may have made consensus
        result["absent"] = list(now.absent)
        result["report"] = _dispatch_report(now, turn, delivery)
        return result

    def _absent(
        self, d: dlg.Dialogue, turn: int | None, ling: Any, reason: Any, **facts: Any
    ) -> dict[str, Any]:
        """``agora/participant-absent``: ``ling`` is absent from ``d`` (``reason``)."""
        return self._emit(
            "agora/participant-absent", dialogue_id=d.id, turn=turn, ling=ling, **facts,
            reason=reason, message=f"{ling} is absent from {d.id} ({d.topic}): {reason}",
        )  # fmt: skip

    def _consensus(self, d: dlg.Dialogue, turn: int | None) -> dict[str, Any]:
        """``agora/consensus``: ``d`` ended in consensus at ``turn``, in words."""
        return self._emit(
            "agora/consensus", dialogue_id=d.id, turn=turn,
            summary=dlg.consensus_summary(d), message=dlg.consensus_line(d),
        )  # fmt: skip

    def _unavailable(
        self, d: dlg.Dialogue, turn: dlg.Turn, delivery: dict[str, Any]
    ) -> dict[str, Any]:
        """``agora/ling-unavailable``: turn ``turn`` could not be delivered; in words,
        with the state the dialogue is in now, for its coordinator and its sender."""
        return self._emit(
            "agora/ling-unavailable", dialogue_id=d.id, turn=turn.number, ling=turn.to,
            sender=turn.sender, reason=delivery.get("reason"), cause=delivery.get("cause"),
            state=d.status.value, message=dlg.undelivered_line(d, turn, delivery),
        )  # fmt: skip

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

    async def _gone(self, names: tuple[str, ...]) -> dict[str, str]:
        """Which of the lings ``names`` cannot be reached now, and why: not
        registered, its terminal gone, or its approved agent gone (exited, another
        program now, or a shell typed into without --allow-shell).  Checked at
        once, each within ``HOLDOUT_CHECK_S``."""
        gone: dict[str, str] = {}

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
                if not state.alive:
                    gone[name] = state.reason or "its terminal is gone"
                else:
                    judged = self._verdict(ling, target, state)
                    if judged.action == REFUSE:
                        gone[name] = judged.reason

        if names:
            async with trio.open_nursery() as nursery:
                for name in names:
                    nursery.start_soon(check, name)
        return {name: gone[name] for name in names if name in gone}

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

    # --- lings -----------------------------------------------------------------------

    async def register(
        self,
        name: str,
        kind: str,
        address: str,
        *,
        label: str | None = None,
        allow_shell: bool = False,
        caller: Caller | None = None,
        asked_by: str | None = None,
        owner: bool = False,
        then_exec: bool = False,
    ) -> dict[str, Any]:
        """Register a ling now if the human is the one asking, else ask the human.

        ``owner``: the caller is the hub itself or a test, trusted as the human.
        Otherwise the registration is the human's when ``caller`` runs inside the
        terminal (relay/consent.py) and was not sent on behalf of an agent
        (``asked_by``); any other becomes a request the human approves or denies
        through the hub's own prompt.  The result has ``state``: ``registered`` or
        ``pending`` (with the prompt's ``prompt_id``).

        Either way the ling records which process is its agent (``_agent``): the
        terminal is typed into only while that process holds its foreground.
        ``then_exec``: the caller is about to ``exec`` the agent in its own place
        (``hive-rpc spawn``, ``hive-rpc ling register NAME --tmux -- COMMAND``).
        """
        ling = new_ling(name, kind, address, now=self._now(), label=label, allow_shell=allow_shell)
        try:
            target = self._target(ling)  # the target's own parser checks the address
        except ValueError as e:
            raise InvalidParams(f"address: {e}", param="address") from None
        if owner or (
            asked_by is None
            and await from_inside(ling.kind, ling.address, target, caller, self._peers)
        ):
            state = await target.check()
            pid = caller.pid if caller is not None and not owner else None
            agent = _agent(ling, state, caller_pid=pid, then_exec=then_exec, strict=not owner)
            return await self._put(dataclasses.replace(ling, agent=agent), "ling/registered")
        return await self._ask_consent(ling, target, caller, asked_by)

    def _verdict(self, ling: Ling, target: Target, state: TargetState) -> Verdict:
        """``core.ling.verdict`` for ``ling`` on what ``target`` just showed."""
        return verdict(
            ling.agent,
            self._relay.processes(ling.agent.pid) if ling.agent is not None else None,
            state.foreground,
            kind=target.kind,
            name=ling.name,
            allow_shell=ling.allow_shell,
            no_foreground=state.no_foreground,
        )

    async def _put(self, ling: Ling, event: str) -> dict[str, Any]:
        async with self._lock:
            await self._store.put_document(LING, ling.name, ling.record())
            self._lings[ling.name] = ling
        self._emit(event, ling=ling.name, kind=ling.kind, address=ling.address)
        return {**ling.record(), "state": "registered"}

    async def _ask_consent(
        self, ling: Ling, target: Target, caller: Caller | None, asked_by: str | None
    ) -> dict[str, Any]:
        if self._registry is None:
            raise HiveError(
                "this hub cannot ask the human to approve a ling; register it from "
                "inside its terminal (hive-rpc ling register NAME --tmux, run in the pane)"
            )
        if ling.name not in self._requests and len(self._requests) >= MAX_LING_REQUESTS:
            raise LimitReached(
                f"{MAX_LING_REQUESTS} ling registrations already wait for the human's "
                "approval, the limit (ling_requests); wait for answers first",
                limit="ling_requests",
                max=MAX_LING_REQUESTS,
            )
        peer = peer_of(caller)
        theirs = [n for n, p in self._request_peers.items() if p == peer and n != ling.name]
        if len(theirs) >= MAX_LING_REQUESTS_PER_PEER:
            raise LimitReached(
                f"{len(theirs)} ling registrations asked through {peer} already wait for "
                f"the human's approval, its limit (ling_requests_per_peer, "
                f"{MAX_LING_REQUESTS_PER_PEER}), whatever agent ids they gave; wait for "
                "answers first",
                limit="ling_requests_per_peer",
                max=MAX_LING_REQUESTS_PER_PEER,
            )
        state = await target.check()
        agent = _agent(ling, state, caller_pid=None, then_exec=False, strict=False)
        ling = dataclasses.replace(ling, agent=agent)
        where = {"tmux": "tmux pane", "zellij": "Zellij pane", "emacs-buffer": "Emacs buffer"}
        who = asked_by or "a client that gave no agent id"
        if caller is not None and caller.pid is not None:
            who += f" ({caller.describe()})"
        running = state.command or "cannot tell"
        if is_shell(state.command):
            running += " - a SHELL: whatever is typed there runs as a command"
        if agent is None:
            approved = (
                "the hub cannot tell which process holds it"
                + (f" ({state.no_foreground})" if state.alive and state.no_foreground else "")
                + ", so nothing would be typed until it is registered again from inside"
            )
        elif agent.pending_exec is not None:
            approved = (
                f"the program {agent.comm} (pid {agent.pid}) starts in its own place, "
                "once it has, and only while it holds the terminal's foreground"
            )
        else:
            approved = (
                f"{agent.comm} (pid {agent.pid}, {agent.exe or 'executable unknown'}), "
                "and only while it holds the terminal's foreground"
            )
            if is_shell(agent.comm) or is_shell(agent.exe):
                approved += (
                    " - a SHELL: typed into only WITH --allow-shell"
                    if not ling.allow_shell
                    else " - a SHELL: what is typed runs as a command"
                )
        lines = [
            line[:CONSENT_LINE_CHARS]
            for line in strip_controls(state.tail).rstrip().splitlines()[-CONSENT_TAIL_LINES:]
        ]
        question = (
            f"{who} asks to register {where[ling.kind]} {ling.address} as ling {ling.name}"
            + (" WITH --allow-shell (typing even into a shell)" if ling.allow_shell else "")
            + ": other agents' messages would be typed into it and submitted.\n"
            + f"Running there now: {running}\n"
            + f"Approving types only into: {approved}\n"
            + (
                "Its last lines:\n" + "\n".join(f"  | {line}" for line in lines)
                if state.alive and lines
                else f"It cannot be read now: {state.reason or 'nothing shown'}"
            )
            + "\nApprove only a terminal where an agent runs that others may type to."
        )
        prompt = await self._registry.ask(
            Ask(
                agent_id=HUB_AGENT,
                question=question,
                choices=[APPROVE, DENY],
                urgent=True,
                timeout_s=self.consent_timeout_s,
            )
        )
        async with self._lock:
            old = self._requests.pop(ling.name, None)
            self._requests[ling.name] = (ling, prompt.id)
            self._request_peers[ling.name] = peer
            await self._store.put_document(
                LING_REQUEST, ling.name, {"ling": ling.record(), "prompt_id": prompt.id}
            )
        if old is not None:  # asked again: the new request replaces the old one
            await self._withdraw(old[1])
        self._nursery.start_soon(self._await_consent, ling, prompt.id)
        self._emit(
            "ling/requested", ling=ling.name, kind=ling.kind, address=ling.address,
            prompt_id=prompt.id, by=asked_by,
        )  # fmt: skip
        return {**ling.record(), "state": "pending", "prompt_id": prompt.id}

    async def _withdraw(self, prompt_id: str) -> None:
        assert self._registry is not None
        # Answered or gone meanwhile: its waiter sees it is no longer the current one.
        with contextlib.suppress(HiveError):
            await self._registry.cancel(prompt_id, by=HUB_AGENT)

    async def _await_consent(self, ling: Ling, prompt_id: str) -> None:
        """Wait for the human's answer to a registration request and carry it out."""
        assert self._registry is not None
        try:
            prompt = await self._registry.poll(prompt_id)
            while prompt.status is Status.PENDING:
                prompt = await self._registry.wait(prompt_id, timeout_s=3600.0)
        except HiveError as e:
            prompt = None
            log.warning("ling request %s: its prompt %s is gone (%s)", ling.name, prompt_id, e)
        approved = (
            prompt is not None
            and prompt.status is Status.RESPONDED
            and prompt.action is Action.ACCEPT
            and prompt.answer == APPROVE
        )
        if self._requests.get(ling.name, (None, None))[1] != prompt_id:
            return  # replaced by a newer request, or removed
        if approved:  # stored first: until then it is listed as pending, not as nothing
            await self._on_its_own(lambda: self._store.put_document(LING, ling.name, ling.record()))
        async with self._lock:
            current = self._requests.get(ling.name)
            replaced = current is None or current[1] != prompt_id  # while it was stored
            stale = replaced and approved and ling.name not in self._lings
            if not replaced:
                del self._requests[ling.name]
                self._request_peers.pop(ling.name, None)
                if approved:  # registered as it stops being pending: never listed as neither
                    self._lings[ling.name] = ling
        if replaced:
            if stale:
                await self._on_its_own(lambda: self._store.delete_document(LING, ling.name))
            return
        await self._on_its_own(lambda: self._store.delete_document(LING_REQUEST, ling.name))
        if approved:
            self._emit("ling/approved", ling=ling.name, kind=ling.kind, address=ling.address)
            return
        outcome = prompt.status.value if prompt is not None else "gone"
        if prompt is not None and prompt.status is Status.RESPONDED:
            outcome = "denied" if prompt.answer == DENY else f"declined ({prompt.action})"
        self._emit("ling/denied", ling=ling.name, kind=ling.kind, address=ling.address,
                   outcome=outcome)  # fmt: skip

    async def remove(self, name: str) -> dict[str, Any]:
        check_ling_name(name)
        async with self._lock:
            removed = await self._store.delete_document(LING, name)
            self._lings.pop(name, None)
            request = self._requests.pop(name, None)
            self._request_peers.pop(name, None)
            if request is not None:
                await self._store.delete_document(LING_REQUEST, name)
        if request is not None:
            await self._withdraw(request[1])
        return {"name": name, "removed": removed or request is not None}

    def _ling(self, name: str) -> Ling:
        ling = self._lings.get(name)
        if ling is None:
            request = self._requests.get(name)
            if request is not None:
                raise LingNotFound(
                    f"no ling named {name!r} is registered yet: its registration waits "
                    f"for the human to approve prompt {request[1]}",
                    name=name,
                )
            raise LingNotFound(
                f"no ling named {name!r} is registered; register its terminal with "
                "`hive-rpc ling register NAME --tmux PANE` (or --zellij / --emacs-buffer)",
                name=name,
            )
        return ling

    async def lings(self, *, check: bool = False) -> list[dict[str, Any]]:
        """Registered lings (``state: registered``) and requests waiting for the human
        (``state: pending``, with ``prompt_id``), by name.  ``check`` tests every
        terminal at once, so one slow terminal (a silent Emacs) delays the answer by
        its own timeout, not by the sum of all."""
        out: list[dict[str, Any]] = [
            {**ling.record(), "state": "registered"} for ling in self._lings.values()
        ]
        out += [
            {**ling.record(), "state": "pending", "prompt_id": prompt_id}
            for ling, prompt_id in self._requests.values()
        ]
        out.sort(key=lambda r: (r["name"], r["state"]))
        if check:

            async def check_one(record: dict[str, Any]) -> None:
                ling = Ling.from_record(record)
                try:
                    target = self._target(ling)
                except ValueError as e:  # kept from before addresses were checked
                    record["alive"], record["reason"], record["command"] = False, str(e), None
                    return
                state = await target.check()
                record["alive"], record["reason"] = state.alive, state.reason
                record["command"] = state.command
                if state.alive and ling.name in self._lings:
                    judged = self._verdict(ling, target, state)
                    if judged.action != TYPE:
                        record["reason"] = judged.reason

            async with trio.open_nursery() as nursery:
                for record in out:
                    nursery.start_soon(check_one, record)
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
        try:
            target = self._target(ling)
        except ValueError as e:  # kept from before addresses were checked
            delivery = {"state": "failed", "ling": name, "reason": str(e)}
            await self._record_delivery(dialogue_id, turn, delivery)
            return delivery
        ticket = self._relay.submit(
            ling.name, target, text, agent=ling.agent, allow_shell=ling.allow_shell
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
        human is typing) says what holds it now."""
        reported: str | None = None
        while not ticket.done.is_set():
            changed = ticket.held_changed
            if ticket.held is not None and ticket.held != reported:
                reported = ticket.held
                why = f"held: {reported}"
                self._emit(
                    "relay/held", ling=ticket.key, dialogue_id=dialogue_id, turn=turn,
                    reason=why, hold=ticket.hold_cause,
                    message=f"not yet typed into {ticket.key}: {reported}",
                )  # fmt: skip
                if queued.is_set():
                    await self._on_its_own(lambda: self._note_hold(ticket, dialogue_id, turn))
            await changed.wait()

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
        if result.address and result.address != ling.address.partition("@")[0]:
            # The pane was re-resolved (e.g. ``work:1.0`` -> ``%7``): keep the new one.
            _, at, socket = ling.address.partition("@")
            moved = dataclasses.replace(ling, address=result.address + (at + socket))
            await self._put(moved, "ling/registered")
            ling = moved
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


NO_AGENT_YET = (
    "no agent runs in this terminal yet: the registering command itself holds its "
    "foreground, and it ends now.  Start the agent through it instead: `hive-rpc ling "
    "register NAME --tmux -- COMMAND` registers the pane, then runs COMMAND in its "
    "place as the approved agent; or run `hive-rpc ling register NAME --tmux` from the "
    "agent (its shell tool), or `hive-rpc spawn NAME -- COMMAND`"
)


def _is_shell_proc(proc: Proc) -> bool:
    return is_shell(proc.comm) or is_shell(proc.exe)


def _agent(
    ling: Ling, state: TargetState, *, caller_pid: int | None, then_exec: bool, strict: bool
) -> Agent | None:
    """The process ``ling``'s registration approves, from what its terminal shows
    (docs/security.md, "Typing into terminals"):

    - with ``allow_shell``, the process the terminal itself runs (the pane's shell);
    - ``then_exec``: the caller, which must hold the foreground and will ``exec`` the
      agent (bound to what it runs once it has: ``Agent.pending_exec``);
    - else the leader of the terminal's foreground process group: the agent that
      ran ``hive-rpc ling register`` from its shell tool, the program Emacs started;
      a ``sh -c`` that may still ``exec`` it is bound once it has.

    ``strict`` (a registration from inside, by the human) refuses with the reason
    when there is no agent to approve; otherwise (a consent request, the hub's own)
    the ling gets no agent, and nothing is typed into it until it is registered again.
    """
    if not state.alive:
        return None
    if ling.allow_shell:
        if state.root is None and strict:
            raise HiveError(
                f"the terminal does not say which process it runs ({state.no_foreground}); "
                "not registered"
            )
        if state.root is None:
            return None
        return Agent.of(state.root, pending_exec=will_exec(state.root))
    front = state.foreground
    if front is None:
        if strict:
            raise HiveError(
                "the terminal does not say which process holds its foreground "
                f"({state.no_foreground}), so the hub cannot record the agent to type "
                "into; not registered"
            )
        return None
    if then_exec:
        if caller_pid is not None and front.pid == caller_pid:
            return Agent.of(front, pending_exec=True)
        if strict:
            raise HiveError(
                f"`-- COMMAND` runs COMMAND as the agent in the registering command's "
                f"place, so that command must hold the terminal's foreground; "
                f"{front.comm} (pid {front.pid}) does: run it at the shell's prompt"
            )
    if strict and caller_pid is not None and front.pid == caller_pid:
        raise HiveError(NO_AGENT_YET)
    if will_exec(front):  # env VAR=1 claude, sh -c '...; exec claude'
        return Agent.of(front, pending_exec=True)
    if strict and _is_shell_proc(front):
        raise HiveError(
            f"a shell ({front.comm}, pid {front.pid}) holds this terminal's "
            "foreground, not an agent: start the agent first, then register from it "
            "(or with `hive-rpc ling register NAME --tmux -- COMMAND`); or add "
            "--allow-shell to approve typing into the shell itself"
        )
    return Agent.of(front)


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
