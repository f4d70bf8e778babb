"""The hook's watch on Claude Code's transcript while it waits for the human: a call
answered in the terminal meanwhile withdraws the hub prompt, so no editor keeps
asking a question already answered (core/claude_transcript.py says why and how).

A thread, not trio: the hook runs on the blocking client (no trio, see hook.py),
and its main thread is blocked in ``hive/await``.  The thread withdraws the prompt
on a connection of its own; the ``hive/await`` then returns the cancelled record and
the hook prints nothing, as Claude Code already has its answer.  Any failure here
(no transcript, an unreadable one, the hub gone) only ends the watch: the hook
waits as it would without it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from hive_rpc.client.sync_client import SyncHubClient
from hive_rpc.core.claude_transcript import SettledWatch
from hive_rpc.core.errors import HiveError
from hive_rpc.core.permission_hook import SETTLED_BY

POLL_S = 0.25
"""How often the transcript is read for new lines: Claude Code writes the result
about 0.5 s after the terminal answer, so the editor's question goes within a second."""
TAIL_BYTES = 256 * 1024
"""Where the first read starts, back from the end: the call being asked about was
just written; a long session's transcript is megabytes."""
WITHDRAWN_BY = SETTLED_BY
"""The ``by`` of the withdrawal, the http hook's too (core/permission_hook.py): the
editors and the audit trail say who settled it."""
JOIN_S = 1.0


def withdraw(socket: Path, prompt_id: str, agent_id: str, timeout_s: float) -> None:
    """Withdraw the prompt; one already closed (the editor's answer came first) stays
    as it is."""
    with SyncHubClient.connect(socket, timeout_s=timeout_s) as client:
        client.timeout_s = timeout_s
        with contextlib.suppress(HiveError):
            client.call("hive/cancel", {"id": prompt_id, "agent_id": agent_id, "by": WITHDRAWN_BY})


def _open(path: Path, stop: threading.Event) -> BinaryIO | None:
    """``path`` opened, once it exists: a new session's transcript may be written
    after its first tool's hook has started (a clean-clone CI run saw the watch end
    at once, and the editor's question stay until the hook's timeout).  None when the
    wait is stopped first or the file cannot be read."""
    while True:
        try:
            return path.open("rb")
        except FileNotFoundError:
            if stop.wait(POLL_S):
                return None
        except OSError:
            return None


def _watch(
    path: Path, watch: SettledWatch, stop: threading.Event, settled: threading.Event
) -> None:
    opened = _open(path, stop)
    if opened is None:
        return
    with contextlib.suppress(OSError), opened as transcript:
        size = transcript.seek(0, os.SEEK_END)
        transcript.seek(max(0, size - TAIL_BYTES))
        while True:
            if watch.feed(transcript.read()):
                settled.set()
                return
            if stop.wait(POLL_S):
                return


@contextlib.contextmanager
def withdrawn_once_settled(
    transcript: Path,
    watch: SettledWatch,
    *,
    socket: Path,
    prompt_id: str,
    agent_id: str,
    timeout_s: float,
) -> Iterator[None]:
    """For the ``with`` block (the wait for the human): once ``watch`` finds the call
    settled in ``transcript``, withdraw the prompt."""
    stop = threading.Event()
    settled = threading.Event()

    def run() -> None:
        _watch(transcript, watch, stop, settled)
        if settled.is_set():
            with contextlib.suppress(HiveError, OSError):
                withdraw(socket, prompt_id, agent_id, timeout_s)

    thread = threading.Thread(target=run, name="hive-rpc-transcript", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(JOIN_S)
