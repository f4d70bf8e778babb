"""The benchmarks still run: ``bench/run_all.py --quick`` (every script at small sizes,
each in its own process) exits 0 and prints a table for each.  No figure is judged
here (timings never go into tests); this only keeps the scripts from rotting when the
code they drive changes (a renamed argument, a new limit)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_every_benchmark_runs_at_small_sizes() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from run_all import BENCHMARKS  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(BENCH))
    done = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for name, _, _ in BENCHMARKS:
        assert f"bench/{name}.py" in done.stderr, name  # it ran
    assert done.stdout.count("\n|-") >= len(BENCHMARKS)  # a table per script, at least
