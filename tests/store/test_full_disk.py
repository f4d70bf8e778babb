"""A full disk under the data dir never stops the hub: asks get a clear error, reads
go on, ``hive/status`` says ``degraded``, and the prompt that fell due meanwhile
expires once there is room again.

A real hub process on a real full file system: a small tmpfs mounted for the test
(this needs root or CAP_SYS_ADMIN; without it the test is skipped, saying so)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import Shell

from hive_rpc import cli

DISK_SIZE = "4m"
WAIT_S = 120.0
"""Generous: the hub retries a refused expiry with a backoff of up to 60 s."""


@pytest.fixture
def small_disk(short_tmp: Path) -> Iterator[Path]:
    mount_point = short_tmp / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE},mode=0700", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): needs root")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(path: Path) -> None:
    """Write zeros to ``path`` until the file system is full."""
    chunk = b"\0" * 65536
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    return
                chunk = chunk[: len(chunk) // 2]
    finally:
        os.close(fd)


def _until(what: str, check: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + WAIT_S
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_full_disk_degrades_then_recovers(short_tmp: Path, small_disk: Path) -> None:
    sh = Shell(short_tmp)
    sh.data_dir = small_disk / "data"
    sh.env["HIVE_RPC_DATA_DIR"] = str(sh.data_dir)
    try:
        # Due in 20 s: time enough to fill the disk first, even on a slow machine.
        soon = sh.run("ask", "falls due while the disk is full", "--timeout", "20").stdout
        stays = sh.run("ask", "stays pending").stdout
        soon, stays = soon.strip(), stays.strip()
        assert soon
        assert stays
        _fill(small_disk / "filler")

        # An ask is refused with the store's own words, and exit 4 (try again later).
        refused = sh.run("ask", "no room for me")
        assert refused.returncode == cli.EXIT_UNREACHABLE, refused.stderr
        assert "database or disk is full" in refused.stderr
        assert "Traceback" not in refused.stderr

        # The expiry write fails outside any request: the hub stays up and says so.
        status = _until(
            "hive/status to say degraded",
            lambda: (s := sh.json("status"))["degraded"] and s,
        )
        assert status["degraded"] == "store: database or disk is full"
        assert "degraded store: database or disk is full" in sh.run("status").stdout
        # Reads work: the overdue prompt is still pending, the other one too.
        assert {p["id"] for p in sh.json("list")} == {soon, stays}
        assert sh.json("poll", soon)["status"] == "pending"
        # Not once per retry (the log is on the full disk too, so it may hold nothing:
        # tests/registry/test_store_trouble.py checks "exactly once").
        log = (sh.data_dir / "hub.log").read_text(errors="replace")
        assert log.count("store: expire write failed") <= 1, log

        # Room again: the retried expiry goes through, at the prompt's own deadline.
        (small_disk / "filler").unlink()
        expired = _until(
            "the overdue prompt to expire",
            lambda: (p := sh.json("poll", soon))["status"] == "expired" and p,
        )
        assert expired["expired_at"] == pytest.approx(expired["deadline_at"])
        assert sh.json("status")["degraded"] is None
        assert sh.json("poll", stays)["status"] == "pending"
        answered = sh.run("answer", stays, "fine")
        assert answered.returncode == cli.EXIT_OK, answered.stderr
    finally:
        with contextlib.suppress(Exception):
            (small_disk / "filler").unlink(missing_ok=True)
        sh.stop()


def test_status_json_has_degraded_null_when_healthy(sh: Shell) -> None:
    out = sh.run("status", "--json")
    assert json.loads(out.stdout)["degraded"] is None
