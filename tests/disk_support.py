"""Directories for tests: a short private one under /tmp (a Unix socket's path is
capped at 108 bytes, which pytest's own temp dirs can pass), and a real full file
system for the tests of a full disk: a small tmpfs mounted for the test (root or
CAP_SYS_ADMIN, as on CI; skipped, saying why, otherwise), and a file that fills it
to the last byte."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

DISK_SIZE = "4m"


@contextmanager
def short_tmp_dir(prefix: str) -> Iterator[Path]:
    """A new directory ``/tmp/<prefix>...`` for the block, then removed with all in it."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def mounted_tmpfs(mount_point: Path, size: str = DISK_SIZE) -> Iterator[Path]:
    """``mount_point`` (made) with a ``size`` tmpfs on it for the block, then unmounted."""
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mount_point)],
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


def fill(path: Path) -> None:
    """Write zeros to ``path`` until the file system is full (down to its last byte)."""
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
