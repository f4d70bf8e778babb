"""Typed then left (issue 14, seed 002): deferring a prompt the human had typed into
gives it its countdown back; a prompt hidden blank keeps the countdown it had.
Deadlines on trio's autojump clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from hive_rpc.core.errors import PromptClosed
from hive_rpc.core.prompt import Ask, ExpiryReason, Status
from hive_rpc.runtime.registry import Registry, open_registry
from hive_rpc.store import MemoryStore


@pytest.fixture
async def reg(autojump_clock: trio.testing.MockClock) -> AsyncIterator[Registry]:
    async with open_registry(MemoryStore(), max_lifetime_s=86_400) as registry:
        yield registry


async def test_typed_then_left_expires_one_timeout_after_the_defer(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    """Without hive/defer the prompt waited for the 24 h maximum lifetime."""
    t0 = trio.current_time()
    p = await reg.ask(Ask(question="q", timeout_s=60))
    await trio.sleep(50)
    await reg.typing(p.id)
    await trio.sleep(200)  # thinking, past the original 60 s
    with reg.watch() as watch:
        left = await reg.defer(p.id)
        change = await watch.receive()
    assert (change.event, change.prompt) == ("defer", left)
    assert left.typing_at is None
    assert left.deadline_at == pytest.approx(reg.now() + 60)
    got = await reg.wait(p.id, timeout_s=100_000)
    assert got.status is Status.EXPIRED
    assert got.expiry_reason is ExpiryReason.TIMEOUT
    assert trio.current_time() - t0 == pytest.approx(50 + 200 + 60)


async def test_hidden_blank_keeps_its_countdown_and_tells_nobody(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    p = await reg.ask(Ask(question="q", timeout_s=60))
    await trio.sleep(20)
    with reg.watch() as watch:
        assert await reg.defer(p.id) == p
        with trio.move_on_after(1) as quiet:
            await watch.receive()
        assert quiet.cancelled_caught, "a defer with nothing to restore sent a change"
    got = await reg.wait(p.id, timeout_s=100_000)
    assert got.status is Status.EXPIRED
    assert trio.current_time() - t0 == pytest.approx(60)


async def test_typing_again_after_a_defer_stops_the_countdown_again(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(question="q", timeout_s=60))
    await reg.typing(p.id)
    await reg.defer(p.id)
    again = await reg.typing(p.id)
    assert again.typing_at is not None
    assert (await reg.wait(p.id, timeout_s=600)).status is Status.PENDING


async def test_defer_of_a_closed_prompt_is_refused(
    reg: Registry, autojump_clock: trio.testing.MockClock
) -> None:
    p = await reg.ask(Ask(question="q", timeout_s=1))
    await reg.wait(p.id, timeout_s=10)
    with pytest.raises(PromptClosed):
        await reg.defer(p.id)
