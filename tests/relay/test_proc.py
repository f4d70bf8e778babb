"""What the consent model reads from /proc, and which programs count as shells."""

from __future__ import annotations

import os

import pytest

from hive_rpc.core.ling import is_shell
from hive_rpc.relay.proc import foreground_command, runs_in_tty, stat, tty_device


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
