"""Cold start of ``hive-rpc mcp``: spawn to ``initialize`` answered, and its RSS.

Every agent session starts one ``hive-rpc mcp`` process and waits for its answer to
``initialize`` before it can call a tool; the process then lives as long as the
session.  Three processes are timed from ``fork`` to the moment their answer is read,
one after another within a round, rounds interleaved so that a slow moment of the
machine falls on all alike (medians):

* ``python -c`` reading one line of stdin and printing one back: the interpreter's
  own start with a pipe each way;
* the floor: a bare Python script (``socket`` and ``json`` only) sending one framed
  ``hive/status`` to the same hub (bench/cli_cold_start.py's FLOOR);
* ``python -m hive_rpc mcp --no-start`` on that hub, sent an MCP ``initialize``
  (protocol 2025-11-25) as one line on stdin, timed until its answer's line arrives.

``hive-rpc mcp`` runs twice per round: as ``hive-rpc setup`` registers it, and with
``--agent NAME`` (whose check loads core/prompt.py in the parser).

RSS: ``VmRSS`` of the ``hive-rpc mcp`` process once it has answered ``initialize`` and
``tools/list`` (what an idle agent session keeps), against the first process's RSS
once it has read its line (a bare Python process), and the same process having
imported ``hive_rpc.cli`` (what every command loads before its own module).

Targets (issue 30): <= 2x the socket floor to ``initialize``, <= 1.3x a bare Python
process's RSS.  Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import hub_process, print_machine, ratio, short_tmp, table, verdict
from cli_cold_start import FLOOR

ECHO_LINE = (
    "import sys; sys.stdout.write(sys.stdin.readline()); sys.stdout.flush(); sys.stdin.read()"
)
CLI_ECHO_LINE = "import hive_rpc.cli; " + ECHO_LINE
"""The same, having imported what every ``hive-rpc`` command loads before its own module
(cli/__init__.py, parser.py): the part of the relay's RSS that is not the relay's."""
TARGET_TIME = 2.0
TARGET_RSS = 1.3
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def line(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def rss_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmRSS:"):
                return int(row.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def answer(proc: subprocess.Popen[bytes], want_id: int) -> dict[str, object]:
    """The next line on the process's stdout that answers ``want_id``."""
    assert proc.stdout is not None
    while True:
        raw = proc.stdout.readline()
        if not raw:
            raise RuntimeError(f"the process closed stdout (exit {proc.wait()})")
        message = json.loads(raw)
        if message.get("id") == want_id:
            if "result" not in message:
                raise RuntimeError(f"error: {message}")
            return dict(message)


def time_mcp(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Seconds from fork to the ``initialize`` answer; RSS after ``tools/list``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    proc.stdin.write(line(INITIALIZE))
    proc.stdin.flush()
    answer(proc, 1)
    elapsed = time.perf_counter() - start
    proc.stdin.write(line(INITIALIZED) + line(TOOLS_LIST))
    proc.stdin.flush()
    answer(proc, 2)
    rss = rss_of(proc.pid)
    proc.stdin.close()
    proc.wait(10)
    assert proc.stdout is not None
    proc.stdout.close()
    return elapsed, rss


def time_echo(env: dict[str, str], script: str = ECHO_LINE) -> tuple[float, int]:
    start = time.perf_counter()
    argv = [sys.executable, "-c", script]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"x\n")
    proc.stdin.flush()
    proc.stdout.readline()
    elapsed = time.perf_counter() - start
    rss = rss_of(proc.pid)
    proc.stdin.close()
    proc.wait(10)
    proc.stdout.close()
    return elapsed, rss


def time_floor(socket: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, os.fspath(socket)], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    print_machine()
    env = dict(os.environ)
    # As installed (pip compiles the package): the warm-up round writes the bytecode
    # of modules changed since it was last written, which a shell with
    # PYTHONDONTWRITEBYTECODE would have every process compile again (about 2 MiB
    # of RSS and 15 ms for the relay's modules alone).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    echo, floor_name, cli = (
        "python, one line each way",
        "bare socket request (floor)",
        "python, import hive_rpc.cli, one line each way",
    )
    relays = ("hive-rpc mcp (as setup registers it)", "hive-rpc mcp --agent NAME")
    times: dict[str, list[float]] = {name: [] for name in (echo, floor_name, *relays)}
    rss: dict[str, list[int]] = {name: [] for name in (echo, cli, *relays)}
    with short_tmp() as tmp:
        socket, data_dir = tmp / "hub.sock", tmp / "data"
        mcp = [sys.executable, "-m", "hive_rpc", "mcp", "--socket", os.fspath(socket),
               "--data-dir", os.fspath(data_dir), "--no-start"]  # fmt: skip
        argvs = {relays[0]: mcp, relays[1]: [*mcp, "--agent", "bench"]}
        with hub_process("memory", socket, data_dir):
            for keep in [False] + [True] * args.rounds:  # the first round warms the caches
                took: dict[str, tuple[float, int]] = {echo: time_echo(env)}
                took[floor_name] = (time_floor(socket, env), 0)
                for name, argv in argvs.items():
                    took[name] = time_mcp(argv, env)
                took[cli] = time_echo(env, CLI_ECHO_LINE)
                if keep:
                    for name, (seconds, size) in took.items():
                        if name in times:
                            times[name].append(seconds)
                        if name in rss:
                            rss[name].append(size)
    medians = {name: statistics.median(values) for name, values in times.items()}
    floor = medians[floor_name]
    rows = []
    for name, m in medians.items():
        target = ""
        if name in relays:
            target = f"<= {TARGET_TIME:g}x: " + verdict(m <= TARGET_TIME * floor)
        rows.append((name, f"{m * 1000:.1f}", ratio(m, floor), target))
    print(f"\n{args.rounds} interleaved rounds, median wall time from fork to the answer\n")
    print(table(["process", "median ms", "vs floor (socket)", "target"], rows))
    sizes = {name: statistics.median(values) for name, values in rss.items()}
    bare = sizes[echo]
    rows = []
    for name, size in sizes.items():
        target = ""
        if name in relays:
            name += " (after tools/list)"
            target = f"<= {TARGET_RSS:g}x: " + verdict(size <= TARGET_RSS * bare)
        rows.append((name, f"{size / 2**20:.1f}", ratio(size, bare), target))
    print("\nmedian RSS (VmRSS) once answered, the same rounds\n")
    print(table(["process", "MiB", "vs bare Python", "target"], rows))


if __name__ == "__main__":
    main()
