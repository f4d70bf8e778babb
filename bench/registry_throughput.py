"""In-process registry throughput: ask + respond cycles per second.

One cycle is ``registry.ask(...)`` with no timeout followed by ``registry.respond(...)``
on the prompt it returned, sequentially in one trio task, on a registry opened with
``open_registry``.  Rows:

* floor: what one cycle must at least do in trio: a dict insert, a dict pop, a new
  ``trio.Event`` set, and one ``trio.lowlevel.checkpoint()``;
* records only: ``new_prompt`` + ``lifecycle.respond`` with no registry and no store,
  the cost of making and checking the two immutable records a cycle produces;
* registry + MemoryStore, registry + SqliteStore (the embedded default, WAL, in a
  temp dir), with ``store.run_checkpoints`` started inside the registry as the hub
  starts it (a PASSIVE checkpoint in a worker thread every ``checkpoint_every``
  commits, SQLite's own automatic one only as a backstop at ``BACKSTOP_PAGES``);
* sqlite floor: the bare INSERT + UPDATE on the store's own connection, each its own
  committed transaction, under the same checkpoint task; and the same loop without
  it, SQLite then checkpointing automatically inside a commit (as before the task);
* registry + SqliteStore with each store call sent to a worker thread
  (``trio.to_thread.run_sync``): the peer that sqlite.py's docstring says would be
  slower than running the statements inline;
* registry + SqliteStore with ``--askers`` (100) concurrent tasks, each asking and
  answering in turn: throughput under contention for the write lock, as us per cycle
  against the same sequential sqlite floor.

``--before PATH`` times the SqliteStore rows against another checkout of hive_rpc
(``git worktree add --detach PATH <commit>``) instead: ``--rounds`` pairs of child
processes, one on each checkout, alternately, each measuring its own sqlite floor in
the same process, by the trio thread's CPU time unless ``--clock wall``; the table
gives the medians.

Target: >= 20,000 ask+respond per second in-process.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import trio
from _common import print_machine, ratio, short_tmp, table, verdict

import hive_rpc
from hive_rpc.core import lifecycle
from hive_rpc.core.prompt import Action, Ask, Prompt, Status, new_prompt
from hive_rpc.runtime.registry import open_registry
from hive_rpc.store import MemoryStore, PromptStore, SqliteStore

TARGET_PER_S = 20_000
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
"""``--clock``: wall time, or the trio thread's CPU time (what the loop itself spends,
the checkpoint worker's thread left out), which other processes sharing the cores
disturb far less: ``--before`` uses it by default."""
clock = CLOCKS["wall"]
T = TypeVar("T")
LAST_STATISTICS: dict[str, dict[str, int]] = {}
"""registry.statistics() at the end of the last run on each kind of store."""


async def floor_cycles(n: int) -> float:
    """Seconds for ``n`` iterations of the bare minimum a cycle needs."""
    table_: dict[int, object] = {}
    checkpoint = trio.lowlevel.checkpoint
    value = object()
    start = clock()
    for i in range(n):
        table_[i] = value
        event = trio.Event()
        table_.pop(i)
        event.set()
        await checkpoint()
    return clock() - start


async def records_only(n: int) -> float:
    """Seconds for ``n`` new_prompt + lifecycle.respond, no registry, no store."""
    now = time.time()
    start = clock()
    for _ in range(n):
        prompt = new_prompt(Ask(agent_id="bench", question="Ship it?"), now=now)
        lifecycle.respond(prompt, answer="yes", by="human", action=Action.ACCEPT, now=now)
    return clock() - start


def wal_pages(path: Path) -> int:
    """The WAL file's size in 4 KiB pages (SQLite's default page size)."""
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size // 4096 if wal.exists() else 0


async def registry_cycles(store: PromptStore, n: int) -> float:
    """Seconds for ``n`` ask + respond cycles on a registry over ``store``.

    A SqliteStore gets its checkpoint task started inside the registry, as
    ``hive_rpc.hub`` does."""
    sqlite = store if isinstance(store, SqliteStore | ThreadedSqliteStore) else None
    async with open_registry(store) as registry, trio.open_nursery() as nursery:
        if sqlite is not None:
            await nursery.start(sqlite.run_checkpoints)
        start = clock()
        for _ in range(n):
            prompt = await registry.ask(Ask(agent_id="bench", question="Ship it?"))
            await registry.respond(prompt.id, answer="yes", by="human")
        elapsed = clock() - start
        stats = registry.statistics()
        if sqlite is not None:
            stats["checkpoints"] = sqlite.checkpoints
            stats["wal_pages"] = wal_pages(sqlite.path)
        LAST_STATISTICS[store.kind] = stats
        nursery.cancel_scope.cancel()
    await store.aclose()
    return elapsed


async def concurrent_cycles(store: PromptStore, n: int, askers: int) -> float:
    """Seconds for ``n`` ask + respond cycles made by ``askers`` concurrent tasks
    (``n // askers`` each, in turn), on a registry over ``store`` with its checkpoint
    task, as ``registry_cycles``."""
    sqlite = store if isinstance(store, SqliteStore) else None
    each = n // askers
    async with open_registry(store) as registry, trio.open_nursery() as nursery:
        if sqlite is not None:
            await nursery.start(sqlite.run_checkpoints)

        async def asker() -> None:
            for _ in range(each):
                prompt = await registry.ask(Ask(agent_id="bench", question="Ship it?"))
                await registry.respond(prompt.id, answer="yes", by="human")

        start = clock()
        async with trio.open_nursery() as tasks:
            for _ in range(askers):
                tasks.start_soon(asker)
        elapsed = clock() - start
        nursery.cancel_scope.cancel()
    await store.aclose()
    return elapsed / (each * askers) * n


def _drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a store coroutine that never yields (SqliteStore's) to completion, in a thread."""
    try:
        coro.send(None)
    except StopIteration as stop:
        result: T = stop.value
        return result
    coro.close()
    raise RuntimeError("store method yielded; it cannot run in a worker thread")


class ThreadedSqliteStore:
    """SqliteStore with every insert/update/get run in a worker thread (the peer)."""

    kind = "sqlite-thread"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._inner = SqliteStore(path)
        # The connection must be usable from the worker thread; same file, same pragmas.
        self._inner._db.close()
        self._inner._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._inner._db.execute("PRAGMA journal_mode=WAL")
        self._inner._db.execute("PRAGMA synchronous=NORMAL")
        self._limiter = trio.CapacityLimiter(1)
        # SqliteStore counts its commits and sets a trio.Event when a checkpoint is
        # due; a worker thread must not touch the Event, so commits made there are
        # counted there and reported to the store back on the trio thread.
        self._thread_commits = 0
        self._count_commit = self._inner._committed
        self._inner._committed = self._count_in_thread  # type: ignore[method-assign]

    def _count_in_thread(self) -> None:
        self._thread_commits += 1

    @property
    def checkpoints(self) -> int:
        return self._inner.checkpoints

    async def run_checkpoints(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        await self._inner.run_checkpoints(task_status=task_status)

    async def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            return await trio.to_thread.run_sync(_drive, coro, limiter=self._limiter)
        finally:
            commits, self._thread_commits = self._thread_commits, 0
            for _ in range(commits):
                self._count_commit()

    async def insert(self, prompt: Prompt) -> None:
        await self._run(self._inner.insert(prompt))

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        return await self._run(self._inner.update(prompt, expected=expected))

    async def get(self, prompt_id: str) -> Prompt | None:
        return await self._run(self._inner.get(prompt_id))

    async def pending(self) -> list[Prompt]:
        return await self._inner.pending()

    async def find(self, prefix: str) -> list[Prompt]:
        return await self._inner.find(prefix)

    async def counts(self) -> dict[str, int]:
        return await self._inner.counts()

    async def documents(self, kind: str) -> list[dict[str, Any]]:
        """Read once, when the registry starts (its unseen expiries): off the timed path."""
        return await self._inner.documents(kind)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def sqlite_floor(path: Path, n: int, *, checkpoint_task: bool = True) -> float:
    """Seconds for ``n`` bare INSERT + UPDATE pairs, each its own committed transaction,
    on SqliteStore's schema, pragmas and connection, the record text made once in
    advance.  With ``checkpoint_task`` (as the hub runs it) the store's
    ``run_checkpoints`` runs beside the loop, which yields only when a checkpoint is
    due; without it SQLite checkpoints automatically inside a commit."""
    store = SqliteStore(path)
    db = store._db
    now = time.time()
    prompt = new_prompt(Ask(agent_id="bench", question="Ship it?"), now=now)
    record = json.dumps(prompt.to_record(), separators=(",", ":"))  # the store's bytes
    ids = [f"{i:016x}" for i in range(n)]
    async with trio.open_nursery() as nursery:
        if checkpoint_task:
            await nursery.start(store.run_checkpoints)
        committed = store._committed
        every = store.checkpoint_every
        start = clock()
        for i, prompt_id in enumerate(ids):
            db.execute(
                "INSERT INTO prompts (id, agent_id, status, created_at, record) VALUES (?,?,?,?,?)",
                (prompt_id, "bench", "pending", now + i, record),
            )
            committed()
            db.execute(
                "UPDATE prompts SET status = ?, record = ? WHERE id = ? AND status = ?",
                ("responded", record, prompt_id, "pending"),
            )
            committed()
            if checkpoint_task and store._commits >= every:
                await trio.lowlevel.checkpoint()  # let the checkpoint task start its thread
        elapsed = clock() - start
        if checkpoint_task:
            LAST_STATISTICS["sqlite-floor"] = {
                "checkpoints": store.checkpoints,
                "wal_pages": wal_pages(path),
            }
        nursery.cancel_scope.cancel()
    await store.aclose()
    return elapsed


async def best_of(repeats: int, run: Callable[[], Awaitable[float]]) -> float:
    return min([await run() for _ in range(repeats)])


async def main(args: argparse.Namespace) -> list[list[object]]:
    n, repeats = args.n, args.repeats
    await floor_cycles(min(n, 5000))  # warm up
    floor_s = await best_of(repeats, lambda: floor_cycles(n))
    records_s = await best_of(repeats, lambda: records_only(n))
    memory_s = await best_of(repeats, lambda: registry_cycles(MemoryStore(), n))
    files = itertools.count()

    async def sqlite_run(count: int, threaded: bool = False, askers: int = 1) -> float:
        with short_tmp() as tmp:
            path = tmp / f"prompts-{next(files)}.sqlite3"
            store: PromptStore = ThreadedSqliteStore(path) if threaded else SqliteStore(path)
            if askers > 1:
                return await concurrent_cycles(store, count, askers)
            return await registry_cycles(store, count)

    async def sql_floor_run(checkpoint_task: bool = True) -> float:
        with short_tmp() as tmp:
            return await sqlite_floor(tmp / "floor.sqlite3", n, checkpoint_task=checkpoint_task)

    sql_floor_s = await best_of(repeats, sql_floor_run)
    sql_auto_s = await best_of(repeats, lambda: sql_floor_run(checkpoint_task=False))
    sqlite_s = await best_of(repeats, lambda: sqlite_run(n))
    concurrent_s = await best_of(repeats, lambda: sqlite_run(n, askers=args.askers))
    thread_s = (
        await best_of(repeats, lambda: sqlite_run(args.thread_n, threaded=True))
        if args.thread_n
        else None
    )

    floor_us = floor_s / n * 1e6
    sql_floor_us = sql_floor_s / n * 1e6

    def row(name: str, count: int, seconds: float, target: bool, sql: bool) -> list[object]:
        us = seconds / count * 1e6
        return [
            name,
            f"{count:,}",
            f"{count / seconds:,.0f}",
            f"{us:.1f}",
            ratio(us, floor_us),
            ratio(us, sql_floor_us) if sql else "",
            verdict(count / seconds >= TARGET_PER_S) if target else "",
        ]

    rows = [
        row("floor: dict insert+pop, Event set, checkpoint", n, floor_s, False, False),
        row("records only: new_prompt + lifecycle.respond", n, records_s, False, False),
        row("registry + MemoryStore", n, memory_s, True, False),
        row("sqlite floor: bare INSERT + UPDATE, 2 commits", n, sql_floor_s, False, True),
        row("  same, SQLite's automatic checkpoints inline", n, sql_auto_s, False, True),
        row("registry + SqliteStore (default; inline)", n, sqlite_s, True, True),
        row(f"  same, {args.askers} concurrent askers", n, concurrent_s, True, True),
    ]
    if thread_s is not None:
        rows.append(
            row("peer: SqliteStore calls via to_thread", args.thread_n, thread_s, False, True)
        )
    return rows


async def sqlite_rows(n: int, askers: int) -> dict[str, float]:
    """One child's figures for ``--before``: us per cycle of the sqlite floor, of the
    registry + SqliteStore with one client and with ``askers`` concurrent ones."""
    with short_tmp() as tmp:
        floor_s = await sqlite_floor(tmp / "floor.sqlite3", n)
        one_s = await registry_cycles(SqliteStore(tmp / "one.sqlite3"), n)
        many_s = await concurrent_cycles(SqliteStore(tmp / "many.sqlite3"), n, askers)
    return {"floor": floor_s / n * 1e6, "one": one_s / n * 1e6, "many": many_s / n * 1e6}


def child(checkout: Path, n: int, askers: int, clock_name: str) -> dict[str, float]:
    """``sqlite_rows`` in a fresh interpreter importing hive_rpc from ``checkout``."""
    env = {**os.environ, "PYTHONPATH": os.fspath(checkout)}
    argv = [sys.executable, __file__, "--child", "-n", str(n), "--askers", str(askers)]
    argv += ["--clock", clock_name]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the child on {checkout} failed:\n{done.stderr[-2000:]}")
    *_, imported, line = done.stdout.splitlines()
    if not Path(imported).resolve().is_relative_to(checkout.resolve()):
        raise RuntimeError(f"the child imported hive_rpc from {imported}, not {checkout}")
    figures: dict[str, float] = json.loads(line)
    return figures


def before_after(args: argparse.Namespace) -> str:
    """The SqliteStore rows on this checkout and on ``args.before``, alternately."""
    here = Path(__file__).resolve().parent.parent
    runs: dict[str, list[dict[str, float]]] = {"after": [], "before": []}
    for i in range(args.rounds):
        order = ["after", "before"] if i % 2 == 0 else ["before", "after"]
        for which in order:
            checkout = here if which == "after" else Path(args.before)
            runs[which].append(child(checkout, args.n, args.askers, args.clock or "cpu"))

    def med(which: str, key: str, per_floor: bool = False) -> float:
        return statistics.median(r[key] / r["floor"] if per_floor else r[key] for r in runs[which])

    rows = []
    for key, name in [
        ("floor", "sqlite floor: bare INSERT + UPDATE, 2 commits"),
        ("one", "registry + SqliteStore, one client"),
        ("many", f"registry + SqliteStore, {args.askers} concurrent askers"),
    ]:
        rows.append(
            [
                name,
                f"{med('after', key):.1f}",
                f"{med('after', key, True):.2f}x",
                f"{med('before', key):.1f}",
                f"{med('before', key, True):.2f}x",
            ]
        )
    headers = [
        f"registry_throughput, {args.n:,} cycles",
        "after us/cycle",
        "after x floor",
        f"before ({Path(args.before).name}) us/cycle",
        "before x floor",
    ]
    out = table(headers, rows)
    print(out)
    print(
        f"medians of {args.rounds} rounds, after and before alternately, each in its own "
        "process; 'x floor' = the median of each process's us/cycle over its own floor; "
        f"{'wall time' if args.clock == 'wall' else 'CPU time of the trio thread'}"
    )
    for which in ("after", "before"):
        ratios = ", ".join(f"{r['one'] / r['floor']:.2f}" for r in runs[which])
        print(f"{which}, one client, x floor per round: {ratios}")
    return out


HEADERS = [
    "registry_throughput",
    "cycles",
    "cycles/s",
    "us/cycle",
    "x trio floor",
    "x sqlite floor",
    "target >= 20k/s",
]


def run(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=50_000, help="cycles per run (default 50,000)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per row, best kept (2)")
    parser.add_argument(
        "--thread-n",
        type=int,
        default=5_000,
        help="cycles for the to_thread sqlite peer row (0 skips it; default 5,000)",
    )
    parser.add_argument(
        "--askers", type=int, default=100, help="tasks in the concurrent row (default 100)"
    )
    parser.add_argument(
        "--before",
        metavar="PATH",
        help="time the SqliteStore rows against the hive_rpc checkout at PATH instead",
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds for --before (5)")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        help="what is timed: wall (default) or the trio thread's CPU time (--before's default)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    global clock
    clock = CLOCKS[args.clock or ("cpu" if args.before else "wall")]
    if args.child:
        print(hive_rpc.__file__)  # which checkout, for the parent to check
        print(json.dumps(trio.run(sqlite_rows, args.n, args.askers)))
        return ""
    if args.before:
        return before_after(args)
    rows = trio.run(main, args)
    out = table(HEADERS, rows)
    print(out)
    print(
        f"best of {args.repeats} runs; one cycle = ask (no timeout) + respond, sequential; "
        "'x floor' = us/cycle divided by the floor's us/cycle"
    )
    live = LAST_STATISTICS.get("memory")
    if live:
        print(
            f"registry after {args.n:,} cycles (MemoryStore): pending={live['pending']:,}, "
            f"deadline_heap={live['deadline_heap']:,} (compacted once it holds more than "
            "2 x pending + 1,024 entries)"
        )
    for kind, label in [
        ("sqlite-floor", "sqlite floor"),
        ("sqlite", "registry + SqliteStore"),
        ("sqlite-thread", "to_thread peer"),
    ]:
        stats = LAST_STATISTICS.get(kind)
        if stats:
            print(
                f"{label}, end of its last run: {stats['checkpoints']:,} checkpoints by "
                f"run_checkpoints, WAL file {stats['wal_pages']:,} pages of 4 KiB"
            )
    return out


if __name__ == "__main__":
    print_machine()
    run()
