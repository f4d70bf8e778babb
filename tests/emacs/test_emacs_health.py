"""A real `emacs -nw` under tmux shows when the hub's store is degraded, and when it
works again: the hub is a real process on the SQLite store whose writes are refused,
as on a full disk, while a flag file exists (the hub's own `hive/health`)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from emacs_session import EmacsSession, running

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

# The hub, with every SQLite connection it opens refusing UPDATE statements while
# the flag file exists, as SQLite does on a full disk ("database or disk is full").
FULL_DISK_HUB = r"""
import sqlite3, sys
from pathlib import Path

flag = Path(sys.argv[1])
connect = sqlite3.connect


class FullDisk:
    def __init__(self, db):
        self._db = db

    def execute(self, sql, *args):
        if flag.exists() and sql.lstrip().upper().startswith("UPDATE"):
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._db, name)


sqlite3.connect = lambda *a, **k: FullDisk(connect(*a, **k))
from hive_rpc.cli import main

sys.exit(main(sys.argv[2:]))
"""

DEGRADED = (
    "hive-rpc: the hub's store is degraded: database or disk is full (hive-rpc doctor checks it)"
)


class FullDiskSession(EmacsSession):
    """``EmacsSession`` with the hub above instead of a memory-store hub."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, "(setq hive-rpc-auto-ask nil)")
        self.flag = root / "disk-full"

    def hub_command(self) -> list[str]:
        serve = ["serve", "--socket", str(self.socket), "--data-dir", str(self.root / "data")]
        return [sys.executable, "-c", FULL_DISK_HUB, str(self.flag), *serve, "--no-notify"]


@pytest.fixture
def emacs(short_tmp: Path) -> Iterator[FullDiskSession]:
    yield from running(FullDiskSession(short_tmp))


def status(emacs: FullDiskSession) -> dict[str, object]:
    done = emacs.cli("status", "--json")
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_mode_line_and_echo_area_say_when_the_store_is_degraded(
    emacs: FullDiskSession,
) -> None:
    waiting = emacs.ask("Still there?", "--agent", "a")
    emacs.wait_for(lambda screen: "hive:1" in screen)
    emacs.flag.touch()
    emacs.ask("Due at once", "--agent", "a", "--timeout", "0.5")  # its expiry is refused
    screen = emacs.wait_for(lambda screen: DEGRADED in screen and "hive:2!" in screen)
    assert status(emacs)["degraded"] == "store: database or disk is full"

    os.unlink(emacs.flag)  # room again: the retried expiry goes through
    # The question that expired meanwhile was never shown: the mode line says so.
    screen = emacs.wait_for(
        lambda screen: (
            "hive-rpc: the hub's store works again" in screen
            and "hive:1, 1 expired unseen " in screen
        )
    )
    assert "hive:1!" not in screen
    assert status(emacs)["degraded"] is None
    assert emacs.record(waiting)["status"] == "pending"
