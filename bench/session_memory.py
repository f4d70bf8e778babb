"""What an idle agent session costs the hub's memory, as it grows with the fleet.

A real hub (``hive-rpc serve``, memory store) in a child process.  Agent sessions are
opened as ``hive-rpc mcp`` opens them, without its process: a connection to the
editor socket sends ``hive/openMcp`` (the relay's options), then the MCP
``initialize``, ``notifications/initialized`` and ``tools/list`` lines, reads the
answers and stays open, idle.  They are opened by helper processes, each in a
session of its own (the hub holds at most 64 connections per peer, its uid and
session: core/limits.py connections_per_peer), in steps, and the hub's ``VmRSS`` is
read after each step (after two warm-up sessions: the first builds the hub's one
MCP server, bench/mcp_session_cost.py).

Floor, same hub, same run: idle editor connections that sent one ``hive/status``
(what any client costs the hub), opened the same way.

Target (issue 30): linear (the same figure per session at every step) and small.
Nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from _common import hub_process, print_machine, ratio, short_tmp, table

HELPER = r"""
import json, os, socket, sys
path, kind, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
def frame(msg):
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
def read_frame(sock):
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = int(head.split(b":")[1])
    while len(rest) < length:
        rest += sock.recv(65536)
    return json.loads(rest[:length])
def read_line(sock, buf):
    while b"\n" not in buf:
        buf += sock.recv(65536)
    line, _, buf = buf.partition(b"\n")
    return json.loads(line), buf
socks = []
for i in range(count):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    if kind == "plain":
        sock.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "hive/status", "params": {}}))
        read_frame(sock)
    else:
        options = {"tools": ["ask"], "human_input_timeout_s": 60.0, "progress_every_s": 10.0,
                   "project_dir": os.getcwd(), "suffix": "b%05x" % (os.getpid() * 100 + i)}
        sock.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "hive/openMcp",
                            "params": options}))
        read_frame(sock)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}}}
        sock.sendall(json.dumps(init).encode() + b"\n")
        buf = b""
        answer, buf = read_line(sock, buf)
        sock.sendall(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                     b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}\n')
        answer, buf = read_line(sock, buf)
        assert answer.get("id") == 2 and "result" in answer, answer
    socks.append(sock)
print("ok", flush=True)
sys.stdin.read()
"""
PER_HELPER = 50
"""Connections one helper opens: under the hub's 64 per peer."""


def hub_pid(path: Path) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(os.fspath(path))
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hive/status", "params": {}})
        sock.sendall(b"Content-Length: %d\r\n\r\n%s" % (len(body), body.encode()))
        buf = b""
        while True:
            buf += sock.recv(65536)
            head, sep, rest = buf.partition(b"\r\n\r\n")
            if sep and len(rest) >= int(head.split(b":")[1]):
                return int(json.loads(rest)["result"]["pid"])


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmRSS:"):
                return int(row.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def open_many(path: Path, kind: str, count: int, helpers: list[subprocess.Popen[bytes]]) -> None:
    """``count`` idle connections of ``kind``, by helpers of PER_HELPER at most."""
    while count > 0:
        take = min(count, PER_HELPER)
        proc = subprocess.Popen(
            [sys.executable, "-c", HELPER, os.fspath(path), kind, str(take)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert proc.stdout is not None
        if proc.stdout.readline() != b"ok\n":
            raise RuntimeError(f"a helper could not open {take} {kind} connections")
        helpers.append(proc)
        count -= take


def settled_rss(pid: int) -> int:
    """The hub's RSS once it is idle again (read twice, 0.5 s apart, the larger)."""
    time.sleep(0.5)
    first = rss_kib(pid)
    time.sleep(0.5)
    return max(first, rss_kib(pid))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, nargs="+", default=[10, 100], help="sessions (10 100)")
    args = ap.parse_args()
    print_machine()
    rows = []
    with short_tmp() as tmp:
        path, data = tmp / "hub.sock", tmp / "data"
        with hub_process("memory", path, data):
            pid = hub_pid(path)
            helpers: list[subprocess.Popen[bytes]] = []
            try:
                open_many(path, "mcp", 2, helpers)  # the hub's one MCP server, built once
                open_many(path, "plain", 2, helpers)
                per: dict[str, list[tuple[int, float]]] = {"plain": [], "mcp": []}
                for kind in ("plain", "mcp"):
                    before, opened = settled_rss(pid), 0
                    for step in args.steps:
                        open_many(path, kind, step - opened, helpers)
                        opened = step
                        grown = settled_rss(pid) - before
                        per[kind].append((step, grown / step))
            finally:
                for proc in helpers:
                    assert proc.stdin is not None
                    proc.stdin.close()
                    proc.wait(10)
    first = per["mcp"][0][1]
    for kind, name in (("plain", "floor: idle editor connection"), ("mcp", "idle MCP session")):
        for (step, kib), (_, floor) in zip(per[kind], per["plain"], strict=True):
            rows.append(
                (
                    name,
                    f"{step:,}",
                    f"{kib:.1f}",
                    ratio(kib, floor),
                    ratio(kib, first) if kind == "mcp" else "",
                )
            )
    print(table(["hub RSS", "open", "KiB each", "x floor", "x first step"], rows))


if __name__ == "__main__":
    main()
