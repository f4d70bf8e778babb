"""Hostile clients against a real hub process (``hive-rpc serve`` started by the CLI).

What needs a process of its own: the parser's real stack depth (a 980-deep value was
accepted and then stopped every restart), a hub stopped with SIGSTOP (the CLI must
give up, not hang), the listen backlog (a burst of connects while the hub is not
accepting), and a low fd limit (refuse politely above the cap, never loop on EMFILE).
"""

from __future__ import annotations

import os
import re
import resource
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from cli_support import Shell
from waiting import until_sync

from hive_rpc import cli
from hive_rpc.client.async_client import HubClient
from hive_rpc.faces.accept_loop import QuietAcceptErrors, split_descriptors
from hive_rpc.host.paths import LOG_NAME
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import Endpoint, ErrorResponse


def raw_request(path: Path, body: str) -> Any:
    """One request written by hand on a fresh connection; the hub's first reply."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(os.fspath(path))
        s.sendall(encode_frame(body.encode()))
        endpoint = Endpoint(max_body=1 << 24)
        while True:
            data = s.recv(65536)
            assert data, "the hub closed the connection"
            for msg in endpoint.receive_data(data):
                return msg


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_980_deep_value_is_refused_and_the_hub_restarts(sh: Shell) -> None:
    assert sh.run("status").returncode == cli.EXIT_OK
    schema = '{"type":"object","properties":{"a":{"type":"string"}},"title":%s}'
    body = '{"jsonrpc":"2.0","id":1,"method":"hive/ask","params":{"question":"q","schema":%s}}'
    for depth in (33, 300, 980):  # EPC broke above 200, MCP ~300, the restart at 980
        deep = "[" * depth + '"x"' + "]" * depth
        reply = raw_request(sh.socket, body % (schema % deep))
        assert isinstance(reply, ErrorResponse), reply
        if reply.code == -32700:  # the parser's own guard, below the stack's limit
            assert depth == 980, reply
            assert reply.message == "JSON nested too deeply"
            assert reply.id == 1, reply  # was null: which call failed? (issue 26)
        else:
            assert (reply.code, reply.data["limit"]) == (-32602, "json_depth"), reply
    # The deepest schema allowed is kept, and comes back after a restart.
    fits = "[" * 29 + '"x"' + "]" * 29
    reply = raw_request(sh.socket, body % (schema % fits))
    asked = reply.result
    assert sh.run("restart").returncode == cli.EXIT_OK
    listed = sh.json("list")
    assert [r["id"] for r in listed] == [asked["id"]]


def test_the_cli_gives_up_on_a_stopped_hub(sh: Shell) -> None:
    asked = sh.run("ask", "still there?").stdout.strip()
    with stopped(sh.hub_pid()):
        out = sh.run("list", "--hub-timeout", "1")
        assert out.returncode == cli.EXIT_UNREACHABLE, out
        assert f"the hub at {sh.socket} did not answer in 1 s" in out.stderr
        out = sh.run("poll", asked, "--wait", "--hub-timeout", "1", timeout=60)
        assert out.returncode == cli.EXIT_UNREACHABLE, out
    assert sh.run("poll", asked).returncode == cli.EXIT_PENDING


def test_a_burst_of_connects_waits_in_the_backlog(sh: Shell) -> None:
    burst = 300  # ~180 got EAGAIN with the old backlog of 128
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    if somaxconn < burst:
        pytest.skip(f"net.core.somaxconn is {somaxconn}, below the burst of {burst}")
    assert sh.run("status").returncode == cli.EXIT_OK
    socks: list[socket.socket] = []
    failed = 0
    try:
        with stopped(sh.hub_pid()):
            for _ in range(burst):
                s = socket.socket(socket.AF_UNIX)
                s.setblocking(False)
                socks.append(s)
                try:
                    s.connect(os.fspath(sh.socket))
                except BlockingIOError:
                    failed += 1
    finally:
        for s in socks:
            s.close()
    assert failed == 0
    assert sh.run("status").returncode == cli.EXIT_OK


def test_connections_over_the_cap_get_one_error_and_the_log_stays_quiet(sh: Shell) -> None:
    """150 connections from one process on a hub of 128 descriptors: each gets an
    answer or one -32011 naming the limit (its own share, connections_per_peer, or
    the hub's, connections: faces/accept_loop.py's Admission), never a bare close."""
    fds = 128  # so the hub's cap and reserve are split_descriptors(128): 48 and 16
    started = subprocess.run(
        [sys.executable, "-m", "hive_rpc", "status"],
        env=sh.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (fds, fds)),
    )
    assert started.returncode == cli.EXIT_OK, started.stderr
    log = sh.data_dir / LOG_NAME
    before = log.stat().st_size
    socks = []
    refusals = []
    try:
        for _ in range(150):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            s.connect(os.fspath(sh.socket))
            socks.append(s)
        for s in socks:
            s.sendall(encode_frame(b'{"jsonrpc":"2.0","id":1,"method":"hive/status"}'))
        for s in socks:
            endpoint = Endpoint(max_body=1 << 20)
            msgs: list[Any] = []
            while not msgs:
                chunk = s.recv(65536)
                if not chunk:
                    break
                msgs = endpoint.receive_data(chunk)
            assert msgs, "closed without a word"
            if isinstance(msgs[0], ErrorResponse):
                refusals.append(msgs[0])
    finally:
        for s in socks:
            s.close()
    cap, reserve = split_descriptors(fds)
    assert (cap, reserve) == (48, 16)
    # Those admitted for an approver answer hive/status (how one finds its token)
    # until another arrival makes them room: no fixed number of refusals, but some.
    assert refusals
    assert {r.code for r in refusals} == {-32011}
    assert {r.data["limit"] for r in refusals} <= {"connections", "connections_per_peer"}
    assert sh.run("status").returncode == cli.EXIT_OK  # served again once they closed
    grown = log.read_bytes()[before:].decode(errors="replace")
    assert "Traceback" not in grown
    assert len(grown.splitlines()) < 10, grown


def test_list_follows_the_pages(sh: Shell) -> None:
    assert sh.run("status").returncode == cli.EXIT_OK
    count = cli.LIST_PAGE * 2 + 5

    async def ask_many() -> list[str]:
        async with await HubClient.connect(sh.socket) as client:
            return [
                (await client.call("hive/ask", {"question": f"q{i}", "agent_id": f"a{i % 3}"}))[
                    "id"
                ]
                for i in range(count)
            ]

    ids = trio.run(ask_many)
    assert [r["id"] for r in sh.json("list")] == ids
    assert [r["id"] for r in sh.json("list", "--agent", "a1")] == ids[1::3]
    assert len(sh.run("list").stdout.splitlines()) == count + 1  # and the header


RETRIES = 30
"""How many of trio's accept retries (one every 0.1 s) the hub out of descriptors is
watched through for a second EMFILE warning."""
RETRY = re.compile(
    re.escape(QuietAcceptErrors.RETRY_LINE.format("EMFILE", "COUNT")).replace("COUNT", r"(\d+)")
)


def retries(said: str) -> int:
    """The most accept retries the hub's debug lines say it folded into its warning."""
    return max((int(n) for n in RETRY.findall(said)), default=0)


def test_the_http_face_out_of_descriptors_says_so_once(sh: Shell, tmp_path: Path) -> None:
    """hypercorn accepts with trio.serve_listeners, which logged "accept returned
    EMFILE" with a traceback ten times a second; the hub folds that into one line a
    minute (each retry a short debug line: the hub runs at debug level here, so the
    test sees the retries the warning stands for), and serves again once connections
    close."""
    fds = 128
    err = tmp_path / "hub.err"
    with err.open("wb") as err_file:
        hub = subprocess.Popen(
            [sys.executable, "-m", "hive_rpc", "serve", "--store", "memory", "--no-notify",
             "--http", "127.0.0.1:0", "--log-level", "debug"],
            env=sh.env, stdout=subprocess.DEVNULL, stderr=err_file,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (fds, fds)),
        )  # fmt: skip
    socks: list[socket.socket] = []
    try:

        def serving() -> bool:
            assert hub.poll() is None, err.read_text()
            return sh.run("status", "--no-start").returncode == cli.EXIT_OK

        until_sync(serving, "the hub to serve", within_s=30)
        url = sh.json("status")["http_url"]
        host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
        for _ in range(fds + 40):  # more than the hub has descriptors for
            s = socket.create_connection((host, int(port)), timeout=30)
            socks.append(s)
        # The hub says so (another process's stderr: polled) ...
        until_sync(lambda: "accept returned EMFILE" in err.read_text(), "EMFILE", within_s=30)
        # ... and not again while they are held: trio retries accept every 0.1 s, each
        # retry a debug line of its own (the hub's stderr: polled), the warning once.
        until_sync(lambda: retries(err.read_text()) >= RETRIES, "the retries", within_s=60)
        said = err.read_text()
        assert said.count("accept returned EMFILE") == 1, said[-3000:]
        assert "Traceback" not in said
        for s in socks:
            s.close()
        socks.clear()
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(f"GET /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            assert s.recv(100).startswith(b"HTTP/1.1 401")  # served again (no token)
    finally:
        for s in socks:
            s.close()
        hub.send_signal(signal.SIGTERM)
        hub.wait(timeout=30)
