"""One Agora turn into tmux: ``Agora.dispatch`` of a turn to a ling in a real tmux
pane, from the call to the delivery confirmed (the result says ``delivered``).

A turn checks the receiver's pane (is it there, does it show a dialog or a draft,
does the approved agent hold its foreground) and types the turn into it; each step
is a ``tmux`` process, and a process start is most of what a turn costs.  So the
tmux processes a turn starts are counted (every ``trio.run_process`` and
``trio.lowlevel.open_process`` whose program is ``tmux``, wrapped here), beside the time.

Two lings, each a pane of a private tmux server (``tmux -S``) running ``cat`` with
the terminal's echo off (so the screen stays empty: no dialog, no draft), take turns
in a dialogue (propose, counter, ...: never consensus; a new dialogue every 40
turns).  The relay's rate limit between two messages to one ling is 0 (the default
0.5 s is a wait, not work).  The floor, timed in the same rounds: one bare ``tmux
send-keys -t PANE Enter`` process, the least one keystroke into a pane costs.

Medians and p90, as ratios to the floor.  Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio
from _common import percentile, print_machine, ratio, short_tmp, table

from hive_rpc.agora import open_agora
from hive_rpc.relay.delivery import Relay
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.store.memory import MemoryStore

QUIET_LING = "stty -echo; exec cat >/dev/null"
"""The receiver: a program that reads its input and shows nothing."""
TURNS_PER_DIALOGUE = 40


class TmuxCounter:
    """Counts the ``tmux`` processes started through trio while it is installed."""

    def __init__(self) -> None:
        self.count = 0
        self._run = trio.run_process
        self._open = trio.lowlevel.open_process

    def _counted(self, command: Any) -> None:
        if isinstance(command, (list, tuple)) and command and command[0] == "tmux":
            self.count += 1

    def install(self) -> None:
        run, open_ = self._run, self._open

        async def run_process(command: Any, **kwargs: Any) -> Any:
            self._counted(command)
            return await run(command, **kwargs)

        async def open_process(command: Any, **kwargs: Any) -> Any:
            self._counted(command)
            return await open_(command, **kwargs)

        trio.run_process = run_process  # type: ignore[assignment]
        trio.lowlevel.open_process = open_process  # type: ignore[assignment]


async def tmux(socket: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    done = await trio.run_process(
        ["tmux", "-S", socket, "-f", "/dev/null", *args], capture_stdout=True, env=env
    )
    return done.stdout.decode().strip()


async def running(socket: str, pane: str, program: str) -> None:
    """Until the pane's foreground program is ``program``.  ``new-session`` returns
    before the pane's shell has run it: a ling registered then approves that moment's
    process (tmux's own fork, before its exec), which the relay rightly refuses once
    ``sh`` runs there ("runs another program now", seen in a CI run).  Polled: tmux
    says when a pane's program changes to no one outside it."""
    with trio.fail_after(30):
        shown = "#{pane_current_command}"
        while await tmux(socket, "display", "-p", "-t", pane, shown) != program:  # noqa: ASYNC110
            await trio.sleep(0.05)


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


async def run(turns: int, tmp: Path) -> tuple[dict[str, list[float]], list[int]]:
    socket = str(tmp / "tmux.sock")
    panes = {}
    for name in ("a", "b"):
        panes[name] = await tmux(
            socket, "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", name,
            "-x", "120", "-y", "30", "sh", "-c", QUIET_LING,
        )  # fmt: skip
        await running(socket, panes[name], "cat")
    counter = TmuxCounter()
    counter.install()
    samples: dict[str, list[float]] = {"floor": [], "turn": []}
    spawned: list[int] = []
    try:
        async with trio.open_nursery() as nursery:
            agora = await open_agora(
                MemoryStore(), time.time, DeliveryPeers(), nursery,
                relay=Relay(nursery, min_interval_s=0.0),
            )  # fmt: skip
            for name, pane in panes.items():
                await agora.register(name, "tmux", f"{pane}@{socket}", owner=True)
            order = itertools.cycle([("a", "b", "propose"), ("b", "a", "counter")])
            dialogue = ""
            for i in range(turns + 5):  # the first 5 warm up
                if i % TURNS_PER_DIALOGUE == 0:
                    dialogue = (await agora.create("bench", ["a", "b"]))["id"]
                sender, to, signal = next(order)
                floor = await timed(
                    lambda to=to: tmux(socket, "send-keys", "-t", panes[to], "Enter")
                )
                before = counter.count
                start = time.perf_counter()
                result = await agora.dispatch(
                    dialogue, sender=sender, to=to, signal=signal, message=f"turn {i}"
                )
                took = time.perf_counter() - start
                if result["delivery"]["state"] != "delivered":
                    raise RuntimeError(f"turn {i} was not delivered: {result['delivery']}")
                if i >= 5:
                    samples["floor"].append(floor)
                    samples["turn"].append(took)
                    spawned.append(counter.count - before)
            nursery.cancel_scope.cancel()
    finally:
        await tmux(socket, "kill-server")
    return samples, spawned


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=200)
    args = ap.parse_args()
    print_machine()
    if shutil.which("tmux") is None:
        print("\n" + table(["step", "median ms"], [("tmux is not installed: not measured", "")]))
        return
    with short_tmp() as tmp:
        samples, spawned = trio.run(run, args.turns, tmp)
    floor = statistics.median(samples["floor"])
    rows = []
    for name, label, procs in (
        ("floor", "one tmux send-keys process (floor)", "1"),
        ("turn", "one Agora turn, delivered", f"{statistics.median(spawned):g}"),
    ):
        values = sorted(samples[name])
        p50, p90 = statistics.median(values), percentile(values, 90)
        rows.append((label, f"{p50 * 1000:.1f}", f"{p90 * 1000:.1f}", ratio(p50, floor), procs))
    print(f"\n{args.turns} turns, floor interleaved; median and p90 wall time\n")
    print(table(["step", "median ms", "p90 ms", "vs floor", "tmux processes"], rows))
    print(f"\ntmux processes per turn: min {min(spawned)}, max {max(spawned)}")


if __name__ == "__main__":
    main()
