"""The human's editor in the real-Claude tests: a socket client subscribed to the hub,
that proved it is an approver (only an approver answers a permission prompt,
docs/security.md), and the wait for the next question it is shown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from hive_rpc.client import HubClient, prove_approver
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
