"""One Agora turn, one pass (issue 28, section 5): the receiver's terminal is checked
once (the dispatch's check is the delivery's first), the turn is typed by one tmux
process (load-buffer, paste-buffer and send-keys chained), taken once, and its
dialogue written once, with its delivery.  Against a real tmux (a private server,
the scripted ling of test_tmux.py) and, for the relay's rule, a scripted terminal
on the autojump clock."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import pytest
import trio
import trio.testing
from test_delivery import AGENT, AGENT_PROC, ALIVE, DIALOG, FakeTarget
from test_tmux import Tmux, pasted, tmux

from hive_rpc.agora import DIALOGUE, open_agora
from hive_rpc.core import dialogue as dlg
from hive_rpc.core.ling import Ling
from hive_rpc.relay.delivery import Relay
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.relay.tmux import find_tmux
from hive_rpc.store.memory import MemoryStore


class CountingStore(MemoryStore):
    """A MemoryStore that lists every document it is given: ``(kind, key)``."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[str, str]] = []

    async def put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        self.writes.append((kind, key))
        await super().put_document(kind, key, body)


def commands(argv: Sequence[str]) -> list[str]:
    """The tmux commands one ``tmux -S SOCKET ...`` process runs, chained by ``;``."""
    args = list(argv[3:])  # past "tmux -S SOCKET"
    return [args[0]] + [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == ";"]


__all__ = ["tmux"]  # test_tmux's fixture, for pytest to find here


@pytest.mark.skipif(find_tmux() is None, reason="tmux is not installed")
async def test_a_turn_into_tmux_is_one_check_one_typing_process_one_write(
    tmux: Tmux, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 7 tmux processes (the pane checked by the dispatch, then again by the
    relay; load-buffer, paste-buffer, send-keys each a process), take_turn twice and
    two writes of the dialogue."""
    ling = await tmux.ling("one")
    spawned: list[list[str]] = []
    run_process = trio.run_process

    async def counted(command: Any, **kwargs: Any) -> Any:
        if command[0] == "tmux":
            spawned.append(commands(command))
        return await run_process(command, **kwargs)

    takes: list[str] = []
    take_turn = dlg.take_turn

    def take(d: dlg.Dialogue, **kwargs: Any) -> tuple[dlg.Dialogue, dlg.Turn, bool]:
        takes.append(d.id)
        return take_turn(d, **kwargs)

    monkeypatch.setattr(trio, "run_process", counted)
    monkeypatch.setattr(dlg, "take_turn", take)
    store = CountingStore()
    async with trio.open_nursery() as nursery:
        agora = await open_agora(
            store, time.time, DeliveryPeers(), nursery, relay=Relay(nursery, min_interval_s=0)
        )
        await agora.register("main.b", "tmux", f"{ling.pane}@{tmux.socket}", owner=True)
        d = await agora.create("one pass", ["main.a", "main.b"])
        spawned.clear()
        store.writes.clear()
        with trio.fail_after(30):
            sent = await agora.dispatch(
                d["id"], sender="main.a", to="main.b", signal="propose", message="one pass"
            )
        assert sent["delivery"]["state"] == "delivered", sent
        assert [c[0] for c in spawned] == ["display-message", "capture-pane", "load-buffer"]
        assert spawned[-1] == ["load-buffer", "paste-buffer", "send-keys"]
        assert store.writes == [(DIALOGUE, d["id"])]
        assert takes == [d["id"]]
        stored = (await store.documents(DIALOGUE))[0]
        assert stored["turns"][0]["delivery"]["state"] == "delivered"
        nursery.cancel_scope.cancel()
    [raw] = await ling.wait_for(1)  # pasted whole, then submitted by the chained Enter
    assert raw.startswith(pasted("")[:6])
    assert b"one pass" in raw


async def test_a_receiver_is_checked_once_holdout_or_not(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Each turn checks its receiver once, whether the dialogue's consensus waits for
    it (a holdout) or not; a turn held by a dialog is written once by its dispatch
    (``queued``), and once more when it is typed."""
    screens = {"b": FakeTarget(), "c": FakeTarget(DIALOG, ALIVE)}
    store = CountingStore()

    def target(ling: Ling) -> FakeTarget:
        return screens[ling.name]

    async with trio.open_nursery() as nursery:
        agora = await open_agora(
            store, trio.current_time, DeliveryPeers(), nursery, target=target,
            relay=Relay(nursery, min_interval_s=0), dispatch_wait_s=1.0,
        )  # fmt: skip
        for name, screen in screens.items():
            await agora.register(name, "tmux", f"%{name}", owner=True)
            screen.checks = 0
        d = await agora.create("who checks", ["a", "b"])
        store.writes.clear()
        # a defers: nobody agrees, so b is no holdout; it is the receiver.
        sent = await agora.dispatch(d["id"], sender="a", to="b", signal="defer", message="1")
        assert dlg.holdouts(agora._get(d["id"])) == ()
        assert sent["delivery"]["state"] == "delivered", sent
        assert screens["b"].checks == 1
        assert store.writes == [(DIALOGUE, d["id"])]
        # a proposes: b, who never spoke, alone stands between them and consensus.
        sent = await agora.dispatch(d["id"], sender="a", to="b", signal="propose", message="2")
        assert sent["delivery"]["state"] == "delivered"
        assert screens["b"].checks == 2
        assert store.writes == [(DIALOGUE, d["id"])] * 2

        held = await agora.create("held", ["a", "c"])
        store.writes.clear()
        sent = await agora.dispatch(held["id"], sender="a", to="c", signal="defer", message="3")
        assert sent["delivery"]["state"] == "queued"  # c shows a dialog
        assert screens["c"].checks == 1  # the dispatch's check, which held it
        assert store.writes == [(DIALOGUE, held["id"])]
        async with contextlib.aclosing(agora.follow()) as events:
            async for event in events:
                if event["event"] == "relay/delivered" and event["ling"] == "c":
                    break
        assert screens["c"].checks == 2  # the relay's retry, which typed it
        await trio.testing.wait_all_tasks_blocked()  # its record, written after the event
        assert agora.status(held["id"])["turns"][-1]["delivery"]["state"] == "delivered"
        assert store.writes == [(DIALOGUE, held["id"])] * 2
        nursery.cancel_scope.cancel()


async def test_a_state_seen_is_used_only_when_nothing_was_ahead_of_the_message(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery, min_interval_s=1.0)
    target = FakeTarget(typing_s=0.5)
    seen = dataclasses.replace(ALIVE, foreground=AGENT_PROC)  # as FakeTarget.check says
    first = relay.submit("k", target, "first", agent=AGENT, seen=seen)
    second = relay.submit("k", target, "second", agent=AGENT, seen=seen)
    assert (await first.wait()).delivered
    assert target.checks == 0  # the first: taken at once, from what its sender saw
    assert (await second.wait()).delivered
    assert target.checks == 1  # the second waited behind it: checked again
    await trio.sleep(0.2)  # within the rate limit after "second"
    third = relay.submit("k", target, "third", agent=AGENT, seen=seen)
    assert (await third.wait()).delivered
    assert target.checks == 2  # waited for the rate limit: checked again
    assert [text for _, text in target.typed] == ["first", "second", "third"]
