"""The human's editor in the real-Claude tests: a socket client subscribed to the hub,
that proved it is an approver (only an approver answers a permission prompt,
docs/security.md), the wait for the next question it is shown, and a ``claude -p``
running meanwhile."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio
from claude_session import ClaudeHome

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.protocol.jsonrpc import Notification


@asynccontextmanager
async def human_editor(socket: Path, *, approver: bool = True) -> AsyncIterator[HubClient]:
    """Connected and subscribed; an approver unless ``approver`` is False."""
    async with await HubClient.connect(socket) as editor:
        if approver:
            assert await prove_approver(editor.call) is None  # may answer permissions
        await editor.call("hive/subscribe", {})
        yield editor


async def next_prompt(editor: HubClient) -> Notification:
    """The next ``hive/prompt`` the editor is sent (other notifications pass)."""
    note = await editor.next_notification()
    while note.method != "hive/prompt":
        note = await editor.next_notification()
    return note


@asynccontextmanager
async def claude_running(
    claude: ClaudeHome, *args: str
) -> AsyncIterator[list[subprocess.CompletedProcess[str]]]:
    """``claude ARGS`` run in a worker thread while the block acts as the human; the
    block ends when it has exited, and the list it yields then holds its run."""
    runs: list[subprocess.CompletedProcess[str]] = []

    async def run() -> None:
        runs.append(await trio.to_thread.run_sync(lambda: claude.run(*args)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        yield runs
