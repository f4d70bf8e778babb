"""``--retain`` on the shared store (issue 31): closed prompts and task reports past
it leave the NATS buckets for good (no marker a later scan walks), pending ones
stay, and a restarted hub reads what is pending with the counts still right.  The
same retention of task reports on SQLite.  Against a real ``nats-server -js`` (the
``nats_server`` fixture); the buckets are read with a plain nats-py client, as any
service watching them would."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import nats
import pytest
import trio
from nats_support import NatsServer

from hive_rpc.core import lifecycle
from hive_rpc.core.prompt import Action, Ask, Prompt, Status, new_prompt
from hive_rpc.hub import run_retention
from hive_rpc.runtime.activity import TASK_DOC, ActivityLog
from hive_rpc.runtime.registry import Registry, open_registry
from hive_rpc.store import SqliteStore
from hive_rpc.store.base import RETAINED_DOCUMENTS, PromptStore
from hive_rpc.store.nats import DOCUMENTS_BUCKET, PROMPTS_BUCKET, encode_name, open_nats_store

DAY = 86400.0
HOUR = 3600.0

needs_nats = pytest.mark.skipif(
    shutil.which("nats-server") is None,
    reason="nats-server is not installed (Debian: apt-get install nats-server)",
)


def subjects(url: str, bucket: str) -> dict[str, int]:
    """Every key the bucket's stream holds a message for (a value or a marker), with
    how many: what a scan walks, read as a watcher of the bucket would."""

    async def read() -> dict[str, int]:
        nc = await nats.connect(url)
        try:
            info = await nc.jetstream().stream_info(
                f"KV_{bucket}", subjects_filter=f"$KV.{bucket}.>"
            )
            prefix = f"$KV.{bucket}."
            return {s.removeprefix(prefix): n for s, n in (info.state.subjects or {}).items()}
        finally:
            await nc.close()

    return asyncio.run(read())


def old_marker(url: str, bucket: str, key: str) -> None:
    """Put ``key`` then purge it as hive-rpc's retention did before (``kv.purge``):
    the bucket keeps a marker for it, which every scan walked."""

    async def write() -> None:
        nc = await nats.connect(url)
        try:
            kv = await nc.jetstream().key_value(bucket)
            await kv.put(key, b"{}")
            await kv.purge(key)
        finally:
            await nc.close()

    asyncio.run(write())


def closed(p: Prompt, how: str, answer: Any = "y") -> Prompt:
    if how == "responded":
        return lifecycle.respond(p, answer=answer, by="h", action=Action.ACCEPT, now=p.created_at)
    if how == "expired":
        return lifecycle.expire(p, now=p.created_at + 1)
    return lifecycle.cancel(p, by="a", now=p.created_at)


async def save_report(store: PromptStore, task_id: str, at: float) -> None:
    """A task report as ``hive/reportResult`` saves it, completed at ``at``."""
    log = ActivityLog(lambda: at)
    data = log.task_data(task_id=task_id, outcome="success", result={"n": 1})
    await store.put_document(TASK_DOC, task_id, log.task_document(data))


async def retention_pass(registry: Registry, retain_s: float) -> None:
    """One look of the hub's retention task (hub.run_retention), then stop it.  The
    look ends with ``store_trouble("retention", ...)``: an event to wait on."""
    looked = trio.Event()
    trouble = registry.store_trouble

    def noted(what: str, error: Exception | None) -> None:
        trouble(what, error)
        if what == "retention":
            assert error is None, error
            looked.set()

    registry.store_trouble = noted  # type: ignore[method-assign]
    async with trio.open_nursery() as nursery:
        await nursery.start(run_retention, registry, retain_s)
        await looked.wait()
        nursery.cancel_scope.cancel()
    registry.store_trouble = trouble  # type: ignore[method-assign]


@needs_nats
async def test_retain_removes_old_closed_prompts_and_task_reports_from_the_buckets(
    nats_server: NatsServer,
) -> None:
    url, now = nats_server.url, time.time()
    ask = Ask(agent_id="a", question="q", timeout_s=DAY)
    # Old is 3 h, --retain 2 h: within a pending prompt's longest life (1 day), which
    # a restarted registry would otherwise end.
    old = [new_prompt(ask, now=now - 3 * HOUR) for _ in range(3)]
    young = new_prompt(ask, now=now - 60)
    schema = {"type": "object", "properties": {"status": {"type": "string"}}}
    # Its schema and its answer have a status of their own: counted by the prompt's.
    nested = new_prompt(Ask(agent_id="a", question="q", schema=schema), now=now - 60)
    waiting = [new_prompt(ask, now=now - 3 * HOUR), new_prompt(ask, now=now)]
    with trio.fail_after(60):
        async with open_nats_store(url) as store:
            for p in [*old, young, nested, *waiting]:
                await store.insert(p)
            for p, how in zip(old, ["responded", "expired", "cancelled"], strict=True):
                assert await store.update(closed(p, how), expected=Status.PENDING) is None
            assert await store.update(closed(young, "cancelled"), expected=Status.PENDING) is None
            answer = {"status": "pending"}
            done = closed(nested, "responded", answer)
            assert await store.update(done, expected=Status.PENDING) is None
            await save_report(store, "old-task", now - 3 * HOUR)
            await save_report(store, "young-task", now - 60)
            await store.put_document("note", "gone", {"id": "gone"})
            assert await store.delete_document("note", "gone")  # a young marker
        await trio.to_thread.run_sync(old_marker, url, PROMPTS_BUCKET, "0000000000000000")
        before = subjects(url, PROMPTS_BUCKET)
        assert set(before) == {encode_name(p.id) for p in [*old, young, nested, *waiting]} | {
            "0000000000000000"
        }

        async with open_nats_store(url) as store, open_registry(store) as registry:
            await retention_pass(registry, 2 * HOUR)

        prompts_left = await trio.to_thread.run_sync(subjects, url, PROMPTS_BUCKET)
        docs_left = await trio.to_thread.run_sync(subjects, url, DOCUMENTS_BUCKET)
        # The old closed prompts and the old marker are gone, without a marker each.
        assert prompts_left == {encode_name(p.id): 1 for p in [young, nested, *waiting]}
        # The old report is gone; the young one and a young removal's marker stay
        # (a hub resuming its watch within --retain still sees the removal).
        assert set(docs_left) == {"task.young-task", "note.gone"}

        # A restart reads what is pending, and the counts are right.
        async with open_nats_store(url) as store, open_registry(store) as registry:
            assert {p.id for p in registry.list_pending()} == {p.id for p in waiting}
            assert await store.counts() == {
                "pending": 2,
                "responded": 1,
                "expired": 0,
                "cancelled": 1,
            }
            assert [d["task_id"] for d in await store.documents(TASK_DOC)] == ["young-task"]
            assert (await store.get(nested.id)) == done


@needs_nats
async def test_a_task_reported_again_while_retention_runs_keeps_its_new_report(
    nats_server: NatsServer,
) -> None:
    """Retention plans its purges from one scan; a report saved again after it is a
    newer revision, which the purge of the old one leaves."""
    now = time.time()
    with trio.fail_after(30):
        async with open_nats_store(nats_server.url) as store:
            p = new_prompt(Ask(agent_id="a", question="q"), now=now - 3 * DAY)
            await store.insert(p)
            assert await store.update(closed(p, "cancelled"), expected=Status.PENDING) is None
            await save_report(store, "deploy", now - 3 * DAY)
            before = now - 2 * DAY
            assert await store.prune_closed(before, limit=1) == 1  # the prompt
            await save_report(store, "deploy", now)  # reported again
            assert await store.prune_closed(before) == 1  # the old revision
            assert await store.prune_closed(before) == 0
            (report,) = await store.documents(TASK_DOC)
            assert report["completed_at"] == now
            assert await store.get(p.id) is None


async def test_retain_removes_old_task_reports_on_sqlite(tmp_path: Path) -> None:
    assert RETAINED_DOCUMENTS[TASK_DOC] == "completed_at"  # the stores' name for reports
    now = time.time()
    store = SqliteStore(tmp_path / "hive.db")
    try:
        for i in range(7):
            await save_report(store, f"old-{i}", now - 3 * DAY)
        await save_report(store, "young", now - 60)
        await store.put_document("ling", "kept", {"name": "kept", "completed_at": 0})
        p = new_prompt(Ask(agent_id="a", question="q"), now=now - 3 * DAY)
        await store.insert(p)
        assert await store.update(closed(p, "expired"), expected=Status.PENDING) is None
        assert await store.prune_closed(now - 2 * DAY, limit=5) == 5  # the prompt first
        assert await store.prune_closed(now - 2 * DAY, limit=5) == 3
        assert await store.prune_closed(now - 2 * DAY, limit=5) == 0
        assert [d["task_id"] for d in await store.documents(TASK_DOC)] == ["young"]
        assert await store.documents("ling") == [{"name": "kept", "completed_at": 0}]
    finally:
        await store.aclose()
