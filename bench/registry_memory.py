"""Memory held by the registry for many pending prompts with distinct deadlines.

N (default 100,000, the hub's ``pending_total`` limit) prompts are asked on
``open_registry(MemoryStore())`` with ``timeout_s = 1000 + i * 0.001`` (distinct
deadlines, none due during the run), and the registry is kept open while we measure.
They are spread round-robin over as many agents as the per-agent limit needs
(``pending_per_agent``, 10,000: ten agents for 100,000), because one agent may not
hold them all; a hub full of prompts is many agents' anyway, and the per-agent
counters this adds are ten dict entries, nothing beside 100,000 prompts.  The peer
below uses the same agent ids, so the two stay comparable.

* RSS growth: VmRSS from /proc/self/status before the registry opens and after the
  N asks, each read after ``gc.collect()``;
* tracemalloc (a second run, same process, after the first registry is gone): the
  Python heap the N prompts hold, and the source lines that allocated most of it;
* floor: the same prompts as compact JSON records, the sum of
  ``len(json.dumps(p.to_record(), separators=(",", ":")))``: what they are as data;
* peer: the same prompts made by ``new_prompt`` and kept in a plain list, no registry
  (tracemalloc), so the registry's own share (dicts, heap, store) shows.

Target: <= 150 MB for 100k pending prompts.
"""

from __future__ import annotations

import argparse
import gc
import json
import linecache
import time
import tracemalloc

import trio
from _common import print_machine, ratio, rss_bytes, table, verdict

from hive_rpc.core import limits
from hive_rpc.core.prompt import Ask, Prompt, new_prompt
from hive_rpc.runtime.registry import Registry, open_registry
from hive_rpc.store import MemoryStore

TARGET_MB_PER_100K = 150.0
MB = 1_000_000


def question(i: int) -> str:
    return f"Deploy build {i} to production?"


def agents_for(n: int) -> int:
    """How many agents hold n pending prompts within the per-agent limit."""
    return max(1, -(-n // limits.MAX_PENDING_PER_AGENT))


def an_ask(i: int, agents: int) -> Ask:
    return Ask(agent_id=f"bench-{i % agents}", question=question(i), timeout_s=1000 + i * 0.001)


async def fill(registry: Registry, n: int) -> list[Prompt]:
    agents = agents_for(n)
    return [await registry.ask(an_ask(i, agents)) for i in range(n)]


async def rss_run(n: int) -> tuple[int, float, int]:
    """RSS growth in bytes, seconds to ask, and JSON floor bytes."""
    gc.collect()
    before = rss_bytes()
    async with open_registry(MemoryStore()) as registry:
        start = time.perf_counter()
        prompts = await fill(registry, n)
        elapsed = time.perf_counter() - start
        gc.collect()
        grown = rss_bytes() - before
        assert registry.statistics()["pending"] == n
        json_bytes = sum(len(json.dumps(p.to_record(), separators=(",", ":"))) for p in prompts)
        del prompts
    return grown, elapsed, json_bytes


async def traced_run(n: int, top: int) -> tuple[int, list[tuple[str, int]]]:
    """Python heap held by the open registry with n pending, and the top allocating lines."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    snapshot0 = tracemalloc.take_snapshot()
    async with open_registry(MemoryStore()) as registry:
        await fill(registry, n)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
        snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    stats = snapshot.compare_to(snapshot0, "lineno")
    lines = []
    for stat in stats[:top]:
        frame = stat.traceback[0]
        where = "/".join(frame.filename.split("/")[-2:]) + f":{frame.lineno}"
        source = linecache.getline(frame.filename, frame.lineno).strip()[:60]
        lines.append((f"{where} `{source}`", stat.size_diff))
    return held, lines


def traced_records(n: int) -> int:
    """Python heap held by n prompts in a plain list: no registry, no store."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    now = time.time()
    agents = agents_for(n)
    prompts = [new_prompt(an_ask(i, agents), now=now) for i in range(n)]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del prompts
    return held


def run(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000, help="pending prompts (100,000)")
    parser.add_argument("--no-trace", action="store_true", help="skip the tracemalloc runs")
    parser.add_argument("--top", type=int, default=6, help="allocating lines to list (6)")
    args = parser.parse_args(argv)
    n = args.n
    target_bytes = TARGET_MB_PER_100K * MB * n / 100_000

    grown, elapsed, json_bytes = trio.run(rss_run, n)
    rows: list[list[object]] = [
        [
            "floor: compact JSON records",
            f"{json_bytes / MB:.1f}",
            f"{json_bytes / n:.0f}",
            "1.00x",
            "",
        ],
        [
            "registry + MemoryStore, RSS growth",
            f"{grown / MB:.1f}",
            f"{grown / n:.0f}",
            ratio(grown, json_bytes),
            verdict(grown <= target_bytes),
        ],
    ]
    top: list[tuple[str, int]] = []
    if not args.no_trace:
        traced, top = trio.run(traced_run, n, args.top)
        plain = traced_records(n)
        rows.append(
            [
                "registry + MemoryStore, tracemalloc",
                f"{traced / MB:.1f}",
                f"{traced / n:.0f}",
                ratio(traced, json_bytes),
                verdict(traced <= target_bytes),
            ]
        )
        rows.append(
            [
                "peer: the prompts alone in a list, tracemalloc",
                f"{plain / MB:.1f}",
                f"{plain / n:.0f}",
                ratio(plain, json_bytes),
                "",
            ]
        )
    headers = [f"registry_memory ({n:,} pending)", "MB", "bytes/prompt", "x JSON", "target"]
    out = table(headers, rows)
    print(out)
    print(
        f"target: <= {TARGET_MB_PER_100K:.0f} MB per 100k pending; "
        f"{n:,} asks from {agents_for(n)} agents took {elapsed:.2f} s ({n / elapsed:,.0f}/s); "
        "MB = 10^6 bytes"
    )
    if top:
        print()
        print(
            table(
                ["tracemalloc: top allocating lines", "MB"], [[w, f"{b / MB:.1f}"] for w, b in top]
            )
        )
    return out


if __name__ == "__main__":
    print_machine()
    run()
