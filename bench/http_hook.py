"""The http permission hook: Claude Code's ``PermissionRequest`` POSTed to the hub itself
(``POST /hook/claude-code``, faces/hook_http.py), start to decision, beside today's
command hook (``hive-rpc hook claude-code``, a process per request) and a bare HTTP
POST to a trivial loopback server, all in the same run.

Each request is what Claude Code sends (the event as JSON, the hook token as the
bearer header) on a new loopback connection, from a long-lived process named
``claude`` (``CLIENT``), timed from connect to the whole reply; an editor (an
approver subscribed to the hub, as in permission_roundtrip.py) allows every
permission prompt the moment it is announced, so what is left is the cost of HTTP
and of the hub, not of a human.  Timed, one after
another within a round, rounds interleaved (medians):

* floor 1: the same POST to a trivial server on raw sockets (another process) that
  reads the request and answers ``{}``: the least any HTTP hook costs here;
* floor 2: the same POST to a trivial ASGI app on hypercorn (another process), the
  hub's own HTTP stack with nothing behind it;
* floor 3: a permission question asked over the hub's socket on a new connection
  (``hive/ask``, the editor's ``hive/respond``, ``hive/await``), the least an
  editor's answer costs with no HTTP at all: the http hook answered by the editor,
  against it, is what HTTP and the route add to the editor's round trip;
* the http hook, the editor answers (``rule/check``, ``hive/ask``, the editor's
  ``hive/respond``, the decision);
* the http hook, an allow rule answers (``rule/check`` alone);
* the command hook, the editor answers (a process from fork to exit, the figure
  permission_roundtrip.py shows).

Printed as ratios to both floors.  Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio
from _common import print_machine, ratio, short_tmp, table
from permission_roundtrip import approve_everything, event

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.permission_hook import HOOK_PATH
from hive_rpc.host.paths import HOOK_TOKEN_NAME

RAW_SERVER = r"""
import socket, sys
body = b"{}"
reply = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n"
         b"connection: close\r\n\r\n" + body)
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
while True:
    conn, _ = server.accept()
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(rest) < length:
            rest += conn.recv(65536)
        conn.sendall(reply)
"""
"""Floor 1: read the request, answer ``{}``, close."""

ASGI_SERVER = r"""
import sys, trio
from hypercorn.config import Config
from hypercorn.trio import serve

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            kind = (await receive())["type"].rsplit(".", 1)[1]
            await send({"type": f"lifespan.{kind}.complete"})
            if kind == "shutdown":
                return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})

async def main():
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(lambda task_status: serve(app, config, task_status=task_status))
        print(binds[0].rsplit(":", 1)[1], flush=True)

trio.run(main)
"""
"""Floor 2: hypercorn on trio, as the hub serves HTTP, with a trivial app."""


@contextmanager
def server_process(code: str) -> Iterator[int]:
    """A floor server in a process of its own; its port."""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline())
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def http_hub(socket: Path, data_dir: Path) -> Iterator[None]:
    """``hive-rpc serve --http 127.0.0.1:0`` as a child process, until the block ends."""
    read_fd, write_fd = os.pipe()
    argv = [sys.executable, "-m", "hive_rpc", "serve", "--store", "memory", "--no-notify",
            "--socket", os.fspath(socket), "--data-dir", os.fspath(data_dir),
            "--http", "127.0.0.1:0", "--ready-fd", str(write_fd)]  # fmt: skip
    proc = subprocess.Popen(argv, pass_fds=(write_fd,))
    os.close(write_fd)
    try:
        if os.read(read_fd, 16) != b"ready\n":
            raise RuntimeError("the hub did not start")
        yield
    finally:
        os.close(read_fd)
        proc.terminate()
        proc.wait(10)


def post_request(port: int, path: str, body: bytes, token: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


CLIENT = r"""
import json, os, socket, subprocess, sys, time

def posted(port, request, expect):
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(request)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    elapsed = time.perf_counter() - start
    if not reply.startswith(b"HTTP/1.1 200") or expect not in reply:
        raise SystemExit(f"port {port}: {reply[:300]!r}")
    return elapsed

def frame(conn, body):
    data = json.dumps(body).encode()
    conn.sendall(b"Content-Length: %d\r\n\r\n" % len(data) + data)

def reply(conn, buffered):
    while b"\r\n\r\n" not in buffered:
        buffered += conn.recv(65536)
    head, _, rest = buffered.partition(b"\r\n\r\n")
    n = int(head.split(b":")[1])
    while len(rest) < n:
        rest += conn.recv(65536)
    return json.loads(rest[:n]), rest[n:]

def asked(path, params, expect):
    start = time.perf_counter()
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(path)
        frame(conn, {"jsonrpc": "2.0", "id": 1, "method": "hive/ask", "params": params})
        record, left = reply(conn, b"")
        prompt = record["result"]["id"]
        wait = {"id": prompt, "timeout_s": 30, "agent_id": params["agent_id"]}
        frame(conn, {"jsonrpc": "2.0", "id": 2, "method": "hive/await", "params": wait})
        record, _ = reply(conn, left)
    elapsed = time.perf_counter() - start
    if record["result"].get("answer") != expect:
        raise SystemExit(f"socket: {record!r}")
    return elapsed

def ran(argv, stdin, env, expect):
    start = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or expect not in done.stdout:
        raise SystemExit(f"{argv[:4]}: {done.returncode} {done.stdout[:200]!r}")
    return elapsed

plan = json.load(sys.stdin)
runs = {}
for name, run in plan["runs"].items():
    expect = run["expect"].encode()
    if "port" in run:
        runs[name] = (posted, (run["port"], run["request"].encode("latin-1"), expect))
    elif "socket" in run:
        runs[name] = (asked, (run["socket"], run["params"], run["expect"]))
    else:
        env = {**os.environ, **run["env"]}
        runs[name] = (ran, (run["argv"], run["stdin"].encode(), env, expect))
for fn, args in runs.values():  # warm the caches
    fn(*args)
samples = {name: [] for name in runs}
for _ in range(plan["rounds"]):
    for name, (fn, args) in runs.items():
        samples[name].append(fn(*args))
print(json.dumps(samples))
"""
"""The asker: a long-lived process named ``claude`` (a link so named to Python), as
Claude Code is: the hub finds it holding the connection (faces/hook_http.py), and
the command hook finds it as its parent (cli/hook.py), exactly as for Claude Code.
Each POST is a new connection (``Connection: close``), timed connect to the whole
reply; each command hook a process, timed fork to exit."""


async def measure(
    rounds: int, socket: Path, data_dir: Path, floors: tuple[int, int], tmp: Path
) -> dict[str, list[float]]:
    async with await HubClient.connect(socket) as hub:
        status = await hub.call("hive/status")
        if (why := await prove_approver(hub.call)) is not None:
            raise RuntimeError(f"cannot add the rule: {why}")
        await hub.call(
            "rule/add", {"pattern": "Bash(make)", "decision": "allow", "scope": "global"}
        )
    port = int(str(status["http_url"]).rsplit(":", 1)[1].split("/")[0])
    token = (data_dir / HOOK_TOKEN_NAME).read_text().strip()
    asked, ruled = event(os.fspath(tmp), "npm test"), event(os.fspath(tmp), "make")
    hook = [sys.executable, "-m", "hive_rpc", "hook", "claude-code", "--timeout", "30"]
    raw, asgi = floors

    def post(to: int, body: bytes, expect: str) -> dict[str, Any]:
        request = post_request(to, HOOK_PATH, body, token).decode("latin-1")
        return {"port": to, "request": request, "expect": expect}

    runs = {
        "POST to a raw-socket server (floor 1)": post(raw, asked, "{}"),
        "POST to hypercorn, trivial app (floor 2)": post(asgi, asked, "{}"),
        "question over the socket, the editor answers (floor 3)": {
            "socket": os.fspath(socket), "expect": "allow",
            "params": {"question": "Run make?", "choices": ["allow", "deny"],
                       "kind": "permission", "agent_id": "bench-floor"},
        },
        "http hook, the editor answers": post(port, asked, '"allow"'),
        "http hook, an allow rule answers": post(port, ruled, '"allow"'),
        "command hook, the editor answers": {
            "argv": hook, "stdin": asked.decode(), "expect": '"allow"',
            "env": {"HIVE_RPC_SOCKET": os.fspath(socket)},
        },
    }  # fmt: skip
    claude = tmp / "claude"
    claude.symlink_to(sys.executable)
    plan = json.dumps({"rounds": rounds, "runs": runs}).encode()
    async with trio.open_nursery() as nursery:
        await nursery.start(approve_everything, socket)
        done = await trio.run_process(
            [os.fspath(claude), "-c", CLIENT], stdin=plan, capture_stdout=True
        )
        nursery.cancel_scope.cancel()
    samples: dict[str, list[float]] = json.loads(done.stdout)
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    print_machine()
    with short_tmp() as tmp:
        socket, data_dir = tmp / "hub.sock", tmp / "data"
        with (
            server_process(RAW_SERVER) as raw,
            server_process(ASGI_SERVER) as asgi,
            http_hub(socket, data_dir),
        ):
            samples = trio.run(measure, args.rounds, socket, data_dir, (raw, asgi), tmp)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor1, floor2, floor3 = (medians[name] for name in list(medians)[:3])
    rows = [
        (name, f"{m * 1000:.2f}", ratio(m, floor1), ratio(m, floor2), ratio(m, floor3))
        for name, m in medians.items()
    ]
    print(f"\n{args.rounds} interleaved rounds, median wall time per request (connect to reply)\n")
    heads = ["request", "median ms", "vs floor 1 (raw)", "vs floor 2 (hypercorn)", "vs floor 3"]
    print(table(heads, rows))


if __name__ == "__main__":
    main()
