"""Store writes the hub makes on its own (an expiry, a resume) that the store refuses
never end the registry: the prompt stays pending and overdue, is retried with a
doubling backoff (deadlines in the heap, under trio's mock clock), ``degraded``
says why, and it expires at its own deadline once the store takes writes again."""

from __future__ import annotations

import itertools
import logging
import sqlite3
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from hive_rpc.core.errors import StoreUnavailable, StoreWriteFailed
from hive_rpc.core.prompt import Ask, ExpiryReason, Prompt, Status, new_prompt
from hive_rpc.runtime.registry import STORE_RETRY_MAX_S, open_registry
from hive_rpc.store import MemoryStore, SqliteStore

EPOCH = 1_800_000_000.0


class FlakyStore(MemoryStore):
    """A MemoryStore whose updates fail while ``full`` is set, like SQLite on a full
    disk; it records when each refused update was tried (trio time)."""

    def __init__(self) -> None:
        super().__init__()
        self.full = False
        self.refused_at: list[float] = []

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        if self.full:
            self.refused_at.append(trio.current_time())
            raise StoreWriteFailed("test", "database or disk is full")
        return await super().update(prompt, expected=expected)


async def test_a_refused_expiry_is_retried_with_backoff_then_expires_at_its_deadline(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = FlakyStore()
    async with open_registry(store, epoch=EPOCH) as registry:
        due = await registry.ask(Ask(agent_id="a", question="due at 10 s", timeout_s=10))
        other = await registry.ask(Ask(agent_id="a", question="due at 11 s", timeout_s=11))
        store.full = True
        with caplog.at_level(logging.ERROR, logger="hive_rpc.runtime.registry"):
            await trio.sleep(200)
        assert registry.degraded_reason() == "store: database or disk is full"
        assert (await registry.poll(due.id)).status is Status.PENDING
        assert {p.id for p in registry.list_pending()} == {due.id, other.id}
        failures = [r for r in caplog.records if "expire write failed" in r.getMessage()]
        assert len(failures) == 1  # logged once, not once per try
        # One try per round (the second due prompt waits for the first), then the
        # waits double: 10, 11, 13, 17, 25, 41, 73, 133 (1 2 4 8 16 32 60).
        tries = sorted(set(store.refused_at))
        gaps = [round(b - a) for a, b in itertools.pairwise(tries)]
        assert gaps[:6] == [1, 2, 4, 8, 16, 32]
        assert max(gaps) == STORE_RETRY_MAX_S
        store.full = False
        final = await registry.wait(due.id, timeout_s=STORE_RETRY_MAX_S + 1)
        assert final.status is Status.EXPIRED
        assert final.expired_at == pytest.approx(due.deadline_at)
        assert final.expiry_reason is ExpiryReason.TIMEOUT
        assert (await registry.poll(other.id)).status is Status.EXPIRED
        assert registry.degraded_reason() is None


async def test_answering_an_overdue_prompt_the_store_could_not_expire(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = FlakyStore()
    async with open_registry(store, epoch=EPOCH) as registry:
        due = await registry.ask(Ask(agent_id="a", question="due", timeout_s=5))
        store.full = True
        await trio.sleep(10)
        store.full = False
        # Still pending: a human may answer it before the retry comes round.
        answered = await registry.respond(due.id, answer="late but here", by="h")
        assert answered.status is Status.RESPONDED
        await trio.sleep(100)  # the retry entry finds it closed and does nothing
        assert (await registry.poll(due.id)).answer == "late but here"


class UnreachableStore(MemoryStore):
    """A MemoryStore that answers nothing in its own bound while ``down`` is set, as
    NatsStore does on a frozen node: its reads raise StoreUnavailable saying
    "nothing was read"."""

    url = "nats://127.0.0.1:4222"
    timeout = 5.0

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    async def get(self, prompt_id: str) -> Prompt | None:
        if self.down:
            raise StoreUnavailable(self.url, "no answer within 5 s")
        return await super().get(prompt_id)


async def test_a_keyed_ask_whose_lookup_times_out_says_it_was_not_saved(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A retried ask first looks its key up.  When the store's bound runs out there,
    before the hub's own, the asker hears what it needs: its question was not saved.
    Before, it got the store's read error, "nothing was read" (a clean-clone run of
    test_nats_errors.py on a loaded machine)."""
    store = UnreachableStore()
    async with open_registry(store, epoch=EPOCH) as registry:
        store.down = True
        with pytest.raises(StoreUnavailable) as caught:
            await registry.ask(Ask(agent_id="ci", question="Deploy?"), key="build-1")
        assert caught.value.data == {
            "kind": "store_unavailable",
            "url": store.url,
            "reason": "no answer within 5 s",
            "maybe_saved": False,
        }
        assert "nothing was saved" in caught.value.message
        assert registry.list_pending() == []
        store.down = False
        asked = await registry.ask(Ask(agent_id="ci", question="Deploy?"), key="build-1")
        assert [p.id for p in registry.list_pending()] == [asked.id]


async def test_resume_on_a_store_that_refuses_writes_still_starts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = FlakyStore()
    async with open_registry(store, epoch=EPOCH) as first:
        overdue = await first.ask(Ask(agent_id="a", question="overdue", timeout_s=30))
        await trio.sleep(10)
    await trio.sleep(60)  # down while its deadline passes
    store.full = True
    async with open_registry(store, epoch=EPOCH) as second:
        assert second.degraded_reason() == "store: database or disk is full"
        assert [p.id for p in second.list_pending()] == [overdue.id]
        store.full = False
        final = await second.wait(overdue.id, timeout_s=10)
        assert final.status is Status.EXPIRED
        assert final.expired_at == pytest.approx(overdue.deadline_at)


async def test_a_failed_checkpoint_is_reported_and_tried_again(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint task outlives a checkpoint SQLite refuses (a full disk)."""
    store = SqliteStore(short_tmp / "p.db", checkpoint_every=5)
    seen: list[tuple[str, Exception | None]] = []
    real = trio.to_thread.run_sync
    failing = True

    async def checkpoint(fn: Any, *args: Any) -> Any:
        if failing:
            raise sqlite3.OperationalError("database or disk is full")
        return await real(fn, *args)

    monkeypatch.setattr(trio.to_thread, "run_sync", checkpoint)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(store.run_checkpoints, trouble=_note(seen)))
            for i in range(12):
                await store.insert(new_prompt(Ask(agent_id="a", question=f"q{i}"), now=EPOCH))
                await trio.testing.wait_all_tasks_blocked()
            failing = False
            for i in range(12, 17):
                await store.insert(new_prompt(Ask(agent_id="a", question=f"q{i}"), now=EPOCH))
                await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    await store.aclose()
    kinds = [(kind, None if e is None else str(getattr(e, "reason", e))) for kind, e in seen]
    assert kinds == [
        ("checkpoint", "database or disk is full"),
        ("checkpoint", "database or disk is full"),
        ("checkpoint", None),
    ]
    assert store.checkpoints == 1


def _note(seen: list[tuple[str, Exception | None]]) -> Any:
    def trouble(kind: str, error: Exception | None) -> None:
        seen.append((kind, error))

    return trouble
