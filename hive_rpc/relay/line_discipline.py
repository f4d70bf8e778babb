"""Whether a terminal's program reads whole lines: the kernel's answer, at delivery.

A terminal in canonical mode (``ICANON``, the default "cooked" mode: a shell's
``read``, ``python3``'s ``input()``, ``cat``) gives its program nothing until a line
ends, and Linux's line discipline holds at most 4,095 bytes of it: the rest of a
longer line is dropped as it arrives (``N_TTY_BUF_SIZE``, 4,096 bytes, one kept for
the newline).  A 31,900-character turn typed into such a terminal was reported
delivered while the program got 4,095 characters of it.  A program in raw mode
(Claude Code, an editor) reads bytes as they come, and takes a bracketed paste of
any length.  So before it types, the relay asks the kernel which mode the
terminal of the process it is about to type to is in (``termios``' ``ICANON`` on
that process's controlling terminal), and ``relay.text.fits_terminal`` refuses
what that mode cannot take whole.

Linux only (``/proc``); elsewhere, and for a process gone meanwhile, the answer is
None: cannot tell.
"""

from __future__ import annotations

import contextlib
import os
import termios

from hive_rpc.relay.proc import stat, tty_device

_PTS_MAJORS = range(136, 144)
"""Unix98 pseudo-terminal slaves (``/dev/pts/N``): 256 minors per major."""


def reads_lines(pid: int) -> bool | None:
    """Whether the program ``pid`` reads its terminal a whole line at a time (the
    terminal is in canonical mode): True; False when it reads bytes as they come
    (raw or cbreak mode), or has no terminal (a pipe, as a comint buffer's process,
    takes what is written whole); None when it cannot be told (the process is gone,
    its terminal cannot be opened, not Linux)."""
    found = stat(pid)
    if found is None:
        return None
    if found.tty_nr == 0:
        return False
    path = _device_path(pid, tty_device(found.tty_nr))
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        lflag = termios.tcgetattr(fd)[3]
    except termios.error:
        return None
    finally:
        os.close(fd)
    return bool(lflag & termios.ICANON)


def _device_path(pid: int, device: int) -> str | None:
    """The path of the terminal device ``device`` (an ``st_rdev``), checked: a
    pseudo-terminal's ``/dev/pts/N``, else whichever of the process's standard
    streams is that device."""
    major, minor = os.major(device), os.minor(device)
    candidates = [f"/dev/pts/{(major - 136) * 256 + minor}"] if major in _PTS_MAJORS else []
    candidates += [f"/proc/{pid}/fd/{fd}" for fd in (0, 1, 2)]
    for path in candidates:
        with contextlib.suppress(OSError):
            if os.stat(path).st_rdev == device:
                return path
    return None


__all__ = ["reads_lines"]
