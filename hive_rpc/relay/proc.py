"""What Linux's /proc says about a process: its controlling terminal and the
program in that terminal's foreground.

Two questions of the relay's consent model (docs/security.md, "Typing into
terminals") are answered here, from the kernel rather than from anything a client
says: does the process on the other end of a socket run *inside* a given terminal
(its controlling tty is that terminal), and what runs in the foreground of a
terminal whose program Emacs started (a shell, or an agent)?  The kernel sets a
process's controlling terminal; a process cannot take one that already belongs to
another session (``TIOCSCTTY`` refuses without root), so a client cannot claim a
pane it does not run in.  Where there is no /proc (not Linux) every answer is None:
"cannot tell", which the callers treat as not proven.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hive_rpc.core.ling import Proc
from hive_rpc.host.agent_process import stat_fields


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The fields of ``/proc/PID/stat`` the relay reads."""

    pid: int
    comm: str
    pgrp: int
    tty_nr: int
    """The controlling terminal's device number (0: none)."""
    tpgid: int
    """The foreground process group of that terminal (-1: none)."""
    start: int = 0
    """Field 22, ``starttime``: clock ticks after boot the process started."""
    session: int = 0
    """Field 6: the session id (the session leader's pid)."""


def stat(pid: int) -> ProcStat | None:
    """``/proc/PID/stat`` read, or None when the process is gone or unreadable."""
    found = stat_fields(pid)
    if found is None or len(found[1]) < 20:
        return None
    comm, fields = found
    try:
        return ProcStat(
            pid=pid,
            comm=comm,
            pgrp=int(fields[2]),
            tty_nr=int(fields[4]),
            tpgid=int(fields[5]),
            start=int(fields[19]),  # fields[0] is field 3 (state): 22 - 3 = 19
            session=int(fields[3]),
        )
    except ValueError:
        return None


def open_pidfd(pid: int, start: int) -> int | None:
    """A pidfd on the process ``pid`` that started at ``start`` (``ProcStat.start``),
    or None when it is gone.  The start time is compared after the pidfd is open, so
    the fd cannot name a process that took the pid meanwhile."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # ProcessLookupError: gone
        return None
    found = stat(pid)
    if found is None or found.start != start:
        os.close(fd)
        return None
    return fd


def tty_device(tty_nr: int) -> int:
    """The ``st_rdev`` of the device ``tty_nr`` (the kernel's own encoding) names."""
    major = (tty_nr >> 8) & 0xFFF
    minor = (tty_nr & 0xFF) | ((tty_nr >> 12) & 0xFFF00)
    return os.makedev(major, minor)


def runs_in_tty(pid: int, tty_path: str) -> bool:
    """Whether ``tty_path`` (``/dev/pts/3``) is the controlling terminal of ``pid``."""
    found = stat(pid)
    if found is None or found.tty_nr == 0:
        return False
    try:
        device = os.stat(tty_path).st_rdev
    except OSError:
        return False
    return device != 0 and device == tty_device(found.tty_nr)


def process(pid: int) -> Proc | None:
    """``pid`` as the relay identifies a process (core/ling.py ``Proc``): start time,
    executable, name and command line; None when there is no such process."""
    found = stat(pid)
    if found is None:
        return None
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = ""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read(4096).rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        cmdline = ""
    again = stat(pid)  # the pid was not recycled while exe and cmdline were read
    if again is None or again.start != found.start:
        return None
    return Proc(pid=pid, start=found.start, exe=exe, comm=again.comm, cmdline=cmdline)


def foreground(pid: int) -> Proc | None:
    """The leader of the foreground process group of the terminal ``pid`` runs in
    (``tpgid``): the process a keystroke there goes to.  ``pid`` itself when it has
    no terminal (a comint buffer's process, on a pipe).  None when there is none:
    the group's leader has exited (what holds the terminal is not one process the
    hub can name), or ``pid`` is gone."""
    found = stat(pid)
    if found is None:
        return None
    if found.tty_nr == 0:
        return process(pid)
    if found.tpgid <= 0:
        return None
    leader = stat(found.tpgid)
    if leader is None or leader.pgrp != found.tpgid or leader.tty_nr != found.tty_nr:
        return None
    return process(found.tpgid)


def foreground_command(pid: int) -> str | None:
    """The program in the foreground of the terminal ``pid`` runs in, or ``pid``'s
    own when it has no terminal (a comint buffer on a pipe); None when gone."""
    found = stat(pid)
    if found is None:
        return None
    if found.tty_nr == 0 or found.tpgid <= 0 or found.tpgid == found.pgrp:
        return found.comm
    leader = stat(found.tpgid)
    return leader.comm if leader is not None else found.comm


__all__ = [
    "ProcStat",
    "foreground",
    "foreground_command",
    "process",
    "runs_in_tty",
    "stat",
    "tty_device",
]


def working_dir(pid: int) -> str | None:
    """The working directory of ``pid`` (``/proc/PID/cwd``), or None when it cannot be
    read: where an asker runs, as the kernel says, not as the asker says."""
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
