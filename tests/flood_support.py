"""One process that floods the hub's socket with connections, driven line by line.

Run as ``python flood_support.py SOCKET N`` (in a session of its own, as an agent in
another terminal would be): it opens N connections and sends nothing on them, says
``opened N``, then obeys one command per line on stdin, answering one JSON line:

- ``refused K``: read each of the first K connections to its end; the error frames
  the hub sent on them (``[{"code":..., "limit":...}, ...]``, null for none).
- ``speak``: send ``hive/list`` on every connection still open and read its answer;
  ``{"answered": n, "refused": [limits...]}``.
- ``one METHOD``: open one more connection, send METHOD (id 7) and read until the
  answer or the end: the frame (or null), which stays open if answered.
- ``approver TOKEN_FILE``: open one more connection, prove it an approver and
  send ``hive/list``: the two answers (it stays open).
- ``held``: how many connections it holds open.

Blocking sockets with a generous timeout that only guards against a hang; nothing
here measures time.  Imported, ``flood(socket, n)`` runs it for a test.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HANG_GUARD_S = 60.0


def frame(method: str, msg_id: int) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {}})
    return f"Content-Length: {len(body)}\r\n\r\n{body}".encode()


def read_frame(sock: socket.socket, buf: bytearray) -> dict[str, Any] | None:
    """The next frame's message, or None at the end of the connection."""
    while True:
        head_end = buf.find(b"\r\n\r\n")
        if head_end >= 0:
            length = 0
            for line in bytes(buf[:head_end]).split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            end = head_end + 4 + length
            if len(buf) >= end:
                body = bytes(buf[head_end + 4 : end])
                del buf[:end]
                message: dict[str, Any] = json.loads(body)
                return message
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return None
        buf += chunk


def connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(HANG_GUARD_S)
    sock.connect(path)
    return sock


def summary(message: dict[str, Any] | None) -> dict[str, Any] | None:
    if message is None:
        return None
    error = message.get("error")
    if error is None:
        return {"id": message.get("id"), "result": True}
    data = error.get("data") or {}
    return {
        "id": message.get("id"),
        "code": error["code"],
        "limit": data.get("limit"),
        "message": error["message"],
    }


def main() -> None:
    path, n = sys.argv[1], int(sys.argv[2])
    held = [connect(path) for _ in range(n)]
    print(f"opened {len(held)}", flush=True)
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        answer: Any
        if command == "refused":
            answer = []
            for sock in held[: int(arg)]:
                buf = bytearray()
                first = read_frame(sock, buf)
                rest = read_frame(sock, buf) if first is not None else None
                answer.append(summary(first) if rest is None else {"more": True})
                sock.close()
            held = held[int(arg) :]
        elif command == "speak":
            answered, refused, kept = 0, [], []
            for i, sock in enumerate(held):
                try:
                    sock.sendall(frame("hive/list", i))
                except OSError:
                    refused.append("send failed")
                    continue
                got = summary(read_frame(sock, bytearray()))
                if got is not None and got.get("result"):
                    answered += 1
                    kept.append(sock)
                else:
                    refused.append(None if got is None else got.get("limit"))
                    sock.close()
            held = kept
            answer = {"answered": answered, "refused": refused}
        elif command == "one":
            sock = connect(path)
            sock.sendall(frame(arg, 7))
            answer = summary(read_frame(sock, bytearray()))
            if answer is not None and answer.get("result"):
                held.append(sock)
            else:
                sock.close()
        elif command == "approver":  # ARG: the approver token file
            token = open(arg).read().strip()  # noqa: SIM115
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 8, "method": "hive/proveApprover",
                 "params": {"token": token}}
            )  # fmt: skip
            sock = connect(path)
            sock.sendall(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
            sock.sendall(frame("hive/list", 9))
            buf = bytearray()
            answer = [summary(read_frame(sock, buf)), summary(read_frame(sock, buf))]
            held.append(sock)
        elif command == "held":
            answer = len(held)
        else:
            return
        print(json.dumps(answer), flush=True)


class Flood:
    """This script in a session of its own (an agent in another terminal), holding
    ``n`` connections to ``socket``; ``ask`` sends it one command."""

    def __init__(self, socket: Path, n: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(socket), str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.ask_line(None) == f"opened {n}"

    def ask_line(self, command: str | None) -> str:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        if command is not None:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the flood process died on {command!r}"
        return line.strip()

    def ask(self, command: str) -> Any:
        return json.loads(self.ask_line(command))

    def fill(self) -> int:
        """Open connections that each send a request until the hub refuses one: how
        many it took (the hub is then full of connections that spoke)."""
        taken = 0
        while self.ask("one hive/list").get("result"):
            taken += 1
        return taken

    def close(self) -> None:
        with self.process:  # closes its pipes
            self.process.kill()


@contextmanager
def flood(socket: Path, n: int) -> Iterator[Flood]:
    f = Flood(socket, n)
    try:
        yield f
    finally:
        f.close()


if __name__ == "__main__":
    main()
