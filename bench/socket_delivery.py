"""Delivery latency over the editor socket: ``hive/ask`` sent -> ``hive/prompt`` received.

A real hub (``hive_rpc.hub.run_hub``) serves a Unix socket in a short temp dir under
/tmp.  One client subscribes (``hive/subscribe`` with ``HubClient``) and reads
notifications in its own task; another client asks.  Each sample is the time from
just before the asker writes ``hive/ask`` to the moment the subscriber has parsed the
matching ``hive/prompt`` notification.  Samples are sequential (the next ask is sent
once the previous prompt has arrived and the ask's response is in).

Floor, same run, same kind of socket: a bare trio echo server that decodes
Content-Length frames and writes each one straight back; the client sends a JSON
message the size of a ``hive/prompt`` notification and times the round trip
(encode, send, receive, decode, parse).  Both paths cross the socket twice.

By default the hub and the echo server each run in a child process (the clients in
this one), as they would in use, so on a multi-core machine servers and clients run
in parallel; ``--in-process`` runs everything on one trio thread instead.

Many editors (``--editors 10 60``, on SQLite; one process is one peer, which the hub
lets hold 64 connections, core/limits.py connections_per_peer): as many subscribers, and a sample is
the time to the last of them; the second table gives, at p99, what each editor added
costs against one editor's share at the smallest count.

Targets: p99(delivery) <= 5 x p99(echo round trip); each editor added <= 2x one
editor's share at 10 (issue 30).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio
from _common import percentile, print_machine, ratio, short_tmp, table, verdict

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.prompt import Ask, new_prompt
from hive_rpc.hub import HubConfig, freeze_startup_objects, run_hub
from hive_rpc.protocol.framing import Frame, FrameDecoder, encode_frame

TARGET_RATIO = 5.0
SCRIPT = os.path.abspath(__file__)
QUESTION = "Deploy build 4521 to production? The canary has been green for an hour."


# --- servers ----------------------------------------------------------------------


async def serve_hub(
    socket: Path, data_dir: Path, store: str, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    async with trio.open_nursery() as nursery:
        service = await nursery.start(
            run_hub, HubConfig(socket=socket, data_dir=data_dir, store=store)
        )
        freeze_startup_objects()  # as `hive-rpc serve` does once the hub is up
        task_status.started(service)


async def serve_echo(socket: Path, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Echo every Content-Length frame back as it came."""
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await sock.bind(os.fspath(socket))
    sock.listen(16)
    listener = trio.SocketListener(sock)

    async def handle(stream: trio.SocketStream) -> None:
        decoder = FrameDecoder()
        async with stream:
            while data := await stream.receive_some(65536):
                decoder.receive_data(data)
                out = bytearray()
                while (event := decoder.next_event()) is not None:
                    assert isinstance(event, Frame)
                    out += encode_frame(event.body)
                if out:
                    await stream.send_all(out)

    await trio.serve_listeners(handle, [listener], task_status=task_status)


async def _child_main(kind: str, socket: Path, data_dir: Path, store: str) -> None:
    """Serve until SIGTERM, then shut down cleanly (the hub removes its socket)."""
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            if kind == "hub":
                await nursery.start(serve_hub, socket, data_dir, store)
            else:
                await nursery.start(serve_echo, socket)
            print("ready", flush=True)
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break


def child(argv: list[str]) -> None:
    kind, socket, data_dir, store = argv
    trio.run(_child_main, kind, Path(socket), Path(data_dir), store)


async def running_server(
    nursery: trio.Nursery,
    in_process: bool,
    kind: str,
    socket: Path,
    data_dir: Path,
    store: str,
    *,
    ready_timeout_s: float = 30.0,
) -> Callable[[], Awaitable[None]]:
    """Start a server; return a coroutine function that stops it.  ``ready_timeout_s``:
    a hub taking back many pending prompts from its store takes longer to listen."""
    if in_process:
        scope = trio.CancelScope()

        async def serve(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            with scope:
                if kind == "hub":
                    await serve_hub(socket, data_dir, store, task_status=task_status)
                else:
                    await serve_echo(socket, task_status=task_status)

        await nursery.start(serve)

        async def stop_task() -> None:
            scope.cancel()

        return stop_task

    argv = [sys.executable, SCRIPT, "--child", kind]
    argv += [os.fspath(socket), os.fspath(data_dir), store]
    proc = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE)
    stdout = proc.stdout
    assert stdout is not None

    async def stop_process() -> None:
        proc.terminate()  # the child shuts down cleanly on SIGTERM
        with trio.move_on_after(10):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await stdout.aclose()

    async def wait_ready() -> None:
        buf = b""
        with trio.fail_after(ready_timeout_s):
            while b"ready" not in buf:
                chunk = await stdout.receive_some(64)
                if not chunk:
                    raise RuntimeError(f"{kind} server exited before it was ready")
                buf += chunk

    try:
        await wait_ready()
    except BaseException:
        with trio.CancelScope(shield=True):
            await stop_process()
        raise
    return stop_process


# --- measurements ------------------------------------------------------------------


async def delivery_samples(socket: Path, n: int, warmup: int, editors: int = 1) -> list[float]:
    """Seconds from hive/ask sent to hive/prompt parsed by the last of ``editors``
    subscribers, n samples."""
    samples: list[float] = []
    arrivals_send, arrivals = trio.open_memory_channel[tuple[str, float]]((n + warmup) * editors)
    async with contextlib.AsyncExitStack() as stack:
        asker = await stack.enter_async_context(await HubClient.connect(socket))
        subscribers = [
            await stack.enter_async_context(await HubClient.connect(socket)) for _ in range(editors)
        ]
        nursery = await stack.enter_async_context(trio.open_nursery())
        for subscriber in subscribers:  # each speaks at once: an idle one may be closed
            await subscriber.call("hive/subscribe")

        async def read_notifications(subscriber: HubClient) -> None:
            while True:
                note = await subscriber.next_notification()
                if note.method == "hive/prompt":
                    arrivals_send.send_nowait((note.params["id"], trio.current_time()))

        for subscriber in subscribers:
            nursery.start_soon(read_notifications, subscriber)
        for i in range(n + warmup):
            sent = trio.current_time()
            record = await asker.call("hive/ask", {"question": QUESTION, "agent_id": "bench"})
            last = 0.0
            for _ in range(editors):
                prompt_id, arrived = await arrivals.receive()
                if prompt_id != record["id"]:
                    raise RuntimeError(f"notification for {prompt_id}, expected {record['id']}")
                last = max(last, arrived)
            if i >= warmup:
                samples.append(last - sent)
        nursery.cancel_scope.cancel()
    return samples


def notification_body() -> bytes:
    """A hive/prompt notification as the hub would send it, for the echo's size."""
    prompt = new_prompt(Ask(agent_id="bench", question=QUESTION), now=0.0)
    msg = {"jsonrpc": "2.0", "method": "hive/prompt", "params": prompt.to_record()}
    return json.dumps(msg, separators=(",", ":")).encode()


async def echo_samples(socket: Path, n: int, warmup: int) -> list[float]:
    """Round trips of a notification-sized JSON frame through the echo server."""
    message = json.loads(notification_body())
    samples: list[float] = []
    stream = await trio.open_unix_socket(os.fspath(socket))
    decoder = FrameDecoder()
    async with stream:
        for i in range(n + warmup):
            message["params"]["created_at"] = float(i)
            sent = trio.current_time()
            await stream.send_all(encode_frame(json.dumps(message, separators=(",", ":")).encode()))
            while (event := decoder.next_event()) is None:
                decoder.receive_data(await stream.receive_some(65536))
            assert isinstance(event, Frame)
            echoed = json.loads(event.body)
            arrived = trio.current_time()
            assert echoed["params"]["created_at"] == float(i)
            if i >= warmup:
                samples.append(arrived - sent)
    return samples


class Stats:
    def __init__(self, name: str, samples: list[float]) -> None:
        self.name = name
        self.us = sorted(s * 1e6 for s in samples)

    def p(self, q: float) -> float:
        return percentile(self.us, q)


async def main(args: argparse.Namespace) -> tuple[list[Stats], int, dict[str, list[int]]]:
    """Rounds of (echo, then each store), samples pooled per row, so drift in the
    machine's load during the run touches every row alike.  Also returns, per store,
    the size of its WAL file in 4 KiB pages at the end of each round."""
    pooled: dict[str, list[float]] = {}
    wal_pages: dict[str, list[int]] = {}
    async with trio.open_nursery() as nursery:
        for _ in range(args.rounds):
            with short_tmp() as tmp:
                sock = tmp / "echo.sock"
                stop = await running_server(nursery, args.in_process, "echo", sock, tmp, "")
                try:
                    samples = await echo_samples(sock, args.n, args.warmup)
                finally:
                    await stop()
                pooled.setdefault("floor: echo round trip, same socket kind", []).extend(samples)
            for store in args.stores:
                with short_tmp() as tmp:
                    sock = tmp / "run" / "hub.sock"
                    data = tmp / "data"
                    stop = await running_server(nursery, args.in_process, "hub", sock, data, store)
                    try:
                        samples = await delivery_samples(sock, args.n, args.warmup)
                        for wal in data.glob("*-wal"):
                            wal_pages.setdefault(store, []).append(wal.stat().st_size // 4096)
                    finally:
                        await stop()
                    name = f"hub ({store} store): ask -> hive/prompt"
                    pooled.setdefault(name, []).extend(samples)
            for editors in args.editors:
                with short_tmp() as tmp:
                    sock, data = tmp / "run" / "hub.sock", tmp / "data"
                    stop = await running_server(
                        nursery, args.in_process, "hub", sock, data, "sqlite"
                    )
                    try:
                        samples = await delivery_samples(sock, args.editors_n, args.warmup, editors)
                    finally:
                        await stop()
                    name = f"hub (sqlite store): ask -> the last of {editors} editors"
                    pooled.setdefault(name, []).extend(samples)
    stats = [Stats(name, samples) for name, samples in pooled.items()]
    return stats, len(notification_body()), wal_pages


def run(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="samples per row per round (2,000)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds; samples are pooled (default 3)"
    )
    parser.add_argument("--warmup", type=int, default=100, help="samples discarded first (100)")
    parser.add_argument(
        "--stores",
        nargs="+",
        default=["memory", "sqlite"],
        choices=["memory", "sqlite"],
        help="hub stores to measure (default: memory sqlite)",
    )
    parser.add_argument(
        "--editors",
        type=int,
        nargs="*",
        default=[10, 60],
        help="also: subscribed editors, every one timed to the last (default 10 60; none: "
        "skip; at most 63: they share this process's peer, 64 connections_per_peer)",
    )
    parser.add_argument(
        "--editors-n", type=int, default=500, help="samples per round with many editors (500)"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the servers on this process's trio thread instead of child processes",
    )
    args = parser.parse_args(argv)
    results, body_len, wal_pages = trio.run(main, args)
    floor = results[0]
    rows = []
    for i, r in enumerate(results):
        rows.append(
            [
                r.name,
                f"{len(r.us):,}",
                f"{r.p(50):.0f}",
                f"{r.p(99):.0f}",
                f"{r.us[-1]:.0f}",
                ratio(r.p(50), floor.p(50)),
                ratio(r.p(99), floor.p(99)),
                verdict(r.p(99) <= TARGET_RATIO * floor.p(99))
                if i and "editors" not in r.name
                else "",
            ]
        )
    where = "in one process" if args.in_process else "servers in child processes"
    headers = [
        f"socket_delivery ({where})",
        "samples",
        "p50 us",
        "p99 us",
        "max us",
        "p50 x floor",
        "p99 x floor",
        "target p99 <= 5x",
    ]
    out = table(headers, rows)
    many = [r for r in results if "editors" in r.name]
    if len(many) >= 2:
        # Issue 30: each editor added costs at most twice what one costs at the
        # smallest count (p99, time to the last editor).
        base, base_k = many[0], args.editors[0]
        per_base = base.p(99) / base_k
        growth = []
        for r, k in zip(many[1:], args.editors[1:], strict=True):
            added = (r.p(99) - base.p(99)) / (k - base_k)
            growth.append(
                [
                    f"{base_k} -> {k} editors",
                    f"{per_base:.0f}",
                    f"{added:.0f}",
                    ratio(added, per_base),
                    verdict(added <= 2 * per_base),
                ]
            )
        out += "\n\n" + table(
            [
                "delivery to many editors (p99)",
                f"us per editor at {base_k}",
                "us per editor added",
                "added x per editor",
                "target <= 2x",
            ],
            growth,
        )
    print(out)
    print(f"echo message: {body_len} bytes of JSON, the size of a hive/prompt notification")
    for store, pages in wal_pages.items():
        sizes = ", ".join(f"{x:,}" for x in pages)
        print(
            f"{store} hub: WAL file after each round of {args.warmup + args.n:,} asks: "
            f"{sizes} pages of 4 KiB"
        )
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        print_machine()
        run()
