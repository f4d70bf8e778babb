"""EPC calls per second: ``hive-rpc epc`` against python-epc's own ``ThreadingEPCServer``.

The workload is the same for both: ``echo`` of one 16-character string, answered
``(return UID ("..."))``.  Every server runs in a child process of its own:

* peer: ``ThreadingEPCServer(("127.0.0.1", 0))`` serving ``echo(*args) -> args``
  (``python bench/epc_calls.py --serve-peer``);
* hive-rpc: ``python -m hive_rpc epc --no-start`` in front of a hub
  (``python -m hive_rpc serve --store memory``) on a Unix socket in a short temp dir;
  its ``echo`` is answered by the face.  An extra row times ``poll`` of one pending
  prompt (``(:id ID)``), which also costs a JSON-RPC round trip to the hub.

The clients, each the same for both servers, in this process:

* python-epc's ``EPCClient`` (0.0.5), ``call_sync`` one call after another;
* a plain blocking socket (TCP_NODELAY) speaking EPC with ``hive_rpc.protocol.epc``,
  one call after another;
* the same socket with ``--window`` calls in flight (default 32), as epc.el's
  ``epc:call-deferred`` allows: replies are counted by their frame headers.

Floors: a bare threaded TCP echo of the same frame, no EPC at all, with the plain
socket clients; no EPC server can beat it, so ``floor / peer`` bounds the ratio any
server could show with that client.  And the same bare echo on trio: what a trio
server pays per round trip before it parses anything.

Target: hive-rpc epc's calls per second >= 5 x the peer's.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from _common import hub_process, print_machine, ratio, short_tmp, table, verdict
from epc.client import EPCClient

from hive_rpc.protocol import epc

TARGET = 5.0
ARG = "0123456789abcdef"


def serve_peer() -> None:
    """The peer: python-epc's threaded server with an echo method; prints its port."""
    from epc.server import ThreadingEPCServer

    server = ThreadingEPCServer(("127.0.0.1", 0))
    server.daemon_threads = True
    server.register_function(lambda *args: args, "echo")
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # until the parent closes our stdin


def serve_floor() -> None:
    """The floor: a bare TCP echo of whatever bytes arrive, no EPC at all; prints its port.

    A sequential client cannot make calls faster than this round trip, whatever the
    server does, so ``floor / peer`` bounds the ratio any EPC server could reach."""
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)

    def echo(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := conn.recv(65536):
            conn.sendall(data)

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()  # until the parent closes our stdin


def serve_trio_floor() -> None:
    """A second floor: the same bare echo on trio (what any trio server pays per
    round trip before it parses anything); prints its port."""
    import trio

    async def echo(stream: trio.SocketStream) -> None:
        while data := await stream.receive_some(65536):
            await stream.send_all(data)

    async def main() -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        print(listeners[0].socket.getsockname()[1], flush=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, echo, listeners)
            await trio.to_thread.run_sync(sys.stdin.read, abandon_on_cancel=True)
            nursery.cancel_scope.cancel()

    trio.run(main)


@contextlib.contextmanager
def child(
    args: list[str], *, port_line: bool = True, pass_fds: tuple[int, ...] = ()
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A child process; ``port``: the number on its first stdout line (else 0)."""
    proc = subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        pass_fds=pass_fds,
    )
    try:
        port = int(proc.stdout.readline()) if port_line and proc.stdout else 0
        yield proc, port
    finally:
        proc.terminate()
        proc.wait(10)


class RawClient:
    """The second client: one blocking socket, hive_rpc's own EPC codec, no threads."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.decoder = epc.Decoder()
        self.uids = itertools.count(1)

    def call_sync(self, method: str, args: list[Any], timeout: float = 10) -> Any:
        uid = next(self.uids)
        self.sock.sendall(epc.encode_call(uid, method, args))
        while True:
            data = self.sock.recv(65536)
            if not data:
                raise RuntimeError("the server closed the connection")
            for msg in self.decoder.receive_data(data):
                if isinstance(msg, epc.Return) and msg.uid == uid:
                    return msg.value
                raise RuntimeError(f"unexpected reply {msg}")

    def close(self) -> None:
        self.sock.close()


def rate(call: Callable[[], Any], n: int, warmup: int) -> float:
    for _ in range(warmup):
        call()
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    return n / (time.perf_counter() - t0)


def pipelined_rate(
    port: int, frames: list[bytes], window: int, warmup: int, expect: bytes = b"(return"
) -> float:
    """Calls per second with up to ``window`` calls in flight on one socket.  Replies
    are counted by their 6-hex-digit headers, so the client's cost stays small."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def run(batch: list[bytes]) -> None:
            buf = bytearray()
            sent = done = 0
            while done < len(batch):
                k = min(window - (sent - done), len(batch) - sent)
                if k > 0:
                    sock.sendall(b"".join(batch[sent : sent + k]))
                    sent += k
                data = sock.recv(1 << 20)
                if not data:
                    raise RuntimeError("the server closed the connection")
                buf += data
                while len(buf) >= 6:
                    length = int(buf[:6], 16)
                    if len(buf) < 6 + length:
                        break
                    if done == 0 and not buf[6:].startswith(expect):
                        raise RuntimeError(f"unexpected reply {bytes(buf[: 6 + length])!r}")
                    del buf[: 6 + length]
                    done += 1

        run(frames[:warmup])
        t0 = time.perf_counter()
        run(frames[warmup:])
        return (len(frames) - warmup) / (time.perf_counter() - t0)


def echo_frames(n: int, *, auth: str | None = None) -> list[bytes]:
    frames = [epc.encode_call(uid, "echo", [ARG]) for uid in range(1, n + 1)]
    if auth is not None:
        frames.insert(0, epc.encode_call(0, "auth", [auth]))
    return frames


def sequential_rates(
    port: int, method: str, args: list[Any], n: int, warmup: int, *, token: str | None = None
) -> dict[str, float]:
    """Calls/s of ``method`` one after another, with python-epc's client and the
    plain socket."""
    out = {}
    for kind in ("python-epc EPCClient", "raw socket"):
        client = connect(kind, port)
        try:
            if token is not None:
                client.call_sync("auth", [token], timeout=10)
            call = functools.partial(client.call_sync, method, args, timeout=10)
            out[kind] = rate(call, n, warmup)
        finally:
            disconnect(client)
    return out


def connect(kind: str, port: int) -> Any:
    return EPCClient(("127.0.0.1", port)) if kind == "python-epc EPCClient" else RawClient(port)


def disconnect(client: Any) -> None:
    client.close()
    if isinstance(client, EPCClient):
        client.socket.close()


Rates = dict[str, dict[str, float]]
"""server row -> client -> calls/s"""

SEQ_RAW = "raw socket"


def measure(args: argparse.Namespace) -> Rates:
    n, warmup, window = args.n, args.warmup, args.window
    pipe = f"raw socket, {window} in flight"
    piped = n * 4  # the pipelined rows are fast: more calls for a steady figure
    rates: Rates = {}
    with child([sys.executable, __file__, "--serve-floor"]) as (_, port):
        frame = [epc.encode_call(1, "echo", [ARG])]
        rates["floor"] = {
            SEQ_RAW: floor_sequential(port, frame[0], n, warmup),
            pipe: pipelined_rate(port, frame * (piped + warmup), window, warmup, b"(call"),
        }
    with child([sys.executable, __file__, "--serve-trio-floor"]) as (_, port):
        frame = [epc.encode_call(1, "echo", [ARG])]
        rates["trio floor"] = {
            SEQ_RAW: floor_sequential(port, frame[0], n, warmup),
            pipe: pipelined_rate(port, frame * (piped + warmup), window, warmup, b"(call"),
        }
    with child([sys.executable, __file__, "--serve-peer"]) as (_, port):
        peer = RawClient(port)
        try:
            if peer.call_sync("echo", [ARG]) != [ARG]:
                raise RuntimeError("the peer's echo does not echo")
        finally:
            peer.close()
        rates["peer"] = sequential_rates(port, "echo", [ARG], n, warmup)
        rates["peer"][pipe] = pipelined_rate(port, echo_frames(piped + warmup), window, warmup)

    with short_tmp() as tmp:
        data_dir = tmp / "data"
        where = ["--socket", os.fspath(tmp / "hub.sock"), "--data-dir", os.fspath(data_dir)]
        with hub_process("memory", tmp / "hub.sock", data_dir):
            epc_args = [sys.executable, "-m", "hive_rpc", "epc", "--no-start", *where]
            with child(epc_args) as (_, port):
                token = (data_dir / "epc-token").read_text().strip()
                check = RawClient(port)
                try:
                    check.call_sync("auth", [token])
                    if check.call_sync("echo", [ARG]) != [ARG]:
                        raise RuntimeError("hive-rpc epc's echo does not echo")
                    asked = check.call_sync("ask", [{"question": "Deploy?"}])
                    prompt_id = asked["id"]
                finally:
                    check.close()
                rates["hive echo"] = sequential_rates(port, "echo", [ARG], n, warmup, token=token)
                rates["hive echo"][pipe] = pipelined_rate(
                    port, echo_frames(piped + warmup, auth=token), window, warmup + 1
                )
                poll = [{"id": prompt_id}]
                rates["hive poll"] = sequential_rates(port, "poll", poll, n, warmup, token=token)
                frames = [epc.encode_call(0, "auth", [token])] + [
                    epc.encode_call(uid, "poll", poll) for uid in range(1, piped + warmup + 1)
                ]
                rates["hive poll"][pipe] = pipelined_rate(port, frames, window, warmup + 1)
    return rates


def floor_sequential(port: int, frame: bytes, n: int, warmup: int) -> float:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def call() -> None:
            sock.sendall(frame)
            got = 0
            while got < len(frame):
                got += len(sock.recv(65536))

        return rate(call, n, warmup)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5000, help="timed calls per sequential row")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--window", type=int, default=32, help="calls in flight (pipelined)")
    parser.add_argument("--serve-peer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-floor", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-trio-floor", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_trio_floor:
        serve_trio_floor()
        return
    if args.serve_peer:
        serve_peer()
        return
    if args.serve_floor:
        serve_floor()
        return
    print_machine()
    rates = measure(args)
    names = {
        "floor": ("bare TCP echo, threads (floor, no EPC)", "-"),
        "trio floor": ("bare TCP echo, trio (floor, no EPC)", "-"),
        "peer": ("python-epc ThreadingEPCServer (peer)", "echo"),
        "hive echo": ("hive-rpc epc", "echo"),
        "hive poll": ("hive-rpc epc + hub", "poll"),
    }
    rows = []
    for client in rates["peer"]:
        peer = rates["peer"][client]
        for key, (server, method) in names.items():
            if client in rates[key]:
                value = rates[key][client]
                rows.append([client, server, method, f"{value:,.0f}", ratio(value, peer)])
    print(table(["client", "server", "method", "calls/s", "vs peer"], rows))
    print()
    for client in rates["peer"]:
        peer, ours = rates["peer"][client], rates["hive echo"][client]
        bound = (
            f"; the floors allow at most {ratio(rates['floor'][client], peer)} (threads), "
            f"{ratio(rates['trio floor'][client], peer)} (trio)"
            if client in rates["floor"]
            else ""
        )
        print(
            f"Target (>= {TARGET:g}x the peer on echo), {client}: "
            f"{verdict(ours >= TARGET * peer)} ({ratio(ours, peer)}{bound})"
        )


if __name__ == "__main__":
    main()
