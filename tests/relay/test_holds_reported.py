"""A held delivery is reported where people look, not only in the dispatch result:
each new reason it is held for is an Agora event (``relay/held``, so an activity
entry), and while the turn is ``queued`` its delivery in ``agora/status`` says what
holds it now.  Units on trio's autojump clock with a scripted terminal; the real
Claude Code is in tests/claude/test_claude_agora.py."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

from hive_rpc.agora import Agora, open_agora
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.relay.proc import process
from hive_rpc.relay.target import TargetState
from hive_rpc.runtime.registry import open_registry
from hive_rpc.store import MemoryStore

AGENT = process(os.getpid())
"""The stand-in terminal's agent: this test's own process (alive, as /proc says)."""

EPOCH = 1_800_000_000.0
BOX = "\u2500\u2500\u2500\n\u276f\u00a0{}\n\u2500\u2500\u2500\n  ? for shortcuts"
DIALOG = (
    "held: the terminal shows a 'Do you want to proceed?' prompt; it is typed once that is answered"
)
TYPING = (
    "held: the human is typing in b (unsent text in its input); it is typed once they "
    "send or clear it"
)


class Terminal:
    """Claude Code showing its permission dialog, then the human's draft, then an
    empty input box, as the test moves ``screen`` on."""

    kind = "tmux"
    address = "%1"

    def __init__(self) -> None:
        self.screen = "Bash command\n  make deploy\nDo you want to proceed?"
        self.typed: list[str] = []

    async def check(self) -> TargetState:
        await trio.lowlevel.checkpoint()
        return TargetState(alive=True, tail=self.screen, command="claude", foreground=AGENT)

    async def type_text(self, text: str) -> None:
        await trio.lowlevel.checkpoint()
        self.typed.append(text)


@asynccontextmanager
async def agora_typing_into(
    terminal: Terminal, on_event: Callable[[dict[str, Any]], None]
) -> AsyncIterator[tuple[Agora, trio.Nursery]]:
    """An Agora on a memory store whose lings all type into ``terminal``, with ling
    ``b`` registered there and each event given to ``on_event``; also the nursery its
    relay runs in, cancelled when the block ends (the relay would go on checking)."""
    store = MemoryStore()
    async with open_registry(store, epoch=EPOCH) as registry, trio.open_nursery() as nursery:
        agora = await open_agora(
            store, registry.now, DeliveryPeers(), nursery, target=lambda ling: terminal,
            registry=registry, dispatch_wait_s=5,
        )  # fmt: skip
        agora.on_event = lambda event, dialogue: on_event(event)
        await agora.register("b", "tmux", "%1", owner=True)
        yield agora, nursery
        nursery.cancel_scope.cancel()


async def test_each_reason_a_turn_is_held_for_is_an_event_and_its_status(
    autojump_clock: trio.testing.MockClock,
) -> None:
    terminal = Terminal()
    events: list[dict[str, Any]] = []
    async with agora_typing_into(terminal, events.append) as (agora, _):
        d = await agora.create("topic", ["a", "b"])
        sent = await agora.dispatch(d["id"], sender="a", to="b", signal="propose", message="go")
        assert sent["delivery"] == {"state": "queued", "ling": "b", "reason": DIALOG}

        def holds() -> list[tuple[str, str, int, str]]:
            return [
                (e["ling"], e["dialogue_id"], e["turn"], e["reason"])
                for e in events
                if e["event"] == "relay/held"
            ]

        assert holds() == [("b", d["id"], 1, DIALOG)]  # once, though checked again and again
        terminal.screen = BOX.format("half a prompt")  # the human answered, and types
        await trio.sleep(5)
        assert holds() == [("b", d["id"], 1, DIALOG), ("b", d["id"], 1, TYPING)]
        delivery = agora.status(d["id"])["turns"][0]["delivery"]
        assert delivery == {"state": "queued", "ling": "b", "reason": TYPING}
        assert terminal.typed == []
        terminal.screen = BOX.format("")  # the human sent it
        await trio.sleep(5)
        assert agora.status(d["id"])["turns"][0]["delivery"]["state"] == "delivered"
        assert len(terminal.typed) == 1
        assert len(holds()) == 2


async def test_a_delivery_held_only_briefly_is_still_an_event(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Held, then typed within the dispatch's wait: the dispatch says ``delivered``,
    and the activity stream still shows the human was typing when it came."""
    terminal = Terminal()
    terminal.screen = BOX.format("half a prompt")
    events: list[dict[str, Any]] = []
    async with agora_typing_into(terminal, events.append) as (agora, nursery):
        nursery.start_soon(_send_after, terminal, 2.5)
        answered = await agora.answer("b", "yes", "a")
        assert answered["delivery"]["state"] == "delivered"
        assert [(e["event"], e["ling"], e["reason"]) for e in events if "reason" in e][:1] == [
            ("relay/held", "b", TYPING)
        ]


async def _send_after(terminal: Terminal, seconds: float) -> None:
    await trio.sleep(seconds)
    terminal.screen = BOX.format("")
