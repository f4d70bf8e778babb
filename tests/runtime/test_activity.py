"""The activity log (hive_rpc/runtime/activity.py): completion data, correlation ids, resuming,
TTL and large results.  The HTTP stream over it is tested in
tests/faces/test_activity_http.py."""

from __future__ import annotations

import contextlib
import json

import pytest
import trio
import trio.testing

from hive_rpc.core import lifecycle
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.prompt import Action, Ask, new_prompt
from hive_rpc.runtime.activity import INLINE_RESULT_BYTES, ActivityLog, prompt_data


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def asked(task_id: str | None = "t-1"):  # type: ignore[no-untyped-def]
    return new_prompt(
        Ask(agent_id="a", question="Q?", task_id=task_id, in_reply_to="r-1"), now=1000.0
    )


def test_prompt_entries_carry_completion_data_and_correlation_ids() -> None:
    p = asked()
    pending = prompt_data(p)
    assert (pending["task_id"], pending["in_reply_to"], pending["outcome"]) == ("t-1", "r-1", None)
    answered = prompt_data(
        lifecycle.respond(p, answer="yes", by="bob", action=Action.ACCEPT, now=1001.0)
    )
    assert (answered["outcome"], answered["result"], answered["completed_at"]) == (
        "success",
        "yes",
        1001.0,
    )
    declined = prompt_data(
        lifecycle.respond(p, answer=None, by="bob", action=Action.DECLINE, now=1001.0)
    )
    assert (declined["outcome"], declined["error"]) == ("cancelled", "the human chose decline")
    expired = prompt_data(lifecycle.expire(p, now=1002.0))
    assert (expired["outcome"], expired["completed_at"]) == ("failed", 1002.0)
    assert "nobody answered" in expired["error"]
    cancelled = prompt_data(lifecycle.cancel(p, by="a", now=1003.0))
    assert cancelled["outcome"] == "cancelled"


def test_task_reports_are_checked() -> None:
    log = ActivityLog(Clock())
    entry = log.report_task(task_id="t-9", outcome="failed", error="tests red", agent_id="ci")
    assert entry.record()["kind"] == "task"
    assert entry.data["completed_at"] == 1000.0
    with pytest.raises(InvalidParams, match="outcome must be one of success, failed, cancelled"):
        log.report_task(task_id="t-9", outcome="done")
    with pytest.raises(InvalidParams, match="over the"):
        log.report_task(task_id="t-9", outcome="success", result="x" * (5 << 20))
    assert [e.key for e in log.task("t-9")] == ["t-9"]


def test_large_results_are_stored_once_and_referenced() -> None:
    log = ActivityLog(Clock())
    big = {"rows": ["x" * 100] * (INLINE_RESULT_BYTES // 50)}
    one = log.report_task(task_id="a", outcome="success", result=big)
    two = log.report_task(task_id="b", outcome="success", result=big)
    assert one.data["result"] is None
    assert one.data["result_ref"] == two.data["result_ref"]
    digest = one.data["result_ref"].rsplit("/", 1)[1]
    assert json.loads(log.blob(digest) or "null") == big
    small = log.report_task(task_id="c", outcome="success", result={"ok": 1})
    assert small.data["result"] == {"ok": 1}


def test_resuming_and_falling_behind() -> None:
    log = ActivityLog(Clock(), size=3, first_id=1)
    for i in range(5):
        log.report_task(task_id=f"t{i}", outcome="success")
    assert log.last_id == 5
    assert [e.id for e in log.since(3) or []] == [4, 5]
    assert log.since(5) == []
    assert log.since(1) is None  # entry 2 is gone: start again from a snapshot


def test_finished_entries_expire_after_the_ttl_and_pending_ones_stay() -> None:
    clock = Clock()
    log = ActivityLog(clock, ttl_s=60)
    prompt = asked()
    log.prompt_changed("ask", prompt)  # not finished: kept however old
    log.report_task(task_id="old", outcome="success")
    clock.t += 61
    log.report_task(task_id="new", outcome="success")
    assert [e.key for e in log.recent()] == [prompt.id, "new"]
    assert log.task("old") == []


async def test_follow_wakes_on_publish() -> None:
    log = ActivityLog(Clock(), first_id=1)
    got: list[int] = []

    async def follower() -> None:
        async with contextlib.aclosing(log.follow(0)) as batches:
            async for batch in batches:
                assert batch is not None
                got.extend(e.id for e in batch)
                if len(got) >= 2:
                    return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(follower)
        await trio.testing.wait_all_tasks_blocked()
        log.report_task(task_id="x", outcome="success")
        await trio.testing.wait_all_tasks_blocked()
        log.report_task(task_id="y", outcome="cancelled")
    assert got == [1, 2]


async def test_after_waits_may_be_given_up_and_called_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``after``, what the activity stream waits on under its ping timeout: given up
    (nothing came), it is called again and still gets every entry; None once entries
    after the id are gone."""
    log = ActivityLog(Clock(), size=3, first_id=1)
    with trio.move_on_after(15) as idle:
        await log.after(0)
    assert idle.cancelled_caught
    got: list[list[int] | None] = []

    async def waiter() -> None:
        batch = await log.after(0)
        got.append(None if batch is None else [e.id for e in batch])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        log.report_task(task_id="x", outcome="success")
        log.report_task(task_id="y", outcome="success")
    assert got == [[1, 2]]
    assert [e.id for e in await log.after(1) or []] == [2]
    for i in range(3):
        log.report_task(task_id=f"z{i}", outcome="success")
    assert await log.after(1) is None  # entry 2 went out of the ring


def test_a_run_numbers_from_its_start_so_ids_never_repeat() -> None:
    clock = Clock()
    first = ActivityLog(clock)
    assert first.first_id == 1_000_000_000  # its start, in microseconds
    for i in range(3):
        first.report_task(task_id=f"t{i}", outcome="success")
    clock.t += 0.001  # the hub restarts a moment later: a new log
    second = ActivityLog(clock)
    assert second.first_id > first.last_id
    second.report_task(task_id="new", outcome="success")
    assert second.since(first.last_id) is None  # an id of the earlier run: reset
    assert [e.key for e in second.since(0) or []] == ["new"]  # 0: this run's all


def test_an_entry_dropped_by_age_after_the_id_means_reset() -> None:
    clock = Clock()
    log = ActivityLog(clock, ttl_s=60, first_id=1)
    log.prompt_changed("ask", asked())  # 1, unfinished: kept
    log.report_task(task_id="early", outcome="success")  # 2
    clock.t += 61
    log.report_task(task_id="late", outcome="success")  # 3; 2 is dropped
    assert log.since(1) is None
    assert [e.key for e in log.since(2) or []] == ["late"]
