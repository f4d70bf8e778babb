"""The real ``hive-rpc hook claude-code`` started as Claude Code starts it: one
PermissionRequest event on its stdin (2.1.328's fields), its own HOME, its decision
on stdout.  For the tests where an editor or the dashboard answers it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hive_rpc.hub import HubConfig

SESSION = "3f2a9c1d-5b7e-4c1a-9d2f-0e8b6a4c2d10"
"""The Claude Code session the events come from (its agent: claude-code-3f2a9c1d)."""


def permission_event(home: Path, tool_name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """What Claude Code sends the hook when ``tool_name`` wants to run in ``home/app``
    (AskUserQuestion's questions come the same way)."""
    return {
        "session_id": SESSION,
        "cwd": str(home / "app"),
        "hook_event_name": "PermissionRequest",
        "tool_name": tool_name,
        "tool_input": tool_input,
    }


def start_hook(
    event: dict[str, Any], *, socket: Path, data_dir: Path, home: Path, timeout_s: int = 60
) -> subprocess.Popen[bytes]:
    """The hook running on ``event``; the caller waits for it (``communicate``), or
    kills it and then communicates, which closes its pipes."""
    stdin = home / "event.json"
    stdin.write_text(json.dumps(event))
    where = ["--socket", str(socket), "--data-dir", str(data_dir)]
    with stdin.open("rb") as event_file:
        return subprocess.Popen(
            [sys.executable, "-m", "hive_rpc", "hook", "claude-code", *where,
             "--timeout", str(timeout_s)],
            stdin=event_file,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "HOME": str(home)},
        )  # fmt: skip


def start_permission_hook(
    config: HubConfig, home: Path, tool_name: str, tool_input: dict[str, Any]
) -> subprocess.Popen[bytes]:
    """The hook asking ``config``'s hub whether ``tool_name`` may run in ``home/app``."""
    event = permission_event(home, tool_name, tool_input)
    return start_hook(event, socket=config.socket, data_dir=config.data_dir, home=home)


def decision_of(hook: subprocess.Popen[bytes], *, timeout_s: float) -> Any:
    """The decision ``hook`` printed for Claude Code, once it has exited (with 0: a
    hook fails safe, so any other status is the test's failure, its stderr said)."""
    out, err = hook.communicate(timeout=timeout_s)
    assert hook.returncode == 0, err
    return json.loads(out)["hookSpecificOutput"]["decision"]


@contextmanager
def stopped_at_exit(hook: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """``hook`` for the block; when it ends, killed if it still runs (a failed test
    would leave it waiting up to its ``--timeout``) and its pipes closed, which an
    unclosed pipe's ResourceWarning would otherwise fail a later test for."""
    try:
        yield hook
    finally:
        if hook.poll() is None:
            hook.kill()
            hook.communicate()
