"""What the consent model reads from /proc, and which programs count as shells."""

from __future__ import annotations

import os
import subprocess

import pytest
import trio

from hive_rpc.core.ling import is_shell
from hive_rpc.relay.proc import (
    foreground,
    foreground_command,
    process,
    runs_in_tty,
    stat,
    tty_device,
)


@pytest.mark.parametrize(
    "command",
    ["bash", "-bash", "/usr/bin/zsh", "fish", "dash", "ksh", "tcsh", "nu", "pwsh", "sh", "su"],
)
def test_shells(command: str) -> None:
    assert is_shell(command)


@pytest.mark.parametrize("command", [None, "", "claude", "node", "python3", "codex", "shellcheck"])
def test_not_shells(command: str | None) -> None:
    assert not is_shell(command)


def test_stat_of_this_process() -> None:
    found = stat(os.getpid())
    assert found is not None
    assert found.pid == os.getpid()
    assert found.pgrp == os.getpgrp()
    assert stat(2**22 + 12345) is None  # no such pid


def test_a_process_does_not_run_in_a_tty_that_is_not_its_own() -> None:
    me = stat(os.getpid())
    assert me is not None
    assert not runs_in_tty(os.getpid(), "/dev/null")
    assert not runs_in_tty(os.getpid(), "/nonexistent/tty")
    if me.tty_nr:  # run from a terminal: it is its own
        own = os.ttyname(0) if os.isatty(0) else None
        if own is not None:
            assert os.stat(own).st_rdev == tty_device(me.tty_nr)
            assert runs_in_tty(os.getpid(), own)
    assert foreground_command(os.getpid()) is not None


def _start_time_field() -> int:
    """Field 22 of this process's /proc/PID/stat, counted by hand."""
    with open("/proc/self/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[22 - 3])  # the first field after the name is field 3


async def test_a_process_is_named_by_pid_start_time_and_executable() -> None:
    """What a ling records of its agent (issue 26): the start time tells a recycled
    pid from the process approved; the executable tells an exec'd one."""
    me = process(os.getpid())
    assert me is not None
    assert me.exe == os.readlink("/proc/self/exe")
    assert me.start == _start_time_field()
    assert process(2**22 + 12345) is None
    # A process without a controlling terminal (a session of its own, as Emacs starts
    # a comint buffer's process) is its own foreground.
    child = await trio.lowlevel.open_process(["cat"], stdin=subprocess.PIPE, start_new_session=True)
    try:
        found = foreground(child.pid)
        assert found is not None
        assert (found.pid, found.comm) == (child.pid, "cat")
    finally:
        child.kill()
        await child.wait()
        if child.stdin is not None:
            await child.stdin.aclose()
    assert foreground(child.pid) is None  # gone
