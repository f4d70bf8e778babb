"""Faults that used to stop the hub (issue 26, section 5), against the real program.

- A hub that crashed on a full disk starts again: degraded, saying what is full, its
  pending prompts readable, no temp file left behind.  A real full file system: a
  small tmpfs mounted for the test (root or CAP_SYS_ADMIN; skipped otherwise).
- A read-only data dir (or socket directory): the start is refused with one line
  naming the directory and what to do, not a traceback.  A real read-only mount: a
  read-only bind mount of the directory (root; ``chmod`` does not stop root).
- ``hive/status`` while NATS is down: answered, degraded, not an error (a real
  nats-server, killed).
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import Shell
from disk_support import fill
from nats_support import NatsServer

from hive_rpc import cli
from hive_rpc.client.hub_start import start_failure_cause
from hive_rpc.client.start_record import DATA_DIR_NAME
from hive_rpc.client.sync_client import SyncHubClient


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip()}): needs root")


def test_a_hub_that_crashed_on_a_full_disk_starts_again_degraded(
    short_tmp: Path, small_disk: Path
) -> None:
    sh = Shell(short_tmp)
    sh.data_dir = small_disk / "data"
    sh.env["HIVE_RPC_DATA_DIR"] = str(sh.data_dir)
    try:
        asked = sh.run("ask", "still pending after the crash", "--timeout", "600")
        assert asked.returncode == 0, asked.stderr
        sh.stop(signal.SIGKILL)
        fill(small_disk / "filler")

        # The next command starts the hub again (autostart), which used to die
        # writing hub.start.json: "could not start a hub on ...: +-----".
        out = sh.run("status", "--json")
        assert out.returncode == cli.EXIT_OK, out.stderr
        status = json.loads(out.stdout)
        degraded = status["degraded"] or ""
        assert "full" in degraded, status
        assert str(sh.data_dir) in degraded, status
        assert [p["question"] for p in sh.json("list")] == ["still pending after the crash"]
        shown = sh.run("status")
        assert "degraded" in shown.stdout, shown.stdout
        assert "full" in shown.stdout, shown.stdout
        assert "Traceback" not in shown.stderr
        # No half-written record left behind by the failed write.
        assert sorted(p.name for p in sh.data_dir.iterdir() if p.name.startswith(".")) == []
        assert sorted(p.name for p in sh.socket.parent.iterdir() if p.name.startswith(".")) == []
    finally:
        sh.stop()


def test_the_start_failure_cause_is_the_error_not_a_traceback_frame(tmp_path: Path) -> None:
    """The log line quoted by "could not start a hub": an exception group's traceback
    ends in box-drawing lines, which used to be quoted as the cause."""
    log = tmp_path / "hub.log"
    log.write_text(
        "  | ExceptionGroup: Exceptions from Trio nursery (1 sub-exception)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | Traceback (most recent call last):\n"
        '    |   File "x.py", line 59, in _write\n'
        "    | OSError: [Errno 28] No space left on device\n"
        "    +------------------------------------\n"
    )
    assert start_failure_cause(log, 0) == "OSError: [Errno 28] No space left on device"


@pytest.fixture
def read_only_data_dir(short_tmp: Path) -> Iterator[Shell]:
    """A data dir a hub has used, then mounted read-only (a bind mount: as root,
    ``chmod`` would not stop the writes)."""
    sh = Shell(short_tmp)
    asked = sh.run("ask", "kept", "--timeout", "600")
    assert asked.returncode == 0, asked.stderr
    # Killed, not stopped: an autostart does not start a hub stopped on purpose, and
    # here it must meet the read-only data dir.
    sh.stop(signal.SIGKILL)
    _mount("--bind", str(sh.data_dir), str(sh.data_dir))
    try:
        _mount("-o", "remount,bind,ro", str(sh.data_dir))
        with pytest.raises(OSError, match="Read-only"):
            (sh.data_dir / "probe").touch()
        yield sh
    finally:
        sh.stop()
        subprocess.run(["umount", "-l", str(sh.data_dir)], check=False)


@pytest.mark.parametrize("command", [("status",), ("serve",)])
def test_a_read_only_data_dir_is_named_with_what_to_do(
    read_only_data_dir: Shell, command: tuple[str, ...]
) -> None:
    sh = read_only_data_dir
    out = sh.run(*command)
    assert out.returncode == cli.EXIT_REFUSED, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert str(sh.data_dir) in lines[0]
    assert "read-only" in lines[0]
    assert "--data-dir" in lines[0]
    assert "HIVE_RPC_DATA_DIR" in lines[0]


def test_a_read_only_socket_directory_is_named_with_what_to_do(sh: Shell) -> None:
    run = sh.socket.parent
    run.mkdir(mode=0o700)
    _mount("--bind", str(run), str(run))
    try:
        _mount("-o", "remount,bind,ro", str(run))
        served = sh.run("serve")
        assert served.returncode == cli.EXIT_REFUSED, served.stderr
        assert served.stderr.count("\n") == 1, served.stderr
        assert f"the socket's directory {run} is read-only" in served.stderr
        assert "--socket or HIVE_RPC_SOCKET" in served.stderr
        # An autostart quotes the hub's own line.
        status = sh.run("status")
        assert status.returncode == cli.EXIT_UNREACHABLE, status.stderr
        assert "Traceback" not in status.stderr, status.stderr
        assert f"the socket's directory {run} is read-only" in status.stderr
    finally:
        subprocess.run(["umount", "-l", str(run)], check=False)


def test_status_while_nats_is_down_reports_degraded(sh: Shell, nats_server: NatsServer) -> None:
    started = sh.run("serve", "--detach", "--store", nats_server.url)
    assert started.returncode == 0, started.stderr
    asked = sh.run("ask", "asked before NATS went down", "--timeout", "600")
    assert asked.returncode == 0, asked.stderr
    nats_server.kill()

    out = sh.run("status", "--json", "--no-start")
    assert out.returncode == cli.EXIT_OK, out.stderr
    status = json.loads(out.stdout)
    assert status["store"] == "nats"
    # Why, in either words: the lost connection, or the read that failed for it.
    assert "NATS at" in (status["degraded"] or ""), status
    assert status["counts"]["pending"] == 1
    shown = sh.run("status", "--no-start")
    assert shown.returncode == cli.EXIT_OK, shown.stderr
    assert "degraded" in shown.stdout


def _next_health(editor: SyncHubClient) -> Any:
    """The next ``hive/health`` notification (the hang guard is not a measure)."""
    while True:
        note = editor.next_notification(timeout_s=60)
        if note.method == "hive/health":
            return note.params


def test_an_editor_is_told_while_nats_is_down(sh: Shell, nats_server: NatsServer) -> None:
    """Not only ``hive/status``: a subscribed editor is told (``hive/health``) when the
    connection to NATS is lost, before any write fails for it, and when it is back."""
    started = sh.run("serve", "--detach", "--store", nats_server.url)
    assert started.returncode == 0, started.stderr
    with SyncHubClient.connect(sh.socket) as editor:
        editor.call("hive/subscribe", {})
        nats_server.kill()
        down = _next_health(editor)["degraded"]
        assert down == f"store: lost the connection to NATS at {nats_server.url}; reconnecting"
        nats_server.start()
        assert _next_health(editor) == {"degraded": None}
        assert editor.call("hive/status", {})["degraded"] is None


def test_the_start_record_is_in_the_data_dir(sh: Shell) -> None:
    """Sanity for the full-disk test: the record it fails to write is this one."""
    assert sh.run("status").returncode == 0
    assert (sh.data_dir / DATA_DIR_NAME).exists()
