"""Run every benchmark, each in its own process, and print the markdown for
docs/benchmarks.md (progress and each benchmark's own output go to stderr).

    python bench/run_all.py            # the sizes the results page uses
    python bench/run_all.py --quick    # smaller sizes, a smoke run of the scripts
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import time
from pathlib import Path

from _common import machine

HERE = Path(__file__).resolve().parent

BENCHMARKS: list[tuple[str, list[str], list[str]]] = [
    # name, full arguments, --quick arguments
    ("registry_throughput", [], ["-n", "5000", "--thread-n", "500", "--repeats", "1"]),
    ("registry_memory", [], ["-n", "10000"]),
    ("expiry_lateness", [], ["-n", "10000", "--window", "2"]),
    ("socket_delivery", [], ["-n", "300", "--rounds", "1", "--editors-n", "50"]),
    ("mcp_roundtrip", [], ["-n", "50", "--warmup", "5"]),
    ("epc_calls", [], ["-n", "300", "--warmup", "30"]),
    ("lsp_roundtrip", [], ["-n", "200", "--warmup", "20"]),
    ("store_roundtrip", [], ["-n", "100", "--warmup", "10"]),
    ("sse_fanout", [], ["--asks", "50", "--rounds", "1"]),
    ("hostile", [], ["-n", "3", "--fill", "50", "--pending", "5000"]),
    ("cli_cold_start", [], ["--rounds", "3"]),
    ("permission_roundtrip", [], ["--rounds", "2"]),
    ("http_hook", [], ["--rounds", "2"]),
    ("mcp_cold_start", [], ["--rounds", "2"]),
    ("subscribe_snapshot", [], ["--sizes", "500", "2000"]),
    ("session_memory", [], ["--steps", "5", "20"]),
    ("mcp_session_cost", [], ["-n", "5", "--sessions", "3"]),
    ("agora_turn", [], ["--turns", "10"]),
    ("nats_failover", [], ["--faults", "kill"]),
    ("nats_restart", [], ["--pending", "200", "--closed", "0", "2000"]),
]
ALIASES = {"mcp": "mcp_roundtrip", "epc": "epc_calls", "lsp": "lsp_roundtrip"}
"""Short names --only also accepts."""


def run_one(name: str, args: list[str]) -> tuple[str, float]:
    cmd = [sys.executable, str(HERE / f"{name}.py"), *args]
    print(f"running {' '.join(['python', f'bench/{name}.py', *args])}", file=sys.stderr)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    sys.stderr.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"bench/{name}.py failed with exit status {proc.returncode}")
    lines: list[str] = []
    for line in proc.stdout.splitlines():
        if line.startswith("# "):
            continue  # the machine line: printed once for the whole run
        if lines and lines[-1].startswith("|") and not line.startswith("|"):
            lines.append("")  # markdown: a table ends at a blank line
        lines.append(line)
    return "\n".join(lines).strip(), elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument(
        "--only",
        nargs="+",
        help="run only these benchmarks (mcp: mcp_roundtrip, epc: epc_calls, lsp: lsp_roundtrip)",
    )
    args = parser.parse_args(argv)
    only = {ALIASES.get(name, name) for name in args.only} if args.only else None
    facts = machine()
    out = [
        f"Run on {datetime.date.today().isoformat()}"
        + (" with `--quick` sizes (not for the results page)" if args.quick else ""),
        "",
        f"- machine: `{facts['machine']}`, {facts['cpu']}, {facts['cores']} cores, "
        f"{facts['memory']} RAM, Linux {facts['kernel']}",
        f"- Python {facts['python']}, trio {facts['trio']}, SQLite {facts['sqlite']}",
    ]
    for name, full, quick in BENCHMARKS:
        if only is not None and name not in only:
            continue
        extra = quick if args.quick else full
        body, elapsed = run_one(name, extra)
        command = " ".join(["python", f"bench/{name}.py", *extra])
        out += ["", f"### {name}", "", f"`{command}` ({elapsed:.0f} s)", "", body]
    print("\n".join(out))


if __name__ == "__main__":
    main()
