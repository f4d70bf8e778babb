"""EPC calls per second: ``hive-rpc epc`` against python-epc's own ``ThreadingEPCServer``.

Same client for both, python-epc's ``EPCClient`` (0.0.5) in this process, making
``call_sync`` calls one after another on one connection; each row times ``-n`` calls
after ``--warmup`` discarded ones.  Every server runs in a child process of its own:

* peer: ``ThreadingEPCServer(("127.0.0.1", 0))`` serving ``echo(*args) -> args``
  (``python bench/epc_calls.py --serve-peer``), called with one string as long as a
  prompt id;
* hive-rpc: ``python -m hive_rpc epc --no-start`` in front of a hub
  (``python -m hive_rpc serve --store memory``) on a Unix socket in a short temp dir.
  The EPC face has no echo method, so what is timed is ``poll`` of one pending
  prompt's id (``(:id ID)``): each call is also a JSON-RPC round trip to the hub over
  its Unix socket and a registry look-up, which the peer's echo does not do.
  A second hive-rpc row times ``auth`` (the right token, answered ``t``): the one
  cheap method the face answers by itself, without the hub, so the closest thing to
  the peer's echo.

A second client, the same for both servers, shows what the servers do when the
client is not the bottleneck: a plain blocking socket (TCP_NODELAY) speaking EPC with
``hive_rpc.protocol.epc``, no threads.

Target (from the issue): hive-rpc epc's calls per second >= 5 x the peer's.
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

from _common import print_machine, ratio, short_tmp, table, verdict
from epc.client import EPCClient
from sexpdata import Symbol

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


def floor_rate(port: int, n: int, warmup: int) -> float:
    """Round trips per second of one auth-sized EPC frame through the bare echo."""
    frame = epc.encode_call(1, "auth", ["x" * 43])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def call() -> None:
            sock.sendall(frame)
            got = 0
            while got < len(frame):
                got += len(sock.recv(65536))

        return rate(call, n, warmup)


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


@contextlib.contextmanager
def hub(where: list[str]) -> Iterator[None]:
    """``hive-rpc serve --store memory``, returning once it says it is ready."""
    read_fd, write_fd = os.pipe()
    args = [sys.executable, "-m", "hive_rpc", "serve", "--store", "memory", *where]
    try:
        with child([*args, "--ready-fd", str(write_fd)], port_line=False, pass_fds=(write_fd,)):
            os.close(write_fd)
            write_fd = -1
            if os.read(read_fd, 16) != b"ready\n":
                raise RuntimeError("the hub did not start")
            yield
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


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


Client = Callable[[int], Any]
CLIENTS: dict[str, Client] = {"python-epc EPCClient": EPCClient, "raw socket": RawClient}


def connect(kind: str, port: int) -> Any:
    return EPCClient(("127.0.0.1", port)) if kind == "python-epc EPCClient" else RawClient(port)


def disconnect(client: Any) -> None:
    client.close()
    if isinstance(client, EPCClient):
        client.socket.close()


def measure(args: argparse.Namespace) -> tuple[dict[str, tuple[float, float, float]], float]:
    """Per client: calls/s of the peer's echo, hive-rpc epc's auth, and its poll; and
    the bare TCP echo floor."""
    with child([sys.executable, __file__, "--serve-floor"]) as (_, port):
        floor = floor_rate(port, args.n, args.warmup)
    peer: dict[str, float] = {}
    with child([sys.executable, __file__, "--serve-peer"]) as (_, port):
        for kind in CLIENTS:
            client = connect(kind, port)
            try:
                if client.call_sync("echo", [ARG], timeout=10) != [ARG]:
                    raise RuntimeError("the peer's echo does not echo")
                call = functools.partial(client.call_sync, "echo", [ARG], timeout=10)
                peer[kind] = rate(call, args.n, args.warmup)
            finally:
                disconnect(client)

    out: dict[str, tuple[float, float, float]] = {}
    with short_tmp() as tmp:
        data_dir = tmp / "data"
        where = ["--socket", os.fspath(tmp / "hub.sock"), "--data-dir", os.fspath(data_dir)]
        with hub(where):
            epc_args = [sys.executable, "-m", "hive_rpc", "epc", "--no-start", *where]
            with child(epc_args) as (_, port):
                token = (data_dir / "epc-token").read_text().strip()
                prompt_id = ""
                for kind in CLIENTS:
                    client = connect(kind, port)
                    try:
                        client.call_sync("auth", [token], timeout=10)
                        if not prompt_id:
                            asked = client.call_sync("ask", [{"question": "Deploy?"}], timeout=10)
                            prompt_id = asked[asked.index(Symbol(":id")) + 1]
                        call = functools.partial(
                            client.call_sync, "poll", [{"id": prompt_id}], timeout=10
                        )
                        polls = rate(call, args.n, args.warmup)
                        auth = functools.partial(client.call_sync, "auth", [token], timeout=10)
                        out[kind] = (peer[kind], rate(auth, args.n, args.warmup), polls)
                    finally:
                        disconnect(client)
    return out, floor


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5000, help="timed calls per row")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--serve-peer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-floor", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_peer:
        serve_peer()
        return
    if args.serve_floor:
        serve_floor()
        return
    print_machine()
    results, floor = measure(args)
    rows = []
    for kind, (peer, auth, poll) in results.items():
        rows.append([kind, "python-epc ThreadingEPCServer (peer)", "echo", f"{peer:,.0f}", "1.00x"])
        rows.append([kind, "hive-rpc epc, face alone", "auth", f"{auth:,.0f}", ratio(auth, peer)])
        rows.append([kind, "hive-rpc epc + hub", "poll", f"{poll:,.0f}", ratio(poll, peer)])
    raw_peer = results["raw socket"][0]
    rows.append(
        [
            "raw socket",
            "bare TCP echo (floor, no EPC)",
            "-",
            f"{floor:,.0f}",
            ratio(floor, raw_peer),
        ]
    )
    print(table(["client", "server", "method", "calls/s", "vs peer"], rows))
    print()
    print(
        f"Floor: no server can beat the bare echo's round trip for a sequential client, so "
        f"the best reachable ratio to the peer (raw socket) is {ratio(floor, raw_peer)}."
    )
    peer, auth, poll = results["python-epc EPCClient"]
    print(
        f"Target (python-epc's client): hive-rpc epc >= {TARGET:g}x the peer: "
        f"auth {verdict(auth >= TARGET * peer)} ({ratio(auth, peer)}), "
        f"poll {verdict(poll >= TARGET * peer)} ({ratio(poll, peer)})"
    )


if __name__ == "__main__":
    main()
