"""A real agent's whole run beside the human at an editor, for the tests that drive
Codex CLI and Gemini CLI (tests/agents): the run in a thread (a subprocess that
blocks), the human answering the hub's first question, and a run that ends before it
was answered failing at once with what the agent said, rather than waiting for a
question that cannot come."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import Any

import trio
from editor import next_prompt

from hive_rpc.client.async_client import HubClient

ASKED_WITHIN_S = 50
"""How long the agent's first question may take to reach the hub: a Node program
starting ``hive-rpc mcp`` or its hook on a loaded 2-core machine."""


async def answered_run(
    human: HubClient,
    run: Callable[[], subprocess.CompletedProcess[str]],
    answer: Mapping[str, Any],
    *,
    answered: threading.Event | None = None,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``run`` in a thread while ``human`` answers the hub's first question with
    ``answer`` (``hive/respond``'s params less the id); the finished run and that
    question.  ``answered`` is set once the answer is sent (a scripted model may wait
    on it before the agent's next step)."""
    sent = answered or threading.Event()
    runs: list[subprocess.CompletedProcess[str]] = []
    async with trio.open_nursery() as nursery:

        async def agent() -> None:
            runs.append(await trio.to_thread.run_sync(run))
            done = runs[0]
            assert sent.is_set(), f"the agent ended ({done.returncode}) unanswered:\n{done.stderr}"

        nursery.start_soon(agent)
        with trio.fail_after(ASKED_WITHIN_S):
            prompt: dict[str, Any] = (await next_prompt(human)).params
        await human.call("hive/respond", {"id": prompt["id"], **answer})
        sent.set()
    return runs[0], prompt
