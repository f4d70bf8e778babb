"""A custom request's round trip through ``hive-rpc lsp``, next to a stock pygls server.

The request is ``hive/status`` with empty parameters (``{}``: stock pygls cannot read
a custom request that has no ``params`` at all, and never answers it).
Servers, each a child process speaking LSP on its stdin/stdout:

* peer: a stock pygls ``LanguageServer`` on its own ``start_io`` (asyncio, pygls's own
  reader and writer) with a plain handler for ``hive/status`` that returns a fixed
  copy of a real hub's status (the same bytes as ours send);
* hive-rpc: ``python -m hive_rpc lsp --no-start`` in front of ``hive-rpc serve --store
  memory``: the request crosses pygls-under-trio, goes on to the hub over its Unix
  socket and back.

The client is the same for both, in this process: ``initialize`` then the timed
requests on blocking pipes, one at a time, and then with ``--window`` requests in
flight.  A third row times the same request sent straight to the hub's socket (no LSP),
which is the part of our round trip the peer does not do.

Prints calls per second and each row's ratio to the peer (higher is faster).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import IO, Any

from _common import hub_process, print_machine, ratio, short_tmp, table

from hive_rpc.protocol.framing import encode_frame

METHOD = "hive/status"


def serve_peer(status_file: str) -> None:
    """The peer: stock pygls, its own start_io, answering hive/status with a fixed dict."""
    from pygls.lsp.server import LanguageServer

    with open(status_file) as f:
        status = json.load(f)
    server = LanguageServer("peer", "1")

    @server.feature(METHOD)
    def _status(params: Any) -> Any:
        return status

    server.start_io()


class Frames:
    """Blocking Content-Length framing over a pair of pipes or a socket file."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self.reader, self.writer = reader, writer
        self.ids = itertools.count(1)

    def send(self, method: str, params: Any = None) -> int:
        msg_id = next(self.ids)
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.writer.write(encode_frame(json.dumps(msg).encode()))
        return msg_id

    def flush(self) -> None:
        self.writer.flush()

    def receive(self) -> dict[str, Any]:
        """The next response (server notifications and requests are skipped)."""
        while True:
            length = 0
            while (line := self.reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                raise RuntimeError("the server closed its output")
            msg: dict[str, Any] = json.loads(self.reader.read(length))
            if "id" in msg and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"error reply: {msg['error']}")
                return msg

    def call(self, method: str, params: Any = None) -> Any:
        self.send(method, params)
        self.flush()
        return self.receive()["result"]


def sequential(frames: Frames, n: int, warmup: int) -> float:
    for _ in range(warmup):
        frames.call(METHOD, {})
    t0 = time.perf_counter()
    for _ in range(n):
        frames.call(METHOD, {})
    return n / (time.perf_counter() - t0)


def pipelined(frames: Frames, n: int, window: int) -> float:
    t0 = time.perf_counter()
    sent = done = 0
    while done < n:
        while sent < n and sent - done < window:
            frames.send(METHOD, {})
            sent += 1
        frames.flush()
        frames.receive()
        done += 1
    return n / (time.perf_counter() - t0)


@contextlib.contextmanager
def lsp_child(args: list[str]) -> Iterator[Frames]:
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    frames = Frames(proc.stdout, proc.stdin)
    try:
        frames.call("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {}})
        frames.writer.write(
            encode_frame(
                json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode()
            )
        )
        yield frames
    finally:
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure(args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    with short_tmp() as tmp:
        sock_path = tmp / "hub.sock"
        where = ["--socket", os.fspath(sock_path), "--data-dir", os.fspath(tmp / "data")]
        with hub_process("memory", sock_path, tmp / "data"):
            ours = [sys.executable, "-m", "hive_rpc", "lsp", "--no-start", *where]
            with lsp_child(ours) as frames:
                status = frames.call(METHOD, {})
                seq = sequential(frames, args.n, args.warmup)
                out["hive-rpc lsp + hub"] = (seq, pipelined(frames, args.n, args.window))
            status_file = tmp / "status.json"
            status_file.write_text(json.dumps(status))
            peer = [sys.executable, __file__, "--serve-peer", os.fspath(status_file)]
            with lsp_child(peer) as frames:
                if frames.call(METHOD, {}) != status:
                    raise RuntimeError("the peer does not answer like the hub")
                seq = sequential(frames, args.n, args.warmup)
                out["stock pygls start_io (peer)"] = (seq, pipelined(frames, args.n, args.window))
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(os.fspath(sock_path))
                with s.makefile("rb") as r, s.makefile("wb") as w:
                    frames = Frames(r, w)
                    seq = sequential(frames, args.n, args.warmup)
                    out["hub socket alone (no LSP)"] = (
                        seq,
                        pipelined(frames, args.n, args.window),
                    )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=3000, help="timed requests per row")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--window", type=int, default=32, help="requests in flight")
    parser.add_argument("--serve-peer", metavar="STATUS_JSON", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_peer:
        serve_peer(args.serve_peer)
        return
    print_machine()
    rates = measure(args)
    peer_seq, peer_pipe = rates["stock pygls start_io (peer)"]
    rows = []
    for name in ("stock pygls start_io (peer)", "hive-rpc lsp + hub", "hub socket alone (no LSP)"):
        seq, pipe = rates[name]
        rows.append(
            [name, f"{seq:,.0f}", ratio(seq, peer_seq), f"{pipe:,.0f}", ratio(pipe, peer_pipe)]
        )
    print(
        table(
            [
                "server",
                "one at a time (req/s)",
                "vs peer",
                f"{args.window} in flight (req/s)",
                "vs peer",
            ],
            rows,
        )
    )
    seq, pipe = rates["hive-rpc lsp + hub"]
    print()
    print(
        f"hive-rpc lsp answers {METHOD} at {ratio(seq, peer_seq)} the stock pygls server's "
        f"rate one at a time and {ratio(pipe, peer_pipe)} with {args.window} in flight, "
        "including the hop to the hub that the peer does not make."
    )


if __name__ == "__main__":
    main()
