"""A full disk under the data dir never stops the hub: asks get a clear error, reads
go on, ``hive/status`` says ``degraded``, and the prompt that fell due meanwhile
expires once there is room again.

A real hub process on a real full file system: a small tmpfs mounted for the test
(this needs root or CAP_SYS_ADMIN; without it the test is skipped, saying so)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import Shell
from disk_support import fill
from waiting import until_sync

from hive_rpc import cli

WAIT_S = 120.0
"""Generous: the hub retries a refused expiry with a backoff of up to 60 s."""


def _until(what: str, check: Callable[[], Any]) -> Any:
    """``check()``'s first true value: the hub is another process, seen by the CLI."""
    return until_sync(check, what, within_s=WAIT_S)


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
        fill(small_disk / "filler")

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
        # tests/runtime/test_store_trouble.py checks "exactly once").
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
