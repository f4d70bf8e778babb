"""The Agora's lock is every dialogue's, so nothing slow may run under it: the check
of a participant's terminal (which waits up to HOLDOUT_CHECK_S on a silent Emacs)
runs outside it, and another dialogue's turn goes on meanwhile."""

from __future__ import annotations

import os

import pytest
import trio
import trio.testing

from hive_rpc.agora import dialogues, open_agora
from hive_rpc.core.ling import Ling
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.relay.proc import process
from hive_rpc.relay.target import TargetState
from hive_rpc.store.memory import MemoryStore

AGENT = process(os.getpid())
"""The stand-in terminal's agent: this test's own process (alive, as /proc says)."""


class Terminal:
    """A terminal whose check answers only once ``answer`` is set (a silent Emacs)."""

    kind = "tmux"

    def __init__(self, address: str, answer: trio.Event) -> None:
        self.address = address
        self.answer = answer
        self.typed: list[str] = []

    async def check(self) -> TargetState:
        await self.answer.wait()
        return TargetState(alive=True, tail="\u276f ", command="claude", foreground=AGENT)

    async def type_text(self, text: str) -> None:
        await trio.lowlevel.checkpoint()
        self.typed.append(text)


async def test_a_silent_terminal_holds_up_no_other_dialogue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dialogues, "HOLDOUT_CHECK_S", 3600.0)
    silent = trio.Event()
    answers = trio.Event()
    answers.set()
    terminals = {"x.b": Terminal("%1", silent), "y.b": Terminal("%2", answers)}

    def target(ling: Ling) -> Terminal:
        return terminals[ling.name]

    async with trio.open_nursery() as nursery:
        store = MemoryStore()
        agora = await open_agora(store, lambda: 1.0, DeliveryPeers(), nursery, target=target)
        terminals["x.b"].answer = answers  # its registration reads its agent
        await agora.register("x.b", "tmux", "%1", owner=True)
        terminals["x.b"].answer = silent
        await agora.register("y.b", "tmux", "%2", owner=True)
        stuck = await agora.create("waits on x.b", ["x.a", "x.b"])
        other = await agora.create("goes on", ["y.a", "y.b"])
        first: dict[str, object] = {}
        first_done = trio.Event()

        async def dispatch_to_the_silent_one() -> None:
            first.update(
                await agora.dispatch(
                    stuck["id"], sender="x.a", to="x.b", signal="propose", message="m"
                )
            )
            first_done.set()

        nursery.start_soon(dispatch_to_the_silent_one)
        await trio.testing.wait_all_tasks_blocked()
        assert not first  # its check of x.b is waiting
        with trio.fail_after(30):  # a hang guard: under the lock this never returns
            sent = await agora.dispatch(
                other["id"], sender="y.a", to="y.b", signal="propose", message="m"
            )
        assert (sent["turn"], sent["status"]) == (1, "active")
        silent.set()
        with trio.fail_after(30):
            await first_done.wait()
        assert first["turn"] == 1
        nursery.cancel_scope.cancel()
