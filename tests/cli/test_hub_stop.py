"""`hive-rpc stop` and `hive-rpc restart`, and a hub stopped on purpose staying stopped
(issue 27, section 9), with real hubs and the real command.

A hub stopped on purpose (SIGINT, SIGTERM, `hive-rpc stop`) is marked so beside its
socket; no autostart (the CLI's, `mcp`, `epc`, `lsp`, `serve --detach --autostart`)
starts it again, each saying how to; `serve`, `restart` and `serve --detach
--as-before` do, and clear the mark.  A crash (SIGKILL) leaves no mark: the next
autostart brings the hub back with the options it last ran with, `--http` included.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

import pytest
import trio
from cli_support import Shell, exited
from mcp import Client, StdioServerParameters

from hive_rpc import cli
from hive_rpc.client.start_record import record_path


def _status(sh: Shell) -> dict[str, Any] | None:
    out = sh.run("status", "--json", "--no-start")
    return json.loads(out.stdout) if out.returncode == 0 else None


def _serve_with_http(sh: Shell) -> dict[str, Any]:
    started = sh.run("serve", "--detach", "--http", "127.0.0.1:0", "--no-notify")
    assert started.returncode == cli.EXIT_OK, started.stderr
    status = _status(sh)
    assert status is not None
    assert status["http_url"], status
    return status


def _refused_as_stopped(out: subprocess.CompletedProcess[str]) -> None:
    assert out.returncode == cli.EXIT_UNREACHABLE, (out.stdout, out.stderr)
    assert "stopped on purpose" in out.stderr, out.stderr
    assert "`hive-rpc restart`" in out.stderr
    assert "`hive-rpc serve`" in out.stderr
    assert "M-x hive-rpc-start-hub" in out.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signalled_hub_is_not_autostarted_until_restarted(sh: Shell, sig: int) -> None:
    before = _serve_with_http(sh)
    asked = sh.run("ask", "Kept?", "--agent", "stopper")
    assert asked.returncode == cli.EXIT_OK, asked.stderr
    os.kill(before["pid"], sig)
    sh.wait_hub_gone()

    mark = json.loads(record_path(sh.socket).read_text())
    assert mark["stopped_by"] == signal.Signals(sig).name
    for command in (("list",), ("ask", "Again?"), ("serve", "--detach", "--autostart")):
        _refused_as_stopped(sh.run(*command))
    assert _status(sh) is None, "an autostart started the hub stopped on purpose"

    # restart: the hub again, as it last ran (--http), its question still pending
    again = sh.run("restart")
    assert again.returncode == cli.EXIT_OK, again.stderr
    assert again.stdout.startswith(f"hive-rpc: listening on {sh.socket} (pid ")
    after = _status(sh)
    assert after is not None
    assert after["pid"] != before["pid"]
    assert after["http_url"] is not None
    assert "stopped_at" not in json.loads(record_path(sh.socket).read_text())
    assert "Kept?" in sh.run("list").stdout


def test_a_crashed_hub_is_autostarted_as_it_ran(sh: Shell) -> None:
    before = _serve_with_http(sh)
    sh.stop(signal.SIGKILL)
    listed = sh.run("list")  # the CLI's autostart
    assert listed.returncode == cli.EXIT_OK, listed.stderr
    after = _status(sh)
    assert after is not None
    assert after["pid"] != before["pid"]
    assert after["http_url"] is not None, "the autostart dropped --http"

    # and Emacs's starter, `serve --detach --autostart`, given no options of its own
    sh.stop(signal.SIGKILL)
    started = sh.run("serve", "--detach", "--autostart")
    assert started.returncode == cli.EXIT_OK, started.stderr
    again = _status(sh)
    assert again is not None
    assert again["http_url"] is not None


def test_stop_waits_until_the_hub_is_gone_and_loses_nothing(sh: Shell) -> None:
    asked = sh.run("ask", "Survive a stop?", "--timeout", "3600")
    assert asked.returncode == cli.EXIT_OK, asked.stderr
    pid = sh.hub_pid()
    stopped = sh.run("stop")
    assert stopped.returncode == cli.EXIT_OK, stopped.stderr
    assert stopped.stdout == f"hive-rpc: stopped the hub on {sh.socket} (pid {pid})\n"
    assert exited(pid)
    assert not sh.socket.exists()
    assert json.loads(record_path(sh.socket).read_text())["stopped_by"] == "hive-rpc stop"
    _refused_as_stopped(sh.run("list"))

    restarted = sh.run("restart")
    assert restarted.returncode == cli.EXIT_OK, restarted.stderr
    record = json.loads(sh.run("poll", asked.stdout.strip(), "--json").stdout)
    assert record["status"] == "pending"


def test_restart_stops_a_running_hub_and_starts_it_with_its_options(sh: Shell) -> None:
    before = _serve_with_http(sh)
    done = sh.run("restart")
    assert done.returncode == cli.EXIT_OK, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"hive-rpc: stopped the hub on {sh.socket} (pid {before['pid']})"
    assert lines[1].startswith(f"hive-rpc: listening on {sh.socket} (pid ")
    assert exited(before["pid"])
    after = _status(sh)
    assert after is not None
    assert after["pid"] != before["pid"]
    assert after["http_url"] is not None
    assert after["notifications"] == before["notifications"]


def test_stop_with_no_hub_says_so_and_keeps_it_stopped(sh: Shell) -> None:
    sh.run("status")  # a hub, and its record
    sh.stop(signal.SIGKILL)  # gone without a mark
    out = sh.run("stop")
    assert out.returncode == cli.EXIT_UNREACHABLE
    assert out.stderr == (
        f"hive-rpc: no hub answers on {sh.socket}: nothing to stop (none will be started "
        "there by itself until `hive-rpc serve` or `hive-rpc restart`)\n"
    )
    _refused_as_stopped(sh.run("list"))
    # an explicit start clears the mark
    assert sh.run("serve", "--detach").returncode == cli.EXIT_OK
    assert "stopped_at" not in json.loads(record_path(sh.socket).read_text())


def test_a_hub_that_does_not_stop_in_time(sh: Shell) -> None:
    """A hub that cannot act on SIGTERM (here frozen with SIGSTOP): `stop` gives up
    after `--timeout`, says so with its pid and how to end it, and the hub, once it
    can, stops as asked and stays stopped."""
    pid = sh.hub_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        out = sh.run("stop", "--timeout", "1")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert out.returncode == cli.EXIT_REFUSED
    assert out.stderr == (
        f"hive-rpc: the hub on {sh.socket} (pid {pid}) did not stop within 1 s; it still "
        f"runs, marked stopped on purpose. `kill -9 {pid}` ends it at once (its SQLite "
        "store keeps every prompt)\n"
    )
    sh.wait_hub_gone()  # the SIGTERM it was sent, taken once it runs again
    _refused_as_stopped(sh.run("list"))


@pytest.mark.parametrize("face", ["mcp", "epc", "lsp"])
def test_the_faces_autostart_no_hub_stopped_on_purpose(sh: Shell, face: str) -> None:
    """What the agents' and editors' sidecars run: they start no hub stopped on
    purpose, and say how to start it (on stderr, which their hosts log)."""
    sh.run("status")
    assert sh.run("stop").returncode == cli.EXIT_OK
    out = subprocess.run(
        [sys.executable, "-m", "hive_rpc", face],
        env=sh.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    _refused_as_stopped(out)
    assert _status(sh) is None


def test_as_before_starts_a_stopped_hub_as_it_ran(sh: Shell) -> None:
    """What M-x hive-rpc-start-hub runs: the human's start, with the last options."""
    _serve_with_http(sh)
    assert sh.run("stop").returncode == cli.EXIT_OK
    started = sh.run("serve", "--detach", "--as-before")
    assert started.returncode == cli.EXIT_OK, started.stderr
    status = _status(sh)
    assert status is not None
    assert status["http_url"] is not None
    assert sh.run("list").returncode == cli.EXIT_OK


def test_autostart_and_as_before_go_with_detach(sh: Shell) -> None:
    out = sh.run("serve", "--autostart")
    assert (out.returncode, out.stderr) == (
        cli.EXIT_USAGE,
        "hive-rpc: --autostart and --as-before go with --detach\n",
    )


async def test_an_agents_session_is_told_the_hub_was_stopped_on_purpose(sh: Shell) -> None:
    """The MCP relay of a running agent session: the hub is stopped under it; its next
    call is answered saying so and how to start it, and starts no hub (it used to
    start one, "even after a deliberate kill", on the default options)."""
    assert sh.run("status").returncode == cli.EXIT_OK
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hive_rpc", "mcp", "--agent", "stopped"],
        env=dict(sh.env),
    )
    async with Client(params, mode="legacy") as client:
        asked = await client.call_tool("hivemind_ask_async", {"question": "Still there?"})
        assert asked.structured_content is not None
        ask_id = asked.structured_content["ask_id"]
        stopped = await trio.to_thread.run_sync(sh.run, "stop")
        assert stopped.returncode == cli.EXIT_OK, stopped.stderr
        with trio.fail_after(20):
            polled = await client.call_tool("hivemind_poll", {"ask_id": ask_id})
        assert polled.is_error
        text = str(polled.content)
        assert "stopped on purpose" in text, text
        assert "`hive-rpc restart`" in text, text
        assert "no call starts it again until the human does" in text, text
        assert _status(sh) is None
