"""A real ``nats-server -js`` on a loopback port, for the tests that need one (the
``nats_server`` fixture in conftest.py).  Skipped where nats-server is missing."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

NATS_SERVER = shutil.which("nats-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class NatsServer:
    """One ``nats-server -js`` on a loopback port, storing under ``store_dir``."""

    def __init__(self, store_dir: Path) -> None:
        self.port = free_port()
        self.store_dir = store_dir
        self.url = f"nats://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert NATS_SERVER is not None
        self.process = subprocess.Popen(
            [
                NATS_SERVER,
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-sd",
                str(self.store_dir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            assert self.process.poll() is None, "nats-server exited at start"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    if conn.recv(4).startswith(b"INFO"):
                        return
            except OSError:
                pass
            assert time.monotonic() < deadline, "nats-server did not accept connections"
            time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None
