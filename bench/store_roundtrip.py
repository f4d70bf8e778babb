"""ask -> answer -> poll through a hub, with the NATS JetStream KV store next to the
SQLite default (and the memory store as the floor), in one run.

Each store gets its own ``hive-rpc serve`` process; NATS is a real ``nats-server -js``
on a loopback port with file storage in a temp dir.  The client, the same for every
store, is this process on the hub's Unix socket: ``hive/ask``, then ``hive/respond``,
then ``hive/poll``, one cycle at a time.  Prints p50/p99 of a cycle and each store's
ratio to SQLite (the default) and to memory (no durability at all).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import trio
from _common import hub_process, percentile, print_machine, ratio, short_tmp, table

from hive_rpc.client.async_client import HubClient


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def nats_server(tmp: Path) -> Iterator[str]:
    binary = shutil.which("nats-server") or "/usr/sbin/nats-server"
    port = free_port()
    proc = subprocess.Popen(
        [binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(tmp / "js")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as c:
                    if c.recv(4).startswith(b"INFO"):
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("nats-server did not start") from None
                time.sleep(0.05)
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


async def cycles(sock: Path, n: int, warmup: int) -> list[float]:
    out = []
    async with await HubClient.connect(sock) as c:
        for i in range(n + warmup):
            t0 = time.perf_counter()
            asked = await c.call("hive/ask", {"question": f"q{i}?", "agent_id": "bench"})
            await c.call("hive/respond", {"id": asked["id"], "answer": "yes"})
            polled = await c.call("hive/poll", {"id": asked["id"], "agent_id": "bench"})
            if polled["answer"] != "yes":
                raise RuntimeError("the answer did not come back")
            if i >= warmup:
                out.append(time.perf_counter() - t0)
    return sorted(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="timed cycles per store")
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args(argv)
    print_machine()
    results: dict[str, list[float]] = {}
    with short_tmp() as tmp, nats_server(tmp) as url:
        for name, store in (("memory", "memory"), ("sqlite", "sqlite"), ("nats", url)):
            sock = tmp / f"{name}.sock"
            with hub_process(store, sock, tmp / f"data-{name}"):
                results[name] = trio.run(cycles, sock, args.n, args.warmup)
    rows = []
    for name, times in results.items():
        p50, p99 = percentile(times, 50), percentile(times, 99)
        rows.append(
            [
                name,
                f"{p50 * 1e3:.2f}",
                f"{p99 * 1e3:.2f}",
                ratio(p50, percentile(results["sqlite"], 50)),
                ratio(p50, percentile(results["memory"], 50)),
            ]
        )
    print(
        table(["store", "cycle p50 (ms)", "cycle p99 (ms)", "p50 vs sqlite", "p50 vs memory"], rows)
    )
    print()
    nats50, sql50 = percentile(results["nats"], 50), percentile(results["sqlite"], 50)
    print(
        f"One ask -> answer -> poll cycle costs {ratio(nats50, sql50)} as long on the "
        "NATS store as on SQLite (each write is a round trip to nats-server and a "
        "JetStream file-store append)."
    )


if __name__ == "__main__":
    main()
