"""Every registry operation, deadlines on trio's autojump clock (no real waiting)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from hive_rpc.core import lifecycle
from hive_rpc.core.errors import AlreadyAnswered, InvalidParams, PromptClosed, PromptNotFound
from hive_rpc.core.prompt import Action, Ask, ExpiryReason, Status
from hive_rpc.runtime.registry import Registry, open_registry
from hive_rpc.store import MemoryStore


@pytest.fixture
async def reg(autojump_clock: trio.testing.MockClock) -> AsyncIterator[Registry]:
    async with open_registry(MemoryStore(), max_lifetime_s=3600) as registry:
        yield registry


async def test_ask_returns_pending_at_once(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    p = await reg.ask(Ask(agent_id="a1", question="Ship it?", choices=["yes", "no"]))
    assert trio.current_time() == t0
    assert p.status is Status.PENDING
    assert (await reg.poll(p.id)).id == p.id


async def test_agents_see_only_their_own_prompts(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    mine = await reg.ask(Ask(agent_id="a1", question="mine"))
    theirs = await reg.ask(Ask(agent_id="a2", question="theirs"))
    assert (await reg.poll(mine.id, agent_id="a1")).question == "mine"
    with pytest.raises(PromptNotFound, match="asked by agent 'a1'"):
        await reg.poll(theirs.id, agent_id="a1")
    with pytest.raises(PromptNotFound):
        await reg.wait(theirs.id, timeout_s=1, agent_id="a1")
    with pytest.raises(PromptNotFound):
        await reg.cancel(theirs.id, by="a1", agent_id="a1")
    with pytest.raises(PromptNotFound):
        await reg.respond(theirs.id, answer="x", by="a1", agent_id="a1")
    assert [p.id for p in reg.list_pending(agent_id="a1")] == [mine.id]
    assert [p.id for p in reg.list_pending()] == [mine.id, theirs.id]  # coordinator


async def test_poll_unknown_id(reg: Registry, autojump_clock: trio.testing.MockClock) -> None:
    with pytest.raises(PromptNotFound, match="no prompt 'nope'"):
        await reg.poll("nope")


async def test_wait_returns_early_when_answered(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a1", question="q"))
    t0 = trio.current_time()

    async def answer_later() -> None:
        await trio.sleep(5)
        await reg.respond(p.id, answer="done", by="human")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer_later)
        got = await reg.wait(p.id, timeout_s=100, agent_id="a1")
    assert trio.current_time() - t0 == pytest.approx(5)
    assert (got.status, got.answer, got.by) == (Status.RESPONDED, "done", "human")


async def test_wait_times_out_with_the_prompt_still_pending(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a1", question="q"))
    t0 = trio.current_time()
    got = await reg.wait(p.id, timeout_s=7)
    assert trio.current_time() - t0 == pytest.approx(7)
    assert got.status is Status.PENDING


async def test_wait_on_a_closed_prompt_returns_at_once(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a1", question="q"))
    await reg.respond(p.id, answer="x", by="h")
    t0 = trio.current_time()
    assert (await reg.wait(p.id, timeout_s=100)).status is Status.RESPONDED
    assert trio.current_time() == t0


async def test_countdown_expires_exactly_on_time(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    p = await reg.ask(Ask(agent_id="a1", question="q", timeout_s=30))
    got = await reg.wait(p.id, timeout_s=1000)
    assert trio.current_time() - t0 == pytest.approx(30)
    assert got.status is Status.EXPIRED
    assert got.expiry_reason is ExpiryReason.TIMEOUT
    assert reg.list_pending() == []


async def test_typing_cancels_the_countdown_but_not_the_hard_maximum(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    p = await reg.ask(Ask(agent_id="a1", question="q", timeout_s=60))
    await trio.sleep(30)
    typed = await reg.typing(p.id)
    assert typed.typing_at is not None
    assert (await reg.wait(p.id, timeout_s=120)).status is Status.PENDING  # past the 60 s
    got = await reg.wait(p.id, timeout_s=10_000)
    assert got.status is Status.EXPIRED
    assert got.expiry_reason is ExpiryReason.MAX_LIFETIME
    assert trio.current_time() - t0 == pytest.approx(3600)


async def test_no_timeout_means_the_hard_maximum(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    p = await reg.ask(Ask(agent_id="a1", question="q"))
    got = await reg.wait(p.id, timeout_s=100_000)
    assert got.status is Status.EXPIRED
    assert trio.current_time() - t0 == pytest.approx(3600)


async def test_deadlines_fire_in_order_even_when_asked_out_of_order(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    late = await reg.ask(Ask(agent_id="a", question="late", timeout_s=50))
    early = await reg.ask(Ask(agent_id="a", question="early", timeout_s=10))
    mid = await reg.ask(Ask(agent_id="a", question="mid", timeout_s=20))
    expired: list[tuple[str, float]] = []
    with reg.watch() as watch:
        while len(expired) < 3:
            change = await watch.receive()
            if change.event == "expire":
                expired.append((change.prompt.id, trio.current_time() - t0))
    assert expired == [
        (early.id, pytest.approx(10)),
        (mid.id, pytest.approx(20)),
        (late.id, pytest.approx(50)),
    ]


async def test_answered_prompt_does_not_expire_later(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a", question="q", timeout_s=10))
    await reg.respond(p.id, answer="x", by="h")
    await trio.sleep(20)
    assert (await reg.poll(p.id)).status is Status.RESPONDED


async def test_first_answer_wins(reg: Registry, autojump_clock: trio.testing.MockClock) -> None:
    p = await reg.ask(Ask(agent_id="a", question="q", choices=["yes", "no"]))
    await reg.respond(p.id, answer="yes", by="emacs")
    with pytest.raises(AlreadyAnswered, match="already answered by emacs"):
        await reg.respond(p.id, answer="no", by="vscode")
    assert (await reg.poll(p.id)).answer == "yes"


async def test_two_concurrent_answers_exactly_one_wins(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a", question="q"))
    outcomes: dict[str, str] = {}

    async def answer(by: str) -> None:
        try:
            await reg.respond(p.id, answer=by, by=by)
            outcomes[by] = "won"
        except AlreadyAnswered:
            outcomes[by] = "lost"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer, "emacs")
        nursery.start_soon(answer, "vscode")
    assert sorted(outcomes.values()) == ["lost", "won"]
    winner = next(by for by, o in outcomes.items() if o == "won")
    assert (await reg.poll(p.id)).by == winner


async def test_invalid_answer_leaves_the_prompt_pending(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a", question="q", choices=["yes", "no"]))
    with pytest.raises(Exception, match="not one of the choices"):
        await reg.respond(p.id, answer="perhaps", by="h")
    assert (await reg.poll(p.id)).status is Status.PENDING
    assert await reg.respond(p.id, answer="no", by="h")


async def test_decline_is_recorded_as_such(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a", question="q"))
    got = await reg.respond(p.id, answer=None, by="h", action=Action.DECLINE)
    assert (got.status, got.action, got.answer) == (Status.RESPONDED, Action.DECLINE, None)


async def test_cancel_then_answer_is_refused(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a1", question="q", timeout_s=10))
    got = await reg.cancel(p.id, by="a1", agent_id="a1")
    assert (got.status, got.by) == (Status.CANCELLED, "a1")
    with pytest.raises(PromptClosed, match="cancelled by a1"):
        await reg.respond(p.id, answer="late", by="h")
    with pytest.raises(PromptClosed):
        await reg.typing(p.id)
    await trio.sleep(20)  # its old deadline passes without effect
    assert (await reg.poll(p.id)).status is Status.CANCELLED


async def test_typing_on_expired_prompt_is_refused(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a1", question="q", timeout_s=1))
    await trio.sleep(2)
    with pytest.raises(PromptClosed, match="expired"):
        await reg.typing(p.id)


async def test_await_ask_returns_an_existing_prompt_at_once(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a1", question="q"))
    t0 = trio.current_time()
    got = await reg.await_ask(timeout_s=60)
    assert got is not None
    assert got.id == p.id
    assert trio.current_time() == t0


async def test_await_ask_waits_for_the_next_ask(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    seen = await reg.ask(Ask(agent_id="a1", question="old"))
    t0 = trio.current_time()
    result: list[object] = []

    async def coordinator() -> None:
        result.append(await reg.await_ask(timeout_s=60, exclude={seen.id}))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(coordinator)
        await trio.sleep(3)
        new = await reg.ask(Ask(agent_id="a2", question="new"))
    got = result[0]
    assert got is not None
    assert getattr(got, "id", None) == new.id
    assert trio.current_time() - t0 == pytest.approx(3)


async def test_await_ask_times_out_with_none(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    assert await reg.await_ask(timeout_s=9) is None
    assert trio.current_time() - t0 == pytest.approx(9)


async def test_bad_timeouts_are_refused(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(agent_id="a1", question="q"))
    for bad in (-1, float("nan"), True):
        with pytest.raises(InvalidParams):
            await reg.wait(p.id, timeout_s=bad)
        with pytest.raises(InvalidParams):
            await reg.await_ask(timeout_s=bad)


async def test_watch_gives_snapshot_then_every_change(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    before = await reg.ask(Ask(agent_id="a", question="before"))
    with reg.watch() as watch:
        assert [p.id for p in watch.pending] == [before.id]
        after = await reg.ask(Ask(agent_id="a", question="after", timeout_s=5))
        await reg.typing(before.id)
        await reg.respond(before.id, answer="x", by="h")
        await reg.cancel(after.id, by="a")
        events = [(c.event, c.prompt.id) for c in [await watch.receive() for _ in range(4)]]
    assert events == [
        ("ask", after.id),
        ("typing", before.id),
        ("respond", before.id),
        ("cancel", after.id),
    ]


async def test_a_watcher_that_falls_behind_is_dropped_not_waited_for(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    with reg.watch(buffer=2) as slow, reg.watch() as fine:
        for i in range(5):
            await reg.ask(Ask(agent_id="a", question=f"q{i}"))
        assert reg.statistics()["watchers"] == 1
        received = [await slow.receive() for _ in range(2)]
        assert len(received) == 2
        with pytest.raises(trio.EndOfChannel):
            await slow.receive()
        assert len([await fine.receive() for _ in range(5)]) == 5


async def test_statistics(reg: Registry, autojump_clock: trio.testing.MockClock) -> None:
    await reg.ask(Ask(agent_id="a", question="q", timeout_s=5))
    stats = reg.statistics()
    assert stats["pending"] == 1
    assert stats["deadline_heap"] == 1
    assert (await reg.counts())["pending"] == 1


def test_bad_max_lifetime() -> None:
    with pytest.raises(ValueError, match="max_lifetime_s"):
        Registry(MemoryStore(), max_lifetime_s=0)


async def test_heap_stays_bounded_by_pending_and_deadlines_survive_compaction(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    keep = [
        await reg.ask(Ask(agent_id="a", question=f"keep {i}", timeout_s=100 + i)) for i in range(3)
    ]
    for _ in range(3000):
        p = await reg.ask(Ask(agent_id="a", question="churn"))
        await reg.respond(p.id, answer="x", by="h")
    assert reg.statistics()["deadline_heap"] <= 2 * 3 + 1024
    for i, p in enumerate(keep):
        got = await reg.wait(p.id, timeout_s=1000)
        assert got.status is Status.EXPIRED
        assert trio.current_time() - t0 == pytest.approx(100 + i)


async def test_a_prompt_closed_by_another_hub_sharing_the_store_is_settled_not_fatal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Two hubs on one store: the other answered while our countdown ran."""
    store = MemoryStore()
    async with open_registry(store) as reg:
        shared = await reg.ask(Ask(agent_id="a", question="shared", timeout_s=10))
        later = await reg.ask(Ask(agent_id="a", question="later", timeout_s=20))
        elsewhere = lifecycle.respond(
            shared, answer="yes", by="other-hub", action=Action.ACCEPT, now=reg.now()
        )
        assert await store.update(elsewhere, expected=Status.PENDING) is None
        got = await reg.wait(shared.id, timeout_s=15)  # its deadline passes meanwhile
        assert (got.status, got.by) == (Status.RESPONDED, "other-hub")
        assert (await reg.wait(later.id, timeout_s=100)).status is Status.EXPIRED
        with pytest.raises(AlreadyAnswered, match="other-hub"):
            await reg.respond(shared.id, answer="no", by="me")
