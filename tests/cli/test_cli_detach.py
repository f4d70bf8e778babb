"""``hive-rpc serve --detach`` and the start of a hub: it outlives its starter, and when
it cannot come up the starter says why (the cause from the hub's log) within a bound."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from cli_support import Shell

from hive_rpc import cli
from hive_rpc.client import async_client as client
from hive_rpc.client import hub_start
from hive_rpc.core.errors import HubUnreachable
from hive_rpc.host.paths import LOG_NAME


def _other_socket(sh: Shell) -> Shell:
    """A second shell on another socket but the same data dir."""
    other = Shell(sh.socket.parent.parent)
    other.socket = sh.socket.with_name("other.sock")
    other.env["HIVE_RPC_SOCKET"] = str(other.socket)
    return other


def test_detached_hub_outlives_the_starters_process_group(sh: Shell) -> None:
    # A shell in a process group (and session) of its own starts the hub, then stays,
    # as Emacs or a terminal would; then the whole group is hung up and killed.
    with subprocess.Popen(
        ["sh", "-c", f"{sys.executable} -m hive_rpc serve --detach && exec sleep 600"],
        env=sh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as starter:
        try:
            assert starter.stdout is not None
            line = starter.stdout.readline()
            listening = rf"hive-rpc: listening on {re.escape(str(sh.socket))} \(pid (\d+)\)\n"
            m = re.fullmatch(listening, line)
            assert m, (line, starter.stderr.read() if starter.stderr else "")
            pid = int(m.group(1))
            assert os.getsid(pid) not in (os.getsid(0), os.getsid(starter.pid))
            assert os.getpgid(pid) != starter.pid
        finally:
            # Hung up, then killed at once: a test run under nohup inherits SIGHUP
            # ignored, so the hang-up alone may end nobody.
            os.killpg(starter.pid, signal.SIGHUP)
            with contextlib.suppress(ProcessLookupError):  # the hang-up ended them all
                os.killpg(starter.pid, signal.SIGKILL)
            starter.wait(timeout=30)
    status = sh.run("status", "--no-start", "--json")
    assert status.returncode == cli.EXIT_OK, status.stderr
    assert json.loads(status.stdout)["pid"] == pid

    again = sh.run("serve", "--detach")
    assert again.returncode == cli.EXIT_OK, again.stderr
    assert again.stdout == f"hive-rpc: listening on {sh.socket} (already running)\n"
    assert again.stderr == ""
    assert sh.hub_pid() == pid
    elsewhere = sh.run("serve", "--detach", "--data-dir", str(sh.data_dir / "other"))
    assert elsewhere.returncode == cli.EXIT_OK
    assert "(already running)" in elsewhere.stdout
    assert elsewhere.stderr == (
        f"hive-rpc: note: it keeps its data dir {sh.data_dir}, not {sh.data_dir / 'other'}\n"
    )


def test_an_autostarted_hub_outlives_its_starters_process_group(sh: Shell) -> None:
    with subprocess.Popen(
        ["sh", "-c", f"{sys.executable} -m hive_rpc status --json && exec sleep 600"],
        env=sh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    ) as starter:
        try:
            assert starter.stdout is not None
            text = "".join(iter(starter.stdout.readline, "}\n")) + "}"  # one JSON object
            pid = int(json.loads(text)["pid"])
        finally:
            os.killpg(starter.pid, signal.SIGKILL)
            starter.wait(timeout=30)
    assert sh.json("status", "--no-start")["pid"] == pid


def test_detach_passes_the_serve_options_on(sh: Shell) -> None:
    out = sh.run(
        "serve", "--detach", "--store", "memory", "--http", "127.0.0.1:0", "--no-notify",
        "--max-lifetime", "120",
    )  # fmt: skip
    assert out.returncode == cli.EXIT_OK, out.stderr
    status = sh.json("status", "--no-start")
    assert status["store"] == "memory"
    assert status["http_url"].startswith("http://127.0.0.1:")
    assert status["max_lifetime_s"] == 120.0
    assert out.stdout == f"hive-rpc: listening on {sh.socket} (pid {status['pid']})\n"


def test_failed_start_quotes_the_cause_from_the_log(sh: Shell) -> None:
    holder = sh.hub_pid()  # this hub holds the data dir
    other = _other_socket(sh)
    log = sh.data_dir / LOG_NAME
    cause = f"another hub (pid {holder}) already serves this data dir"

    detached = other.run("serve", "--detach")
    assert detached.returncode == cli.EXIT_UNREACHABLE
    assert detached.stdout == ""
    assert cause in detached.stderr
    assert str(log) in detached.stderr
    assert "Traceback" not in detached.stderr

    autostarted = other.run("list")
    assert autostarted.returncode == cli.EXIT_UNREACHABLE
    assert autostarted.stderr.startswith(f"hive-rpc: could not start a hub on {other.socket}: ")
    assert cause in autostarted.stderr
    assert str(log) in autostarted.stderr


def test_the_cause_comes_from_this_start_only(tmp_path: Path) -> None:
    log = tmp_path / LOG_NAME
    log.write_text("hive-rpc: an old hub's failure\n")
    offset = log.stat().st_size
    assert hub_start.start_failure_cause(log, offset) is None
    with log.open("a") as f:
        f.write(
            "2026-11-24 05:12:44,493 hive_rpc.hub INFO starting\n"
            "2026-11-24 05:12:44,494 hive_rpc.store ERROR the disk is full\n"
            "2026-11-24 05:12:44,495 hive_rpc.hub INFO shutting down\n"
        )
    assert hub_start.start_failure_cause(log, offset) == (
        "2026-11-24 05:12:44,494 hive_rpc.store ERROR the disk is full"
    )
    with log.open("a") as f:
        f.write("Traceback (most recent call last):\n  ...\nOSError: [Errno 28] no space\n")
    assert hub_start.start_failure_cause(log, offset) == "OSError: [Errno 28] no space"


async def test_a_hub_that_never_comes_up_does_not_hang_its_starter(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hub stuck before it listens: its interpreter blocks at start-up (sitecustomize).
    stuck = short_tmp / "stuck"
    stuck.mkdir()
    pid_file = short_tmp / "stuck.pid"
    (stuck / "sitecustomize.py").write_text(
        "import os, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "print('stuck before listening', file=sys.stderr, flush=True)\n"
        "time.sleep(3600)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(stuck))
    monkeypatch.setattr(client, "START_TIMEOUT_S", 3.0)
    data_dir = short_tmp / "data"
    try:
        with trio.fail_after(60), pytest.raises(HubUnreachable) as raised:
            await client.connect_or_start(short_tmp / "hub.sock", data_dir)
        message = str(raised.value)
        assert "did not come up within 3 s" in message
        assert "stuck before listening" in message
        assert str(data_dir / LOG_NAME) in message
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_the_hub_runs_the_installed_package_not_a_hive_rpc_folder_in_the_cwd(
    sh: Shell, short_tmp: Path
) -> None:
    """A client started inside some other checkout (an agent's repository, an older
    hive_rpc) must start the hub it is itself part of: ``python -m`` would otherwise
    import ``hive_rpc`` from the working directory first."""
    elsewhere = short_tmp / "other-checkout"
    (elsewhere / "hive_rpc").mkdir(parents=True)
    (elsewhere / "hive_rpc" / "__init__.py").write_text("")
    (elsewhere / "hive_rpc" / "__main__.py").write_text(
        "import sys\nprint('hive-rpc: the hive_rpc of the cwd ran', file=sys.stderr)\nsys.exit(3)\n"
    )
    autostart = subprocess.run(
        [Path(sys.executable).parent / "hive-rpc", "status", "--json"],
        cwd=elsewhere,
        env=sh.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert autostart.returncode == cli.EXIT_OK, autostart.stderr
    assert json.loads(autostart.stdout)["socket"] == str(sh.socket)


def test_a_detached_hub_keeps_no_directory_busy(sh: Shell, tmp_path: Path) -> None:
    """Started from some directory with relative paths, the hub works in / on the
    absolute paths: the starter's directory can go, and the paths still mean the
    same place."""
    work = tmp_path / "checkout"
    work.mkdir()
    rel_socket, rel_data = Path("run/hub.sock"), Path("data")
    started = subprocess.run(
        [sys.executable, "-m", "hive_rpc", "serve", "--detach", "--store", "memory",
         "--no-notify", "--socket", str(rel_socket), "--data-dir", str(rel_data)],
        env=sh.env, cwd=work, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert started.returncode == cli.EXIT_OK, started.stderr
    pid = int(started.stdout.rsplit("(pid ", 1)[1].rstrip(")\n"))
    try:
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
        status = json.loads(
            subprocess.run(
                [sys.executable, "-m", "hive_rpc", "status", "--json", "--no-start",
                 "--socket", str(work / rel_socket)],
                env=sh.env, capture_output=True, text=True, timeout=60, check=True,
            ).stdout
        )  # fmt: skip
        assert status["pid"] == pid
        assert status["data_dir"] == str(work / rel_data)
    finally:
        os.kill(pid, signal.SIGTERM)


def test_an_autostart_brings_the_hub_back_as_it_was_started(sh: Shell, tmp_path: Path) -> None:
    """A hub started on purpose with another data dir (and options) that dies is
    started again by the next client with that data dir and those options, not on
    the client's defaults: its pending question is there again."""
    elsewhere = tmp_path / "kept"
    started = sh.run("serve", "--detach", "--data-dir", str(elsewhere), "--retain", "7d",
                     "--no-notify")  # fmt: skip
    assert started.returncode == cli.EXIT_OK, started.stderr
    asked = sh.run("ask", "Still here?", "--json", "--no-start")
    assert asked.returncode == cli.EXIT_OK, asked.stderr
    prompt_id = json.loads(asked.stdout)["id"]
    os.kill(sh.hub_pid(), signal.SIGKILL)
    sh.wait_hub_gone()
    listed = sh.run("list", "--json")  # autostarts: the env names sh.data_dir
    assert listed.returncode == cli.EXIT_OK, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == [prompt_id]
    status = json.loads(sh.run("status", "--json", "--no-start").stdout)
    assert status["data_dir"] == str(elsewhere)
    cmdline = Path(f"/proc/{status['pid']}/cmdline").read_bytes().split(b"\0")
    assert b"--retain" in cmdline
    assert b"--no-notify" in cmdline
    # A client that names its own data dir gets that one.
    os.kill(sh.hub_pid(), signal.SIGKILL)
    sh.wait_hub_gone()
    own = sh.run("status", "--json", "--data-dir", str(tmp_path / "own"))
    assert json.loads(own.stdout)["data_dir"] == str(tmp_path / "own")
