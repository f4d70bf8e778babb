"""Running the ``hive-rpc`` command as a shell user does: real processes, a private
socket and data dir, the hub it autostarts killed afterwards."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

HIVE_RPC = Path(sys.executable).parent / "hive-rpc"


def exited(pid: int) -> bool:
    """Whether process ``pid`` has exited.  A zombie has: only its parent may reap
    it, and a hub started in the background is no child of the test."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


def run_setup(
    agent: str,
    *args: str,
    home: Path,
    cwd: Path | None = None,
    hidden: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``hive-rpc setup AGENT ARGS`` as installed (the console script), run as a user
    whose HOME is ``home``: without the test run's own ``HIVE_RPC_*`` variables nor those
    that start with a prefix in ``hidden`` (the agent's own, which would point setup at
    the real user's files), with ``env`` on top."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("HIVE_RPC_", *hidden))}
    return subprocess.run(
        [str(HIVE_RPC), "setup", agent, *args],
        cwd=cwd,
        env={**kept, "HOME": str(home), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


class Shell:
    """Runs ``hive-rpc`` with a private socket and data dir; kills the hub afterwards."""

    def __init__(self, root: Path) -> None:
        self.socket = root / "run" / "hub.sock"
        self.data_dir = root / "data"
        self.env = {
            **os.environ,
            "HIVE_RPC_SOCKET": str(self.socket),
            "HIVE_RPC_DATA_DIR": str(self.data_dir),
        }

    def run(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hive_rpc", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def json(self, *args: str) -> Any:
        out = self.run(*args, "--json")
        assert out.stdout, out.stderr
        return json.loads(out.stdout)

    def hub_pid(self) -> int:
        return int(self.json("status")["pid"])

    def wait_hub_gone(self) -> None:
        """Block until the hub's socket lock is free: the kernel frees it when the hub dies."""
        lock = self.socket.with_name("hub.sock.lock")
        if not lock.exists():
            return
        fd = os.open(lock, os.O_RDWR)
        done = threading.Event()

        def take() -> None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            done.set()

        threading.Thread(target=take, daemon=True).start()
        assert done.wait(15), "hub did not exit"
        os.close(fd)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        lock = self.socket.with_name("hub.sock.lock")
        if lock.exists():
            try:
                os.kill(int(lock.read_text()), sig)
            except (ValueError, ProcessLookupError):
                return
            self.wait_hub_gone()
