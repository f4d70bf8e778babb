"""A newly subscribed editor's snapshot: ``hive/subscribe`` on a SQLite hub holding N
pending prompts, to the first and to the last of its ``hive/prompt`` notifications.

The hub runs in a child process (bench/socket_delivery.py's), on a SQLite store
filled before it starts (the prompts as the store writes them, ten agents, deadlines
an hour away), so it begins by taking them back as a restarted hub does.  The client
is an editor at its simplest, on this process's trio thread: it subscribes, reads
the socket, decodes each frame and parses its JSON (``Endpoint.receive_data``, what
the hub's own clients use), and notes when the first and the last prompt arrived.

Floor, same run, same sizes: a bare trio server in a child process that writes the
same N ``hive/prompt`` frames (the hub's records, encoded before the client
connects) as fast as the socket takes them, to the same client code.  The ratio is
the hub's time to the last prompt over the floor's; "per prompt" shows whether the
cost grows with N (linear: the same figure at every size).

Targets (issue 30): the first prompt within 0.5 s at 99,000 pending; the whole
snapshot linear in N.  Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import trio
from _common import print_machine, ratio, short_tmp, table, verdict
from socket_delivery import running_server

from hive_rpc.core.prompt import Ask, new_prompt
from hive_rpc.host.paths import DB_NAME
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import Endpoint, Notification, Response, dumps
from hive_rpc.store.records import encode_prompt
from hive_rpc.store.sqlite import SqliteStore

SCRIPT = os.path.abspath(__file__)
FIRST_TARGET_S = 0.5
QUESTION = "Deploy build 4521 to production? The canary has been green for an hour."


def prompts(n: int) -> list[Any]:
    now = time.time()
    return [
        new_prompt(
            Ask(question=f"{QUESTION} ({i})", agent_id=f"agent-{i % 10}", timeout_s=3600.0),
            now=now + i * 1e-6,
        )
        for i in range(n)
    ]


def fill_store(data_dir: Path, n: int) -> None:
    """N pending prompts in the hub's SQLite file, as its store writes them."""
    data_dir.mkdir(parents=True, mode=0o700)
    store = SqliteStore(data_dir / DB_NAME)
    store._db.close()
    db = sqlite3.connect(data_dir / DB_NAME)
    with db:
        db.executemany(
            "INSERT INTO prompts (id, agent_id, status, created_at, record) VALUES (?,?,?,?,?)",
            [(p.id, p.agent_id, "pending", p.created_at, encode_prompt(p)) for p in prompts(n)],
        )
    db.close()


async def serve_frames(
    socket: Path, n: int, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """The floor: answer the first frame with a result, then write N ready-made
    ``hive/prompt`` frames in 64 KiB writes."""
    frames = b"".join(
        encode_frame(dumps({"jsonrpc": "2.0", "method": "hive/prompt", "params": p.to_record()}))
        for p in prompts(n)
    )
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await sock.bind(os.fspath(socket))
    sock.listen(16)

    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            await stream.receive_some(65536)
            reply = {"jsonrpc": "2.0", "id": 1, "result": {"subscribed": True, "pending": n}}
            await stream.send_all(encode_frame(dumps(reply)))
            view = memoryview(frames)
            for start in range(0, len(view), 65536):
                await stream.send_all(view[start : start + 65536])
            await trio.sleep_forever()

    await trio.serve_listeners(handle, [trio.SocketListener(sock)], task_status=task_status)


async def _floor_child(socket: Path, n: int) -> None:
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(serve_frames, socket, n)
            print("ready", flush=True)
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break


async def receive_snapshot(socket: Path, n: int) -> tuple[float, float]:
    """Seconds from sending ``hive/subscribe`` to the first and the N-th prompt."""
    stream = await trio.open_unix_socket(os.fspath(socket))
    endpoint = Endpoint()
    got = 0
    first = last = 0.0
    async with stream:
        _, frame = endpoint.request("hive/subscribe", {})
        start = time.perf_counter()
        await stream.send_all(frame)
        while got < n:
            data = await stream.receive_some(65536)
            if not data:
                raise RuntimeError(f"the server closed the connection after {got} prompts")
            for msg in endpoint.receive_data(data):
                if isinstance(msg, Notification) and msg.method == "hive/prompt":
                    got += 1
                    if got == 1:
                        first = time.perf_counter() - start
                elif isinstance(msg, Response) and msg.result.get("pending") not in (n, None):
                    raise RuntimeError(f"subscribed to {msg.result['pending']} pending, not {n}")
        last = time.perf_counter() - start
    return first, last


async def floor_run(nursery: trio.Nursery, tmp: Path, n: int) -> tuple[float, float]:
    sock = tmp / "floor.sock"
    argv = [sys.executable, SCRIPT, "--floor-child", os.fspath(sock), str(n)]
    proc = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        with trio.fail_after(120):
            buf = b""
            while b"ready" not in buf:
                chunk = await proc.stdout.receive_some(64)
                if not chunk:
                    raise RuntimeError("the floor server exited before it was ready")
                buf += chunk
        return await receive_snapshot(sock, n)
    finally:
        proc.terminate()
        with trio.CancelScope(shield=True):
            await proc.wait()
            await proc.stdout.aclose()


async def hub_run(nursery: trio.Nursery, tmp: Path, n: int) -> tuple[float, float]:
    sock, data = tmp / "run" / "hub.sock", tmp / "data"
    fill_store(data, n)
    # Taking back 99,000 prompts from the store takes the hub about 13 s here.
    stop = await running_server(nursery, False, "hub", sock, data, "sqlite", ready_timeout_s=300)
    try:
        return await receive_snapshot(sock, n)
    finally:
        await stop()


async def main(args: argparse.Namespace) -> list[tuple[int, str, float, float]]:
    results = []
    async with trio.open_nursery() as nursery:
        for n in args.sizes:
            for name, run in (("floor: bare server, same frames", floor_run), ("hub", hub_run)):
                with short_tmp() as tmp:
                    first, last = await run(nursery, tmp, n)
                results.append((n, name, first, last))
    return results


def run(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[10_000, 99_000],
        help="pending prompts (default 10000 99000)",
    )
    args = parser.parse_args(argv)
    results = trio.run(main, args)
    floors = {n: last for n, name, _, last in results if name.startswith("floor")}
    smallest = min(args.sizes)
    per_small = {
        name: last / n for n, name, _, last in results if n == smallest
    }  # seconds per prompt at the smallest size
    rows = []
    for n, name, first, last in results:
        grows = ratio(last / n, per_small[name])
        target = ""
        if not name.startswith("floor"):
            target = f"first <= {FIRST_TARGET_S:g} s: " + verdict(first <= FIRST_TARGET_S)
        rows.append(
            [
                f"{n:,}",
                name,
                f"{first * 1000:.1f}",
                f"{last:.2f}",
                f"{last / n * 1e6:.1f}",
                grows,
                ratio(last, floors[n]),
                target,
            ]
        )
    headers = [
        "pending",
        "subscribe_snapshot (SQLite hub)",
        "first prompt ms",
        "last prompt s",
        "µs per prompt",
        f"per prompt vs {smallest:,}",
        "last x floor",
        "target",
    ]
    out = table(headers, rows)
    print(out)
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--floor-child":
        trio.run(_floor_child, Path(sys.argv[2]), int(sys.argv[3]))
    else:
        print_machine()
        run()
