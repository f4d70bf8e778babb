"""Hostile input: what the limits of core/limits.py cost and what they hold back.

1. Settle time of the worst hostile answer per ``format`` (100 KB of the pattern that
   hurts each check most) through a real hub on its socket, next to a normal answer
   (a well-formed value, answered and stored) in the same run: the ratio, target
   <= 2x.  For scale, the old backtracking email pattern on a tenth of that input.
2. RSS of a hub process holding prompts at the limits' maxima (65,536-character
   questions, 50-field schemas of 65,536 characters), per prompt and projected to the
   ``pending_total`` limit.
3. ``hive/list`` of 100,000 pending prompts: paged (1,000 a page, what ``hive-rpc
   list`` does) against building the whole reply, as hubs did before the
   ``reply_bytes`` limit; in-process, memory store.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

import trio
from _common import hub_process, percentile, print_machine, ratio, short_tmp, table

from hive_rpc.client.async_client import HubClient
from hive_rpc.core import limits
from hive_rpc.core.errors import HiveError
from hive_rpc.core.prompt import Ask
from hive_rpc.runtime.registry import open_registry
from hive_rpc.service import HubService
from hive_rpc.store.memory import MemoryStore

HOSTILE = 100_000
FORMATS = {"email": "email", "uri": "uri", "date": "date", "date_time": "date-time"}
SCHEMA = {
    "type": "object",
    "properties": {
        "plain": {"type": "string", "maxLength": 10},
        **{k: {"type": "string", "format": f} for k, f in FORMATS.items()},
    },
}
NORMAL = {
    "email": "ada@example.org",
    "uri": "https://example.org/build/412",
    "date": "2026-11-24",
    "date_time": "2026-11-24T07:00:00+00:00",
}
WORST = {
    "email": ["a@" + "." * HOSTILE + "@", "a@" + "a." * (HOSTILE // 2), "a" * HOSTILE + "@"],
    "uri": ["a" * HOSTILE, "a:" + " " * HOSTILE, "a" * HOSTILE + ":"],
    "date": ["9" * HOSTILE, "2024-01-01" + "0" * HOSTILE],
    "date_time": ["2024-01-01T" + "1" * HOSTILE, "2024-01-01T00:00:00" + "+" * HOSTILE],
}
OLD_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


async def _refused(c: HubClient, prompt_id: str, answer: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    try:
        await c.call("hive/respond", {"id": prompt_id, "answer": answer})
    except HiveError as e:
        if e.code != -32004:
            raise
    else:
        raise RuntimeError(f"{answer!r:.60} was accepted")
    return time.perf_counter() - t0


async def settle_times(sock: Path, n: int) -> dict[str, dict[str, list[float]]]:
    """Per field, sorted times of: "normal" (a well-formed value, answered and
    stored), "same size" (a 100 KB string refused by maxLength, no format: the
    floor of moving and parsing 100 KB), and each hostile value by its index."""
    out: dict[str, dict[str, list[float]]] = {}
    async with await HubClient.connect(sock) as c:
        for field in FORMATS:
            times: dict[str, list[float]] = {"normal": [], "same size": []}
            for _ in range(n):
                asked = await c.call("hive/ask", {"question": "formats?", "schema": SCHEMA})
                for k, value in enumerate(WORST[field]):
                    took = await _refused(c, asked["id"], {field: value})
                    times.setdefault(f"hostile {k}", []).append(took)
                big = {"plain": "p" * HOSTILE}
                times["same size"].append(await _refused(c, asked["id"], big))
                t0 = time.perf_counter()
                await c.call("hive/respond", {"id": asked["id"], "answer": {field: NORMAL[field]}})
                times["normal"].append(time.perf_counter() - t0)
            out[field] = {k: sorted(v) for k, v in times.items()}
    return out


def vm_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def max_schema() -> dict[str, Any]:
    """A schema at the schema_properties and schema_chars limits."""
    fields = limits.MAX_SCHEMA_PROPERTIES
    # Leave room for the keys and type names inside the schema_chars budget.
    per_field = (limits.MAX_SCHEMA_CHARS - fields * 40) // fields
    props = {f"f{i:02d}": {"type": "string", "description": "d" * per_field} for i in range(fields)}
    return {"type": "object", "properties": props}


async def fill_rss(sock: Path, most: int) -> tuple[int, int, int, int, str]:
    """Ask prompts at the size limits (50 agents in turn) until the hub refuses one
    or ``most`` are held: RSS before and after, prompts held, bytes of one record,
    and the limit that stopped it."""
    question = "q" * limits.MAX_QUESTION_CHARS
    schema = max_schema()
    stopped_by = f"--fill {most}"
    async with await HubClient.connect(sock) as c:
        pid = (await c.call("hive/status"))["pid"]
        before = vm_rss(pid)
        record: dict[str, Any] = {}
        held = 0
        for i in range(most):
            try:
                record = await c.call(
                    "hive/ask",
                    {"question": question, "schema": schema, "agent_id": f"a{i % 50}"},
                )
            except HiveError as e:
                if e.code != -32012:
                    raise
                stopped_by = str(e.data["limit"])
                break
            held += 1
        after = vm_rss(pid)
    return before, after, held, len(json.dumps(record)), stopped_by


async def list_times(pending: int, page: int) -> tuple[float, int, float, int, int]:
    """(seconds to build the whole list and encode it, its bytes, seconds to page
    through all of it, the largest page's bytes, pages)."""
    async with open_registry(MemoryStore()) as registry:
        service = HubService(registry)
        for i in range(pending):
            await registry.ask(Ask(agent_id=f"agent-{i % 100}", question=f"Deploy build {i}?"))
        t0 = time.perf_counter()
        whole = json.dumps([p.to_record() for p in registry.list_pending()])
        whole_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        cursor, largest, pages, seen = None, 0, 0, 0
        while True:
            result = await service.call("hive/list", {"limit": page, "cursor": cursor})
            largest = max(largest, len(json.dumps(result)))
            pages += 1
            seen += len(result["prompts"])
            cursor = result["next_cursor"]
            if cursor is None:
                break
        paged_s = time.perf_counter() - t0
        if seen != pending:
            raise RuntimeError(f"paging saw {seen} of {pending}")
    return whole_s, len(whole), paged_s, largest, pages


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="prompts per format (settle)")
    parser.add_argument(
        "--fill", type=int, default=100_000, help="at most this many max-size prompts (RSS)"
    )
    parser.add_argument("--pending", type=int, default=100_000, help="prompts (hive/list)")
    parser.add_argument("--page", type=int, default=limits.LIST_PAGE_MAX)
    args = parser.parse_args(argv)
    print_machine()
    with short_tmp() as tmp:
        sock = tmp / "hub.sock"
        with hub_process("memory", sock, tmp / "data"):
            settle = trio.run(settle_times, sock, args.n)
        with hub_process("memory", tmp / "fill.sock", tmp / "data-fill"):
            before, after, held, record_bytes, stopped_by = trio.run(
                fill_rss, tmp / "fill.sock", args.fill
            )

    print("\n1. Settle time per format: worst 100 KB hostile answer vs a normal answer\n")
    rows = []
    worst_ratio = 0.0
    for field, times in settle.items():
        n50, floor50 = percentile(times["normal"], 50), percentile(times["same size"], 50)
        worst = max((k for k in times if k.startswith("hostile")), key=lambda k: times[k][-1])
        h50, hmax = percentile(times[worst], 50), times[worst][-1]
        worst_ratio = max(worst_ratio, h50 / floor50)
        rows.append(
            [
                FORMATS[field],
                f"{n50 * 1e3:.2f}",
                f"{floor50 * 1e3:.2f}",
                f"{h50 * 1e3:.2f}",
                f"{hmax * 1e3:.2f}",
                ratio(h50, n50),
                ratio(h50, floor50),
            ]
        )
    print(
        table(
            [
                "format",
                "normal p50 (ms)",
                "100 KB plain p50 (ms)",
                "worst hostile p50 (ms)",
                "worst hostile max (ms)",
                "vs normal",
                "vs 100 KB plain",
            ],
            rows,
        )
    )
    probe = "a@" + "." * (HOSTILE // 10) + "@"
    t0 = time.perf_counter()
    OLD_EMAIL.match(probe)
    old = time.perf_counter() - t0
    print(
        f"\nWorst hostile vs the same-size plain answer {worst_ratio:.2f}x (target <= 2x: "
        f"{'met' if worst_ratio <= 2 else 'MISSED'}). The old email pattern alone took "
        f"{old * 1e3:,.0f} ms on a tenth of the hostile email ({len(probe):,} chars), "
        "quadratic, on the hub's only thread."
    )

    grown = after - before
    per = grown / max(held, 1)
    print("\n2. Hub RSS filled with prompts at the size limits until it refuses\n")
    print(
        table(
            ["prompts held", "stopped by", "record (bytes)", "RSS growth (MB)",
             "per prompt (KB)", "x record"],
            [[f"{held:,}", stopped_by, f"{record_bytes:,}", f"{grown / 1e6:.1f}",
              f"{per / 1e3:.1f}", ratio(per, record_bytes)]],
        )
    )  # fmt: skip
    print(
        f"\nWithout the pending_chars limits, pending_total ({limits.MAX_PENDING:,}) such "
        f"prompts would take about {per * limits.MAX_PENDING / 1e9:.1f} GB."
    )

    whole_s, whole_bytes, paged_s, largest, pages = trio.run(list_times, args.pending, args.page)
    print(f"\n3. hive/list of {args.pending:,} pending prompts\n")
    print(
        table(
            ["how", "time (ms)", "largest reply (bytes)", "replies", "time vs whole"],
            [
                [
                    "whole (before the limit)",
                    f"{whole_s * 1e3:.0f}",
                    f"{whole_bytes:,}",
                    1,
                    "1.00x",
                ],
                [
                    f"paged by {args.page:,}",
                    f"{paged_s * 1e3:.0f}",
                    f"{largest:,}",
                    pages,
                    ratio(paged_s, whole_s),
                ],
            ],
        )
    )
    print(
        f"\nThe whole list is {whole_bytes / 1e6:.1f} MB; over reply_bytes "
        f"({limits.MAX_REPLY_BYTES / 2**20:.0f} MiB) the hub now refuses it and clients page."
    )


if __name__ == "__main__":
    main()
