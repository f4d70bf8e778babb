"""The store contract, run against every store (NATS on a real nats-server, see
tests/nats_support.py); then what only SQLite promises.  What only NATS promises is
in test_nats_store.py."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing
from nats_support import NatsServer

from hive_rpc.core import lifecycle
from hive_rpc.core.prompt import Action, Ask, Prompt, Status, new_prompt
from hive_rpc.store import MemoryStore, PromptStore, SqliteStore
from hive_rpc.store.nats import open_nats_store
from hive_rpc.store.sqlite import BACKSTOP_PAGES

NOW = 1_800_000_000.0


def prompt(i: int, agent: str = "a") -> Prompt:
    return new_prompt(Ask(agent_id=agent, question=f"q{i} ✓ «ünïcode»", timeout_s=60), now=NOW + i)


@pytest.fixture(params=["memory", "sqlite", "nats"])
async def store(request: pytest.FixtureRequest, short_tmp: Path) -> AsyncIterator[PromptStore]:
    if request.param == "nats":
        server: NatsServer = request.getfixturevalue("nats_server")
        with trio.fail_after(10):
            async with open_nats_store(server.url) as nats:
                yield nats
        return
    s: PromptStore = MemoryStore() if request.param == "memory" else SqliteStore(short_tmp / "db")
    yield s
    await s.aclose()


async def test_insert_get_round_trip(store: PromptStore) -> None:
    p = prompt(1)
    await store.insert(p)
    assert await store.get(p.id) == p
    assert await store.get("missing") is None


async def test_find_by_id_prefix_any_status_oldest_first(store: PromptStore) -> None:
    ids = ["abcd0000000000ff", "abcd1111000000ff", "ffff0000000000ff"]
    old, new, other = (replace(prompt(i), id=x) for i, x in enumerate(ids))
    for p in (new, old, other):
        await store.insert(p)
    answered = lifecycle.respond(old, answer="x", by="h", action=Action.ACCEPT, now=NOW + 9)
    assert await store.update(answered, expected=Status.PENDING) is None
    assert await store.find("abcd") == [answered, new]
    assert await store.find("abcd1") == [new]
    assert await store.find("ffff0000000000ff") == [other]
    assert await store.find("abce") == []


async def test_update_is_compare_and_set_on_status(store: PromptStore) -> None:
    p = prompt(1)
    await store.insert(p)
    answered = lifecycle.respond(p, answer="x", by="first", action=Action.ACCEPT, now=NOW + 2)
    assert await store.update(answered, expected=Status.PENDING) is None
    late = lifecycle.respond(p, answer="y", by="second", action=Action.ACCEPT, now=NOW + 3)
    current = await store.update(late, expected=Status.PENDING)
    assert current is not None
    assert current.by == "first"
    assert (await store.get(p.id)) == answered


async def test_pending_oldest_first_and_counts(store: PromptStore) -> None:
    assert await store.counts() == {"pending": 0, "responded": 0, "expired": 0, "cancelled": 0}
    assert await store.pending() == []
    ps = [prompt(i) for i in (3, 1, 2)]
    for p in ps:
        await store.insert(p)
    await store.update(lifecycle.cancel(ps[0], by="a", now=NOW + 9), expected=Status.PENDING)
    assert [p.question[:2] for p in await store.pending()] == ["q1", "q2"]
    assert await store.counts() == {"pending": 2, "responded": 0, "expired": 0, "cancelled": 1}


async def test_schema_and_choices_survive_storage(store: PromptStore) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    p = replace(prompt(1), schema=schema)
    q = replace(prompt(2), choices=("yes", "no"))
    await store.insert(p)
    await store.insert(q)
    got_p, got_q = await store.get(p.id), await store.get(q.id)
    assert got_p is not None
    assert got_q is not None
    assert dict(got_p.schema or {}) == schema
    assert got_q.choices == ("yes", "no")


async def test_documents_in_first_save_order(store: PromptStore) -> None:
    odd_key = "main.feature/auth ✓ «x»"  # dots, slashes, spaces, non-ASCII
    await store.put_document("ling", "b", {"n": 1})
    await store.put_document("ling", odd_key, {"n": 2})
    await store.put_document("dialogue", "d1", {"n": 3})
    await store.put_document("ling", "a", {"n": 4})
    await store.put_document("ling", "b", {"n": 5})  # replaced, keeps its place
    assert await store.documents("ling") == [{"n": 5}, {"n": 2}, {"n": 4}]
    assert await store.documents("dialogue") == [{"n": 3}]
    assert await store.documents("nothing") == []
    assert await store.delete_document("ling", odd_key) is True
    assert await store.delete_document("ling", odd_key) is False
    assert await store.documents("ling") == [{"n": 5}, {"n": 4}]
    await store.put_document("ling", odd_key, {"n": 6})  # saved again: now the newest
    assert await store.documents("ling") == [{"n": 5}, {"n": 4}, {"n": 6}]


async def test_a_document_is_read_by_its_key(store: PromptStore) -> None:
    odd_key = "deploy.412/eu ✓"
    await store.put_document("task", odd_key, {"n": 1})
    await store.put_document("task", "b", {"n": 2})
    await store.put_document("task", odd_key, {"n": 3})  # replaced
    assert await store.get_document("task", odd_key) == {"n": 3}
    assert await store.get_document("ling", odd_key) is None  # another kind
    assert await store.get_document("task", "none") is None
    assert await store.delete_document("task", "b")
    assert await store.get_document("task", "b") is None  # deleted: its marker read


async def test_sqlite_survives_reopen_and_is_private(short_tmp: Path) -> None:
    path = short_tmp / "data" / "prompts.sqlite3"
    first = SqliteStore(path)
    p = prompt(1)
    await first.insert(p)
    await first.aclose()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    second = SqliteStore(path)
    assert await second.get(p.id) == p
    assert (await second.pending())[0].id == p.id
    await second.aclose()


async def test_sqlite_uses_wal(short_tmp: Path) -> None:
    s = SqliteStore(short_tmp / "db")
    mode = s._db.execute("PRAGMA journal_mode").fetchone()[0]
    await s.aclose()
    assert mode == "wal"


async def test_sqlite_checkpoints_run_off_the_trio_thread(short_tmp: Path) -> None:
    s = SqliteStore(short_tmp / "db", checkpoint_every=10)
    autocheckpoint = "PRAGMA wal_autocheckpoint"
    async with trio.open_nursery() as nursery:
        await nursery.start(s.run_checkpoints)
        assert s._db.execute(autocheckpoint).fetchone()[0] == BACKSTOP_PAGES
        for i in range(9):
            await s.insert(prompt(i))
        await trio.testing.wait_all_tasks_blocked()
        assert s.checkpoints == 0
        await s.insert(prompt(9))  # the tenth commit makes a checkpoint due
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()  # waits for the worker thread's checkpoint to end
    assert s.checkpoints == 1
    assert s._db.execute(autocheckpoint).fetchone()[0] == 1000
    await s.aclose()


async def test_sqlite_writers_far_ahead_of_a_checkpoint_not_yet_started_go_on(
    short_tmp: Path,
) -> None:
    """Writers that reach ``CHECKPOINT_LAG`` checkpoints' worth of commits before the
    checkpoint task has even started one (nothing let it run: the writes never
    yielded) wait for it, and go on once it starts: they once waited on an event the
    task had already replaced, forever."""
    s = SqliteStore(short_tmp / "db", checkpoint_every=10)
    async with trio.open_nursery() as nursery:
        await nursery.start(s.run_checkpoints)
        with trio.fail_after(10):
            for i in range(25):
                await s.insert(prompt(i))
        nursery.cancel_scope.cancel()
    await s.aclose()
    assert s.checkpoints >= 1


async def test_sqlite_log_found_over_the_backstop_is_rewound_before_the_next_checkpoint(
    short_tmp: Path,
) -> None:
    """A checkpoint that finds the log at the backstop rewinds it at once.  The rewind
    once waited for the next write, which raced the next checkpoint: a TRUNCATE that
    finds the checkpoint lock held reports busy and does nothing, and on a loaded CI
    machine the log outgrew its bound (CI of stop 35)."""
    s = SqliteStore(short_tmp / "db", checkpoint_every=5, backstop_pages=1)
    wal = short_tmp / "db-wal"
    checkpointed = trio.Event()

    def trouble(what: str, error: Exception | None) -> None:
        assert (what, error) == ("checkpoint", None)
        checkpointed.set()

    async with trio.open_nursery() as nursery:
        await nursery.start(partial(s.run_checkpoints, trouble=trouble))
        for i in range(5):
            await s.insert(prompt(i))
        assert wal.stat().st_size > 0
        with trio.fail_after(10):
            await checkpointed.wait()
        assert wal.stat().st_size == 0  # no write came after: the checkpoint rewound it
        nursery.cancel_scope.cancel()
    await s.aclose()
    assert s.checkpoints == 1


async def test_sqlite_wal_stays_bounded_under_sustained_writes(short_tmp: Path) -> None:
    """Checkpoints in a worker never catch up with writes that keep coming; the
    backstop must still rewind the log (it once grew to 1.6 GB in a benchmark)."""
    s = SqliteStore(short_tmp / "db", checkpoint_every=50)
    wal = short_tmp / "db-wal"
    largest = 0
    async with trio.open_nursery() as nursery:
        await nursery.start(s.run_checkpoints)
        for i in range(12_000):
            p = prompt(i)
            await s.insert(p)
            if i % 7 == 0:
                await trio.lowlevel.checkpoint()  # let the checkpointer run meanwhile
            largest = max(largest, wal.stat().st_size)
        nursery.cancel_scope.cancel()
    await s.aclose()
    assert s.checkpoints > 0
    page = 4096
    assert largest < (BACKSTOP_PAGES + 1000) * page
