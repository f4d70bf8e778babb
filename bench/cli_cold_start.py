"""Cold start of a client command: ``hive-rpc status`` as a whole process, wall time.

A shell script that calls ``hive-rpc list`` or ``poll`` in a loop pays for a Python
start, the imports and one socket round trip, every time.  Three processes are timed
from ``fork`` to exit, one after another within a round, rounds interleaved so that
a slow moment of the machine falls on all three alike:

* ``python -c pass``: the interpreter's own start (the same interpreter);
* the floor: a bare Python script (``socket`` and ``json`` only) that connects to the
  same hub, sends one Content-Length framed ``hive/status`` and reads the reply, what
  the command does at the least;
* ``python -m hive_rpc status --no-start`` against that hub (and, with ``--before
  DIR``, the same command from another checkout, in the same rounds).

Medians, printed as ratios to both.  ``--tree DIR`` times the command from another
checkout (``git worktree add /tmp/cli-before REV``, then ``--tree /tmp/cli-before``),
``--before DIR`` adds it as a fourth process: it runs there, so its ``hive_rpc`` is
imported from that tree; the hub is this tree's either way.  Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import hub_process, print_machine, ratio, short_tmp, table

FLOOR = """
import json, socket, sys
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hive/status", "params": {}}).encode()
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
data = b""
while b"\\r\\n\\r\\n" not in data:
    data += s.recv(65536)
head, _, rest = data.partition(b"\\r\\n\\r\\n")
n = int(head.split(b":")[1])
while len(rest) < n:
    rest += s.recv(65536)
assert json.loads(rest[:n])["result"]["pid"]
"""


def writing_bytecode(env: dict[str, str]) -> dict[str, str]:
    """``env`` with Python's bytecode cache on: the warm-up run writes each tree's
    ``.pyc`` files, as an installed package has them.  With PYTHONDONTWRITEBYTECODE
    set (as in this project's shells), a tree never run before (``--before``, a
    ``git archive`` under /tmp) was compiled from source in every round, a few
    milliseconds that were its code's, not its imports' (9% of ``status`` in one run)."""
    return {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}


def _time(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument(
        "--tree", type=Path, default=Path(__file__).resolve().parent.parent,
        help="the checkout whose hive_rpc the command runs (default: this one)",
    )  # fmt: skip
    ap.add_argument(
        "--before", type=Path, default=None,
        help="another checkout whose status command is timed in the same rounds",
    )  # fmt: skip
    args = ap.parse_args()
    tree = args.tree.resolve()
    print_machine()
    env = {**os.environ, "PYTHONPATH": os.fspath(tree)}
    which = subprocess.run(
        [sys.executable, "-c", "import hive_rpc; print(hive_rpc.__file__)"],
        cwd=tree, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    print(f"# hive_rpc imported from {which}")  # the --before tree: its own
    with short_tmp() as tmp:
        socket = tmp / "hub.sock"
        with hub_process("memory", socket, tmp / "data"):
            runs = {
                "python -c pass": [sys.executable, "-c", "pass"],
                "bare socket request (floor)": [sys.executable, "-c", FLOOR, os.fspath(socket)],
                "hive-rpc status": [sys.executable, "-m", "hive_rpc", "status", "--no-start",
                                    "--socket", os.fspath(socket)],
            }  # fmt: skip
            trees = dict.fromkeys(runs, tree)
            if args.before is not None:
                before = args.before.resolve()
                name = f"hive-rpc status ({before.name})"
                runs[name], trees[name] = runs["hive-rpc status"], before
            for name, argv in runs.items():  # warm the page cache and write the bytecode
                _time(
                    argv,
                    trees[name],
                    writing_bytecode({**env, "PYTHONPATH": os.fspath(trees[name])}),
                )
            samples: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(args.rounds):
                for name, argv in runs.items():
                    where = {**env, "PYTHONPATH": os.fspath(trees[name])}
                    samples[name].append(_time(argv, trees[name], where))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    rows = [
        (
            name,
            f"{medians[name] * 1000:.1f}",
            ratio(medians[name], medians["python -c pass"]),
            ratio(medians[name], medians["bare socket request (floor)"]),
        )
        for name in runs
    ]
    print(f"\n{args.rounds} interleaved rounds, median wall time per process\n")
    print(table(["process", "median ms", "vs python -c pass", "vs floor"], rows))


if __name__ == "__main__":
    main()
