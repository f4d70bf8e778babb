"""Activity-stream fan-out: ``hive/ask`` sent -> the ``prompt`` event read by each of
100 ``GET /activity`` subscribers (Server-Sent Events).

A real hub (``hive_rpc.hub.run_hub`` with ``http="127.0.0.1:0"``) runs in a child
process.  This process opens ``--subscribers`` streams to it over TCP (raw trio sockets
speaking HTTP/1.1, one task each, with the bearer token) and one editor-socket client
(``HubClient``) that asks, one prompt at a time.  A sample is the time from just before
the ``hive/ask`` is written to the moment one subscriber has read the event carrying
that prompt's id; each ask gives one sample per subscriber, and the next ask is sent
once every subscriber has its event.  "Last subscriber" is, per ask, the slowest of them.

Floor, same run, same clients: a bare trio SSE server (no ASGI, no hub) in a child
process that, when a trigger connection sends it an id, broadcasts one fixed event of
the same size carrying that id to every open stream.  Both paths are one message in,
a fan-out of ``N`` SSE events out, read by the same client code.

Nothing is asserted: the figures are printed beside the floor, as ratios.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio
from _common import percentile, print_machine, ratio, short_tmp, table

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.prompt import Ask, new_prompt
from hive_rpc.hub import HubConfig, freeze_startup_objects, run_hub
from hive_rpc.runtime.activity import prompt_data
from hive_rpc.service import HubService

SCRIPT = os.path.abspath(__file__)
QUESTION = "Deploy build 4521 to production? The canary has been green for an hour."


# --- servers (child processes) -----------------------------------------------------


def event_size() -> int:
    """Bytes of a ``prompt`` ask event's JSON, as the hub sends it."""
    prompt = new_prompt(Ask(agent_id="bench", question=QUESTION), now=0.0)
    record = {"id": 1, "kind": "prompt", "event": "ask", "key": prompt.id, "at": 0.0}
    return len(json.dumps({**record, **prompt_data(prompt)}, separators=(",", ":")))


async def serve_floor(*, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """A bare SSE broadcaster: ``GET /activity`` streams; ``GET /fire?ID`` sends one
    event carrying ID to every stream, then answers 204."""
    streams: set[trio.SocketStream] = set()
    pad = "x" * max(0, event_size() - 40)
    next_id = 0

    async def handle(stream: trio.SocketStream) -> None:
        nonlocal next_id
        head = b""
        while b"\r\n\r\n" not in head:
            data = await stream.receive_some(4096)
            if not data:
                return
            head += data
        target = head.split(b" ", 2)[1].decode()
        if target.startswith("/activity"):
            await stream.send_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"cache-control: no-store\r\n\r\nretry: 2000\n\n"
            )
            streams.add(stream)
            try:
                while await stream.receive_some(4096):
                    pass
            finally:
                streams.discard(stream)
            return
        key = target.partition("?")[2]
        next_id += 1
        data = json.dumps({"key": key, "event": "ask", "pad": pad}, separators=(",", ":"))
        event = f"id: {next_id}\nevent: prompt\ndata: {data}\n\n".encode()
        for s in list(streams):
            await s.send_all(event)
        await stream.send_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
        await stream.aclose()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    task_status.started(f"http://127.0.0.1:{port} -")
    await trio.serve_listeners(handle, listeners)


async def serve_hub(tmp: Path, store: str, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    config = HubConfig(
        socket=tmp / "run" / "hub.sock", data_dir=tmp / "data", store=store, http="127.0.0.1:0"
    )
    async with trio.open_nursery() as nursery:
        service: HubService = await nursery.start(run_hub, config)
        freeze_startup_objects()  # as `hive-rpc serve` does once the hub is up
        base = str(service.info.http_url).removesuffix("/mcp")
        task_status.started(f"{base} {service.info.token_file}")


async def _child_main(kind: str, tmp: Path, store: str) -> None:
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            if kind == "hub":
                facts = await nursery.start(serve_hub, tmp, store)
            else:
                facts = await nursery.start(serve_floor)
            print("ready", facts, flush=True)
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break


def child(argv: list[str]) -> None:
    kind, tmp, store = argv
    logging.disable(logging.INFO)  # the hub's and hypercorn's start-up lines
    trio.run(_child_main, kind, Path(tmp), store)


async def start_child(
    kind: str, tmp: Path, store: str
) -> tuple[str, str, Callable[[], Awaitable[None]]]:
    """Start a server process; return its base URL, token file and a stopper."""
    argv = [sys.executable, SCRIPT, "--child", kind, os.fspath(tmp), store]
    proc = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE)
    stdout = proc.stdout
    assert stdout is not None

    async def stop() -> None:
        proc.terminate()
        with trio.move_on_after(10):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await stdout.aclose()

    async def read_ready() -> bytes:
        buf = b""
        with trio.fail_after(30):
            while not buf.endswith(b"\n"):
                chunk = await stdout.receive_some(256)
                if not chunk:
                    raise RuntimeError(f"the {kind} server exited before it was ready")
                buf += chunk
        return buf

    try:
        buf = await read_ready()
    except BaseException:
        with trio.CancelScope(shield=True):
            await stop()
        raise
    _ready, base, token_file = buf.decode().split()
    return base, token_file, stop


# --- clients --------------------------------------------------------------------------


class Fanout:
    """What every subscriber waits for: the nonce in the event of the latest ask."""

    def __init__(self, subscribers: int) -> None:
        self.subscribers = subscribers
        self.marker = b""
        self.sent = 0.0
        self.samples: list[float] = []
        self.left = 0
        self.done = trio.Event()

    def expect(self, nonce: str) -> None:
        self.marker = f"[{nonce}]".encode()
        self.left = self.subscribers
        self.done = trio.Event()

    def seen(self, at: float) -> None:
        self.samples.append(at - self.sent)
        self.left -= 1
        if self.left == 0:
            self.done.set()


async def subscribe(
    base: str, token: str, fanout: Fanout, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    host, port = base.removeprefix("http://").rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    request = (
        f"GET /activity HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    )
    async with stream:
        await stream.send_all(request.encode())
        buf = b""
        while b"retry:" not in buf:  # the headers and the stream's first line
            data = await stream.receive_some(65536)
            if not data:
                raise RuntimeError(f"GET /activity: {buf[:200]!r}")
            buf += data
        if not buf.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"GET /activity: {buf[:200]!r}")
        task_status.started()
        seen = b""
        buf = b""
        while data := await stream.receive_some(65536):
            buf += data
            marker = fanout.marker
            if marker and marker != seen and marker in buf:
                fanout.seen(trio.current_time())
                seen = marker
                buf = b""
            else:
                buf = buf[-256:]


async def measure(
    base: str,
    token: str,
    subscribers: int,
    asks: int,
    warmup: int,
    fire: Callable[[str], Awaitable[None]],
) -> tuple[list[float], list[float]]:
    """Samples (seconds) per (ask, subscriber), and per ask for the slowest subscriber."""
    fanout = Fanout(subscribers)
    last: list[float] = []
    async with trio.open_nursery() as nursery:
        for _ in range(subscribers):
            await nursery.start(subscribe, base, token, fanout)
        for i in range(asks + warmup):
            before = len(fanout.samples)
            fanout.expect(f"{i:08x}")
            fanout.sent = trio.current_time()
            await fire(f"{i:08x}")
            with trio.fail_after(30):
                await fanout.done.wait()
            if i < warmup:
                del fanout.samples[before:]
            else:
                last.append(max(fanout.samples[before:]))
        nursery.cancel_scope.cancel()
    return fanout.samples, last


async def hub_run(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    with short_tmp() as tmp:
        base, token_file, stop = await start_child("hub", tmp, args.store)
        try:
            token = read_token(token_file)
            async with await HubClient.connect(tmp / "run" / "hub.sock") as asker:

                async def ask(nonce: str) -> None:
                    params = {"question": f"{QUESTION} [{nonce}]", "agent_id": "bench"}
                    await asker.call("hive/ask", params)

                return await measure(base, token, args.subscribers, args.asks, args.warmup, ask)
        finally:
            await stop()


async def floor_run(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    with short_tmp() as tmp:
        base, _, stop = await start_child("floor", tmp, "")
        host, port = base.removeprefix("http://").rsplit(":", 1)
        try:

            async def fire(nonce: str) -> None:
                stream = await trio.open_tcp_stream(host, int(port))
                async with stream:
                    await stream.send_all(f"GET /fire?[{nonce}] HTTP/1.1\r\n\r\n".encode())
                    while await stream.receive_some(4096):
                        pass

            return await measure(base, "-", args.subscribers, args.asks, args.warmup, fire)
        finally:
            await stop()


def read_token(token_file: str) -> str:
    return Path(token_file).read_text().strip()


class Stats:
    def __init__(self, name: str, samples: list[float]) -> None:
        self.name = name
        self.us = sorted(s * 1e6 for s in samples)

    def p(self, q: float) -> float:
        return percentile(self.us, q)


async def main(args: argparse.Namespace) -> list[tuple[Stats, Stats]]:
    """Rounds of (floor, hub), samples pooled per row."""
    pooled: dict[str, tuple[list[float], list[float]]] = {}
    n = args.subscribers
    for _ in range(args.rounds):
        for name, run_one in (
            (f"floor: bare trio SSE broadcast to {n}", floor_run),
            (f"hub ({args.store} store): hive/ask -> prompt event at {n}", hub_run),
        ):
            each, last = await run_one(args)
            row = pooled.setdefault(name, ([], []))
            row[0].extend(each)
            row[1].extend(last)
    return [(Stats(k, v[0]), Stats(k, v[1])) for k, v in pooled.items()]


def run(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=100, help="SSE streams (100)")
    parser.add_argument("--asks", type=int, default=300, help="asks per row per round (300)")
    parser.add_argument("--warmup", type=int, default=20, help="asks discarded first (20)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, pooled (2)")
    parser.add_argument(
        "--store", default="memory", choices=["memory", "sqlite"], help="hub store (memory)"
    )
    args = parser.parse_args(argv)
    results = trio.run(main, args)
    floor_each, floor_last = results[0]
    rows = []
    for each, last in results:
        rows.append(
            [
                each.name,
                f"{len(each.us):,}",
                f"{each.p(50):.0f}",
                f"{each.p(99):.0f}",
                f"{last.p(50):.0f}",
                f"{last.p(99):.0f}",
                ratio(each.p(50), floor_each.p(50)),
                ratio(each.p(99), floor_each.p(99)),
                ratio(last.p(99), floor_last.p(99)),
            ]
        )
    headers = [
        "sse_fanout (servers in child processes)",
        "samples",
        "p50 us",
        "p99 us",
        "last p50 us",
        "last p99 us",
        "p50 x floor",
        "p99 x floor",
        "last p99 x floor",
    ]
    out = table(headers, rows)
    print(out)
    print(
        f"{args.subscribers} subscribers, {args.asks} asks x {args.rounds} rounds per row; "
        f"'last' = per ask, the slowest subscriber; event JSON ~{event_size()} bytes"
    )
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        print_machine()
        run()
