"""Fixtures for the tests with the real Claude Code (see claude_session.py): the
installed ``claude`` per session; per test a scripted model server and a private HOME
and project directory pointed at it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_session import claude_binary


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return claude_binary()


@pytest.fixture
def claude_root() -> Iterator[Path]:
    """A short private directory (Unix socket paths are capped at 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="hcc-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
