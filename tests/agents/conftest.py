"""Fixtures for the tests with the real Codex CLI and Gemini CLI (see agent_homes.py):
each installed ``codex`` / ``gemini`` per session, and per test a private root holding
the agent's HOME, project directory and TMPDIR. The hub comes from tests/conftest.py
(``hub``, ``hub_config``), the scripted model servers from scripted_responses.py and
scripted_gemini.py, started by each test with its own script."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_homes import AgentHome, installed


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return installed("install-codex.sh", "HIVE_CODEX_UNAVAILABLE", "Codex CLI")


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    return installed("install-gemini-cli.sh", "HIVE_GEMINI_UNAVAILABLE", "Gemini CLI")


@pytest.fixture
def agent_home() -> Iterator[AgentHome]:
    """A short private root (Unix socket paths are capped at 108 bytes), made."""
    root = Path(tempfile.mkdtemp(prefix="hag-", dir="/tmp"))
    agent = AgentHome(root)
    agent.make()
    try:
        yield agent
    finally:
        shutil.rmtree(root, ignore_errors=True)
