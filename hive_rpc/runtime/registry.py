"""The prompt registry: the one place prompts live while the hub runs.

Structured concurrency, in one picture::

    open_registry(store)            the registry's own nursery
      `- deadline task              one cancel scope whose deadline is always the
                                    earliest pending prompt's; when it fires, the
                                    due prompts expire and the scope is re-armed

There is no periodic sweep and no task per prompt: a new prompt with an earlier
deadline simply moves the scope's deadline.  Typing (``typing``) moves a prompt's
deadline out to its hard maximum lifetime, and deferring (``defer``) brings it back
in; the stale heap entry is skipped when it comes up.

Every change is written to the store before anyone is told about it, and one lock
orders all writes, so memory, store and subscribers always agree on what happened
first.  Subscribers (``watch``) get each change on a bounded channel; one that falls
behind is dropped rather than allowed to slow the hub.

Where writes yield.  Every write takes the registry's one ``trio.Lock``: writers
that find it held wait their turn, first come first served, and taking it is a
schedule point even when it is free.  So an asker looping in-process (the agora, a
test, a benchmark) or a burst of due prompts publishes one change per pass of the run
loop at most, and subscribers, who read one change per pass, keep up.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import itertools
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Collection, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import trio

from hive_rpc.core import lifecycle, limits
from hive_rpc.core.errors import (
    AlreadyAnswered,
    InvalidParams,
    LimitReached,
    PromptClosed,
    PromptNotFound,
    StoreUnavailable,
)
from hive_rpc.core.limits import check_name
from hive_rpc.core.prompt import (
    DEFAULT_MAX_LIFETIME_S,
    Action,
    Ask,
    Prompt,
    Status,
    new_prompt,
)
from hive_rpc.store.base import PromptStore

log = logging.getLogger(__name__)


def held_chars(prompt: Prompt) -> int:
    """Characters a pending prompt holds that its asker chose: question, detail,
    choices, confirm, schema.  Cheap for the common prompt (no schema); a schema is at most
    ``schema_chars`` and walked once, when the prompt is tracked or let go."""
    size = len(prompt.question) + len(prompt.detail or "")
    if prompt.choices:
        size += sum(len(c) for c in prompt.choices)
    if prompt.confirm:
        size += sum(len(c["text"]) for c in prompt.confirm)
    if prompt.schema is not None:
        size += len(json.dumps(prompt.schema, ensure_ascii=False, default=str))
    return size


def _take(counts: dict[str, int], agent: str, amount: int) -> None:
    """Take ``amount`` from ``agent``'s count; a count that reaches zero leaves the
    dict, so agents with nothing pending cost nothing."""
    left = counts.get(agent, 0) - amount
    if left > 0:
        counts[agent] = left
    else:
        counts.pop(agent, None)


COORDINATOR = None
"""Pass ``agent_id=COORDINATOR`` (None) to act across agents: editors, CLI, coordinators."""

WATCH_BUFFER = 1024
STORE_RETRY_MIN_S = 1.0
"""First wait before an expiry the store refused is tried again (then doubled)."""
STORE_RETRY_MAX_S = 60.0
"""Longest wait between two tries of a refused expiry: a freed disk is seen within it."""
HEAP_SLACK = 1024


@dataclass(frozen=True)
class Change:
    """One state change, as subscribers see it.  ``event`` is "ask" for a new prompt."""

    event: str
    prompt: Prompt

    @cached_property
    def record(self) -> dict[str, Any]:
        """The prompt's record, built once however many subscribers send it."""
        return self.prompt.to_record()


UNSEEN_DOCUMENT = "unseen"
"""The store document kind that keeps an unseen expiry's trace across restarts."""
MAX_UNSEEN = 100
"""Traces of unseen expiries kept at most: the oldest goes first."""

INGESTED_EVENTS = {
    Status.RESPONDED: "respond",
    Status.EXPIRED: "expire",
    Status.CANCELLED: "cancel",
}
"""The event subscribers see for a prompt closed on another hub."""


class Watch:
    """A subscription: the pending prompts at the moment it began, then every change."""

    def __init__(self, pending: list[Prompt], receive: trio.MemoryReceiveChannel[Change]):
        self.pending = pending
        self._receive = receive

    def __aiter__(self) -> AsyncIterator[Change]:
        return self._receive.__aiter__()

    async def receive(self) -> Change:
        """The next change; raises trio.EndOfChannel if the subscriber fell behind."""
        return await self._receive.receive()


class Registry:
    """Prompts by id, their deadlines, waiters and subscribers.  Use ``open_registry``."""

    def __init__(
        self,
        store: PromptStore,
        *,
        max_lifetime_s: float = DEFAULT_MAX_LIFETIME_S,
        epoch: float | None = None,
    ):
        """``epoch`` is the wall-clock time at trio time zero; tests that restart a
        registry under a mock clock pass the same one to both lives."""
        if not (math.isfinite(max_lifetime_s) and max_lifetime_s > 0):
            raise ValueError("max_lifetime_s must be a positive number of seconds")
        self.store = store
        self.max_lifetime_s = max_lifetime_s
        self._wall0 = time.time() - trio.current_time() if epoch is None else epoch
        self._pending: dict[str, Prompt] = {}
        self._per_agent: dict[str, int] = {}
        """Pending prompts per agent, for the limit on them (core/limits.py).  Plain
        dicts read with ``get(agent, 0)``: a ``Counter``'s missing key is a Python
        ``__missing__`` call, four of them an ask + respond."""
        self._order: list[tuple[float, str]] = []
        """(created_at, id) of pending prompts, for paging: appended as prompts are
        asked (almost always in order), sorted again only when one came out of
        order; closed prompts' keys are skipped, and dropped when they pile up."""
        self._order_sorted = True
        self._chars = 0
        self._chars_per_agent: dict[str, int] = {}
        """Characters of question, choices and schema held pending (in all, per
        agent): what memory grows with, for the pending_chars limits."""
        self._peer_of: dict[str, tuple[str | None, int, bool]] = {}
        """Prompts asked through a peer the hub verified, or by an asker without the
        human's credential: (peer, held chars, counted in the agents' share)."""
        self._per_peer: dict[str, int] = {}
        self._chars_per_peer: dict[str, int] = {}
        """Pending prompts and characters per verified peer (``ask``'s ``peer``), for
        the pending_per_peer limits: what an agent cannot spread over made-up names."""
        self._shared = 0
        self._shared_chars = 0
        """Pending prompts and characters asked without the human's credential, held to
        ``agent_share`` of the totals so the human's own tools always find room."""
        self._heap: list[tuple[float, int, str]] = []
        self._retry: dict[str, float] = {}
        """Overdue prompts whose expiry the store refused: trio time of the next try."""
        self._retry_s = STORE_RETRY_MIN_S
        self.degraded: dict[str, str] = {}
        """Kinds of the hub's own store writes now failing, with the reason."""
        self._health_changed = trio.Event()
        """Set (and replaced) whenever ``degraded_reason()`` changes: see ``health``."""
        self._seq = itertools.count()
        self._timer: trio.CancelScope | None = None
        self._write_lock = trio.Lock()
        self._closed: dict[str, trio.Event] = {}
        self._unseen: dict[str, Prompt] = {}
        """Prompts that expired before any editor showed them, and whose trace the
        human has not cleared, oldest first (``_keep_unseen``)."""
        self._asked: trio.Event | None = None
        """Set when a prompt is asked, for ``await_ask``; made by the first waiter,
        so that an ask nobody waits for makes and sets no event."""
        self._watchers: set[trio.MemorySendChannel[Change]] = set()
        self.started_at = self.now()

    # --- time -----------------------------------------------------------------

    def now(self) -> float:
        """Wall-clock seconds, driven by trio's clock so tests can use autojump_clock."""
        return self._wall0 + trio.current_time()

    def _trio_deadline(self, prompt: Prompt) -> float:
        return prompt.deadline_at - self._wall0

    # --- lifecycle of the registry itself -------------------------------------

    async def _resume(self) -> None:
        """Take back the store's pending prompts: expire the overdue, re-arm the rest;
        and the traces of unseen expiries the human has not cleared.

        An expiry the store refuses (a full disk) does not stop the start: the prompt
        is tracked as pending and overdue, and the deadline task retries it."""
        for document in await self.store.documents(UNSEEN_DOCUMENT):
            prompt_id = document.get("id")
            prompt = await self.store.get(prompt_id) if isinstance(prompt_id, str) else None
            if prompt is not None and prompt.unseen:
                self._unseen[prompt.id] = prompt
            elif isinstance(prompt_id, str):  # pruned, or cleared on another hub
                await self.store.delete_document(UNSEEN_DOCUMENT, prompt_id)
        for prompt in await self.store.pending():
            if prompt.deadline_at <= self.now():
                try:
                    await self._write(lifecycle.expire(prompt, now=prompt.deadline_at), "expire")
                except Exception as e:
                    self.store_trouble("expire", e)
                    self._track(prompt)
            else:
                self._track(prompt)

    # --- store trouble outside a request --------------------------------------

    def store_trouble(self, kind: str, error: Exception | None) -> None:
        """A store write the hub made on its own (``expire``, ``ingest``,
        ``checkpoint``, ``retention``) failed (``error``) or worked again (None).

        Nobody asked for it, so nobody gets an error: it is logged once per kind
        until that kind works again, ``hive/status`` shows ``degraded``, and
        subscribed editors are told when it changes (``health``)."""
        before = self.degraded_reason()
        if error is None:
            if self.degraded.pop(kind, None) is not None:
                log.warning("store: %s writes work again", kind)
        else:
            reason = str(getattr(error, "reason", "") or error)
            if kind not in self.degraded:
                log.error("store: %s write failed (%s); the hub goes on and retries", kind, reason)
            self.degraded[kind] = reason
        if self.degraded_reason() != before:
            self._health_changed.set()
            self._health_changed = trio.Event()

    def degraded_reason(self) -> str | None:
        """What ``hive/status`` shows as ``degraded``, e.g. ``store: database or disk
        is full``; None while every store write works."""
        return f"store: {next(iter(self.degraded.values()))}" if self.degraded else None

    async def health(self, seen: str | None) -> str | None:
        """Wait until ``degraded_reason()`` is other than ``seen``, and return it.

        Level, not edge: a subscriber passes what it last told its client (None at
        first, so a hub already degraded answers at once), and changes that come and
        go while it is busy sending are folded into the state it finds.  Kept apart
        from ``watch``, whose every change is about a prompt."""
        while (reason := self.degraded_reason()) == seen:
            await self._health_changed.wait()
        return reason

    def _retry_later(self, prompt_id: str, at: float) -> None:
        """Try the overdue prompt's expiry again at trio time ``at`` (its deadline
        entry stays in the heap as a retry entry; see ``_due``)."""
        self._retry[prompt_id] = at
        heapq.heappush(self._heap, (at, next(self._seq), prompt_id))
        if self._heap[0][2] == prompt_id:
            self._arm()

    def _due(self, prompt_id: str, deadline: float) -> Prompt | None:
        """The pending prompt a heap entry is for, if the entry is still current: its
        own deadline, or a retry of an expiry the store refused (while still overdue)."""
        prompt = self._pending.get(prompt_id)
        if prompt is None:
            return None
        own = self._trio_deadline(prompt)
        if own == deadline:
            return prompt
        if self._retry.get(prompt_id) == deadline and own <= trio.current_time():
            return prompt
        return None  # answered, cancelled, or its countdown was stopped by typing

    async def _run_deadlines(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            with trio.CancelScope() as scope:
                self._timer = scope
                self._arm()
                await trio.sleep_forever()
            self._timer = None
            await self._expire_due()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.deadline = self._heap[0][0] if self._heap else math.inf

    async def _expire_due(self) -> None:
        """Expire every prompt now due.  If the store refuses (a full disk), the rest
        stay pending and overdue and are tried again after a backoff that doubles
        up to ``STORE_RETRY_MAX_S``: a deadline in the heap, not a polling loop."""
        retry_at: float | None = None
        while self._heap and self._heap[0][0] <= trio.current_time():
            deadline, _, prompt_id = heapq.heappop(self._heap)
            if self._due(prompt_id, deadline) is None:
                continue
            if retry_at is not None:  # the store just refused one: do not hammer it
                self._retry_later(prompt_id, retry_at)
                continue
            # The lock is a schedule point per expiry: a burst of due prompts lets
            # subscribers read between them (module doc).
            async with self._write_lock:
                prompt = self._due(prompt_id, deadline)
                if prompt is None:
                    continue
                # A retried expiry happened at the deadline, not when the disk freed up.
                retried = prompt_id in self._retry
                at = min(self.now(), prompt.deadline_at) if retried else self.now()
                try:
                    await self._write(lifecycle.expire(prompt, now=at), "expire")
                except (AlreadyAnswered, PromptClosed):
                    # A hub sharing the store closed it first: _write settled memory to
                    # what the store holds, and the refusal is nobody's error.
                    pass
                except Exception as e:
                    self.store_trouble("expire", e)
                    retry_at = trio.current_time() + self._retry_s
                    self._retry_s = min(2 * self._retry_s, STORE_RETRY_MAX_S)
                    self._retry_later(prompt_id, retry_at)
                    continue
                self._retry_s = STORE_RETRY_MIN_S
                self.store_trouble("expire", None)

    def _track(self, prompt: Prompt, size: int | None = None) -> None:
        """Hold a pending prompt and its deadline; ``size`` is its ``held_chars`` when
        the caller has it already."""
        if prompt.id not in self._pending:
            agent = prompt.agent_id
            self._per_agent[agent] = self._per_agent.get(agent, 0) + 1
            key = (prompt.created_at, prompt.id)
            if self._order and key < self._order[-1]:
                self._order_sorted = False
            self._order.append(key)
            if size is None:
                size = held_chars(prompt)
            self._chars += size
            self._chars_per_agent[agent] = self._chars_per_agent.get(agent, 0) + size
        self._pending[prompt.id] = prompt
        deadline = self._trio_deadline(prompt)
        heapq.heappush(self._heap, (deadline, next(self._seq), prompt.id))
        if self._heap[0][2] == prompt.id:
            self._arm()

    # --- writes ---------------------------------------------------------------

    async def _write(self, new: Prompt, event: str) -> Prompt:
        """Persist a transition of a pending prompt, then update memory and tell everyone."""
        stored = await self.store.update(new, expected=Status.PENDING)
        if stored is not None:  # another hub sharing the store moved it first
            self._settle_lost_race(stored)
            raise lifecycle.refusal(stored, lifecycle.Event(event))
        self._settle(new)
        self._publish(event, new)
        if new.unseen:
            await self._keep_unseen(new)
        return new

    async def _keep_unseen(self, prompt: Prompt) -> None:
        """Keep the trace of a prompt that expired before any editor showed it, for
        the human (``hive/list`` expired_unseen), across restarts (a store document),
        the newest ``MAX_UNSEEN``.  A failed write costs the trace, never the expiry."""
        self._unseen[prompt.id] = prompt
        try:
            await self.store.put_document(UNSEEN_DOCUMENT, prompt.id, {"id": prompt.id})
            while len(self._unseen) > MAX_UNSEEN:
                oldest = next(iter(self._unseen))
                del self._unseen[oldest]
                await self.store.delete_document(UNSEEN_DOCUMENT, oldest)
        except Exception as e:
            self.store_trouble("unseen", e)
        else:
            self.store_trouble("unseen", None)

    def _settle_lost_race(self, stored: Prompt) -> None:
        """Another hub sharing the store closed the prompt before this hub's write:
        its closing is this hub's news too.  Told here, once: this settles memory, so
        when the winner's write comes through the watch, ``ingest`` finds the prompt
        already gone from ``_pending`` and stays silent."""
        was_pending = stored.id in self._pending
        self._settle(stored)
        if was_pending and not stored.is_pending:
            self._publish(INGESTED_EVENTS[stored.status], stored)

    def _settle(self, prompt: Prompt) -> None:
        if prompt.is_pending:
            old = self._pending.get(prompt.id)
            if old is None or old.deadline_at != prompt.deadline_at:
                self._track(prompt)  # the old heap entry goes stale and is skipped
            else:
                self._pending[prompt.id] = prompt
            return
        gone = self._pending.pop(prompt.id, None)
        self._retry.pop(prompt.id, None)
        if self._peer_of:
            self._let_go_of_peer(prompt.id)
        if gone is not None:
            agent = gone.agent_id
            _take(self._per_agent, agent, 1)
            size = held_chars(gone)
            self._chars -= size
            _take(self._chars_per_agent, agent, size)
            if len(self._order) > 2 * len(self._pending) + HEAP_SLACK:
                # Amortised like the heap's compaction: the order keeps no more
                # than about twice what is pending.
                self._order = [k for k in self._order if k[1] in self._pending]
        if len(self._heap) > 2 * len(self._pending) + HEAP_SLACK:
            self._compact_heap()
        closed = self._closed.pop(prompt.id, None)
        if closed is not None:
            closed.set()

    def _compact_heap(self) -> None:
        """Drop the entries of closed prompts, so the heap grows with what is pending,
        not with what was recently asked.  Amortised: it runs once per HEAP_SLACK closes."""
        self._heap = [
            (self._retry.get(p.id, self._trio_deadline(p)), next(self._seq), p.id)
            for p in self._pending.values()
        ]
        heapq.heapify(self._heap)
        self._arm()

    def _publish(self, event: str, prompt: Prompt) -> None:
        """Tell every subscriber; the ``Change`` is made only when there is one."""
        if not self._watchers:
            return
        change = Change(event, prompt)
        for send in list(self._watchers):
            try:
                send.send_nowait(change)
            except trio.WouldBlock:
                self._watchers.discard(send)
                send.close()  # a subscriber that fell behind ends; it may resubscribe
            except trio.BrokenResourceError:
                self._watchers.discard(send)

    # --- public operations ----------------------------------------------------

    async def ask(
        self,
        ask: Ask,
        *,
        peer: str | None = None,
        human: bool = True,
        origin: str | None = None,
        key: str | None = None,
    ) -> Prompt:
        """Record a new pending prompt and return it at once.

        ``peer``: who asks, as the hub verified it (not the agent id the asker
        chose), for the per-peer limits; ``human``: the asker proved the human's
        credential, so the room kept for the human's own tools is open to it (the
        hub's own asks and in-process callers are the hub's: True); ``origin``: where
        the asker runs, as the hub found it (``Prompt.origin``); ``key``: the asker's
        idempotency key, so that an ask retried after a failure or a lost reply
        returns the prompt the first one made (``keyed_id``).

        Bounded as a whole by the store's own bound (NATS: ``timeout``, 5 s), the wait
        for the write lock included: when the store hangs, asks queued behind one that
        waits on it would otherwise each wait a bound more than the one before (a
        request answered after tens of seconds, and saved after its asker gave up).
        Past the bound the asker gets StoreUnavailable, saying whether its write went
        out (``maybe_saved``)."""
        prompt_id = keyed_id(ask.agent_id, key) if key is not None else None
        prompt = new_prompt(
            ask,
            now=self.now(),
            max_lifetime_s=self.max_lifetime_s,
            origin=origin,
            prompt_id=prompt_id,
        )
        bound = self._store_bound
        stage = "read"
        with trio.move_on_after(math.inf if bound is None else bound) as scope:
            if prompt_id is not None:  # a retry's prompt, here or in the store
                try:
                    found = self._pending.get(prompt_id) or await self.store.get(prompt_id)
                except StoreUnavailable as e:
                    # The store's bound ran out first, on the lookup: what the asker
                    # needs to hear is that its question was not saved, not that
                    # something "was not read".
                    raise self._too_slow("read", bound, key, reason=e.data.get("reason")) from None
                if found is not None:
                    return _same_ask(found, prompt, key)
            stage = "wait"
            async with self._write_lock:
                size = held_chars(prompt)
                self._check_room(prompt.agent_id, size)
                if peer is not None or not human:
                    self._check_peer_room(peer, size, human)
                stage = "sent"
                try:
                    await self.store.insert(prompt)
                except StoreUnavailable as e:
                    if prompt_id is not None and e.data.get("maybe_saved"):
                        # The store's own bound ran out first: the same words as ours.
                        raise self._too_slow(
                            "sent", bound, key, reason=e.data.get("reason")
                        ) from None
                    raise
                except KeyError:
                    # Keyed, and saved meanwhile: by a hub sharing the store, or by
                    # this ask's first try whose reply never came.
                    found = await self.store.get(prompt.id) if prompt_id is not None else None
                    if found is None:
                        raise
                    return _same_ask(found, prompt, key)
                self._track(prompt, size)
                if peer is not None or not human:
                    self._hold_for_peer(prompt.id, peer, size, human)
                self._publish("ask", prompt)
        if scope.cancelled_caught:
            raise self._too_slow(stage, bound, key)
        self._announce_ask()
        return prompt

    @asynccontextmanager
    async def _locked(self) -> AsyncIterator[None]:
        """The write lock for a change the human or an agent asked for (an answer, a
        withdrawal, typing ...), waited for within the store's bound (NATS: 5 s): when
        the store hangs, each request queued behind one that waits on it would wait a
        bound more than the one before.  Past the bound: StoreUnavailable, nothing
        saved (its own write never went out).  A store with no bound (SQLite, memory)
        is waited for as before."""
        bound = self._store_bound
        if bound is None:
            async with self._write_lock:
                yield
            return
        acquired = False
        with trio.move_on_after(bound):
            await self._write_lock.acquire()
            acquired = True
        if not acquired:
            raise self._too_slow("wait", bound, None)
        try:
            yield
        finally:
            self._write_lock.release()

    @property
    def _store_bound(self) -> float | None:
        """The store's own bound on an operation (NATS: ``timeout``, 5 s), which
        bounds a whole request here too; None for a store without one."""
        bound: float | None = getattr(self.store, "timeout", None)
        return bound

    def _too_slow(
        self, stage: str, bound: float | None, key: str | None, *, reason: str | None = None
    ) -> StoreUnavailable:
        """The error for a request (an ask, or a change waiting for the write lock)
        that ran out of the store's bound at ``stage``: while
        reading (a retry's lookup) or waiting for earlier writes, nothing was saved;
        once its write went out (``sent``) its acknowledgement never came, and it may
        have been saved.  ``reason``: the store's own words, when its bound ran out
        first."""
        where = str(getattr(self.store, "url", self.store.kind))
        if reason is None and stage == "wait":
            reason = f"earlier writes still wait on it after {bound:g} s"
        elif reason is None:
            reason = f"no answer within {bound:g} s"
        outcome = None
        if stage == "sent" and key is not None:
            outcome = (
                "this question may or may not have been saved (asking again with the same "
                "idempotency_key returns its prompt if it was)"
            )
        return StoreUnavailable(
            where, reason, write=True, maybe_saved=stage == "sent", outcome=outcome
        )

    def _announce_ask(self) -> None:
        """Wake ``await_ask``'s waiters, if any wait."""
        if self._asked is not None:
            self._asked.set()
            self._asked = None

    def _check_room(self, agent_id: str, size: int) -> None:
        """Refuse a new prompt of ``size`` characters over the pending limits
        (checked under the write lock, so concurrent asks cannot overshoot them)."""
        if len(self._pending) >= limits.MAX_PENDING:
            raise LimitReached(
                f"the hub holds {limits.MAX_PENDING:,} pending prompts, its limit "
                "(pending_total); answer or cancel some first",
                limit="pending_total",
                max=limits.MAX_PENDING,
            )
        if self._per_agent.get(agent_id, 0) >= limits.MAX_PENDING_PER_AGENT:
            raise LimitReached(
                f"agent {agent_id!r} has {limits.MAX_PENDING_PER_AGENT:,} pending prompts, "
                "its limit (pending_per_agent); wait for answers or cancel some first",
                limit="pending_per_agent",
                max=limits.MAX_PENDING_PER_AGENT,
                agent_id=agent_id,
            )
        if self._chars + size > limits.MAX_PENDING_CHARS:
            raise LimitReached(
                f"the pending prompts hold {self._chars:,} characters; this one would pass "
                f"the hub's limit of {limits.MAX_PENDING_CHARS:,} (pending_chars); answer "
                "or cancel some first",
                limit="pending_chars",
                max=limits.MAX_PENDING_CHARS,
            )
        held = self._chars_per_agent.get(agent_id, 0)
        if held + size > limits.MAX_PENDING_CHARS_PER_AGENT:
            raise LimitReached(
                f"agent {agent_id!r}'s pending prompts hold "
                f"{held:,} characters; this one would pass its "
                f"limit of {limits.MAX_PENDING_CHARS_PER_AGENT:,} (pending_chars_per_agent)",
                limit="pending_chars_per_agent",
                max=limits.MAX_PENDING_CHARS_PER_AGENT,
                agent_id=agent_id,
            )

    def _check_peer_room(self, peer: str | None, size: int, human: bool) -> None:
        """The limits no agent name can spread: per verified peer, and the agents'
        share of the totals (the rest is kept for the human's tools)."""
        if human:  # the human's own tools: the peer limits and the share are for agents
            return
        if peer is not None:
            if self._per_peer.get(peer, 0) >= limits.MAX_PENDING_PER_PEER:
                raise LimitReached(
                    f"{limits.MAX_PENDING_PER_PEER:,} prompts asked through {peer} are "
                    "pending, its limit (pending_per_peer), whatever agent names they "
                    "carry; wait for answers or cancel some first",
                    limit="pending_per_peer",
                    max=limits.MAX_PENDING_PER_PEER,
                )
            held = self._chars_per_peer.get(peer, 0)
            if held + size > limits.MAX_PENDING_CHARS_PER_PEER:
                raise LimitReached(
                    f"the prompts asked through {peer} hold {held:,} characters; this one "
                    f"would pass its limit of {limits.MAX_PENDING_CHARS_PER_PEER:,} "
                    "(pending_chars_per_peer), whatever agent names they carry",
                    limit="pending_chars_per_peer",
                    max=limits.MAX_PENDING_CHARS_PER_PEER,
                )
        share = limits.AGENT_SHARE_PERCENT
        if (
            self._shared >= limits.MAX_PENDING * share // 100
            or self._shared_chars + size > limits.MAX_PENDING_CHARS * share // 100
        ):
            raise LimitReached(
                f"agents' pending prompts fill their {share}% of the hub's room (agent_share "
                "of pending_total and pending_chars); the rest is kept for the human's "
                "own tools. Answer or cancel some first",
                limit="agent_share",
                max=share,
            )

    def _hold_for_peer(self, prompt_id: str, peer: str | None, size: int, human: bool) -> None:
        self._peer_of[prompt_id] = (peer, size, not human)
        if peer is not None:
            self._per_peer[peer] = self._per_peer.get(peer, 0) + 1
            self._chars_per_peer[peer] = self._chars_per_peer.get(peer, 0) + size
        if not human:
            self._shared += 1
            self._shared_chars += size

    def _let_go_of_peer(self, prompt_id: str) -> None:
        held = self._peer_of.pop(prompt_id, None)
        if held is None:
            return
        peer, size, shared = held
        if peer is not None:
            _take(self._per_peer, peer, 1)
            _take(self._chars_per_peer, peer, size)
        if shared:
            self._shared -= 1
            self._shared_chars -= size

    async def ingest(self, prompt: Prompt) -> None:
        """A record seen in a store shared with other hubs (NATS KV): their asks,
        answers, typing and expiries become this hub's, for its waiters and
        subscribers.  This hub's own writes come back here too and change nothing."""
        async with self._write_lock:
            await self._ingest(prompt)

    async def _ingest(self, prompt: Prompt) -> None:
        """``ingest``'s work, holding the write lock."""
        old = self._pending.get(prompt.id)
        if old == prompt:
            return  # our own write, echoed
        if old is None:
            if not prompt.is_pending:
                closed = self._closed.pop(prompt.id, None)
                if closed is not None:
                    closed.set()
                if prompt.id in self._unseen and not prompt.unseen:  # cleared on another hub
                    del self._unseen[prompt.id]
                    self._publish("clear", prompt)
                return
            # Asked on another hub, or a stale echo of one of ours closed since:
            # the store has the last word, when it has one.  Not found, the watch's
            # record stands: the watch saw it in the bucket, and a pending prompt is
            # never removed, but a leader just elected answered reads before it had
            # applied every write (nats-server 2.9.10, measured: the prompt was
            # hidden from this hub's editors for good).
            latest = await self.store.get(prompt.id) or prompt
            if not latest.is_pending:
                return
            self._track(latest)
            self._publish("ask", latest)
            self._announce_ask()
            return
        if prompt.is_pending:
            self._settle(prompt)
            # Shown, typing or a defer on the other hub: its record says which.
            if prompt.shown_at != old.shown_at:
                event = "shown"
            else:
                event = "typing" if prompt.typing_at is not None else "defer"
            self._publish(event, prompt)
            return
        self._settle(prompt)
        self._publish(INGESTED_EVENTS[prompt.status], prompt)
        if prompt.unseen:  # the hub that expired it keeps the trace's document
            self._unseen[prompt.id] = prompt

    async def poll(self, prompt_id: str, *, agent_id: str | None = COORDINATOR) -> Prompt:
        """The prompt as it is now.  An agent sees only its own prompts."""
        prompt = self._pending.get(prompt_id) or await self.store.get(prompt_id)
        if prompt is None or (agent_id is not None and prompt.agent_id != agent_id):
            raise PromptNotFound(
                f"no prompt {prompt_id!r}"
                + (f" asked by agent {agent_id!r}" if agent_id is not None else ""),
                id=prompt_id,
            )
        return prompt

    async def wait(
        self, prompt_id: str, *, timeout_s: float, agent_id: str | None = COORDINATOR
    ) -> Prompt:
        """Long-poll: the prompt once it is closed, or as it is when ``timeout_s`` runs out."""
        _check_timeout(timeout_s)
        prompt = await self.poll(prompt_id, agent_id=agent_id)
        if not prompt.is_pending:
            return prompt
        closed = self._closed.setdefault(prompt_id, trio.Event())
        with trio.move_on_after(timeout_s):
            await closed.wait()
        return await self.poll(prompt_id, agent_id=agent_id)

    async def respond(
        self,
        prompt_id: str,
        *,
        answer: Any,
        by: str,
        action: Action = Action.ACCEPT,
        agent_id: str | None = COORDINATOR,
    ) -> Prompt:
        """Answer a prompt.  The first answer wins; later ones get AlreadyAnswered.
        An agent may answer only its own prompts; coordinators answer any."""
        by = check_name(by, "by")
        async with self._locked():
            prompt = self._pending.get(prompt_id)
            if prompt is None or (agent_id is not None and prompt.agent_id != agent_id):
                prompt = await self.poll(prompt_id, agent_id=agent_id)  # closed, or refused
            new = lifecycle.respond(prompt, answer=answer, by=by, action=action, now=self.now())
            return await self._write(new, "respond")

    async def cancel(
        self, prompt_id: str, *, by: str, agent_id: str | None = COORDINATOR
    ) -> Prompt:
        """Withdraw a pending prompt.  An agent may cancel only its own."""
        by = check_name(by, "by")
        async with self._locked():
            prompt = await self.poll(prompt_id, agent_id=agent_id)
            return await self._write(lifecycle.cancel(prompt, by=by, now=self.now()), "cancel")

    async def typing(self, prompt_id: str) -> Prompt:
        """The human started typing an answer: stop the countdown (the hard maximum stays)."""
        async with self._locked():
            prompt = await self.poll(prompt_id)
            new = lifecycle.typing(prompt, now=self.now())
            if new is prompt:
                return prompt
            return await self._write(new, "typing")

    async def defer(self, prompt_id: str) -> Prompt:
        """The human who had typed an answer left it (Escape, C-g, a closed form): the
        countdown runs again (lifecycle.defer says for how long).  A prompt nobody
        typed into is returned as it is, and nobody is told."""
        async with self._locked():
            prompt = await self.poll(prompt_id)
            new = lifecycle.defer(prompt, now=self.now())
            if new is prompt:
                return prompt
            return await self._write(new, "defer")

    async def shown(self, prompt_id: str) -> Prompt:
        """An editor put the question before the human: from now on its expiry is
        "shown, no answer", not unseen.  The first showing counts; later ones change
        nothing and nobody is told."""
        async with self._locked():
            prompt = await self.poll(prompt_id)
            new = lifecycle.shown(prompt, now=self.now())
            if new is prompt:
                return prompt
            return await self._write(new, "shown")

    def list_unseen(self) -> list[Prompt]:
        """Prompts that expired unseen and whose trace the human has not cleared,
        oldest first."""
        return list(self._unseen.values())

    async def clear_unseen(self, prompt_id: str | None) -> list[Prompt]:
        """The human saw that these expired unseen (one, or every one with None):
        their traces come down, on every screen."""
        async with self._locked():
            if prompt_id is None:
                prompts = list(self._unseen.values())
            else:
                found = self._unseen.get(prompt_id) or await self.poll(prompt_id)
                prompts = [found]
            cleared = []
            for prompt in prompts:
                new = lifecycle.clear(prompt, now=self.now())
                self._unseen.pop(prompt.id, None)
                if new is prompt:
                    continue
                stored = await self.store.update(new, expected=Status.EXPIRED)
                if stored is not None:  # changed meanwhile on a hub sharing the store
                    continue
                await self.store.delete_document(UNSEEN_DOCUMENT, prompt.id)
                self._publish("clear", new)
                cleared.append(new)
            return cleared

    def list_pending(self, *, agent_id: str | None = COORDINATOR) -> list[Prompt]:
        """Pending prompts, oldest first; an agent sees only its own."""
        prompts = sorted(self._pending.values(), key=lambda p: p.created_at)
        return [p for p in prompts if agent_id is None or p.agent_id == agent_id]

    def pending_page(
        self, *, after: tuple[float, str] | None, limit: int, agent_id: str | None = COORDINATOR
    ) -> list[Prompt]:
        """Up to ``limit`` pending prompts after ``after`` (created_at, id), oldest
        first: a bisection into the kept order, then a walk of about one page."""
        if not self._order_sorted:
            self._order = sorted((p.created_at, p.id) for p in self._pending.values())
            self._order_sorted = True
        start = 0 if after is None else bisect.bisect_right(self._order, after)
        page: list[Prompt] = []
        for _, prompt_id in itertools.islice(self._order, start, None):
            prompt = self._pending.get(prompt_id)
            if prompt is not None and (agent_id is None or prompt.agent_id == agent_id):
                page.append(prompt)
                if len(page) >= limit:
                    break
        return page

    async def find(
        self, prefix: str, *, agent_id: str | None = COORDINATOR, limit: int = 20
    ) -> list[Prompt]:
        """Up to ``limit`` prompts whose id starts with ``prefix``, oldest first, so that
        a client can take an id prefix; an agent sees only its own."""
        found = [self._pending.get(p.id, p) for p in await self.store.find(prefix)]
        return [p for p in found if agent_id is None or p.agent_id == agent_id][:limit]

    async def await_ask(self, *, timeout_s: float, exclude: Collection[str] = ()) -> Prompt | None:
        """Coordinators: the oldest pending prompt not in ``exclude``, waiting for one
        to be asked if there is none; None when ``timeout_s`` runs out first."""
        _check_timeout(timeout_s)
        with trio.move_on_after(timeout_s):
            while True:
                for prompt in self.list_pending():
                    if prompt.id not in exclude:
                        return prompt
                if self._asked is None:
                    self._asked = trio.Event()
                await self._asked.wait()
        return None

    @contextmanager
    def watch(self, *, buffer: int = WATCH_BUFFER) -> Iterator[Watch]:
        """Subscribe to every change.  The snapshot and the subscription are taken
        together (no checkpoint between), so no prompt is missed or seen twice."""
        send, receive = trio.open_memory_channel[Change](buffer)
        self._watchers.add(send)
        try:
            yield Watch(self.list_pending(), receive)
        finally:
            self._watchers.discard(send)
            send.close()
            receive.close()

    async def counts(self) -> dict[str, int]:
        return await self.store.counts()

    def statistics(self) -> dict[str, int]:
        """Live numbers for ``hive-rpc status``."""
        return {
            "pending": len(self._pending),
            "deadline_heap": len(self._heap),
            "waiters": sum(e.statistics().tasks_waiting for e in self._closed.values()),
            "watchers": len(self._watchers),
        }


KEYED_ID_SALT = b"hive-rpc idempotency_key\0"


def keyed_id(agent_id: str, key: str) -> str:
    """The prompt id of ``agent_id``'s ask with idempotency key ``key``: 16 hex
    digits of a SHA-256, like a random id.  Derived, not looked up, so a retry finds
    the first try's prompt on any hub sharing the store and after a restart, and two
    hubs taking the same retry at once race on one key, which the store's insert
    lets only one of them create."""
    digest = hashlib.sha256(
        KEYED_ID_SALT
        + agent_id.encode("utf-8", "surrogatepass")
        + b"\0"
        + key.encode("utf-8", "surrogatepass")
    )
    return digest.hexdigest()[:16]


def _same_ask(found: Prompt, asked: Prompt, key: str | None) -> Prompt:
    """A retried keyed ask's prompt, as first made (pending or closed); refused if
    the key was used for another question."""
    same = (found.agent_id, found.question, found.choices, found.schema, found.kind) == (
        asked.agent_id,
        asked.question,
        asked.choices,
        asked.schema,
        asked.kind,
    )
    if not same:
        raise InvalidParams(
            f"idempotency_key {key!r} was used by agent {asked.agent_id!r} for another "
            f"question (prompt {found.id}, {found.question[:80]!r}); a retry must send the "
            "same question, and a new question a new key",
            param="idempotency_key",
            id=found.id,
        )
    return found


def _check_timeout(timeout_s: float) -> None:
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, int | float)
        or math.isnan(timeout_s)
        or timeout_s < 0
    ):
        raise InvalidParams("timeout_s must be a number of seconds >= 0")


@asynccontextmanager
async def open_registry(
    store: PromptStore,
    *,
    max_lifetime_s: float = DEFAULT_MAX_LIFETIME_S,
    epoch: float | None = None,
) -> AsyncIterator[Registry]:
    """Run a registry (its deadline task in its own nursery) for the block's duration."""
    registry = Registry(store, max_lifetime_s=max_lifetime_s, epoch=epoch)
    await registry._resume()
    async with trio.open_nursery() as nursery:
        await nursery.start(registry._run_deadlines)
        try:
            yield registry
        finally:
            nursery.cancel_scope.cancel()
