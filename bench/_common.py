"""Helpers shared by the benchmarks: machine facts, percentiles, tables.

Rule of the project: a benchmark prints its figures beside a peer or a physical
floor measured in the same run, as a ratio, so the numbers mean something on any
machine.  Nothing here asserts a timing.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import trio


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, str]:
    """What the results page records about the machine the figures came from."""
    mem = "unknown"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                    break
    except OSError:
        pass
    return {
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cores": str(os.cpu_count()),
        "memory": mem,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "trio": trio.__version__,
        "sqlite": sqlite3.sqlite_version,
    }


def print_machine() -> None:
    facts = machine()
    print(
        f"# {facts['machine']}, {facts['cpu']}, {facts['cores']} cores, {facts['memory']}; "
        f"Python {facts['python']}, trio {facts['trio']}, SQLite {facts['sqlite']}"
    )


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of already sorted values."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def ratio(value: float, floor: float) -> str:
    if floor <= 0 or math.isnan(floor) or math.isnan(value):
        return "n/a"
    return f"{value / floor:.2f}x"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table, columns padded so it also reads well in a terminal."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    out = [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out.extend(line(r) for r in cells[1:])
    return "\n".join(out)


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


@contextmanager
def short_tmp(prefix: str = "hvb-") -> Iterator[Path]:
    """A private temp dir under /tmp: Unix socket paths are capped at 108 bytes."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def hub_process(store: str, socket: Path, data_dir: Path) -> Iterator[None]:
    """``hive-rpc serve`` as a child process on ``socket``, for the block: returns once
    the hub says it is ready (its ``--ready-fd`` pipe), terminates it at the end."""
    read_fd, write_fd = os.pipe()
    argv = [sys.executable, "-m", "hive_rpc", "serve", "--store", store, "--no-notify",
            "--socket", os.fspath(socket), "--data-dir", os.fspath(data_dir),
            "--ready-fd", str(write_fd)]  # fmt: skip
    proc = subprocess.Popen(argv, pass_fds=(write_fd,))
    os.close(write_fd)
    try:
        if os.read(read_fd, 16) != b"ready\n":
            raise RuntimeError(f"the hub on the {store.split(':')[0]} store did not start")
        yield
    finally:
        os.close(read_fd)
        proc.terminate()
        proc.wait(10)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Collect, then keep the cyclic collector out of a timed section."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def rss_bytes() -> int:
    """Resident set size of this process, from /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def flush() -> None:
    sys.stdout.flush()
