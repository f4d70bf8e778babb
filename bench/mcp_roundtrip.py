"""One ``hivemind_ask_async`` + ``hivemind_poll`` round trip through ``hive-rpc mcp``.

The agent's path as its MCP client sees it: the MCP SDK's own client
(``mcp.Client(StdioServerParameters(...), mode=...)``) starts
``python -m hive_rpc mcp --socket S --data-dir D --no-start --agent bench`` over stdio.
That process is a client of a hub started in this process with
``hive_rpc.hub.run_hub``, on a Unix socket in a short temp dir under /tmp: one row with
``HubConfig(store="memory")`` and one with the default sqlite store, each hub with one
MCP session on it.  One sample is ``call_tool("hivemind_ask_async", {"question": ...})``
then ``call_tool("hivemind_poll", {"ask_id": ...})`` on the id it returned (the ask is
still pending), timed from just before the first call until the second call's result
is back.  Each call crosses the stdio pipes and the editor socket once each way.

Peer, same run, same client and mode: a trivial tool served by the same SDK over stdio
(bench/_mcp_echo_server.py: ``MCPServer`` with ``echo(text) -> dict[str, str]``, run
with ``trio.run(server.run_stdio_async)``), called with a text as long as the question.
Its samples are pairs of calls too, so there are two peer rows: one echo call, and two
echo calls in a row (the shape of ask_async + poll).  A second peer is the same echo
server on the trio stdin/stdout streams that ``hive-rpc mcp`` itself uses instead of
the SDK's thread-based ones (``--trio-stdio``), so the transport matches the hive-rpc
path (``--no-trio-echo`` leaves it out).

Before timing, each client calls ``list_tools()`` once (the 2026-07-28 client would
otherwise fetch the tool list on its first call), then makes ``--warmup`` discarded
round trips.  Both of the SDK's protocol modes are measured: ``legacy`` (the
``initialize`` handshake, 2025-11-25) and ``2026-07-28``.

No target: the figures are reported as ratios to the SDK's echo tool.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from _common import percentile, print_machine, ratio, short_tmp, table
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from hive_rpc.hub import HubConfig, run_hub

ECHO_SERVER = Path(__file__).resolve().parent / "_mcp_echo_server.py"
MODES = ("legacy", "2026-07-28")
STORES = ("memory", "sqlite")
QUESTION = "Deploy build 4521 to production? The canary has been green for an hour."
CALL_TIMEOUT_S = 30.0
"""A guard against a hung server, not a measurement."""


# --- targets: one MCP session each, and the pair of calls a sample makes ------------


@dataclass
class Samples:
    """Per sample: seconds for the first call, the second call, and both."""

    first: list[float] = field(default_factory=list)
    second: list[float] = field(default_factory=list)
    both: list[float] = field(default_factory=list)


def structured(result: CallToolResult) -> dict[str, Any]:
    content = result.structured_content
    if result.is_error or content is None:
        raise RuntimeError(f"tool call failed: {result.content}")
    return dict(content)


class Target:
    def __init__(self, mode: str, kind: str, client: Client) -> None:
        self.mode, self.kind, self.client = mode, kind, client
        self.samples = Samples()

    async def pair(self) -> float:
        """Make the two calls and check their results; return the time between them."""
        raise NotImplementedError

    async def sample(self, keep: bool) -> None:
        t0 = trio.current_time()
        t1 = await self.pair()
        t2 = trio.current_time()
        if keep:
            self.samples.first.append(t1 - t0)
            self.samples.second.append(t2 - t1)
            self.samples.both.append(t2 - t0)


class Echo(Target):
    text = "x" * len(QUESTION)

    async def pair(self) -> float:
        a = await self.client.call_tool("echo", {"text": self.text})
        t1 = trio.current_time()
        b = await self.client.call_tool("echo", {"text": self.text})
        if structured(a) != {"text": self.text} or structured(b) != {"text": self.text}:
            raise RuntimeError(f"echo returned {a.structured_content}, {b.structured_content}")
        return t1


class Hive(Target):
    async def pair(self) -> float:
        asked = await self.client.call_tool("hivemind_ask_async", {"question": QUESTION})
        t1 = trio.current_time()
        ask_id = structured(asked)["ask_id"]
        polled = await self.client.call_tool("hivemind_poll", {"ask_id": ask_id})
        state = structured(polled)
        if (state["ask_id"], state["status"]) != (ask_id, "pending"):
            raise RuntimeError(f"polled {state}, expected {ask_id} pending")
        return t1


def echo_params(trio_stdio: bool) -> StdioServerParameters:
    args = [os.fspath(ECHO_SERVER)] + (["--trio-stdio"] if trio_stdio else [])
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


def hive_params(socket: Path, data_dir: Path) -> StdioServerParameters:
    args = ["-m", "hive_rpc", "mcp", "--socket", os.fspath(socket)]
    args += ["--data-dir", os.fspath(data_dir), "--no-start", "--agent", "bench"]
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


async def sample_all(args: argparse.Namespace) -> tuple[list[Target], list[float]]:
    """Open every target at once: per mode, the echo clients and, per store, a hub of
    its own with one ``hive-rpc mcp`` session on it.  Each target then makes
    ``warmup`` discarded round trips.  The ``n`` kept samples are taken in turns of
    ``block`` from one target after another, the order rotating each turn, so that
    drift in the machine's load touches every row alike, while one target's
    after-work (the hub's notifications to its subscribers, say) rarely lands on
    another's samples.  Also returns the seconds spent starting, sampling, closing."""
    targets: list[Target] = []
    t_start = trio.current_time()
    with ExitStack() as dirs:
        async with AsyncExitStack() as clients, trio.open_nursery() as hubs:
            # (No fail_after around these: the clients' nurseries outlive the block.)
            for mode in args.modes:
                for trio_stdio in (False, True) if args.trio_echo else (False,):
                    client = await clients.enter_async_context(
                        Client(echo_params(trio_stdio), mode=mode)
                    )
                    targets.append(Echo(mode, "trio" if trio_stdio else "sdk", client))
                for store in args.stores:
                    tmp = dirs.enter_context(short_tmp())
                    socket, data_dir = tmp / "run" / "hub.sock", tmp / "data"
                    await hubs.start(run_hub, HubConfig(socket, data_dir, store=store))
                    params = hive_params(socket, data_dir)
                    client = await clients.enter_async_context(Client(params, mode=mode))
                    targets.append(Hive(mode, store, client))
            t_sample = trio.current_time()
            for target in targets:
                with trio.fail_after(CALL_TIMEOUT_S):
                    await target.client.list_tools()
                for _ in range(args.warmup):
                    with trio.fail_after(CALL_TIMEOUT_S):
                        await target.sample(keep=False)
            for turn, start in enumerate(range(0, args.n, args.block)):
                k = turn % len(targets)
                for target in targets[k:] + targets[:k]:
                    for _ in range(min(args.block, args.n - start)):
                        with trio.fail_after(CALL_TIMEOUT_S):
                            await target.sample(keep=True)
            t_end = trio.current_time()
            await clients.aclose()
            hubs.cancel_scope.cancel()
    t_closed = trio.current_time()
    return targets, [t_sample - t_start, t_end - t_sample, t_closed - t_end]


# --- results ------------------------------------------------------------------------


class Stats:
    def __init__(self, name: str, samples: list[float]) -> None:
        self.name = name
        self.us = sorted(s * 1e6 for s in samples)

    def p(self, q: float) -> float:
        return percentile(self.us, q)


ECHO_NAMES = {"sdk": "peer: echo, SDK stdio", "trio": "peer: echo, trio stdio"}


@dataclass
class ModeResult:
    mode: str
    echo: dict[str, tuple[Stats, Stats]]
    """Per echo server: one call, two calls in a row."""
    hive: list[tuple[Stats, Stats, Stats]]
    """Per store: the round trip, ask_async alone, poll alone."""


def results(targets: list[Target], modes: list[str]) -> list[ModeResult]:
    out = []
    for mode in modes:
        echo: dict[str, tuple[Stats, Stats]] = {}
        hive: list[tuple[Stats, Stats, Stats]] = []
        for t in targets:
            s = t.samples
            if t.mode != mode:
                continue
            if isinstance(t, Echo):
                name = ECHO_NAMES[t.kind]
                echo[t.kind] = (
                    Stats(f"{name}, 1 call", s.first + s.second),
                    Stats(f"{name}, 2 calls", s.both),
                )
            else:
                whole = Stats(f"hive-rpc mcp, {t.kind} hub: ask_async + poll", s.both)
                hive.append((whole, Stats("ask_async", s.first), Stats("poll", s.second)))
        out.append(ModeResult(mode, echo, hive))
    return out


def render(result: ModeResult) -> str:
    one, two = result.echo["sdk"]
    trio_two = result.echo["trio"][1] if "trio" in result.echo else None
    rows = []
    listed = [one, two, *(h[0] for h in result.hive), *result.echo.get("trio", ())]
    for r in listed:
        row = [r.name, f"{len(r.us):,}", f"{r.p(50):.0f}", f"{r.p(99):.0f}", f"{r.us[-1]:.0f}"]
        row += [ratio(r.p(50), one.p(50)), ratio(r.p(99), one.p(99))]
        row += [ratio(r.p(50), two.p(50)), ratio(r.p(99), two.p(99))]
        if trio_two is not None:
            row += [ratio(r.p(50), trio_two.p(50)), ratio(r.p(99), trio_two.p(99))]
        rows.append(row)
    headers = [f"mcp_roundtrip (mode {result.mode})", "samples", "p50 us", "p99 us", "max us"]
    headers += ["p50 x 1 echo", "p99 x 1 echo", "p50 x 2 echo", "p99 x 2 echo"]
    if trio_two is not None:
        headers += ["p50 x 2 trio echo", "p99 x 2 trio echo"]
    return table(headers, rows)


def run(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300, help="round trips per row (300)")
    parser.add_argument("--warmup", type=int, default=20, help="round trips discarded first (20)")
    parser.add_argument(
        "--block",
        type=int,
        default=25,
        help="samples taken from one target before moving to the next (25)",
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        default=list(MODES),
        choices=MODES,
        help="the SDK client's protocol modes (default: legacy 2026-07-28)",
    )
    parser.add_argument(
        "--stores",
        nargs="*",
        default=list(STORES),
        choices=STORES,
        help="hub stores to measure (default: memory sqlite; none: the echo rows only)",
    )
    parser.add_argument(
        "--no-trio-echo",
        dest="trio_echo",
        action="store_false",
        help="leave out the echo server on hive-rpc mcp's trio stdio streams",
    )
    args = parser.parse_args(argv)
    targets, (started_s, sampled_s, closed_s) = trio.run(sample_all, args)
    by_mode = results(targets, args.modes)
    tables = [render(r) for r in by_mode]
    for result, out in zip(by_mode, tables, strict=True):
        print(out)
        for whole, ask, poll in result.hive:
            print(
                f"{result.mode}, {whole.name.split(': ')[0]}: ask_async p50 {ask.p(50):.0f} us "
                f"(p99 {ask.p(99):.0f}), poll p50 {poll.p(50):.0f} us (p99 {poll.p(99):.0f})"
            )
        print()
    print(
        "one sample = two sequential tool calls; 'x 1 echo', 'x 2 echo' = the row's "
        "percentile divided by the same percentile of one call, and of two calls in a row, "
        "to the echo tool on the SDK's stdio transport (run_stdio_async); 'x 2 trio echo' = "
        "the same for two calls to the echo tool on the trio stdio streams hive-rpc mcp "
        "uses; same mode throughout"
    )
    print(
        f"{len(targets)} MCP sessions started in {started_s:.1f} s, warm-up and samples "
        f"took {sampled_s:.1f} s, closing {closed_s:.1f} s"
    )
    return "\n\n".join(tables)


if __name__ == "__main__":
    print_machine()
    run()
